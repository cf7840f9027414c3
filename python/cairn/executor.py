"""executor.py -- cairn.Executor: a concurrent.futures.Executor whose calls
run on Cairn workers, through the runner cairn-app-python that a worker
offers as an app (--app python=/usr/bin/cairn-app-python; the protocol is
in its header).

The master has no route that adds tasks to a submitted job, so the
Executor gathers calls into batches: the first call after a flush starts a
short delay (batch_delay, 20 ms by default), and the calls submitted
before it ends, at most max_batch, become the tasks of one job. map()
flushes at once after its last call. One thread per job in flight (at
most max_jobs; the next batch waits for one to end) waits for the job
with the master's held wait (GET /v1/jobs/{id}?wait=), one request per
wait_seconds at most however many calls the job holds, and reads the
job's task pages when the wait returns: each future completes when its
job ends, or earlier when the job runs longer than wait_seconds and its
task is done by then. No request is made per future, except to fetch a
return value too long for a task's output (its result.pickle).

A call travels as two pickles: its function, uploaded once per job and
distinct function (an input file named by its digest, cached by each
worker), and
its arguments, in the task's arguments (base64) or, past inline_max
bytes, as an uploaded file. Functions go by cloudpickle when it is
installed here (by value: lambdas, closures, functions of __main__; a
module's functions by reference unless cloudpickle.register_pickle_by_value
names the module), else by pickle (by name: the worker must import them)."""

import base64
import collections
import concurrent.futures as cf
import hashlib
import pickle
import threading
import time

from . import errors
from .client import FINISHED, MAX_WAIT_MS
from .job import Job

PREFIX = "cairn-python 1"
RESULT_FILE = "result.pickle"
# Distinct functions whose upload an Executor remembers.
FN_CACHE = 256


def _serializer(name):
    """The module that pickles calls: cloudpickle is imported here, when an
    Executor is made, not with the package (it takes longer to import than
    the rest of it, and a Client does not need it)."""
    if name not in (None, "cloudpickle", "pickle"):
        raise ValueError(f"serializer must be 'cloudpickle' or 'pickle', not {name!r}")
    if name == "pickle":
        return pickle
    try:
        import cloudpickle
        return cloudpickle
    except ImportError:
        if name == "cloudpickle":
            raise ImportError("cloudpickle is not installed (Debian: python3-cloudpickle)")
        return pickle


def _decode_outcome(result, fetch):
    """The value of a done task's output line, or raises what the call
    raised (its remote traceback as __cause__). fetch(name) returns the
    bytes of an output file."""
    line = result.output.decode("utf-8", "replace").strip()
    parts = line.split(" ")
    if len(parts) != 4 or " ".join(parts[:2]) != PREFIX:
        raise errors.TaskFailed(f"task {result.id}: not a cairn-app-python answer: {line[:200]!r}"
                                " (is the app a cairn-app-python runner?)",
                                exit_status=result.exit_status,
                                stderr=result.stderr.decode("utf-8", "replace"))
    kind, data = parts[2], parts[3]
    if kind.endswith("-file"):
        kind, payload = kind[:-5], fetch(data)
    else:
        payload = base64.b64decode(data)
    obj = pickle.loads(payload)
    if kind == "ok":
        return obj
    exc = obj.get("exc")
    if not isinstance(exc, BaseException):
        exc = errors.RemoteError(obj.get("type", "Exception"), obj.get("message", ""))
    exc.__cause__ = errors.RemoteTraceback(obj.get("traceback", ""))
    raise exc


class _Call:
    __slots__ = ("future", "fn_sha", "fn_bytes", "args_bytes")

    def __init__(self, future, fn_sha, fn_bytes, args_bytes):
        self.future = future
        self.fn_sha = fn_sha
        self.fn_bytes = fn_bytes
        self.args_bytes = args_bytes


class Executor(cf.Executor):
    """Runs calls on Cairn workers that offer app (default "python").

    client: a cairn.Client. name: the prefix of the jobs' names.
    resources, limits, env, max_attempts, priority, lease_seconds,
    category, retry_larger: fields of each job (docs/jobs.md; resources may
    be "auto": each batch's job is sized from its own first calls, since
    categories are a job's own, "Automatic sizes"). batch_delay, max_batch, max_jobs,
    wait_seconds: the batching above. serializer: "cloudpickle", "pickle"
    or None (cloudpickle when installed). delete_jobs: delete each job once
    its futures are completed (its results are read first). inline_max:
    pickled arguments up to this many bytes travel in the task's
    arguments, larger ones as an uploaded file."""

    def __init__(self, client, app="python", *, name="executor", resources=None, limits=None,
                 env=None, max_attempts=3, priority=0, lease_seconds=None, batch_delay=0.02,
                 max_batch=1000, max_jobs=64, wait_seconds=10.0, serializer=None,
                 delete_jobs=True, inline_max=3072, category=None, retry_larger=None):
        self.client = client
        self.app = app
        self.name = name
        self._fields = {"max_attempts": max_attempts, "priority": priority}
        if lease_seconds is not None:
            self._fields["lease_seconds"] = lease_seconds
        if isinstance(resources, str):
            self._fields["resources"] = resources  # "auto"; the job's check refuses others
            resources = None
        for key, v in (("resources", resources), ("limits", limits), ("env", env)):
            if v:
                self._fields[key] = dict(v)
        for key, v in (("category", category), ("retry_larger", retry_larger)):
            if v is not None:
                self._fields[key] = v
        self.batch_delay = batch_delay
        self.max_batch = max_batch
        self.wait_seconds = wait_seconds
        self.delete_jobs = delete_jobs
        self.inline_max = inline_max
        self._ser = _serializer(serializer)
        self._lock = threading.Condition()
        self._pending = []
        self._flush_now = False
        self._shutdown = False
        self._fns = collections.OrderedDict()  # id(fn) -> (fn, sha, bytes)
        # A job's deletion removes the stored files no other job names: a
        # batch's uploads and its submission hold this lock, and so does a
        # deletion, so that none falls between them.
        self._store_lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max_jobs)
        self._waiters = set()
        self._jobs = set()                     # JobHandles in flight
        self._batches = 0
        self.jobs_submitted = 0
        self._flusher = threading.Thread(target=self._flush_loop, name="cairn-executor-flush",
                                         daemon=True)
        self._flusher.start()

    # -- concurrent.futures.Executor ---------------------------------------------
    def submit(self, fn, /, *args, **kwargs):
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
        future = cf.Future()
        try:
            fn_sha, fn_bytes = self._function(fn)
            args_bytes = self._ser.dumps((args, kwargs))
        except Exception as e:  # the call cannot travel: its future says why
            future.set_exception(e)
            return future
        with self._lock:
            self._pending.append(_Call(future, fn_sha, fn_bytes, args_bytes))
            self._lock.notify_all()
        return future

    def map(self, fn, *iterables, timeout=None, chunksize=1):
        """As Executor.map (every call is submitted first), then the batch
        is sent at once instead of after batch_delay."""
        it = super().map(fn, *iterables, timeout=timeout, chunksize=chunksize)
        self.flush()
        return it

    def flush(self):
        """Sends the calls submitted so far without waiting for the delay."""
        with self._lock:
            self._flush_now = True
            self._lock.notify_all()

    def shutdown(self, wait=True, *, cancel_futures=False):
        with self._lock:
            self._shutdown = True
            if cancel_futures:
                for call in self._pending:
                    call.future.cancel()
                self._pending = [c for c in self._pending if not c.future.cancelled()]
            self._flush_now = True
            self._lock.notify_all()
            jobs = list(self._jobs) if cancel_futures else []
        for h in jobs:
            try:
                h.cancel()
            except errors.CairnError:
                pass  # finished meanwhile, or gone
        if wait:
            self._flusher.join()
            while True:
                with self._lock:
                    waiters = list(self._waiters)
                if not waiters:
                    break
                for w in waiters:
                    w.join()

    # -- making a call travel -------------------------------------------------------
    def _function(self, fn):
        """(sha256, pickle) of fn, made once per function object."""
        with self._lock:
            hit = self._fns.get(id(fn))
            if hit is not None and hit[0] is fn:
                self._fns.move_to_end(id(fn))
                return hit[1], hit[2]
        data = self._ser.dumps(fn)
        sha = hashlib.sha256(data).hexdigest()
        with self._lock:
            self._fns[id(fn)] = (fn, sha, data)
            if len(self._fns) > FN_CACHE:
                self._fns.popitem(last=False)
        return sha, data

    def _build(self, calls):
        """The job of a batch: task i is calls[i]; its files uploaded (each
        once; the master answers 200 for a file it holds already). Runs
        under _store_lock."""
        self._batches += 1
        job = Job(f"{self.name}-{self._batches}", app=self.app, outputs=["[r]esult.pickle"],
                  **self._fields)
        files = set()
        for i, c in enumerate(calls):
            fn_name = "fn-" + c.fn_sha[:32]
            if fn_name not in files:
                self.client.upload_bytes(c.fn_bytes)
                job.file(fn_name, sha256=c.fn_sha, size=len(c.fn_bytes))
                files.add(fn_name)
            inputs = [fn_name]
            args = ["--fn", "inputs/" + fn_name]
            if len(c.args_bytes) <= self.inline_max:
                b64 = base64.b64encode(c.args_bytes).decode()
                args += ["--args-b64"] + [b64[k:k + 4096] for k in range(0, len(b64), 4096)]
            else:
                sha = hashlib.sha256(c.args_bytes).hexdigest()
                name = "args-" + sha[:32]
                if name not in files:
                    self.client.upload_bytes(c.args_bytes)
                    job.file(name, sha256=sha, size=len(c.args_bytes))
                    files.add(name)
                inputs.append(name)
                args += ["--args-file", "inputs/" + name]
            job.task(str(i), args=args, inputs=inputs)
        return job

    # -- the flusher: batches into jobs ------------------------------------------
    def _take_batch(self):
        """Blocks until a batch is due; the calls still wanted (None: stop)."""
        with self._lock:
            while not self._pending and not self._shutdown:
                self._lock.wait()
            if not self._pending:
                return None
            due = time.monotonic() + self.batch_delay
            while (len(self._pending) < self.max_batch and not self._flush_now
                   and not self._shutdown):
                left = due - time.monotonic()
                if left <= 0:
                    break
                self._lock.wait(left)
            batch = self._pending[:self.max_batch]
            self._pending = self._pending[self.max_batch:]
            if not self._pending:
                self._flush_now = False
        return [c for c in batch if c.future.set_running_or_notify_cancel()]

    def _flush_loop(self):
        while True:
            batch = self._take_batch()
            if batch is None:
                return
            if not batch:
                continue
            self._slots.acquire()
            try:
                with self._store_lock:
                    handle = self.client.submit(self._build(batch))
            except BaseException as e:
                self._slots.release()
                for c in batch:
                    c.future.set_exception(e)
                continue
            self.jobs_submitted += 1
            w = threading.Thread(target=self._watch, args=(handle, batch),
                                 name=f"cairn-executor-job-{handle.id}", daemon=True)
            with self._lock:
                self._waiters.add(w)
                self._jobs.add(handle)
            w.start()

    # -- a job's watcher: one held wait at a time ---------------------------------
    def _watch(self, handle, calls):
        open_ = {str(i): c for i, c in enumerate(calls)}
        pause = 0.05
        try:
            while open_:
                try:
                    job = handle.wait_once(min(MAX_WAIT_MS, int(self.wait_seconds * 1000)))
                except errors.Unavailable:
                    time.sleep(1.0)  # the master restarting: ask again
                    continue
                state = job.get("state")
                c = job.get("counts") or {}
                if state in FINISHED or c.get("done", 0) + c.get("failed", 0) > 0:
                    self._complete(handle, open_, state in ("done", "cancelled"))
                if open_ and state == "failed":
                    # a failed job is answered at once while its other tasks
                    # still run: pause between reads instead
                    time.sleep(pause)
                    pause = min(self.wait_seconds, pause * 2)
            if self.delete_jobs:
                with self._store_lock:
                    handle.delete()
        except BaseException as e:
            for call in open_.values():
                if not call.future.done():
                    call.future.set_exception(e)
        finally:
            self._slots.release()
            with self._lock:
                self._waiters.discard(threading.current_thread())
                self._jobs.discard(handle)

    def _complete(self, handle, open_, final):
        """Completes the futures of the tasks that ended (all, when the job
        is done or cancelled: final)."""
        def fetch(task_id):
            return lambda name: self._fetch(handle, task_id, name)
        for t in list(handle.results().values()):
            call = open_.get(t.id)
            if call is None:
                continue
            if t.state == "done":
                try:
                    call.future.set_result(_decode_outcome(t, fetch(t.id)))
                except BaseException as e:
                    call.future.set_exception(e)
            elif t.state == "failed" or final:
                why = t.reason or ("the job was cancelled" if final else "failed")
                call.future.set_exception(errors.TaskFailed(
                    f"task {t.id} of job {handle.id}: {why} after {t.attempts} attempts",
                    reason=t.reason, exit_status=t.exit_status,
                    stderr=t.stderr.decode("utf-8", "replace")))
            else:
                continue
            del open_[t.id]

    def _fetch(self, handle, task_id, name):
        q = f"/v1/jobs/{handle.id}/output?task={task_id}&name={name}"
        return self.client._t.request("GET", q).body
