"""fsmem: memory for LLM agents, kept as markdown files in a plain folder.

import fsmem
memory = fsmem.open("memory", create=True)
run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
run.call({"command": "read", "path": "/"})

This module is the public face: what `__all__` names (with `fsmem.cli`, `fsmem.mcp_server`,
`fsmem.claude_memory` and `fsmem.harness`). Every other module is private (`fsmem/_name.py`, `fsmem/_name/`).
"""

import importlib as _importlib

TYPE_CHECKING = False  # typing itself costs a cold shell 2 ms
if TYPE_CHECKING:
    from fsmem._core.due import review_due
    from fsmem._errors import (
        BadFact,
        BadPath,
        BadPattern,
        BadProposal,
        BadRequest,
        BadSkill,
        BadStore,
        Busy,
        Conflict,
        EditUnplaced,
        Exists,
        FactSensitive,
        FsmemError,
        LevelParked,
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
        Unsupported,
    )
    from fsmem._llm.model import ModelSettings
    from fsmem._llm.openai import OpenAICompatibleModel, build_model
    from fsmem._memory.levels import Scope, scope_files
    from fsmem._memory.memory import Memory, open
    from fsmem._memory.prompts import memory_section
    from fsmem._memory.review import consolidate, review
    from fsmem._memory.tool import Run

# Every name is bound on its first use, from the module that defines it, so a command loads only what
# it uses: a shell a resident answers not even the errors, `fsmem --help` no memory at all, a cold
# `fsmem search` neither the model clients (http.client, ssl, email) nor the tool's rules, the
# prompts or the review. A name of `__all__` the table does not hold is an error's, of fsmem._errors.
_DEFINED_IN = {
    "Memory": "fsmem._memory.memory",
    "ModelSettings": "fsmem._llm.model",
    "OpenAICompatibleModel": "fsmem._llm.openai",
    "Run": "fsmem._memory.tool",
    "Scope": "fsmem._memory.levels",
    "build_model": "fsmem._llm.openai",
    "consolidate": "fsmem._memory.review",
    "memory_section": "fsmem._memory.prompts",
    "open": "fsmem._memory.memory",
    "review": "fsmem._memory.review",
    "review_due": "fsmem._core.due",
    "scope_files": "fsmem._memory.levels",
}

if not TYPE_CHECKING:  # type checkers see the imports above, so a misspelt name stays an error

    def __getattr__(name: str) -> object:
        if name not in __all__:
            raise AttributeError(f"module 'fsmem' has no attribute {name!r}")
        value = getattr(_importlib.import_module(_DEFINED_IN.get(name, "fsmem._errors")), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "BadFact",
    "BadProposal",
    "BadPath",
    "BadPattern",
    "BadRequest",
    "BadStore",
    "Busy",
    "Conflict",
    "BadSkill",
    "EditUnplaced",
    "Exists",
    "FactSensitive",
    "FsmemError",
    "LevelParked",
    "Memory",
    "ModelError",
    "ModelSettings",
    "NotFound",
    "NotRead",
    "NotUnique",
    "OpenAICompatibleModel",
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
    "Unsupported",
    "build_model",
    "consolidate",
    "memory_section",
    "open",
    "review",
    "review_due",
    "scope_files",
]

del TYPE_CHECKING  # not a name of the public face
