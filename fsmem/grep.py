"""Regex (and literal) search over the files themselves, with a time limit per file."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable

import regex

from fsmem.drive import Drive
from fsmem.errors import BadPattern, Timeout


@dataclass(frozen=True)
class LineHit:
    path: str
    line: int
    text: str


def compile_pattern(query: str, *, literal: bool) -> "regex.Pattern[str]":
    try:
        if literal:
            return regex.compile(regex.escape(query), regex.IGNORECASE | regex.V1)
        return regex.compile(query, regex.MULTILINE)
    except regex.error as error:
        raise BadPattern(
            f"the pattern {query!r} is not a valid regular expression ({error}); fix it, or search "
            "without regex for plain words"
        ) from error


def grep(
    drive: Drive,
    pattern: "regex.Pattern[str]",
    *,
    accept: Callable[[str], bool],
    since: datetime | None,
    limit: int,
    timeout: float,
) -> list[LineHit]:
    """Matching lines in every visible markdown file, in path order, at most ``limit``."""
    hits: list[LineHit] = []
    cutoff = since.timestamp() if since else None
    for entry in sorted(drive.walk_files(""), key=lambda e: e.path):
        if not accept(entry.path) or (cutoff is not None and entry.modified < cutoff):
            continue
        data = drive.read(entry.path)
        if data is None:
            continue
        text = data.decode("utf-8", errors="replace")
        try:
            matches = list(pattern.finditer(text, timeout=timeout))
        except TimeoutError as error:
            raise Timeout(
                f"the pattern ran for over {timeout:g}s on {entry.path} without finishing (it "
                "backtracks too much); simplify it, e.g. avoid nested repeats like (a+)+"
            ) from error
        seen_lines: set[int] = set()
        for match in matches:
            line = text.count("\n", 0, match.start()) + 1
            if line in seen_lines:
                continue
            seen_lines.add(line)
            start = text.rfind("\n", 0, match.start()) + 1
            end = text.find("\n", match.start())
            hits.append(LineHit(entry.path, line, text[start: end if end != -1 else len(text)]))
            if len(hits) >= limit:
                return hits
    return hits


def utc_now() -> datetime:
    return datetime.now(timezone.utc)
