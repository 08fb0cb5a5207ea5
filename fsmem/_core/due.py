"""When the background review is due, and what it may spend: pure rules over a stored conversation.

    due = review_due(session.messages, ended="answered")
    if due:                      # due.memory, due.skills: which halves; one review does both
        review(memory, session.messages, model, scope, halves=due.halves)

Everything is counted from the conversation itself (the list of OpenAI-style messages a harness
keeps), so a process that restarts from a stored thread decides as the one before it would have.

- **The memory half** is due when the person's messages reach 10, 20, 30 … counted since the agent
  itself last changed memory (a successful ``write``, ``rename`` or ``delete`` of the memory tool,
  outside skills) in this conversation. Only the person's messages count: a user message that is a
  memory copy (``<memory …>``, ``<recall …>`` …), the compaction summary, or that carries a ``name``
  (a harness's notice, another agent, a model-switch note: whatever a harness writes on someone
  else's behalf) does not. The turn that ends must have been opened by the person's message, so a
  notice's turn at the 10th message does not run the half a second time.
- **The skill half** is due when the turn that ends carries the model's replies, counted since the
  last skill change in this conversation, past 10, 20 …
- None after a routine's run, nor after a turn that was stopped or failed.

The review works on a copy, so its own writes never enter the conversation nor restart a count.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from fsmem._core.context import message_text, parse_header
from fsmem._core.layout import skill_of
from fsmem._core.requests import CHANGING_COMMANDS, memory_call_arguments

__all__ = [
    "EVERY",
    "SUMMARY_PREFIX",
    "ReviewDue",
    "TurnEnded",
    "estimate_tokens",
    "input_budget",
    "input_tokens",
    "review_due",
]

EVERY = 10
SUMMARY_PREFIX = "Summary of the conversation so far (older messages were compacted):\n"

TurnEnded = Literal["answered", "stopped", "failed"]
Half = Literal["memory", "skills"]

WINDOW_SHARE = 0.75  # of the model's context window, summed over the review's calls
MAX_INPUT_TOKENS = 600_000  # a long conversation replayed 16 times would pass a million
UNKNOWN_WINDOW_TOKENS = 120_000


@dataclass(frozen=True)
class ReviewDue:
    """Which halves of the review are due, and the counts that decided it."""

    memory: bool
    skills: bool
    person_messages: int  # the person's messages since the agent last changed memory
    replies: int  # the model's replies since the last skill change
    why_not: str = ""  # when neither is due and the counts did not decide it: routine, stopped, failed

    def __bool__(self) -> bool:
        return self.memory or self.skills

    @property
    def halves(self) -> tuple[Half, ...]:
        chosen: list[Half] = []
        if self.memory:
            chosen.append("memory")
        if self.skills:
            chosen.append("skills")
        return tuple(chosen)


def review_due(
    conversation: Sequence[Mapping[str, Any]],
    *,
    ended: TurnEnded = "answered",
    routine: bool = False,
    every: int = EVERY,
) -> ReviewDue:
    """Decide, after a turn ends, whether ``conversation`` is due for a review and which halves.

    >>> person = {"role": "user", "content": "hi"}
    >>> reply = {"role": "assistant", "content": "hello"}
    >>> bool(review_due([person, reply] * 9))
    False
    >>> review_due([person, reply] * 10).halves
    ('memory', 'skills')
    """
    if every < 1:
        raise ValueError("every must be at least 1")
    messages = list(conversation)
    results = _tool_results(messages)
    person = replies = turn_replies = 0
    opener_is_person = False
    for message in messages:
        role = message.get("role")
        if role == "user":
            kind = _user_kind(message)
            if kind == "copy":
                continue
            opener_is_person = kind == "person"
            turn_replies = 0
            if kind == "person":
                person += 1
        elif role == "assistant":
            replies += 1
            turn_replies += 1
            memory_changed, skill_changed = _changes(message, results)
            if memory_changed:
                person = 0
            if skill_changed:
                replies = turn_replies = 0
    if routine:
        return ReviewDue(False, False, person, replies, why_not="routine")
    if ended != "answered":
        return ReviewDue(False, False, person, replies, why_not=ended)
    memory = opener_is_person and person > 0 and person % every == 0
    before = max(replies - turn_replies, 0)
    skills = replies // every > before // every
    return ReviewDue(memory, skills, person, replies)


def _user_kind(message: Mapping[str, Any]) -> Literal["person", "copy", "other"]:
    text = message_text(message)
    if parse_header(text) is not None or text.startswith(SUMMARY_PREFIX):
        return "copy"
    return "other" if message.get("name") else "person"


def _tool_results(messages: list[Mapping[str, Any]]) -> dict[str, bool]:
    """Whether each tool call succeeded, by its id: a refusal's text starts with ``Error [``."""
    return {
        str(m.get("tool_call_id")): not message_text(m).startswith("Error [")
        for m in messages
        if m.get("role") == "tool"
    }


def _changes(message: Mapping[str, Any], results: Mapping[str, bool]) -> tuple[bool, bool]:
    """Whether this reply's memory-tool calls changed memory outside skills, and a skill."""
    memory = skill = False
    for call in message.get("tool_calls") or []:
        arguments = memory_call_arguments(call)
        if arguments is None or arguments.get("command") not in CHANGING_COMMANDS:
            continue
        if not results.get(str(call.get("id")), False):
            continue
        paths = [str(arguments.get(key) or "").strip("/") for key in ("path", "new_path")]
        if any(skill_of(path) for path in paths if path):
            skill = True
        else:
            memory = True
    return memory, skill


# ---- what a review may spend ---------------------------------------------------------------------


def input_budget(window: int | None) -> int:
    """Input tokens a review may spend, summed over its calls: three quarters of the model's window,
    never past 600,000; 120,000 when the window is unknown.

    >>> input_budget(None), input_budget(32_768), input_budget(2_000_000)
    (120000, 24576, 600000)
    """
    if window is None or window <= 0:
        return UNKNOWN_WINDOW_TOKENS
    return min(int(window * WINDOW_SHARE), MAX_INPUT_TOKENS)


def estimate_tokens(messages: Sequence[Mapping[str, Any]], tools: Sequence[Any] | None = None) -> int:
    """About how many input tokens ``messages`` (and the tool list) cost: a character in four, the
    rule of thumb for English text, used when a server reports no usage."""
    size = sum(len(json.dumps(m, ensure_ascii=False)) for m in messages)
    if tools:
        size += len(json.dumps(list(tools), ensure_ascii=False))
    return max(1, size // 4)


def input_tokens(
    reply: Mapping[str, Any], messages: Sequence[Mapping[str, Any]], tools: Any = None
) -> tuple[int, int, bool]:
    """``(input, output, estimated)`` tokens of one call: what the server reported in ``usage``, else
    an estimate from the messages it was given (``estimated`` True)."""
    usage = reply.get("usage")
    # a server that answers 0 did not count (no prompt is empty): the estimate is nearer the truth
    if isinstance(usage, Mapping) and isinstance(usage.get("prompt_tokens"), int) and usage["prompt_tokens"] > 0:
        output = usage.get("completion_tokens")
        return int(usage["prompt_tokens"]), int(output) if isinstance(output, int) else 0, False
    answer = message_text(reply) + json.dumps(reply.get("tool_calls") or [])
    return estimate_tokens(messages, tools), max(0, len(answer) // 4), True
