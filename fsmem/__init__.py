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
    Storage,
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
    Timeout,
    TooLarge,
)
from typing import TYPE_CHECKING as _TYPE_CHECKING

if _TYPE_CHECKING:
    from fsmem.levels import Scope, scope_files
    from fsmem.memory import Memory, open
    from fsmem.tool import Run

# Loaded on first use, so `fsmem search` from the shell (which imports the `fsmem` package) does not
# pay for the drive, the tool, the schema and their dependencies.
_LAZY = {"Scope": "fsmem.levels", "scope_files": "fsmem.levels", "Memory": "fsmem.memory",
         "open": "fsmem.memory", "Run": "fsmem.tool"}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'fsmem' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

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
    "Storage",
    "RootNotFound",
    "ScopeError",
    "FactSensitive",
    "BadFact",
    "ModelError",
]
