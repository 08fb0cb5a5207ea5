"""What tool results hold: the texts the model reads (file views, folder trees, excerpts, search hits)
and the data every face words its own way (a file's fields, a folder's entries)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from fsmem._core.search import SearchHit

if TYPE_CHECKING:
    from fsmem._store.types import Entry

EXCERPT_CONTEXT = 3


def when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M UTC")


def size(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB"


def lines_count(n: int) -> str:
    return f"{n} line" if n == 1 else f"{n} lines"


def numbered(lines: list[str], first: int) -> str:
    return "\n".join(f"{number:>6}\t{line}" for number, line in enumerate(lines, start=first))


def file_view(path: str, text: str, version: str, modified: float, start: int | None, end: int | None) -> str:
    lines = text.splitlines()
    total = len(lines)
    header = f"{path} · version {version} · {lines_count(total)} · changed {when(modified)}"
    if not lines:
        return header + "\n(empty file)"
    first = max(1, start or 1)
    last = min(total, end or total)
    if first > total:
        return header + f"\n(no line {first}: the file has {total} lines)"
    if (first, last) != (1, total):
        header += f" · showing lines {first}-{last}"
    return header + "\n" + numbered(lines[first - 1 : last], first)


def tree(path: str, levels: list[tuple[Entry, list[Entry]]]) -> str:
    """A folder two levels deep: each child, and under each sub-folder its children."""
    out = [f"{path or '/'}{'' if not path or path.endswith('/') else '/'}"]
    if not levels:
        out.append("  (empty folder)")
    for entry, children in levels:
        out.append("  " + _entry_line(entry))
        for child in children:
            out.append("    " + _entry_line(child))
    return "\n".join(out)


def _entry_line(entry: Entry) -> str:
    name = entry.path.rsplit("/", 1)[-1]
    if entry.is_dir:
        return f"{name}/"
    return f"{name:<40} {size(entry.size):>9}  {when(entry.modified)}"


def excerpt(text: str, changed_line: int) -> str:
    """Lines around the first changed line, numbered, so the model sees the change landed."""
    lines = text.splitlines()
    if not lines:
        return "(the file is now empty)"
    first = max(1, changed_line - EXCERPT_CONTEXT)
    last = min(len(lines), changed_line + EXCERPT_CONTEXT)
    return numbered(lines[first - 1 : last], first)


def first_difference(before: str, after: str) -> int:
    """The 1-based number of the first line that differs."""
    old, new = before.splitlines(), after.splitlines()
    for number, (a, b) in enumerate(zip(old, new, strict=False), start=1):  # a line past the shorter: the return below
        if a != b:
            return number
    return min(len(old), len(new)) + 1


def when_iso(text: str | None) -> str:
    """An ISO time from the log or versions/ in the one format people read (:func:`when`)."""
    if not text:
        return "-"
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return text
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return when(moment.timestamp())


def hits(found: list[SearchHit], query: str) -> str:
    """Search results as a person or a model reads them: ranked files with their snippets, or
    ``path:line: text`` for regex hits."""
    if not found:
        return f"No matches for {query!r}."
    if found[0].text is not None:
        return "\n".join(f"{hit.path}:{hit.line}: {hit.text}" for hit in found)
    return "\n".join(
        f"{hit.path}{f':{hit.line}' if hit.line else ''}  {hit.title}  [{hit.kind}]\n    {hit.snippet}"
        + (f"\n    broken fact file, not used as a fact: {hit.problem}" if hit.problem else "")
        for hit in found
    )


def entry_data(entry: Entry, children: list[dict[str, Any]] | None) -> dict[str, Any]:
    """One entry of a folder's read, as data: a face lists it without reading the tree's text."""
    listed: dict[str, Any] = {
        "path": entry.path,
        "folder": entry.is_dir,
        "size": entry.size,
        "modified": entry.modified,
    }
    if children is not None and entry.is_dir:
        listed["entries"] = children
    return listed


def file_result(path: str, version: str, content: str, text: str, **more: Any) -> dict[str, Any]:
    """A read's or a write's result: the file as it now is (faces word it from these fields) and ``text``,
    the tool's own words for the model."""
    return {
        "ok": True,
        "path": path,
        "version": version,
        "content": content,
        "lines": len(content.splitlines()),
        **more,
        "text": text,
    }
