"""Partial edits: the marker merge and the exact replacement. Pure and deterministic.

A **marker** is a line holding only ``<!-- ... -->`` (spaces around it allowed; words may stand
between the dots and ``-->``, as in ``<!-- ... rest unchanged -->``; ``…`` counts as the dots).
Each marker stands for "the original lines here, unchanged". The lines between markers form
**runs**; each run is placed in the original by its **anchors**:

- an anchor is a non-blank line of the run that occurs exactly once in the rest of the original
  (from just after where the previous run ended); lines are compared without their trailing
  whitespace, so an anchor copied with a stray trailing space still matches;
- the run's first anchor marks where it begins, its last anchor where it ends; the run replaces the
  original lines from the first anchor to the last, and its lines before the first anchor (or after
  the last) are inserted just before (or after) it;
- a run's anchors must occur in the original in the order they have in the run, and each run
  must be placed after the previous one;
- lines of the run right before its first anchor (or right after its last) that repeat the
  original lines right there are taken as copied context, not as new lines, so copying a blank
  line or a repeated line next to an anchor does not double it.

What the edges mean (the strict reading): content that does not start with a marker replaces
everything before its first run's first anchor; content that does not end with a marker replaces
everything after its last run's last anchor. So ``<!-- ... -->`` then the last lines edits the end of
a file, and the first lines then ``<!-- ... -->`` edits its beginning.

A run made only of blank lines is ignored (a blank line next to a marker is layout, not an edit).
Content with no marker replaces the whole file; content with markers and no run keeps it whole.

    >>> merge_markers("a\\nb\\nc\\n", "<!-- ... -->\\nb\\nB2\\n<!-- ... -->\\n")
    'a\\nb\\nB2\\nc\\n'

``replace_exact`` swaps one exact occurrence of a text for another and refuses unless it is unique.
Line endings are kept as they are.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from itertools import pairwise

from fsmem._errors import BadRequest, EditUnplaced, NotUnique

__all__ = ["MARKER", "has_markers", "is_marker", "merge_markers", "replace_exact"]

MARKER = "<!-- ... -->"
_MARKER_LINE = re.compile(r"[ \t]*<!--[ \t]*(?:\.{3,}|…)(?:(?!-->).)*-->[ \t]*\r?\n?")
_QUOTE_LIMIT = 80

_HOW_TO_FIX = (
    "Include, next to your change, an unchanged line that occurs only once in the file "
    "(copied exactly), or use old_text/new_text for a single replacement."
)


def is_marker(line: str) -> bool:
    """Whether ``line`` (with or without its line ending) is a marker line."""
    return _MARKER_LINE.fullmatch(line) is not None


def has_markers(content: str) -> bool:
    """Whether ``content`` holds at least one marker line, i.e. is a partial edit."""
    if "<!--" not in content:  # the common case, without splitting the content into lines
        return False
    return any(is_marker(line) for line in _split_lines(content))


def merge_markers(original: str, content: str) -> str:
    """The file that results from applying the partial edit ``content`` to ``original``.

    Raises ``EditUnplaced`` naming the line that could not be placed.
    """
    pieces = _parse(content)
    if pieces is None:
        return content
    lines = _split_lines(original)
    keys = [_key(line) for line in lines]
    out: list[str] = []
    position = 0  # the first original line not yet consumed
    for piece in pieces:
        start, end = _place(piece, keys, position)
        if piece.marker_before:
            out.extend(lines[position:start])
        out.extend(piece.lines)
        position = end + 1
    if not pieces or pieces[-1].marker_after:
        out.extend(lines[position:])
    return _join(out)


@dataclass(frozen=True)
class _Run:
    lines: list[str]
    marker_before: bool
    marker_after: bool


def _parse(content: str) -> list[_Run] | None:
    """The runs of ``content`` and whether a marker stands on each side; None when no marker."""
    runs: list[_Run] = []
    current: list[str] = []
    saw_marker = False
    marker_before = False
    for line in _split_lines(content):
        if is_marker(line):
            saw_marker = True
            if _has_text(current):
                runs.append(_Run(current, marker_before, True))
            current = []
            marker_before = True
        else:
            current.append(line)
    if not saw_marker:
        return None
    if _has_text(current):
        runs.append(_Run(current, marker_before, False))
    return runs


def _place(run: _Run, keys: list[str], position: int) -> tuple[int, int]:
    """The range of original lines (first, last; inclusive) that ``run`` replaces."""
    rest = Counter(keys[position:])
    where: dict[str, int] = {}
    for index in range(len(keys) - 1, position - 1, -1):
        where[keys[index]] = index
    anchors: list[tuple[int, int]] = []  # (index in the original, index in the run)
    for at, line in enumerate(run.lines):
        key = _key(line)
        if key and rest[key] == 1:
            anchors.append((where[key], at))
    if not anchors:
        raise _unplaced(run, keys, position, rest)
    for (before, _), (after, at) in pairwise(anchors):
        if after <= before:
            raise EditUnplaced(
                f"Could not place the edit: its line {_quote(run.lines[at])} comes earlier in the "
                f"file than the unchanged line above it in your content. Keep unchanged lines in "
                f"their original order, or use old_text/new_text for a single replacement."
            )
    (start, first_at), (end, last_at) = anchors[0], anchors[-1]
    # Lines of the run next to an anchor that repeat the original lines right there are context
    # the caller copied, not new lines: they widen the replaced range instead of being doubled.
    if run.marker_before:
        while first_at > 0 and start > position and _key(run.lines[first_at - 1]) == keys[start - 1]:
            first_at, start = first_at - 1, start - 1
    if run.marker_after:
        while last_at < len(run.lines) - 1 and end < len(keys) - 1 and _key(run.lines[last_at + 1]) == keys[end + 1]:
            last_at, end = last_at + 1, end + 1
    return start, end


def _unplaced(run: _Run, keys: list[str], position: int, rest: Counter[str]) -> EditUnplaced:
    first_text = next(line for line in run.lines if _key(line))
    earlier = Counter(keys[:position])
    if any(earlier[_key(line)] == 1 and not rest[_key(line)] for line in run.lines if _key(line)):
        return EditUnplaced(
            f"Could not place the edit starting at {_quote(first_text)}: it belongs before the "
            f"part of your content above it. Give the changed parts in the order they have in "
            f"the file, or use old_text/new_text for a single replacement."
        )
    where = "in the file" if position == 0 else "after the part placed before it"
    return EditUnplaced(
        f"Could not place the edit starting at {_quote(first_text)}: none of its lines occurs "
        f"exactly once {where}, so there is no way to tell where it goes. {_HOW_TO_FIX}"
    )


def replace_exact(original: str, old: str, new: str) -> str:
    """``original`` with the one occurrence of ``old`` replaced by ``new``.

    >>> replace_exact("a\\nb\\n", "b", "c")
    'a\\nc\\n'
    """
    if not isinstance(old, str) or not isinstance(new, str):
        raise BadRequest("old_text and new_text must both be strings.")
    if old == "":
        raise BadRequest(
            "old_text is empty. Copy the exact text to replace from the file; to write "
            "the whole file, send content instead."
        )
    found = _occurrences(original, old)
    if not found:
        hint = ""
        if _squash(old) and _squash(old) in _squash(original):
            hint = " It differs from the file only in spaces or line breaks."
        raise EditUnplaced(
            f"old_text was not found in the file.{hint} Read the file again and copy the text "
            f"exactly, including spaces and line breaks (without the line numbers of the read)."
        )
    if len(found) > 1:
        numbers = ", ".join(str(original.count("\n", 0, index) + 1) for index in found)
        raise NotUnique(
            f"old_text occurs {len(found)} times, at lines {numbers}. Include more surrounding text so it is unique."
        )
    index = found[0]
    return original[:index] + new + original[index + len(old) :]


def _occurrences(text: str, part: str) -> list[int]:
    """Every start of ``part`` in ``text``, overlapping ones included ("aa" twice in "aaa")."""
    found = []
    index = text.find(part)
    while index != -1:
        found.append(index)
        index = text.find(part, index + 1)
    return found


def _squash(text: str) -> str:
    return " ".join(text.split())


def _split_lines(text: str) -> list[str]:
    """Lines with their ``\\n`` kept (the last one may lack it); only ``\\n`` ends a line."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _key(line: str) -> str:
    return line.rstrip()


def _has_text(lines: list[str]) -> bool:
    return any(_key(line) for line in lines)


def _join(lines: list[str]) -> str:
    out = []
    for i, line in enumerate(lines):
        if i < len(lines) - 1 and not line.endswith("\n"):
            line += "\n"  # defensive: a line without its ending never sits before another
        out.append(line)
    return "".join(out)


def _quote(line: str) -> str:
    text = line.rstrip("\r\n")
    if len(text) > _QUOTE_LIMIT:
        text = text[: _QUOTE_LIMIT - 3] + "..."
    return '"' + text + '"'
