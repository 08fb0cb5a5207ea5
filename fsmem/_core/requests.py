"""The memory tool's requests as types: a tagged union parsed from the JSON a model sent.

The shape is checked against ``tool_schema/memory.json`` by the caller (``fsmem._schema``); this module
turns a checked dict into one of five frozen dataclasses, so dispatch can be exhaustive.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Any

from fsmem._errors import BadRequest

__all__ = [
    "Read",
    "Write",
    "Rename",
    "Delete",
    "Search",
    "Request",
    "parse_request",
    "request_to_dict",
    "check_text",
    "check_thread",
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


def check_text(name: str, value: object) -> None:
    """Refuse (``BadRequest``) text that holds a lone surrogate: it is no character, cannot be written
    as UTF-8, and would fail deep inside the index or the drive instead of here.

    >>> check_text("query", "caf" + chr(0xE9))
    >>> check_text("query", "caf" + chr(0xD800))
    Traceback (most recent call last):
    fsmem._errors.BadRequest: the query holds a lone surrogate (U+D800 at character 4), which is not text; ...
    """
    if not isinstance(value, str) or value.isascii():
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        char = value[error.start]
        raise BadRequest(
            f"the {name} holds a lone surrogate (U+{ord(char):04X} at character {error.start + 1}), which is "
            "not text; send valid UTF-8 (a broken emoji or a byte that is not UTF-8 makes one)"
        ) from None


def check_thread(thread: object) -> None:
    """Refuse (``BadRequest``) a thread id that is not plain text: it is logged with every change,
    so a control or invisible character (NUL, an escape), a line separator or a lone surrogate would
    be kept by one store and refused by another; every store asks this first.

    >>> check_thread("t-1")
    >>> check_thread("t" + chr(0) + "x")
    Traceback (most recent call last):
    fsmem._errors.BadRequest: the thread id holds a control character (U+0000 at character 2); use ...
    """
    if thread is None:
        return
    if not isinstance(thread, str):
        raise BadRequest(f"a thread id is text, not {type(thread).__name__}; e.g. 't-1'")
    for number, char in enumerate(thread, 1):
        problem = _INVISIBLE.get(unicodedata.category(char))
        if problem is not None:
            raise BadRequest(
                f"the thread id holds {problem} (U+{ord(char):04X} at character {number}); use visible characters only"
            )


_INVISIBLE = {
    "Cc": "a control character",
    "Cf": "an invisible formatting character",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
    "Cs": "a lone surrogate",
}


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
