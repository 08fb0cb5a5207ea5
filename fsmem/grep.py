"""Regex mode of search: the pattern over every file, with a time limit per file.

Uses the ``regex`` module for its timeout: a pattern that backtracks forever ends with ``TIMEOUT``
instead of a hung agent. Results are ``path:line: text`` lines, files in path order.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

import regex

from fsmem.core.layout import role_of, title_of
from fsmem.core.search import glob_to_regex, parse_since
from fsmem.errors import BadPattern, BadRequest, Timeout
from fsmem.index import SearchHit
from fsmem.index_state import walk_files

PER_FILE_TIMEOUT = 0.5
MAX_LINE_CHARS = 300


def _globs(patterns: Iterable[str] | str | None) -> list[re.Pattern[str]]:
    items = [patterns] if isinstance(patterns, str) else list(patterns or [])
    return [re.compile(glob_to_regex(item)) for item in items]


def regex_search(root: Path, pattern: str, *, include: Iterable[str] | str | None = None,
                 exclude: Iterable[str] | str | None = None, since: datetime | str | None = None,
                 limit: int = 10, timeout: float = PER_FILE_TIMEOUT) -> list[SearchHit]:
    """Lines matching ``pattern`` (at most ``limit``), as hits with ``line`` and ``text`` set."""
    if not isinstance(limit, int) or limit < 1:
        raise BadRequest("limit must be a whole number of at least 1")
    try:
        compiled = regex.compile(pattern, regex.MULTILINE)
    except regex.error as error:
        raise BadPattern(f"the regex {pattern!r} does not compile ({error}); fix it or search "
                         "without regex for plain words") from error
    includes, excludes = _globs(include), _globs(exclude)
    moment = parse_since(since, datetime.now(timezone.utc)) if isinstance(since, str) else since
    cutoff_ns = int(moment.timestamp() * 1e9) if moment else None
    hits: list[SearchHit] = []
    for path, stamp in sorted(walk_files(root).items()):
        if includes and not any(glob.fullmatch(path) for glob in includes):
            continue
        if any(glob.fullmatch(path) for glob in excludes):
            continue
        if cutoff_ns is not None and stamp.mtime_ns < cutoff_ns:
            continue
        try:
            text = (root / path).read_bytes().decode("utf-8", "replace")
        except OSError:
            continue
        seen_lines: set[int] = set()
        try:
            for match in compiled.finditer(text, timeout=timeout):
                line_no = text.count("\n", 0, match.start()) + 1
                if line_no in seen_lines:
                    continue
                seen_lines.add(line_no)
                start = text.rfind("\n", 0, match.start()) + 1
                end = text.find("\n", match.start())
                line = text[start: end if end != -1 else len(text)][:MAX_LINE_CHARS]
                role = role_of(path)
                hits.append(SearchHit(
                    path=path, title=title_of(text, path), kind=role.kind, level=role.level, score=0.0,
                    snippet=line, modified=datetime.fromtimestamp(stamp.mtime_ns / 1e9, timezone.utc),
                    line=line_no, text=line,
                ))
                if len(hits) >= limit:
                    return hits
        except TimeoutError as error:
            raise Timeout(f"the regex {pattern!r} ran over {timeout:g}s on {path} (it backtracks too "
                          "much); simplify it, e.g. avoid nested repeats like (a+)+") from error
    return hits
