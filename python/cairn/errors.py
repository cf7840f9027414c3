"""errors.py -- the exceptions of the package: one class per cairn_status
(include/cairn/cairn.h), chosen by the code of the master's error body
(``{"error": {"code", "message"}}``, docs/protocol.md) or, for a code of
its own (a refused registration's), by the HTTP status it came with
(common/error.c maps each status to both).

Every exception carries ``status`` (the HTTP status, ``None`` when the
error did not come from the master: a local check of a job file, a network
failure), ``code`` (the wire code) and ``message`` (the master's words, or
the package's)."""


class CairnError(Exception):
    """Base class: an error of the master or of the package."""

    cairn_status = None   # the name of the cairn_status this class stands for
    code = "internal"     # the wire code of that status

    def __init__(self, message, status=None, code=None, method=None, path=None):
        self.message = message
        self.status = status
        if code is not None:
            self.code = code
        self.method = method
        self.path = path
        super().__init__(message)

    def __str__(self):
        where = ""
        if self.method and self.path:
            where = f"{self.method} {self.path}: "
        if self.status is not None:
            where += f"HTTP {self.status}: "
        return where + self.message


class InvalidInput(CairnError):
    """CAIRN_EINVAL (400): malformed, unknown field, cycle, ...; also a job
    file the package's own check refuses before sending it."""
    cairn_status, code = "CAIRN_EINVAL", "bad_request"


class Unauthorized(CairnError):
    """CAIRN_EAUTH (401): missing or wrong credentials."""
    cairn_status, code = "CAIRN_EAUTH", "unauthorized"


class Forbidden(CairnError):
    """CAIRN_EFORBIDDEN (403): authenticated but not allowed."""
    cairn_status, code = "CAIRN_EFORBIDDEN", "forbidden"


class NotFound(CairnError):
    """CAIRN_ENOTFOUND (404): no such job, task or file."""
    cairn_status, code = "CAIRN_ENOTFOUND", "not_found"


class Conflict(CairnError):
    """CAIRN_ECONFLICT (409): the object's state forbids it (cancelling a
    finished job, deleting one whose leases are still out)."""
    cairn_status, code = "CAIRN_ECONFLICT", "conflict"


class TooLarge(CairnError):
    """CAIRN_ETOOBIG (413): over a size cap."""
    cairn_status, code = "CAIRN_ETOOBIG", "too_large"


class Overflow(CairnError):
    """CAIRN_EOVERFLOW (400): an integer overflow of an index type."""
    cairn_status, code = "CAIRN_EOVERFLOW", "overflow"


class Overloaded(CairnError):
    """CAIRN_ENOMEM (503): the master is short of memory."""
    cairn_status, code = "CAIRN_ENOMEM", "overloaded"


class Unavailable(CairnError):
    """CAIRN_EIO (503): a store, file or network failure; also the master
    not reachable at all (status None)."""
    cairn_status, code = "CAIRN_EIO", "unavailable"


class InternalError(CairnError):
    """CAIRN_EINTERNAL (500): a bug, an invariant that does not hold."""
    cairn_status, code = "CAIRN_EINTERNAL", "internal"


class Timeout(CairnError, TimeoutError):
    """CAIRN_ETIMEOUT: a wait ran out of time (JobHandle.wait)."""
    cairn_status, code = "CAIRN_ETIMEOUT", "timeout"


class MasterFailed(CairnError):
    """CAIRN_EFAILED (503): the master's store refused a write; it
    acknowledges nothing more until restarted."""
    cairn_status, code = "CAIRN_EFAILED", "failed"


class RateLimited(CairnError):
    """CAIRN_ERATE (429): too many requests; retry later. ``retry_after``
    is the wait the master named, in seconds (None when none)."""
    cairn_status, code = "CAIRN_ERATE", "rate_limited"
    retry_after = None


class TaskFailed(Exception):
    """A task of the Executor failed on every attempt without running the
    call to its end (killed for a limit, the runner crashed, the job was
    cancelled): ``reason`` (``memory``, ``wall``, ``exit N``, ...),
    ``exit_status`` and ``stderr`` (the tail the worker kept)."""

    def __init__(self, message, reason=None, exit_status=None, stderr=""):
        self.reason = reason
        self.exit_status = exit_status
        self.stderr = stderr
        super().__init__(message)


class RemoteError(Exception):
    """An exception raised on the worker that cannot be rebuilt here (its
    class does not unpickle): its type's name and its message."""

    def __init__(self, type_name, message):
        self.type_name = type_name
        super().__init__(f"{type_name}: {message}")


class RemoteTraceback(Exception):
    """The traceback of an exception raised on a worker, as text: set as
    the ``__cause__`` of the exception ``future.result()`` raises, so that
    Python prints it above the local one."""

    def __init__(self, tb):
        self.tb = tb
        super().__init__(tb)

    def __str__(self):
        return "\n\"\"\"\n" + self.tb.rstrip("\n") + "\n\"\"\""


STATUS_CLASSES = (InvalidInput, Unauthorized, Forbidden, NotFound, Conflict, TooLarge, Overflow,
                  Overloaded, Unavailable, InternalError, Timeout, MasterFailed, RateLimited)
_BY_CODE = {c.code: c for c in STATUS_CLASSES}
# Codes of their own (a refused registration, an account key) by their HTTP
# status; 503 without a known code is the store's (CAIRN_EIO).
_BY_HTTP = {400: InvalidInput, 401: Unauthorized, 403: Forbidden, 404: NotFound, 409: Conflict,
            413: TooLarge, 429: RateLimited, 500: InternalError, 503: Unavailable}


def from_response(status, code, message, method=None, path=None):
    """The exception for an error answer: by its code, else its HTTP status."""
    cls = _BY_CODE.get(code) or _BY_HTTP.get(status)
    if cls is None:
        cls = InternalError if status >= 500 else InvalidInput
    return cls(message, status=status, code=code or cls.code, method=method, path=path)
