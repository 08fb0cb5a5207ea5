"""Every error fsmem raises, as one tree.

    FsmemError                      code      who reads it
    ├── RequestError                          the model, through the memory tool
    │   ├── BadRequest              BAD_REQUEST
    │   ├── NotFound                NOT_FOUND
    │   ├── BadPath                 BAD_PATH
    │   ├── Protected               PROTECTED
    │   ├── Exists                  EXISTS
    │   ├── Conflict                CONFLICT
    │   ├── NotRead                 NOT_READ
    │   ├── TooLarge                TOO_LARGE
    │   ├── Sensitive               SENSITIVE
    │   │   └── FactSensitive       FACT_SENSITIVE
    │   ├── BadSkill                BAD_SKILL
    │   ├── EditUnplaced            EDIT_UNPLACED
    │   ├── NotUnique               NOT_UNIQUE
    │   ├── BadPattern              BAD_PATTERN
    │   ├── Timeout                 TIMEOUT
    │   ├── Busy                    BUSY
    │   └── Storage                 STORAGE
    └── SetupError                            the harness or the person at the shell
        ├── RootNotFound            NO_ROOT
        ├── ScopeError              BAD_SCOPE
        ├── BadFact                 BAD_FACT
        ├── BadProposal             BAD_PROPOSAL
        ├── ModelError              MODEL_ERROR
        ├── IndexError_             INDEX_ERROR
        ├── Unsupported             UNSUPPORTED
        └── LevelParked             PARKED

A refused call changes nothing. Each message says what went wrong and what to do next, and never
repeats a secret.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "FsmemError",
    "RequestError",
    "BadRequest",
    "NotFound",
    "BadPath",
    "Protected",
    "Exists",
    "Conflict",
    "NotRead",
    "TooLarge",
    "Sensitive",
    "FactSensitive",
    "BadSkill",
    "EditUnplaced",
    "NotUnique",
    "BadPattern",
    "Timeout",
    "Busy",
    "Storage",
    "SetupError",
    "RootNotFound",
    "ScopeError",
    "BadFact",
    "BadProposal",
    "ModelError",
    "IndexError_",
    "Unsupported",
    "LevelParked",
    "TOOL_ERROR_CODES",
    "from_code",
]


class FsmemError(Exception):
    """Base of every fsmem error; ``code`` is stable and safe to match on."""

    code = "FSMEM_ERROR"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        # Data a face words itself (``path``, ``seen_version``, ``current_version``, ``changed_by``, ...),
        # so no face re-parses ``message``. JSON values only.
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, **self.details}


class RequestError(FsmemError):
    """A memory-tool call that was refused; nothing changed."""


class BadRequest(RequestError):
    code = "BAD_REQUEST"


class NotFound(RequestError):
    code = "NOT_FOUND"


class BadPath(RequestError):
    code = "BAD_PATH"


class Protected(RequestError):
    code = "PROTECTED"


class BadSkill(RequestError):
    """A ``SKILL.md`` without valid ``name`` and ``description`` front matter, or a review's skill
    change its guards refuse."""

    code = "BAD_SKILL"


class Exists(RequestError):
    code = "EXISTS"


class Conflict(RequestError):
    code = "CONFLICT"


class NotRead(RequestError):
    code = "NOT_READ"


class TooLarge(RequestError):
    code = "TOO_LARGE"


class Sensitive(RequestError):
    code = "SENSITIVE"


class FactSensitive(Sensitive):
    code = "FACT_SENSITIVE"
    kind: str | None = None  # what the secret looks like, for notes that must not repeat the secret


class EditUnplaced(RequestError):
    code = "EDIT_UNPLACED"


class NotUnique(RequestError):
    code = "NOT_UNIQUE"


class BadPattern(RequestError):
    code = "BAD_PATTERN"


class Timeout(RequestError):
    code = "TIMEOUT"


class Busy(RequestError):
    code = "BUSY"


class Storage(RequestError):
    """The disk or the folder failed under a change (no space, read-only, the root gone): the
    message says what failed and whether anything changed."""

    code = "STORAGE"
    read_only = False  # True when the root can be read and searched, only not changed
    disk_errno: int | None = None  # the system's error when the disk itself failed (ENOSPC, EIO, ...)


class SetupError(FsmemError):
    """Something the harness or the person must fix: no root, a bad scope, a broken model."""


class RootNotFound(SetupError):
    code = "NO_ROOT"


class ScopeError(SetupError):
    code = "BAD_SCOPE"


class BadFact(SetupError):
    code = "BAD_FACT"


class BadProposal(SetupError):
    """A file in ``.fsmem/proposals/`` fsmem cannot read as a proposal (not JSON, cut short, a link, …):
    ``details["proposal"]`` is its id, ``details["problem"]`` what is wrong. It is left as it is."""

    code = "BAD_PROPOSAL"


class ModelError(SetupError):
    code = "MODEL_ERROR"


class IndexError_(SetupError):  # trailing underscore: the builtin IndexError is something else
    code = "INDEX_ERROR"


class Unsupported(SetupError):
    """This system lacks what fsmem relies on (fsmem runs on Linux and macOS)."""

    code = "UNSUPPORTED"


class BadStore(SetupError):
    """The store named cannot be opened as given: a database URL without a project, a project for a
    folder, a missing driver."""

    code = "BAD_STORE"


class LevelParked(SetupError):
    """A ``deleting_*`` block could not put a level folder back (or drop it): the folder stays moved
    aside, whole, and the message (and ``kept_at``) says where, so a person moves it back by hand."""

    code = "PARKED"


def _all_subclasses(cls: type[FsmemError]) -> list[type[FsmemError]]:
    found: list[type[FsmemError]] = []
    for sub in cls.__subclasses__():
        found.append(sub)
        found.extend(_all_subclasses(sub))
    return found


_BY_CODE = {cls.code: cls for cls in _all_subclasses(FsmemError)}


def from_code(code: str, message: str, **details: Any) -> FsmemError:
    """Rebuild an error from a tool result's ``error`` (``code``, ``message`` and its data fields)."""
    return _BY_CODE.get(code, FsmemError)(message, **details)


TOOL_ERROR_CODES = frozenset(cls.code for cls in _all_subclasses(RequestError))
