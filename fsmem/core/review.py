"""Rules of review mode: a background reviewer adds at once; whatever else it does waits for a person."""

from __future__ import annotations

import difflib


def only_adds(before: str, after: str) -> bool:
    """True when ``after`` keeps every line of ``before``, in order, and only inserts lines.

    >>> only_adds("a\\nb\\n", "a\\nnew\\nb\\n")
    True
    >>> only_adds("a\\nb\\n", "a\\nB\\n")
    False
    """
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines(), autojunk=False)
    return all(tag in ("equal", "insert") for tag, *_ in matcher.get_opcodes())


def unified_diff(path: str, before: str, after: str, max_lines: int = 80) -> str:
    """A short diff for a person deciding on a proposal."""
    lines = list(difflib.unified_diff(before.splitlines(), after.splitlines(), f"a/{path}", f"b/{path}",
                                      lineterm=""))
    if len(lines) > max_lines:
        lines = lines[:max_lines] + [f"… {len(lines) - max_lines} more diff lines"]
    return "\n".join(lines)
