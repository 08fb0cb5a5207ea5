"""Rules of review mode: a background reviewer adds at once; whatever else it does waits for a person.

Also the pure half of the review runner (``fsmem._memory.review``): the copy of a conversation it rereads.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from fsmem._core.context import parse_header
from fsmem._core.extract import text_of, turns_of
from fsmem._errors import BadFact, BadRequest


def only_adds(before: str, after: str) -> bool:
    """True when ``after`` keeps every line of ``before``, in order, and only inserts lines.

    >>> only_adds("a\\nb\\n", "a\\nnew\\nb\\n")
    True
    >>> only_adds("a\\nb\\n", "a\\nB\\n")
    False
    """
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines(), autojunk=False)
    return all(tag in ("equal", "insert") for tag, *_ in matcher.get_opcodes())


def unified_diff(path: str, before: str, after: str, max_lines: int = 80) -> str:
    """A short diff for a person deciding on a proposal."""
    lines = list(difflib.unified_diff(before.splitlines(), after.splitlines(), f"a/{path}", f"b/{path}", lineterm=""))
    if len(lines) > max_lines:
        lines = lines[:max_lines] + [f"… {len(lines) - max_lines} more diff lines"]
    return "\n".join(lines)


# ---- the conversation a reviewer rereads ---------------------------------------------------

CONVERSATION_LIMIT = 60_000  # characters of turns kept, newest first (about 15,000 tokens)
_COPY_TAGS = frozenset({"memory", "agent", "routine", "recall", "skills"})


def review_turns(conversation: Any, limit: int = CONVERSATION_LIMIT) -> tuple[list[dict[str, str]], int]:
    """A fresh copy of the person's and the model's turns, and how many older turns were left out.

    Only text is kept: tool calls, tool results and system text are dropped, and so are the memory
    copies a harness appended (``<memory …>``, ``<agent …>``, ``<routine …>``, ``<recall …>``), since
    the reviewer gets the current ones. Older turns go first when the text passes ``limit``; a single
    turn longer than the limit keeps its end.

    >>> review_turns([{"role": "system", "content": "s"}, {"role": "user", "content": "Hi"},
    ...               {"role": "assistant", "content": None, "tool_calls": []}])
    ([{'role': 'user', 'content': 'Hi'}], 0)
    """
    try:
        raw = turns_of(conversation)
    except BadFact as error:  # the same shape rules as the extractor; the review is no fact
        raise BadRequest(error.message) from None
    turns: list[dict[str, str]] = []
    for turn in raw:
        if not isinstance(turn, Mapping) or turn.get("role") not in ("user", "assistant"):
            continue
        text = text_of(turn.get("content")).strip()
        if not text:
            continue
        if turn["role"] == "user":
            header = parse_header(text)
            if header is not None and header[0] in _COPY_TAGS:
                continue
        turns.append({"role": str(turn["role"]), "content": text})
    kept: list[dict[str, str]] = []
    total = 0
    for turn in reversed(turns):
        size = len(turn["content"])
        if total + size > limit:
            if not kept:  # one huge last turn: keep its end rather than nothing
                kept.append({"role": turn["role"], "content": turn["content"][-limit:]})
            break
        kept.append(turn)
        total += size
    kept.reverse()
    return kept, len(turns) - len(kept)
