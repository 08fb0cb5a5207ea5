"""What memory to append to a thread before a turn: a pure plan over (messages, documents).

Memory reaches the model as user messages appended to the thread. Each copy starts with a header
line the planner recognises again on the next turn:

    <memory path="MEMORY.md" version="ab12cd34ef56">
    ...the file, as it was...
    </memory>

The agent block and the routine block travel the same way (``<agent id=… version=…>``,
``<routine id=… version=…>``), so adding a routine appends a new block instead of changing the
system prompt. The rules:

- a document that is not empty is appended when the thread holds no copy of it yet, or when its
  latest copy has another version; nothing already in the thread is ever changed;
- an empty document is never loaded; one that the thread holds an older copy of gets a short
  "now empty" copy, so the model does not go on trusting the stale text;
- after compaction the copies are gone from the thread, so the latest of each comes back, once.

Recall (optional) is planned here too: the top search matches for the user's message from files not
already in the thread, under a token cap, as one last message.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fsmem._core.versions import version_of

__all__ = [
    "Document",
    "ContextPlan",
    "RecallCandidate",
    "RecallPlan",
    "DEFAULT_RECALL_TOKENS",
    "KEY_ATTRIBUTE",
    "estimate_tokens",
    "message_text",
    "parse_header",
    "latest_copies",
    "recalled_copies",
    "render_copy",
    "plan_context",
    "plan_recall",
]

DEFAULT_RECALL_TOKENS = 400
KEY_ATTRIBUTE = {"memory": "path", "agent": "id", "routine": "id"}
RECALL_TAG = "recall"
EMPTY_NOTE = "(This file is now empty: what an earlier copy said no longer holds.)"
# Below this many tokens left, a cut excerpt says too little to be worth its header.
_MIN_EXCERPT_TOKENS = 24
_QUERY_CHARS = 160

_HEADER = re.compile(r"\A<(?P<tag>[a-z]+)(?P<attrs>(?: [a-z_]+=\"[^\"]*\")*)>(?:\n|\Z)")
_ATTRIBUTE = re.compile(r' (?P<name>[a-z_]+)="(?P<value>[^"]*)"')
_MATCH = re.compile(r"^<match(?P<attrs>(?: [a-z_]+=\"[^\"]*\")*)>$", re.MULTILINE)


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate: about four characters a token, rounded up.

    >>> estimate_tokens("abcdefgh")
    2
    """
    return math.ceil(len(text) / 4)


@dataclass(frozen=True)
class Document:
    """Something kept in front of the model: a top file or a block.

    ``tag`` is ``memory`` (key = path), ``agent`` or ``routine`` (key = id). ``version`` defaults to
    the version of ``body``; pass the file's own version when the body was decoded from its bytes.
    """

    tag: str
    key: str
    body: str
    version: str = ""
    attributes: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.tag not in KEY_ATTRIBUTE:
            raise ValueError(f"unknown document tag {self.tag!r}; use one of {sorted(KEY_ATTRIBUTE)}")
        if not self.version:
            object.__setattr__(self, "version", version_of(self.body.encode("utf-8")))

    @property
    def is_empty(self) -> bool:
        return not self.body.strip()


@dataclass(frozen=True)
class ContextPlan:
    """Messages to append, and the file versions the thread holds once they are appended."""

    messages: list[dict[str, str]]
    seen: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RecallCandidate:
    """One search match, in rank order. ``text`` is the whole file; ``snippet`` a short excerpt."""

    path: str
    version: str
    text: str
    snippet: str = ""
    title: str = ""
    kind: str = ""
    linked_from: str = ""  # a linked note: the match whose link led here


@dataclass(frozen=True)
class RecallPlan:
    message: dict[str, str] | None
    paths: list[str] = field(default_factory=list)
    seen: dict[str, str] = field(default_factory=dict)  # files shown whole


def message_text(message: Mapping[str, Any]) -> str:
    """The text of a message whose content is a string or a list of text parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "") for part in content if isinstance(part, Mapping) and part.get("type") == "text"
        )
    return ""


def _attributes(raw: str) -> dict[str, str]:
    return {m["name"]: html.unescape(m["value"]) for m in _ATTRIBUTE.finditer(raw)}


def parse_header(text: str) -> tuple[str, dict[str, str]] | None:
    """``(tag, attributes)`` of a copy's header line, or None when ``text`` is not a copy."""
    match = _HEADER.match(text)
    if match is None:
        return None
    return match["tag"], _attributes(match["attrs"])


def _copy_identity(message: Mapping[str, Any]) -> tuple[str, str, str] | None:
    if message.get("role") != "user":
        return None
    parsed = parse_header(message_text(message))
    if parsed is None:
        return None
    tag, attributes = parsed
    key_name = KEY_ATTRIBUTE.get(tag)
    if key_name is None or key_name not in attributes or "version" not in attributes:
        return None
    return tag, attributes[key_name], attributes["version"]


def latest_copies(messages: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], str]:
    """``{(tag, key): version}`` of the latest copy of each document in the thread."""
    latest: dict[tuple[str, str], str] = {}
    for message in messages:
        identity = _copy_identity(message)
        if identity is not None:
            tag, key, version = identity
            latest[(tag, key)] = version
    return latest


def recalled_copies(messages: Iterable[Mapping[str, Any]]) -> set[tuple[str, str]]:
    """``{(path, version)}`` of files a recall message showed whole."""
    shown: set[tuple[str, str]] = set()
    for message in messages:
        if message.get("role") != "user":
            continue
        text = message_text(message)
        parsed = parse_header(text)
        if parsed is None or parsed[0] != RECALL_TAG:
            continue
        for match in _MATCH.finditer(text):
            attributes = _attributes(match["attrs"])
            if "path" in attributes and "version" in attributes and "excerpt" not in attributes:
                shown.add((attributes["path"], attributes["version"]))
    return shown


def _quote(value: str) -> str:
    return html.escape(value, quote=True)


def _header(tag: str, attributes: Sequence[tuple[str, str]]) -> str:
    return "<" + tag + "".join(f' {name}="{_quote(value)}"' for name, value in attributes) + ">"


def render_copy(document: Document) -> str:
    """The text of one copy: header, body, closing tag. Deterministic, so turns stay byte-identical."""
    attributes = [(KEY_ATTRIBUTE[document.tag], document.key), ("version", document.version)]
    attributes.extend(document.attributes)
    body = document.body
    if document.is_empty:
        attributes.append(("empty", "true"))
        body = EMPTY_NOTE
    body = body if body.endswith("\n") else body + "\n"
    return f"{_header(document.tag, attributes)}\n{body}</{document.tag}>"


def plan_context(messages: Sequence[Mapping[str, Any]], documents: Sequence[Document]) -> ContextPlan:
    """What to append to ``messages`` so the thread holds the current version of every document.

    >>> doc = Document("memory", "MEMORY.md", "# Rules\\n")
    >>> first = plan_context([], [doc])
    >>> len(first.messages), plan_context(first.messages, [doc]).messages
    (1, [])
    """
    latest = latest_copies(messages)
    appended: list[dict[str, str]] = []
    seen: dict[str, str] = {}
    done: set[tuple[str, str]] = set()
    for document in documents:
        identity = (document.tag, document.key)
        if identity in done:
            continue
        done.add(identity)
        held = latest.get(identity)
        if document.is_empty:
            if held is None or held == document.version:
                continue
        elif held == document.version:
            if document.tag == "memory":
                seen[document.key] = document.version
            continue
        appended.append({"role": "user", "content": render_copy(document)})
        if document.tag == "memory":
            seen[document.key] = document.version
    return ContextPlan(messages=appended, seen=seen)


def _cut(text: str, max_chars: int) -> str:
    """``text`` cut to at most ``max_chars`` at a line or word boundary, marked as cut."""
    marker = " …"
    if len(text) <= max_chars:
        return text
    room = max(0, max_chars - len(marker))
    cut = text[:room]
    boundary = max(cut.rfind("\n"), cut.rfind(" "))
    if boundary > room // 2:
        cut = cut[:boundary]
    return cut.rstrip() + marker


def _match_text(candidate: RecallCandidate, body: str, whole: bool) -> str:
    attributes = [("path", candidate.path)]
    if whole:
        attributes.append(("version", candidate.version))
    else:
        attributes.append(("excerpt", "true"))
    if candidate.kind:
        attributes.append(("kind", candidate.kind))
    if candidate.linked_from:
        attributes.append(("linked_from", candidate.linked_from))
    body = body.rstrip("\n")
    return f"{_header('match', attributes)}\n{body}\n</match>\n"


def plan_recall(
    query: str,
    candidates: Sequence[RecallCandidate],
    *,
    messages: Sequence[Mapping[str, Any]] = (),
    loaded: Iterable[str] = (),
    max_tokens: int = DEFAULT_RECALL_TOKENS,
) -> RecallPlan:
    """One message with the top matches for ``query``, at most ``max_tokens`` (estimated) long.

    Files in ``loaded`` (the scope's top files) and files the thread already holds at their current
    version are skipped. A file that fits whole is shown whole (and counts as read); otherwise its
    snippet, cut to fit; the planner stops at the first match that no longer fits.
    """
    skip = set(loaded)
    in_thread = recalled_copies(messages)
    in_thread |= {(key, version) for (tag, key), version in latest_copies(messages).items() if tag == "memory"}
    opening = (
        _header(RECALL_TAG, [("query", _cut(" ".join(query.split()), _QUERY_CHARS))])
        + "\nMemory files that may bear on the message above; they are not loaded in full."
        + " Read a file before you rely on it or change it.\n"
    )
    closing = f"</{RECALL_TAG}>"
    budget_chars = max_tokens * 4 - len(opening) - len(closing)
    parts: list[str] = []
    paths: list[str] = []
    seen: dict[str, str] = {}
    for candidate in candidates:
        if candidate.path in skip or candidate.path in paths:
            continue
        if (candidate.path, candidate.version) in in_thread:
            continue
        whole = _match_text(candidate, candidate.text, whole=True)
        if candidate.text.strip() and len(whole) <= budget_chars:
            parts.append(whole)
            paths.append(candidate.path)
            seen[candidate.path] = candidate.version
            budget_chars -= len(whole)
            continue
        excerpt = candidate.snippet.strip() or candidate.text.strip()
        if not excerpt:
            continue
        overhead = len(_match_text(candidate, "", whole=False))
        room = budget_chars - overhead
        if room < _MIN_EXCERPT_TOKENS * 4:
            break
        piece = _match_text(candidate, _cut(excerpt, room), whole=False)
        parts.append(piece)
        paths.append(candidate.path)
        budget_chars -= len(piece)
    if not parts:
        return RecallPlan(message=None)
    return RecallPlan(
        message={"role": "user", "content": opening + "".join(parts) + closing},
        paths=paths,
        seen=seen,
    )
