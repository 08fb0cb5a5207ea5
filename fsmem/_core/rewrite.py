"""The pure half of rewriting a message for recall: when a message needs it, what the chat model is
asked, and what of its answer is kept. ``fsmem._memory.rewrite`` asks the model, within a time limit.

"What did we decide about that?" holds no word a search can use; the last turns say what "that" is.
A short or referential message is rewritten as a standalone query; a message rich in its own words
goes to recall as it is.

    >>> needs_rewrite("what did we decide about that?", has_history=True)
    True
    >>> needs_rewrite("Which tone do the Saturday market posters use for headlines?", has_history=True)
    False
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from fsmem._core.context import parse_header
from fsmem._core.search import STOP_WORDS

__all__ = ["needs_rewrite", "parse_rewrite", "recent_turns", "rewrite_messages"]

SHORT = 2  # a message of this many words that are not stop words, or fewer, is short
REFERENTIAL_MAX = 5  # a message pointing back ("that", "it", "again") with at most this many is referential
_REFERENTIAL = frozenset(
    """that this it its those these them they their there then he she him her his hers same above earlier
    previous before again one ones so such""".split()
)
_WORD = re.compile(r"\w+", re.UNICODE)
_TURN_CHARS = 600  # of each earlier turn shown to the model
MAX_QUERY_CHARS = 300
_LABEL = re.compile(r"^\s*(?:search\s+)?query\s*:\s*", re.IGNORECASE)


def needs_rewrite(message: str, *, has_history: bool) -> bool:
    """Short or referential, with earlier turns to take its meaning from."""
    if not has_history:
        return False
    words = [word.lower() for word in _WORD.findall(message)]
    content = [word for word in words if word not in STOP_WORDS]
    if len(content) <= SHORT:
        return True
    return len(content) <= REFERENTIAL_MAX and any(word in _REFERENTIAL for word in words)


def recent_turns(messages: Sequence[Mapping[str, Any]], count: int, message: str) -> list[tuple[str, str]]:
    """The last ``count`` user and assistant turns before ``message`` (its own copy left out), as
    (role, text); memory copies and recall messages are not turns."""
    turns: list[tuple[str, str]] = []
    for item in messages:
        role, content = item.get("role"), item.get("content")
        if role not in ("user", "assistant") or not isinstance(content, str) or not content.strip():
            continue
        if role == "user" and parse_header(content) is not None:
            continue
        turns.append((str(role), content))
    if turns and turns[-1] == ("user", message):
        turns.pop()
    return turns[-count:] if count > 0 else []


def rewrite_messages(message: str, turns: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    """What the chat model is asked: the last turns, the message, and to answer with a query only."""
    shown = "\n".join(f"{role}: {' '.join(text.split())[:_TURN_CHARS]}" for role, text in turns)
    return [
        {
            "role": "system",
            "content": (
                "You turn a chat message into a search query for the user's notes. Using the conversation, "
                "name what the message refers to (people, things, topics, decisions). Answer with the "
                "query only: one line of keywords, at most 30 words, no explanation."
            ),
        },
        {"role": "user", "content": f"Conversation:\n{shown}\n\nMessage: {' '.join(message.split())}"},
    ]


def parse_rewrite(content: str | None) -> str | None:
    """The query in the model's answer (its first line, a ``Query:`` label and quotes cut), or ``None``."""
    if not content:
        return None
    for line in content.strip().splitlines():
        query = _LABEL.sub("", line).strip().strip("\"'`").strip()
        if query:
            return query[:MAX_QUERY_CHARS]
    return None
