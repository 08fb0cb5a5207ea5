"""fsmem: memory for LLM agents, kept as markdown files in a plain folder.

    import fsmem
    memory = fsmem.open("memory", create=True)
    run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
    run.call({"command": "read", "path": "/"})
"""

from fsmem.errors import (
    BadPath,
    BadPattern,
    BadRequest,
    Busy,
    Conflict,
    EditUnplaced,
    Exists,
    FsmemError,
    NotFound,
    NotRead,
    NotUnique,
    Protected,
    RequestError,
    RootNotFound,
    ScopeError,
    Sensitive,
    SetupError,
    Timeout,
    TooLarge,
)
from fsmem.levels import Scope, scope_files
from fsmem.memory import Memory, open
from fsmem.tool import Run

__all__ = [
    "open",
    "Memory",
    "Run",
    "Scope",
    "scope_files",
    "FsmemError",
    "RequestError",
    "SetupError",
    "BadRequest",
    "NotFound",
    "BadPath",
    "Protected",
    "Exists",
    "Conflict",
    "NotRead",
    "TooLarge",
    "Sensitive",
    "EditUnplaced",
    "NotUnique",
    "BadPattern",
    "Timeout",
    "Busy",
    "RootNotFound",
    "ScopeError",
]
