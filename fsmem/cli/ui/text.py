"""Memory text as the page shows it: markdown rendered inert, numbered source, diffs as rows.

Everything here treats memory as hostile. Markdown is rendered with raw HTML off (a ``<script>`` or
an ``<img onerror=…>`` in a file is shown as the text it is); a link's address must be relative, a
``#`` anchor, ``http(s)`` or ``mailto`` (``javascript:``, ``data:`` and every other scheme become
plain text); a relative link to a memory file opens it in the page. Templates escape the rest.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from markdown_it import MarkdownIt
from markupsafe import Markup

from fsmem._memory import render

SAFE_SCHEMES = frozenset({"http", "https", "mailto"})


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")
    md.validateLink = _link_allowed  # type: ignore[method-assign]
    return md


def _link_allowed(url: str) -> bool:
    scheme = urlsplit(url.strip()).scheme.lower()
    return scheme in SAFE_SCHEMES or scheme == ""


def render_markdown(text: str, path: str) -> Markup:
    """``text`` (the file at ``path``) as HTML that can run nothing; relative links open memory files."""
    md = _parser()
    tokens = md.parse(text)
    folder = posixpath.dirname(path)
    for token in tokens:
        for child in token.children or ():
            if child.type == "link_open":
                href = str(child.attrGet("href") or "")
                child.attrSet("href", _href(href, folder))
                if urlsplit(href).scheme:
                    child.attrSet("rel", "noopener noreferrer nofollow")
            elif child.type == "image":
                # An image would load from wherever the text points; show where instead.
                child.type = "text"
                child.content = f"[image: {child.content or 'untitled'} — {child.attrGet('src') or ''}]"
                child.children = None
    return Markup(md.renderer.render(tokens, md.options, {}))


def _href(href: str, folder: str) -> str:
    parts = urlsplit(href)
    if parts.scheme or parts.netloc or not parts.path:
        return href  # an outside address (checked by validateLink), or an anchor in this page
    # markdown-it has percent-encoded the link already: decoded once here, encoded once below.
    target = posixpath.normpath(posixpath.join("/" + folder, unquote(parts.path))).lstrip("/")
    return "/files?path=" + quote(target, safe="/") + (f"#{quote(unquote(parts.fragment))}" if parts.fragment else "")


@dataclass(frozen=True)
class Line:
    number: int
    text: str


def numbered(text: str) -> list[Line]:
    return [Line(number, line) for number, line in enumerate(text.splitlines(), start=1)]


@dataclass(frozen=True)
class DiffRow:
    kind: str  # "add", "del", "hunk", "head", "same"
    text: str


def diff_rows(diff: str) -> list[DiffRow]:
    """A unified diff as rows the template colours (each escaped like any text)."""
    rows = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            kind = "head"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "same"
        rows.append(DiffRow(kind, line))
    return rows


def filters() -> dict[str, Any]:
    """The templates' filters: sizes and times worded as the shell words them, a path in a query."""
    return {
        "size": render.size,
        "when": render.when_iso,
        "stamp": render.when,
        "q": lambda value: quote(str(value), safe="/"),
    }
