"""What counts as text: free text a caller sends and the thread id logged with every change.

Every store, the index and the tool ask these first, so text that is not text is refused (``BadRequest``)
before anything is touched; they live apart from the tool's request types, which a search never needs.
"""

from __future__ import annotations

import unicodedata

from fsmem._errors import BadRequest

__all__ = ["added_lines", "check_text", "check_thread", "file_text"]


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


def file_text(data: bytes, path: str, lenient: bool = False) -> str:
    """A memory file's bytes as text; ``lenient`` for a file a whole-file write replaces (its old bytes
    are only compared, never kept in text)."""
    if lenient:
        return data.decode("utf-8", errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadRequest(
            f"{path} holds bytes that are not UTF-8 (edited outside fsmem?); write it whole with content"
        ) from error


def added_lines(before: str, brought: str) -> str:
    """The lines a call brings (its content or new_text) that the file does not hold."""
    old = set(before.splitlines())
    return "\n".join(line for line in brought.splitlines() if line not in old)
