"""Links between memory files, in markdown's own terms: pure rules, no I/O.

    [the titles](../seo/titles.md)     a markdown link, relative to the linking file's folder
    [rules](/seo/titles.md#rules)      from the root (a leading ``/``); ``#heading`` and ``?query`` kept aside
    [[titles]]  [[seo/titles|Titles]]  a wiki link: a name (``.md`` optional), looked for in the linking
                                       file's folder, then from the root; ``#heading`` and ``|alias`` kept

Links to the web (``https:``, ``mailto:``), to a heading of the same file (``#x``), out of the root, to
a name that is not a memory file, or inside a fenced code block are not links between memory files.

    >>> [link.target for link in find_links("notes/a.md", "See [t](../seo/titles.md) and [[b]].")]
    ['seo/titles.md', 'b']
    >>> resolve_link(find_links("notes/a.md", "[[b]]")[0], "notes/a.md", {"b.md"}.__contains__)
    'b.md'
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable
from typing import Literal, NamedTuple
from urllib.parse import quote, unquote

from fsmem._core.paths import is_memory_file_name

__all__ = ["Link", "find_links", "link_keys", "moved_to", "resolve_link", "rewrite_links", "wiki_key"]

Exists = Callable[[str], bool]

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# [text](target "title") — not an image; the target in <angle brackets> or without spaces
_MARKDOWN = re.compile(r"(?<!!)\[(?:[^\]\\\n]|\\.)*\]\(\s*(?:<([^>\n]*)>|([^\s()<>]+))(?:\s+\"[^\"\n]*\")?\s*\)")
_WIKI = re.compile(r"\[\[([^\[\]|#\n]+)((?:#[^\[\]|\n]*)?(?:\|[^\[\]\n]*)?)\]\]")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:|^//")
WIKI_PREFIX = "[["  # an index key of a wiki link: "[[" and the name's last part, lowercased, no ".md"


class Link(NamedTuple):
    """One link in a file: ``target`` is the path a markdown link resolves to (from the root), or the
    name a wiki link gives; ``start``/``end`` span what is written for it (rewritten on a rename),
    ``suffix`` the ``#heading``/``?query`` (markdown) kept after it. A named tuple: every search's
    process imports this module (a frozen dataclass costs a start ~0.7 ms to build)."""

    kind: Literal["markdown", "wiki"]
    target: str
    start: int
    end: int
    written: str
    suffix: str = ""


def find_links(path: str, text: str) -> list[Link]:
    """The links of the file ``path`` (its text ``text``), in order; fenced code blocks left out."""
    folder = posixpath.dirname(path)
    links: list[Link] = []
    for start, end in _prose(text):
        chunk = text[start:end]
        for match in _MARKDOWN.finditer(chunk):
            group = 1 if match.group(1) is not None else 2
            written = match.group(group)
            target, suffix = _markdown_target(folder, written)
            if target is not None:
                span = (start + match.start(group), start + match.end(group))
                links.append(Link("markdown", target, *span, written, suffix))
        for match in _WIKI.finditer(chunk):
            name = match.group(1).strip()
            if _wiki_path(name) is not None:
                links.append(Link("wiki", name, start + match.start(1), start + match.end(1), match.group(1)))
    links.sort(key=lambda link: link.start)
    return links


def _prose(text: str) -> Iterable[tuple[int, int]]:
    """Spans of ``text`` outside fenced code blocks."""
    position = 0
    start = 0
    fence: str | None = None
    for line in text.splitlines(keepends=True):
        match = _FENCE.match(line)
        if fence is None and match:
            yield start, position
            fence = match.group(1)[0] * len(match.group(1))
        elif fence is not None and line.strip().startswith(fence) and not line.strip().strip(fence[0]):
            fence = None
            start = position + len(line)
        position += len(line)
    if fence is None:
        yield start, len(text)


def _markdown_target(folder: str, written: str) -> tuple[str | None, str]:
    if not written or written.startswith("#") or _SCHEME.match(written):
        return None, ""
    cut = min((i for i in (written.find("#"), written.find("?")) if i != -1), default=len(written))
    raw, suffix = unquote(written[:cut]), written[cut:]
    joined = raw[1:] if raw.startswith("/") else posixpath.join(folder, raw)
    target = posixpath.normpath(joined) if joined else ""
    if not target or target == "." or target.startswith("../") or target == ".." or target.startswith("/"):
        return None, ""
    if any(part.startswith(".") for part in target.split("/")) or not is_memory_file_name(posixpath.basename(target)):
        return None, ""
    return target, suffix


def _wiki_path(name: str) -> str | None:
    """The relative path a wiki name stands for (``.md`` added unless it names another memory file)."""
    name = name.strip().strip("/")
    if not name or name.startswith(".") or ".." in name.split("/") or _SCHEME.match(name):
        return None
    return name if is_memory_file_name(posixpath.basename(name)) and "." in posixpath.basename(name) else name + ".md"


def wiki_key(path: str) -> str:
    """The index key every wiki link that may mean ``path`` carries: its file name, lowercased, no ``.md``."""
    base = posixpath.basename(path).lower()
    return WIKI_PREFIX + (base[:-3] if base.endswith(".md") else base)


def resolve_link(link: Link, source: str, exists: Exists) -> str | None:
    """The path ``link`` (in the file ``source``) leads to, or ``None`` when it leads to no file:
    a markdown link's own target; a wiki name in the source's folder first, then from the root."""
    if link.kind == "markdown":
        return link.target if exists(link.target) else None
    relative = _wiki_path(link.target)
    if relative is None:
        return None
    folder = posixpath.dirname(source)
    for candidate in dict.fromkeys([posixpath.join(folder, relative) if folder else relative, relative]):
        if exists(candidate):
            return candidate
    return None


def link_keys(path: str, text: str) -> tuple[str, ...]:
    """What the index keeps of a file's links, to find its backlinks: each markdown link's target
    path, and each wiki link's :func:`wiki_key` (resolved when asked, against the files there are)."""
    keys = []
    for link in find_links(path, text):
        if link.kind == "markdown":
            keys.append(link.target)
        else:
            relative = _wiki_path(link.target)
            if relative is not None:
                keys.append(wiki_key(relative))
    return tuple(dict.fromkeys(keys))


def moved_to(path: str, source: str, destination: str) -> str | None:
    """Where ``path`` is after ``source`` (a file or a folder) moved to ``destination``; ``None`` if not moved."""
    if path == source:
        return destination
    if path.startswith(source + "/"):
        return destination + path[len(source) :]
    return None


def rewrite_links(old_path: str, text: str, source: str, destination: str, exists_before: Exists) -> str | None:
    """``text`` of the file at ``old_path`` with each link that the move of ``source`` to
    ``destination`` would break written anew, so it leads where it led; ``None`` when none breaks.

    A link breaks when the file it leads to moved, or the linking file moved and the link is relative.
    What still leads to the same file is left as written; a link that led nowhere is left alone.
    """
    new_path = moved_to(old_path, source, destination) or old_path

    def exists_after(path: str) -> bool:
        if moved_to(path, source, destination) is not None:  # under the source: moved away
            return False
        came_from = moved_to(path, destination, source)
        return exists_before(came_from if came_from is not None else path)

    pieces: list[str] = []
    position = 0
    for link in find_links(old_path, text):
        led_to = resolve_link(link, old_path, exists_before)
        if led_to is None:
            continue
        goal = moved_to(led_to, source, destination) or led_to
        again = _reparsed(link, new_path)
        if again is not None and resolve_link(again, new_path, exists_after) == goal:
            continue
        pieces += [text[position : link.start], _written_for(link, new_path, goal, exists_after)]
        position = link.end
    if not pieces:
        return None
    return "".join(pieces) + text[position:]


def _reparsed(link: Link, new_path: str) -> Link | None:
    """The same written link, read from the file's new place."""
    if link.kind == "wiki":
        return link
    target, suffix = _markdown_target(posixpath.dirname(new_path), link.written)
    return None if target is None else Link("markdown", target, link.start, link.end, link.written, suffix)


def _written_for(link: Link, new_path: str, goal: str, exists_after: Exists) -> str:
    if link.kind == "markdown":
        if link.written.startswith("/"):
            href = "/" + goal
        else:
            href = posixpath.relpath(goal, posixpath.dirname(new_path) or ".")
        return quote(href, safe="/._-~+@!$&'()*,;=:") + link.suffix
    keep_md = link.target.strip().endswith(".md")
    name = goal[:-3] if goal.endswith(".md") and not keep_md else goal
    short = posixpath.basename(name)
    probe = Link("wiki", short, link.start, link.end, short)
    if resolve_link(probe, new_path, exists_after) == goal:
        name = short
    return name
