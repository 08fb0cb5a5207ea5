"""Regex search over the files themselves (not the index), with a time limit per file: the one
implementation behind ``memory.search(regex=True)``, the tool's ``regex`` search and ``fsmem search --regex``."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from fsmem._core.layout import role_of
from fsmem._core.search import SearchHit
from fsmem._core.when import check_moment, compile_globs, parse_since
from fsmem._errors import BadPath, BadPattern, Timeout
from fsmem._store.interface import Store

if TYPE_CHECKING:
    import regex


def compile_pattern(query: str) -> regex.Pattern[str]:
    import regex  # 30 ms to import: only regex mode pays it, not every cold `fsmem search`

    try:
        return regex.compile(query, regex.MULTILINE)
    except regex.error as error:
        raise BadPattern(
            f"the pattern {query!r} is not a valid regular expression ({error}); fix it, or search "
            "without regex for plain words"
        ) from error


def grep(
    drive: Store,
    query: str,
    *,
    include: str | Iterable[str] | None = None,
    exclude: str | Iterable[str] | None = None,
    since: str | datetime | None = None,
    limit: int,
    timeout: float,
) -> list[SearchHit]:
    """Matching lines (one hit per line) in every memory file, in path order, at most ``limit``.

    Files are the memory files the store lists (``walk_files``: what a rebuild of the index reads),
    read through the store.
    """
    pattern = compile_pattern(query)
    accept = compile_globs(_globs(include), _globs(exclude))
    moment = (
        parse_since(since, datetime.now(UTC))
        if isinstance(since, str)
        else None
        if since is None
        else check_moment(since)
    )
    cutoff = moment.timestamp() if moment is not None else None
    hits: list[SearchHit] = []
    for entry in sorted(drive.walk_files(), key=lambda entry: entry.path):
        path = entry.path
        if not accept(path) or (cutoff is not None and entry.modified < cutoff):
            continue
        try:
            data = drive.read(path)
        except BadPath:  # became a FIFO or device since it was listed: not memory, skipped
            continue
        if data is None:
            continue
        text = data.decode("utf-8", errors="replace")
        try:
            matches = list(pattern.finditer(text, timeout=timeout))
        except TimeoutError as error:
            raise Timeout(
                f"the pattern ran for over {timeout:g}s on {path} without finishing (it "
                "backtracks too much); simplify it, e.g. avoid nested repeats like (a+)+"
            ) from error
        role = role_of(path)
        modified = datetime.fromtimestamp(entry.modified, UTC)
        seen_lines: set[int] = set()
        for match in matches:
            line = text.count("\n", 0, match.start()) + 1
            if line in seen_lines:
                continue
            seen_lines.add(line)
            start = text.rfind("\n", 0, match.start()) + 1
            end = text.find("\n", match.start())
            shown = text[start : end if end != -1 else len(text)]
            hits.append(SearchHit(path, "", role.kind, role.level, 0.0, shown, modified, line, shown))
            if len(hits) >= limit:
                return hits
    return hits


def _globs(globs: str | Iterable[str] | None) -> str | list[str] | None:
    return globs if globs is None or isinstance(globs, str) else list(globs) or None
