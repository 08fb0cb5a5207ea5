"""fsmem: memory for LLM agents, kept as markdown files in a plain folder.

import fsmem
memory = fsmem.open("memory", create=True)
run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
run.call({"command": "read", "path": "/"})
"""

from fsmem.errors import (
    BadFact,
    BadPath,
    BadPattern,
    BadRequest,
    Busy,
    Conflict,
    EditUnplaced,
    Exists,
    FactSensitive,
    FsmemError,
    ModelError,
    NotFound,
    NotRead,
    NotUnique,
    Protected,
    RequestError,
    RootNotFound,
    ScopeError,
    Sensitive,
    SetupError,
    Storage,
    Timeout,
    TooLarge,
)
from fsmem.levels import Scope, scope_files
from fsmem.memory import Memory, open
from fsmem.tool import Run

__all__ = [
    "BadFact",
    "BadPath",
    "BadPattern",
    "BadRequest",
    "Busy",
    "Conflict",
    "EditUnplaced",
    "Exists",
    "FactSensitive",
    "FsmemError",
    "Memory",
    "ModelError",
    "NotFound",
    "NotRead",
    "NotUnique",
    "Protected",
    "RequestError",
    "RootNotFound",
    "Run",
    "Scope",
    "ScopeError",
    "Sensitive",
    "SetupError",
    "Storage",
    "Timeout",
    "TooLarge",
    "open",
    "scope_files",
]
