"""client.py -- a master's admin API from Python: cairn.Client submits jobs
(docs/jobs.md) and returns a JobHandle, which waits for the job with the
master's held wait (GET /v1/jobs/{id}?wait=MS, docs/protocol.md), reads
its tasks page by page, downloads output files checking their SHA-256,
and cancels, deletes or re-prioritises it. A Client may be shared between
threads: each thread keeps its own keep-alive connection (_http.py)."""

import base64
import os
import re
import time
import urllib.parse

from . import errors
from ._http import Transport
from .job import Job, check, output_name_ok

# The master holds a job wait at most this long (docs/protocol.md).
MAX_WAIT_MS = 60000
# Tasks per page of GET /v1/jobs/{id}/tasks (the master's largest page).
PAGE = 10000
# How long delete() asks again while the job's leases end (cairn delete's).
DELETE_WAIT_SECONDS = 120
FINISHED = ("done", "failed", "cancelled")

_SAFE_ID = re.compile(rb"[A-Za-z0-9._,=+-]")


def encode_id(task_id):
    """A task id as a worker's parents/ID and `cairn results --dir` write
    it: every byte outside [A-Za-z0-9._,=+-] as %XX, "." and ".." as
    %2E and %2E%2E (docs/protocol.md, "Worker task directory")."""
    if task_id == ".":
        return "%2E"
    if task_id == "..":
        return "%2E%2E"
    return "".join(chr(b) if _SAFE_ID.match(bytes([b])) else "%%%02X" % b
                   for b in task_id.encode())


def _decode(text, encoding):
    if text is None:
        return b""
    if encoding == "base64":
        return base64.b64decode(text)
    return text.encode()


class TaskResult:
    """One task of a job as GET /v1/jobs/{id}/tasks lists it: id, key,
    state, attempts, exit_status, reason, volunteer, index, output and
    stderr (bytes, decoded from base64 where the master sent them so),
    outputs (the files: dicts of name, sha256, size, kept?), progress,
    and what its worker measured of that run: usage (a dict of
    memory_bytes, disk_bytes, wall_seconds, each when measured; {} when
    none) and cpu_seconds (None when not reported). ``text`` is the output
    as a str."""

    __slots__ = ("id", "key", "state", "attempts", "exit_status", "reason", "volunteer",
                 "index", "output", "stderr", "outputs", "progress", "usage", "cpu_seconds")

    def __init__(self, t):
        self.id = t.get("id")
        self.key = t.get("key")
        self.state = t.get("state")
        self.attempts = t.get("attempts")
        self.exit_status = t.get("exit_status")
        self.reason = t.get("reason")
        self.volunteer = t.get("volunteer")
        self.index = t.get("index")
        self.output = _decode(t.get("output"), t.get("encoding"))
        self.stderr = _decode(t.get("stderr"), t.get("stderr_encoding"))
        self.outputs = t.get("outputs") or []
        self.progress = t.get("progress")
        self.usage = t.get("usage") or {}
        self.cpu_seconds = t.get("cpu_seconds")

    @property
    def text(self):
        return self.output.decode("utf-8", "replace")

    def __repr__(self):
        return (f"TaskResult(id={self.id!r}, state={self.state!r}, "
                f"exit_status={self.exit_status!r}, output={self.output[:40]!r})")


class JobHandle:
    """A submitted job: ``id`` and what the master does with it."""

    def __init__(self, client, job_id, tasks=None):
        self.client = client
        self.id = int(job_id)
        self.ntasks = tasks

    def __repr__(self):
        return f"JobHandle(id={self.id})"

    def _path(self, tail=""):
        return f"/v1/jobs/{self.id}{tail}"

    def status(self):
        """The job (GET /v1/jobs/{id}): state, counts, priority, ..."""
        return self.client.get(self._path())

    def wait_once(self, ms):
        """One held wait: the job as it is once it changed state or ms
        (0 to 60,000) passed (GET /v1/jobs/{id}?wait=MS)."""
        ms = max(0, min(int(ms), MAX_WAIT_MS))
        return self.client._t.json("GET", self._path(f"?wait={ms}"),
                                   timeout=ms / 1000.0 + self.client.timeout)

    def wait(self, timeout=None):
        """Waits until the job is done, failed or cancelled and returns it
        (a dict, as status()); raises cairn.Timeout after timeout seconds
        (None: no limit). Each request asks the master to hold it until the
        job's state changes, at most 60 s; an answer that comes back early
        with the job running (an older master, or one past its
        --max-job-waits) is followed by a pause of 50 ms doubling to 1 s."""
        until = None if timeout is None else time.monotonic() + timeout
        pause = 0.05
        while True:
            left = MAX_WAIT_MS / 1000.0 if until is None else until - time.monotonic()
            if left <= 0:
                raise errors.Timeout(f"job {self.id} still running after {timeout} s")
            ms = min(MAX_WAIT_MS, int(left * 1000) + 1)
            asked = time.monotonic()
            j = self.wait_once(ms)
            if j.get("state") in FINISHED:
                return j
            if time.monotonic() - asked < ms / 1000.0 * 0.9:
                time.sleep(min(pause, max(0.0, left)))
                pause = min(1.0, pause * 2)

    def tasks(self, limit=PAGE):
        """Every task of the job in job-file order, as the dicts of
        GET /v1/jobs/{id}/tasks: a generator reading one page of at most
        limit tasks at a time."""
        after = None
        while True:
            q = f"?limit={limit}" + (f"&after={after}" if after is not None else "")
            page = self.client.get(self._path("/tasks" + q))
            yield from page.get("tasks", [])
            nxt = page.get("next")
            if nxt is None:
                return
            if after is not None and nxt <= after:
                raise errors.InternalError(f"job {self.id}: the task pages do not advance")
            after = nxt

    def task(self, key):
        """One task with the history of its allocations (its numeric key)."""
        return self.client.get(self._path(f"/tasks/{int(key)}"))

    def results(self):
        """{task id: TaskResult} for every task, in job-file order."""
        return {t["id"]: TaskResult(t) for t in self.tasks()}

    def download(self, task, name, path, sha256=None):
        """Output file name of task (its id) into path, through a temporary
        file renamed once whole; its SHA-256 checked against sha256 when
        given. Returns (sha256, size). NotFound while the task is not done,
        or when the file is kept on workers (docs/jobs.md, "Where outputs
        stay")."""
        q = urllib.parse.urlencode({"task": task, "name": name}, quote_via=urllib.parse.quote)
        return self.client._t.download(self._path("/output?" + q), path, sha256)

    def download_all(self, folder):
        """Every output file of every done task into FOLDER/TASK/NAME (TASK
        encoded as encode_id does, as `cairn results --dir` does), each
        checked against the SHA-256 the master lists. Returns {"files":
        [paths], "bytes": N, "kept": [(task, name)]}: "kept" are the files
        kept on workers, which the master cannot serve."""
        out = {"files": [], "bytes": 0, "kept": []}
        os.makedirs(folder, exist_ok=True)
        for t in self.tasks():
            if t.get("state") != "done":
                continue
            for f in t.get("outputs") or []:
                name = f.get("name")
                if not output_name_ok(name):
                    raise errors.InvalidInput(f"the master named an output file that is no "
                                              f"safe relative path: {name!r}")
                if f.get("kept"):
                    out["kept"].append((t["id"], name))
                    continue
                dest = os.path.join(folder, encode_id(t["id"]), name)
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                _, size = self.download(t["id"], name, dest, f.get("sha256"))
                out["files"].append(dest)
                out["bytes"] += size
        return out

    def cancel(self):
        """Cancels the job (POST /v1/jobs/{id}/cancel): the answer, with
        "already" true when it was cancelled before; Conflict when it is
        done or failed."""
        return self.client.post(self._path("/cancel"), {})

    def delete(self, purge=False, wait=DELETE_WAIT_SECONDS):
        """Deletes the job (a running one is cancelled first), asking again
        while its leases end (409), for at most wait seconds; the master's
        account of what went."""
        until = time.monotonic() + wait
        path = self._path("?purge=1" if purge else "")
        while True:
            try:
                return self.client._t.json("DELETE", path)
            except errors.Conflict:
                if time.monotonic() >= until:
                    raise
                time.sleep(0.5)

    def set_priority(self, priority):
        """Sets the job's priority (POST /v1/jobs/{id}/priority)."""
        return self.client.post(self._path("/priority"), {"priority": int(priority)})


class Client:
    """A master's admin API. url defaults to $CAIRN_SERVER, token to
    $CAIRN_ADMIN_TOKEN, ca_file (the CA certificate to trust for https) to
    $CAIRN_CA_FILE; timeout is the read timeout of a request, in seconds
    (a held wait adds its own length)."""

    def __init__(self, url=None, token=None, ca_file=None, timeout=60.0):
        url = url or os.environ.get("CAIRN_SERVER")
        if not url:
            raise errors.InvalidInput("no server: give url= or set CAIRN_SERVER")
        if token is None:
            token = os.environ.get("CAIRN_ADMIN_TOKEN") or None
        if ca_file is None:
            ca_file = os.environ.get("CAIRN_CA_FILE") or None
        self.url = url
        self.timeout = timeout
        self._t = Transport(url, token, ca_file, timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Closes every connection of every thread."""
        self._t.close()

    # -- plain routes ----------------------------------------------------------
    def get(self, path):
        """GET path (e.g. "/v1/demand"): the answer's JSON."""
        return self._t.json("GET", path)

    def post(self, path, body=None):
        return self._t.json("POST", path, {} if body is None else body)

    def request(self, method, path, body=None):
        """Any route: the answer's JSON (None for an empty body)."""
        return self._t.json(method, path, body)

    def jobs(self):
        """Every job (GET /v1/jobs)."""
        return self.get("/v1/jobs")["jobs"]

    def job(self, job_id):
        """A handle on job job_id, submitted earlier."""
        return JobHandle(self, job_id)

    # -- files and jobs --------------------------------------------------------
    def upload(self, path):
        """Uploads the file at path (PUT /v1/files/{sha256}): (sha256, size)."""
        return self._t.upload_file(path)

    def upload_bytes(self, data):
        return self._t.upload_bytes(data)

    def submit(self, job):
        """Checks job (a Job, or a job file's dict), uploads each file given
        by its path, submits it (POST /v1/jobs) and returns its JobHandle.
        InvalidInput names what is wrong, before anything is sent when the
        package's own check finds it, else in the master's words."""
        d = job.to_dict() if isinstance(job, Job) else dict(job)
        check(d, client_mode=True)
        files = []
        for f in d.get("files", []):
            f = dict(f)
            if "sha256" not in f:
                path = f.pop("path")
                try:
                    f["sha256"], f["size"] = self.upload(path)
                except OSError as e:
                    raise errors.InvalidInput(f"file \"{f['name']}\": cannot read {path}: "
                                              f"{e.strerror or e}") from e
            f.pop("path", None)
            files.append(f)
        if files:
            d["files"] = files
        r = self._t.json("POST", "/v1/jobs", d, timeout=max(self.timeout, 120.0))
        return JobHandle(self, r["id"], r.get("tasks"))
