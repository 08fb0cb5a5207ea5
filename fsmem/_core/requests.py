"""The memory tool's requests as types: a tagged union parsed from the JSON a model sent.

The shape is checked against ``tool_schema/memory.json`` by the caller (``fsmem._memory.schema``); this module
turns a checked dict into one of five frozen dataclasses, so dispatch can be exhaustive.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fsmem._core.text import check_text
from fsmem._errors import BadRequest

__all__ = [
    "CHANGING_COMMANDS",
    "TOOL_NAME",
    "memory_call_arguments",
    "Read",
    "Write",
    "Rename",
    "Delete",
    "Search",
    "Request",
    "parse_request",
    "request_to_dict",
]


@dataclass(frozen=True)
class Read:
    path: str
    start_line: int | None = None
    end_line: int | None = None


@dataclass(frozen=True)
class Write:
    path: str
    content: str | None = None
    old_text: str | None = None
    new_text: str | None = None
    expected_version: str | None = None
    # Not in the model's schema; set by faces that map another tool onto write (Claude's memory tool):
    literal: bool = False  # content is the whole file as is: a <!-- ... --> line in it is text, not a marker
    create: bool = False  # only make a new file: refused with EXISTS when the path exists


@dataclass(frozen=True)
class Rename:
    path: str
    new_path: str
    expected_version: str | None = None


@dataclass(frozen=True)
class Delete:
    path: str
    expected_version: str | None = None


@dataclass(frozen=True)
class Search:
    query: str
    regex: bool = False
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    since: str | None = None
    limit: int | None = None


Request = Read | Write | Rename | Delete | Search

_TYPES: dict[str, type] = {"read": Read, "write": Write, "rename": Rename, "delete": Delete, "search": Search}


def request_to_dict(request: Request) -> dict[str, Any]:
    """The JSON form of a typed request (what a model would have sent)."""
    command = next(name for name, kind in _TYPES.items() if isinstance(request, kind))
    data: dict[str, Any] = {"command": command}
    for name, value in vars(request).items():
        if value is None or value == () or value is False:  # False is every flag's default
            continue
        data[name] = list(value) if isinstance(value, tuple) else value
    return data


def _globs(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


# Fields of free text; paths and globs are checked by the path rules (BAD_PATH) instead.
_TEXT_FIELDS = ("query", "content", "old_text", "new_text", "expected_version", "since")


def parse_request(checked: dict[str, Any]) -> Request:
    """A request dict that passed the schema → its typed form."""
    for name in _TEXT_FIELDS:
        check_text(name, checked.get(name))
    fields = dict(checked)
    command = fields.pop("command")
    kind = _TYPES.get(command)
    if kind is None:
        raise BadRequest(f"unknown command {command!r}; use one of: {', '.join(_TYPES)}")
    if kind is Search:
        fields["include"] = _globs(fields.get("include"))
        fields["exclude"] = _globs(fields.get("exclude"))
    if kind is Read and fields.get("start_line") and fields.get("end_line"):
        if fields["end_line"] < fields["start_line"]:
            raise BadRequest("end_line is before start_line; give a range with start_line <= end_line")
    return kind(**fields)


TOOL_NAME = "memory"  # the one tool's name, in every form of it
CHANGING_COMMANDS = frozenset({"write", "rename", "delete"})


def memory_call_arguments(call: object) -> Mapping[str, Any] | None:
    """The arguments of one OpenAI-style tool call of the memory tool, as stored in a conversation;
    ``None`` for a call of another tool or arguments that are not a JSON object (the tool words those)."""
    function = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(function, Mapping) or function.get("name") != TOOL_NAME:
        return None
    try:
        arguments = json.loads(function.get("arguments") or "{}")
    except (TypeError, ValueError):
        return None
    return arguments if isinstance(arguments, Mapping) else None
