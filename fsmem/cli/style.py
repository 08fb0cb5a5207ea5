"""Colour at the shell, decided in one place: on a terminal, never under ``NO_COLOR`` or in a pipe.

Every coloured word goes through :func:`paint`; click strips nothing we did not add, so the text a
script reads is the text a person sees, less the escapes.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any, TextIO

import click


def colour_on(stream: TextIO | None = None) -> bool:
    """True when ``stream`` (stdout by default) is a terminal and ``NO_COLOR`` is not set (no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    stream = sys.stdout if stream is None else stream
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream
        return False


def paint(text: str, *, err: bool = False, **style: Any) -> str:
    """``text`` in ``style`` (click.style's words: fg="red", bold=True, …) when colour is on."""
    return click.style(text, **style) if colour_on(sys.stderr if err else None) else text


def highlight(text: str, words: list[str], *, ignore_case: bool = True) -> str:
    """Each occurrence of any of ``words`` in ``text``, painted (search terms in hits)."""
    wanted = [w for w in words if w]
    if not wanted or not colour_on():
        return text
    pattern = re.compile(
        "|".join(re.escape(w) for w in sorted(wanted, key=len, reverse=True)), re.IGNORECASE if ignore_case else 0
    )
    return pattern.sub(lambda m: click.style(m.group(0), fg="yellow", bold=True), text)


def diff(text: str, *, err: bool = False) -> str:
    """A unified diff with added lines green, removed red and hunk heads cyan (``err``: for stderr)."""
    if not colour_on(sys.stderr if err else None):
        return text
    out = []
    for line in text.splitlines():
        if line.startswith(("+++", "---")):
            out.append(click.style(line, bold=True))
        elif line.startswith("+"):
            out.append(click.style(line, fg="green"))
        elif line.startswith("-"):
            out.append(click.style(line, fg="red"))
        elif line.startswith("@@"):
            out.append(click.style(line, fg="cyan"))
        else:
            out.append(line)
    return "\n".join(out)


def table(rows: list[list[str]], *, right: frozenset[int] = frozenset()) -> list[str]:
    """Rows as aligned columns (two spaces apart); columns in ``right`` are right-aligned (sizes)."""
    if not rows:
        return []
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]) for i, cell in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
    return lines
