"""job.py -- building a job file (docs/jobs.md) and checking it before it is
sent: the same rules the master's parser applies (plan/jobspec.c,
common/taskrun.c, common/resources.c, common/outputs.c), with its messages,
so that a bad job is refused here, naming the task or field, without a
round trip. The master checks again whatever it is sent; its ceilings on
limits (cairn-server --max-*-seconds, ...) are known only to it.

Job.check() costs O(T + E) for T tasks and E edges (the cycle check is a
topological sort)."""

import copy
import fnmatch
import re

from .errors import InvalidInput

MAX_NAME = 256
MAX_ARGS = 256
MAX_ARG_LEN = 4096
MAX_PARENTS = 4096
MAX_TASKS = 2000000
MAX_REPLICATION = 16
MAX_LEASE_SECONDS = 30 * 24 * 3600
MAX_ATTEMPTS = 1000
MAX_PRIORITY = 1000000000
MAX_RESOURCE_CLASSES = 64
MAX_CORES = 4096
MAX_RES_MIB = 1 << 30
MAX_CATEGORIES = 64  # a job's category labels, its own ("") included
MAX_CATEGORY_LEN = 64
LIMIT_NAMES = ("wall_seconds", "cpu_seconds", "memory_mib", "disk_mib", "output_mib")
LIMIT_MAX = (1 << 31) - 1
MAX_ENV = 64
MAX_ENV_BYTES = 32 * 1024
MAX_OUTPUT_PATTERNS = 64
MAX_OUTPUT_NAME = 1024
MAX_OUTPUT_MIB = 1024 * 1024

JOB_KEYS = ("name", "app", "app_version", "policy", "replication", "quorum", "lease_seconds",
            "max_attempts", "priority", "files", "tasks", "resources", "limits", "env", "stdin",
            "network", "outputs", "validator", "adaptive", "keep", "category", "retry_larger")
TASK_KEYS = ("id", "args", "inputs", "after", "resources", "limits", "env", "stdin", "network",
             "outputs", "category", "retry_larger")
FILE_KEYS = ("name", "path", "sha256", "size", "broadcast")

# common/taskrun.c: names a job may not set, whole, then by prefix.
DENIED_ENV = frozenset((
    "GCONV_PATH", "GETCONF_DIR", "GLIBC_TUNABLES", "HOSTALIASES", "LOCALDOMAIN", "LOCPATH",
    "NIS_PATH", "NLSPATH", "RES_OPTIONS", "TZDIR", "ENV", "SHELLOPTS", "BASHOPTS", "PS1", "PS2",
    "PS3", "PS4", "PROMPT_COMMAND", "IFS", "CDPATH", "GLOBIGNORE", "FPATH", "ZDOTDIR", "SHELL",
    "NODE_OPTIONS", "NODE_PATH", "CLASSPATH", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS", "TCLLIBPATH", "PHPRC", "PHP_INI_SCAN_DIR", "R_PROFILE", "R_PROFILE_USER",
    "R_ENVIRON", "R_ENVIRON_USER", "R_LIBS", "R_LIBS_USER", "R_LIBS_SITE", "JULIA_LOAD_PATH",
    "JULIA_DEPOT_PATH", "GEM_HOME", "GEM_PATH", "OPENSSL_CONF", "OPENSSL_ENGINES",
    "OPENSSL_MODULES", "SSH_ASKPASS", "EDITOR", "VISUAL", "PAGER", "LESSOPEN", "LESSCLOSE",
    "PATH", "HOME", "TMPDIR"))
DENIED_ENV_PREFIXES = ("LD_", "DYLD_", "MALLOC_", "RESOLV_", "BASH_", "PYTHON", "PERL", "RUBY",
                       "LUA_", "GIT_", "XDG_")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SHA256 = re.compile(r"[0-9a-f]{64}\Z")


def _fail(msg):
    raise InvalidInput(msg)


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _name_ok(s):
    return (isinstance(s, str) and 0 < len(s.encode()) <= MAX_NAME
            and not any(ord(c) < 0x20 for c in s))


def output_name_ok(name):
    """common/outputs.c: a relative path without '.', '..' or empty parts,
    no control byte, at most 1,024 bytes."""
    if not isinstance(name, str) or not name or len(name.encode()) > MAX_OUTPUT_NAME:
        return False
    if name.startswith("/") or any(ord(c) < 0x20 or ord(c) == 0x7f for c in name):
        return False
    return all(p not in ("", ".", "..") for p in name.split("/"))


def _glob(name):
    return any(c in name for c in "*?[")


def _glob_ok(name):
    """Brackets close and no backslash (the master refuses both)."""
    if "\\" in name:
        return False
    i = 0
    while i < len(name):
        if name[i] == "[":
            j = i + 1
            if j < len(name) and name[j] in "!^":
                j += 1
            if j < len(name) and name[j] == "]":
                j += 1
            while j < len(name) and name[j] != "]":
                j += 1
            if j >= len(name):
                return False
            i = j
        i += 1
    return True


def output_match(pattern, name):
    """fnmatch(3) with FNM_PATHNAME | FNM_PERIOD: a wildcard matches neither
    '/' nor a leading '.' of a part."""
    if not _glob(pattern):
        return pattern == name
    pp, np_ = pattern.split("/"), name.split("/")
    if len(pp) != len(np_):
        return False
    for p, n in zip(pp, np_):
        if n.startswith(".") and not p.startswith("."):
            return False
        if not fnmatch.fnmatchcase(n, p):
            return False
    return True


def _outputs(v, where):
    if not isinstance(v, list) or len(v) > MAX_OUTPUT_PATTERNS:
        _fail(f"{where}: \"outputs\" must be an array of at most {MAX_OUTPUT_PATTERNS} entries")
    names = []
    for k, e in enumerate(v):
        name = e
        if isinstance(e, dict):
            extra = set(e) - {"name", "max_mib"}
            if extra:
                _fail(f"{where}: outputs[{k}]: unknown field \"{sorted(extra)[0]}\"")
            name = e.get("name")
            if "max_mib" in e and (not _is_int(e["max_mib"])
                                   or not 1 <= e["max_mib"] <= MAX_OUTPUT_MIB):
                _fail(f"{where}: outputs[{k}]: \"max_mib\" must be an integer from 1 to "
                      f"{MAX_OUTPUT_MIB}")
        if not output_name_ok(name):
            _fail(f"{where}: outputs[{k}]: {name!r} is not a relative path without '.', '..' "
                  "or empty parts")
        if _glob(name) and not _glob_ok(name):
            _fail(f"{where}: outputs[{k}]: {name!r}: a bracket does not close, or a backslash")
        if name in names:
            _fail(f"{where}: outputs[{k}]: {name!r} is listed twice")
        names.append(name)
    return names


def _limits(v, where):
    if not isinstance(v, dict):
        _fail(f"{where}: \"limits\" must be an object")
    for key, n in v.items():
        if key not in LIMIT_NAMES:
            _fail(f"{where}: limits: unknown field \"{key}\" ({', '.join(LIMIT_NAMES)})")
        if not _is_int(n) or not 1 <= n <= LIMIT_MAX:
            _fail(f"{where}: limits.{key} must be an integer from 1 to {LIMIT_MAX}")


def _env(v, where):
    if not isinstance(v, dict):
        _fail(f"{where}: \"env\" must be an object of strings")
    size = 0
    for name, value in v.items():
        if not _ENV_NAME.match(name) or name.startswith("CAIRN_"):
            _fail(f"{where}: env: bad variable name \"{name[:64]}\" (want "
                  "[A-Za-z_][A-Za-z0-9_]*, not CAIRN_*)")
        if name in DENIED_ENV or name.startswith(DENIED_ENV_PREFIXES):
            _fail(f"{where}: env: {name} may not be set by a job (it would make the loader, a "
                  "shell or an interpreter run code or read files the job chooses, or the "
                  "worker sets it; docs/security.md)")
        if not isinstance(value, str) or "\0" in value:
            _fail(f"{where}: env.{name} must be a string without NUL")
        size += len(name.encode()) + len(value.encode()) + 2
    if len(v) > MAX_ENV:
        _fail(f"{where}: \"env\" has more than {MAX_ENV} variables")
    if size > MAX_ENV_BYTES:
        _fail(f"{where}: \"env\" exceeds {MAX_ENV_BYTES} bytes (NAME=VALUE each)")


def _sizing(obj, where, sizing, categories):
    """A job's or task's "resources": "auto", "retry_larger" and
    "category" (docs/jobs.md, "Automatic sizes") on top of sizing, a dict
    {"auto", "retry_larger", "category"}; categories: the labels seen."""
    out = dict(sizing)
    res = obj.get("resources")
    if res == "auto":
        out["auto"] = True
    elif "resources" in obj and not isinstance(res, dict):
        _fail(f"{where}: \"resources\" must be \"auto\" or an object with \"cores\", "
              "\"memory_mib\" and/or \"disk_mib\"")
    elif "resources" in obj:
        out["auto"] = False
    if "retry_larger" in obj:
        if not isinstance(obj["retry_larger"], bool):
            _fail(f"{where}: \"retry_larger\" must be true or false")
        out["retry_larger"] = obj["retry_larger"]
    if "category" in obj:
        c = obj["category"]
        if (not isinstance(c, str) or not 0 < len(c) <= MAX_CATEGORY_LEN
                or any(not 0x20 <= ord(ch) <= 0x7e for ch in c)):
            _fail(f"{where}: \"category\" must be 1 to {MAX_CATEGORY_LEN} printable ASCII "
                  "characters")
        if c not in categories:
            if len(categories) == MAX_CATEGORIES:
                _fail(f"{where}: a job may have at most {MAX_CATEGORIES - 1} categories")
            categories.append(c)
        out["category"] = c
    return out


def _resources(v, where, base):
    if not isinstance(v, dict):
        _fail(f"{where}: \"resources\" must be \"auto\" or an object with \"cores\", "
              "\"memory_mib\" and/or \"disk_mib\"")
    out = dict(base)
    for key, n in v.items():
        lo, hi = {"cores": (1, MAX_CORES), "memory_mib": (0, MAX_RES_MIB),
                  "disk_mib": (0, MAX_RES_MIB)}.get(key, (None, None))
        if lo is None:
            _fail(f"{where}: resources: unknown field \"{key}\" (cores, memory_mib, disk_mib)")
        if not _is_int(n) or not lo <= n <= hi:
            _fail(f"{where}: resources.{key} must be an integer from {lo} to {hi}")
        out[key] = n
    return out


def _run(obj, where):
    """limits, env, stdin, network of the job or of a task."""
    if "network" in obj and not isinstance(obj["network"], bool):
        _fail(f"{where}: \"network\" must be true or false")
    if "limits" in obj:
        _limits(obj["limits"], where)
    if "env" in obj:
        _env(obj["env"], where)
    if "stdin" in obj and (not isinstance(obj["stdin"], str) or not obj["stdin"]
                           or "\0" in obj["stdin"]):
        _fail(f"{where}: \"stdin\" must name one of its inputs")


def _job_fields(d):
    for key in d:
        if key not in JOB_KEYS:
            _fail(f"job: unknown field \"{key}\"")
    for key in ("name", "app", "app_version", "policy"):
        if key in d and not _name_ok(d[key]):
            _fail(f"job: \"{key}\" must be a non-empty string of at most {MAX_NAME} bytes")
    if "app" not in d:
        _fail("job: missing \"app\"")
    ints = {"replication": (1, 1, MAX_REPLICATION), "quorum": (1, 1, MAX_REPLICATION),
            "lease_seconds": (300, 1, MAX_LEASE_SECONDS), "max_attempts": (5, 1, MAX_ATTEMPTS),
            "priority": (0, -MAX_PRIORITY, MAX_PRIORITY)}
    got = {}
    for key, (default, lo, hi) in ints.items():
        v = d.get(key, default)
        if not _is_int(v) or not lo <= v <= hi:
            _fail(f"job: \"{key}\" must be an integer from {lo} to {hi}")
        got[key] = v
    if got["quorum"] > got["replication"]:
        _fail(f"job: quorum ({got['quorum']}) exceeds replication ({got['replication']})")
    if "adaptive" in d:
        if not isinstance(d["adaptive"], bool):
            _fail("job: \"adaptive\" must be true or false")
        if d["adaptive"] and got["quorum"] < 2:
            _fail(f"job: \"adaptive\" needs a quorum of at least 2 (it is {got['quorum']}): "
                  "with 1, every task already runs once")
    if "keep" in d and d["keep"] not in ("master", "workers"):
        _fail("job: \"keep\" must be \"master\" or \"workers\"")
    if "policy" in d and d["policy"] not in ("ic", "fifo", "random"):
        _fail(f"job: unknown policy \"{d['policy']}\"")


def _files(files, client_mode):
    if not isinstance(files, list):
        _fail("job: \"files\" must be an array")
    names = set()
    for i, f in enumerate(files):
        where = f"files[{i}]"
        if not isinstance(f, dict):
            _fail(f"{where}: must be an object")
        for key in f:
            if key not in FILE_KEYS:
                _fail(f"{where}: unknown field \"{key}\"")
        if "name" not in f:
            _fail(f"{where}: missing \"name\"")
        name = f["name"]
        if not _name_ok(name):
            _fail(f"{where}: \"name\" must be a non-empty string of at most {MAX_NAME} bytes")
        if "/" in name or name in (".", ".."):
            _fail(f"file \"{name}\": the name must not contain '/' or be \".\" or \"..\" "
                  "(it names inputs/NAME in the worker's task directory)")
        if "sha256" in f:
            if not isinstance(f["sha256"], str) or not _SHA256.match(f["sha256"]):
                _fail(f"file \"{name}\": \"sha256\" must be 64 lowercase hex digits")
        elif "path" not in f:
            _fail(f"{where}: missing \"path\"" if client_mode
                  else f"file \"{name}\": missing \"sha256\" (upload it first)")
        if "path" in f and (not isinstance(f["path"], str) or not f["path"]):
            _fail(f"{where}: \"path\" must be a non-empty string")
        if "size" in f and (not _is_int(f["size"]) or f["size"] < 0):
            _fail(f"file \"{name}\": \"size\" must be a non-negative integer")
        if "broadcast" in f and not isinstance(f["broadcast"], bool):
            _fail(f"file \"{name}\": \"broadcast\" must be true or false")
        if name in names:
            _fail(f"file \"{name}\" is listed twice")
        names.add(name)
    return names


def check(d, client_mode=True):
    """Checks the job file d (a dict), raising InvalidInput naming the task
    or field at fault. client_mode: a file may give a "path" to upload
    instead of its "sha256" (what Client.submit sends has sha256 only)."""
    if not isinstance(d, dict):
        _fail("job: must be a JSON object")
    _job_fields(d)
    default = {"cores": 1, "memory_mib": 0, "disk_mib": 0}
    categories = [""]
    job_sizing = _sizing(d, "job", {"auto": False, "retry_larger": False, "category": ""},
                         categories)
    base = default
    if "resources" in d and not job_sizing["auto"]:
        base = _resources(d["resources"], "job", base)
    files = _files(d.get("files", []), client_mode)
    _run(d, "job")
    if "stdin" in d and d["stdin"] not in files:
        _fail(f"job: stdin \"{d['stdin'][:256]}\" is not in \"files\"")
    default_outputs = _outputs(d["outputs"], "job") if "outputs" in d else []
    tasks = d.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        _fail("job: \"tasks\" must be a non-empty array")
    if len(tasks) > MAX_TASKS:
        _fail(f"job: {len(tasks)} tasks exceed the limit of {MAX_TASKS}")
    index, outputs, classes = {}, [], []
    for i, t in enumerate(tasks):
        if not isinstance(t, dict):
            _fail(f"tasks[{i}]: must be an object")
        if "id" not in t:
            _fail(f"tasks[{i}]: missing \"id\"")
        tid = t["id"]
        if not _name_ok(tid):
            _fail(f"tasks[{i}]: \"id\" must be a non-empty string of at most {MAX_NAME} bytes")
        tw = f"task \"{tid}\""
        for key in t:
            if key not in TASK_KEYS:
                _fail(f"{tw}: unknown field \"{key}\"")
        args = t.get("args", [])
        if not isinstance(args, list) or len(args) > MAX_ARGS:
            _fail(f"{tw}: \"args\" must be an array of at most {MAX_ARGS} strings")
        for k, a in enumerate(args):
            if not isinstance(a, str) or len(a.encode()) > MAX_ARG_LEN or "\0" in a:
                _fail(f"{tw}: args[{k}] must be a string of at most {MAX_ARG_LEN} bytes "
                      "without NUL")
        inputs = t.get("inputs", [])
        if not isinstance(inputs, list) or len(inputs) > MAX_ARGS:
            _fail(f"{tw}: \"inputs\" must be an array of file names")
        seen = set()
        for a in inputs:
            if isinstance(a, str) and "/" in a:
                continue  # a parent's output file: checked once the parents are known
            if not isinstance(a, str) or a not in files:
                _fail(f"{tw}: input {a if isinstance(a, str) else '(not a string)'} is not in "
                      "\"files\"")
            if a in seen:
                _fail(f"{tw}: input {a} is listed twice")
            seen.add(a)
        _run(t, tw)
        stdin = t.get("stdin", d.get("stdin"))
        if stdin is not None and stdin not in seen:
            _fail(f"{tw}: stdin \"{stdin[:256]}\" is not one of its inputs")
        env = dict(d.get("env", {}))
        env.update(t.get("env", {}))
        _env(env, tw)
        sizing = _sizing(t, tw, job_sizing, categories)
        if sizing["auto"]:
            res = default  # its class: the least it can ask (the master sizes it)
        else:
            res = _resources(t["resources"], tw, base) if "resources" in t else base
        if res not in classes:
            if len(classes) == MAX_RESOURCE_CLASSES:
                _fail(f"{tw}: a job may make at most {MAX_RESOURCE_CLASSES} distinct resource "
                      "requests")
            classes.append(res)
        outputs.append(_outputs(t["outputs"], tw) if "outputs" in t else default_outputs)
        if tid in index:
            _fail(f"task \"{tid}\": duplicate id")
        index[tid] = i
    parents = _dag(tasks, index)
    for i, t in enumerate(tasks):
        _pins(t, [tasks[p]["id"] for p in parents[i]], parents[i], outputs)


def _dag(tasks, index):
    """Parents of each task by index; refuses unknown or repeated parents
    and cycles (Kahn's algorithm, O(T + E))."""
    parents = []
    children = [[] for _ in tasks]
    for i, t in enumerate(tasks):
        after = t.get("after", [])
        tw = f"task \"{t['id']}\""
        if not isinstance(after, list) or len(after) > MAX_PARENTS:
            _fail(f"{tw}: \"after\" must be an array of task ids")
        ps = []
        for p in after:
            if not isinstance(p, str) or p not in index:
                _fail(f"{tw}: unknown parent " + (f"\"{p}\"" if isinstance(p, str)
                                                   else "(not a string)"))
            if index[p] in ps:
                _fail(f"{tw}: parent \"{p}\" is listed twice")
            ps.append(index[p])
            children[index[p]].append(i)
        parents.append(ps)
    indegree = [len(ps) for ps in parents]
    ready = [i for i, n in enumerate(indegree) if n == 0]
    done = 0
    while ready:
        i = ready.pop()
        done += 1
        for c in children[i]:
            indegree[c] -= 1
            if indegree[c] == 0:
                ready.append(c)
    if done < len(tasks):
        bad = next(i for i, n in enumerate(indegree) if n > 0)
        _fail(f"task \"{tasks[bad]['id']}\": lies on a dependency cycle")
    return parents


def _pins(t, parent_ids, parent_idx, outputs):
    """Inputs PARENT_ID/NAME: the longest parent id that is a prefix, and
    NAME among that parent's outputs."""
    tw = f"task \"{t['id']}\""
    seen = set()
    for s in t.get("inputs", []):
        if "/" not in s:
            continue
        best, best_id = -1, ""
        for pid, p in zip(parent_ids, parent_idx):
            if len(best_id) < len(pid) < len(s) and s[len(pid)] == "/" and s.startswith(pid):
                best, best_id = p, pid
        if best < 0:
            _fail(f"{tw}: input \"{s}\" names no parent: PARENT_ID/NAME needs PARENT_ID in "
                  "\"after\"")
        file = s[len(best_id) + 1:]
        if not output_name_ok(file) or not any(output_match(p, file) for p in outputs[best]):
            _fail(f"{tw}: input \"{s}\": \"{file}\" is not among the \"outputs\" of task "
                  f"\"{best_id}\"")
        if s in seen:
            _fail(f"{tw}: input {s} is listed twice")
        seen.add(s)


class Job:
    """A job file being built: ``Job(name, app=...)``, then ``file()`` and
    ``task()``; ``Client.submit(job)`` checks it, uploads its files and
    sends it. Every other field of docs/jobs.md is a keyword argument
    (``policy``, ``replication``, ``quorum``, ``lease_seconds``,
    ``max_attempts``, ``priority``, ``validator``, ``resources``,
    ``limits``, ``env``, ``stdin``, ``network``, ``outputs``, ``keep``,
    ``adaptive``, ``app_version``, ``category``, ``retry_larger``);
    ``resources="auto"`` lets the master size the tasks (docs/jobs.md,
    "Automatic sizes")."""

    def __init__(self, name="job", app=None, **fields):
        for key in fields:
            if key not in JOB_KEYS or key in ("name", "app", "files", "tasks"):
                raise InvalidInput(f"job: unknown field \"{key}\"")
        self.fields = {"name": name}
        if app is not None:
            self.fields["app"] = app
        self.fields.update(copy.deepcopy(fields))
        self.files = []
        self.tasks = []

    def file(self, name, path=None, sha256=None, size=None, broadcast=False):
        """Adds input file name: a local path (uploaded by Client.submit)
        or the sha256 (and size) of a file uploaded already. Returns name,
        for a task's inputs."""
        f = {"name": name}
        if path is not None:
            f["path"] = str(path)
        if sha256 is not None:
            f["sha256"] = sha256
        if size is not None:
            f["size"] = size
        if broadcast:
            f["broadcast"] = True
        self.files.append(f)
        return name

    def task(self, id, args=(), after=(), inputs=(), outputs=None, limits=None, resources=None,
             env=None, stdin=None, network=None, category=None, retry_larger=None):
        """Adds a task; returns its id, for another task's after.
        outputs None takes the job's; [] declares none. resources: a dict,
        or "auto" (the master sizes it, per category: docs/jobs.md,
        "Automatic sizes"); retry_larger: True retries it at twice its
        memory (disk) after a kill for memory (disk)."""
        t = {"id": id}
        if args:
            t["args"] = [str(a) if isinstance(a, (int, float)) and not isinstance(a, bool)
                         else a for a in args]
        if after:
            t["after"] = list(after)
        if inputs:
            t["inputs"] = list(inputs)
        if outputs is not None:
            t["outputs"] = copy.deepcopy(list(outputs))
        if isinstance(resources, str):
            t["resources"] = resources  # "auto"; anything else is refused by check()
            resources = None
        for key, v in (("limits", limits), ("resources", resources), ("env", env)):
            if v:
                t[key] = dict(v)
        if category is not None:
            t["category"] = category
        if retry_larger is not None:
            t["retry_larger"] = retry_larger
        if stdin is not None:
            t["stdin"] = stdin
        if network is not None:
            t["network"] = network
        self.tasks.append(t)
        return id

    def to_dict(self):
        """The job file as a dict (files still with their local path)."""
        d = copy.deepcopy(self.fields)
        if self.files:
            d["files"] = copy.deepcopy(self.files)
        d["tasks"] = copy.deepcopy(self.tasks)
        return d

    def check(self):
        """Raises InvalidInput naming what is wrong; returns self."""
        check(self.to_dict(), client_mode=True)
        return self
