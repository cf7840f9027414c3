"""cairn -- Cairn's master from Python (docs/python.md): submit and watch jobs
(Client, Job, JobHandle) and run calls on workers (Executor). Standard
library only; cloudpickle, when installed, lets the Executor send functions
by value."""

from .client import Client, JobHandle, TaskResult, encode_id
from .errors import (CairnError, Conflict, Forbidden, InternalError, InvalidInput, MasterFailed,
                     NotFound, Overflow, Overloaded, RateLimited, RemoteError, RemoteTraceback,
                     TaskFailed, Timeout, TooLarge, Unauthorized, Unavailable)
from .executor import Executor
from .job import Job

# The package's version is Cairn's (include/cairn/cairn.h, CAIRN_VERSION_STRING).
__version__ = "0.1.0"

__all__ = ["Client", "Job", "JobHandle", "TaskResult", "Executor", "encode_id", "CairnError",
           "InvalidInput", "Unauthorized", "Forbidden", "NotFound", "Conflict", "TooLarge",
           "Overflow", "Overloaded", "Unavailable", "InternalError", "Timeout", "MasterFailed",
           "RateLimited", "TaskFailed", "RemoteError", "RemoteTraceback", "__version__"]
