"""fsmem: memory for LLM agents, kept as markdown files in a plain folder.

import fsmem
memory = fsmem.open("memory", create=True)
run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
run.call({"command": "read", "path": "/"})

This module is the public face: what `__all__` names (with `fsmem.cli`, `fsmem.mcp_server`,
`fsmem.claude_memory` and `fsmem.harness`). Every other module is private (`fsmem/_name.py`).
"""

import typing as _typing

from fsmem._errors import (
    BadFact,
    BadPath,
    BadPattern,
    BadRequest,
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
from fsmem._levels import Scope, scope_files
from fsmem._llm import ModelSettings, OpenAICompatibleModel, build_model
from fsmem._memory import Memory, open
from fsmem._prompts import memory_section
from fsmem._tool import Run

if _typing.TYPE_CHECKING:
    from fsmem._review import ReviewResult as _ReviewResult


def review(
    memory: Memory, conversation: _typing.Any, model: _typing.Any, scope: Scope | None = None, **options: _typing.Any
) -> "_ReviewResult":
    """Reread a finished conversation with ``model`` and keep what it taught in ``scope``'s memory
    (docs/review.md; ``options``: ``max_calls``, ``thread_id``, ``project``, ``conversation_limit``,
    ``temperature``). The review runner is loaded on the first review, so a cold search never pays for it.
    """
    from fsmem._review import review as run_review

    return run_review(memory, conversation, model, scope, **options)


__all__ = [
    "BadFact",
    "BadPath",
    "BadPattern",
    "BadRequest",
    "BadStore",
    "Busy",
    "Conflict",
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
    "memory_section",
    "open",
    "review",
    "scope_files",
]
