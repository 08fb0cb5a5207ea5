"""The extractor's pure half: what the model is shown, how its answer is read, what each proposal is.

    text = conversation_text(messages)                       # the person's and the model's turns, last 24,000 chars
    messages = extraction_messages(template, text, today=now, current=facts, known=things)
    found = parse_proposals(reply_text)                      # ModelError on anything but the JSON asked for
    proposals, notes = classify(resolution, found, said=now, source="chat: Planning", now=now)

Nothing here keeps a fact: the caller keeps the proposals a person chose, by the fact rules.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypeGuard

from fsmem._core.chains import Resolution
from fsmem._core.facts import Draft, Fact, check_draft, format_when, same_sentence
from fsmem._errors import BadFact, FactSensitive, ModelError

__all__ = [
    "CONVERSATION_LIMIT",
    "CURRENT_FACTS_SHOWN",
    "Proposal",
    "conversation_text",
    "conversation_meta",
    "extraction_messages",
    "parse_proposals",
    "classify",
]

CONVERSATION_LIMIT = 24_000
CURRENT_FACTS_SHOWN = 80
_SPEAKERS = {"user": "Person", "assistant": "Assistant"}

Status = Literal["new", "replaces", "history", "known"]


# --------------------------------------------------------------------------- the conversation


def turns_of(conversation: Any) -> list[Any]:
    if isinstance(conversation, Mapping):
        for key in ("messages", "conversation", "turns"):
            if isinstance(conversation.get(key), list):
                return conversation[key]
        raise BadFact(
            "the conversation has no list of messages: give a JSON list of "
            '{"role": "user"|"assistant", "content": "..."} or {"messages": [...]}'
        )
    if isinstance(conversation, list):
        return conversation
    raise BadFact("a conversation is a JSON list of messages, or an object with a `messages` list")


def text_of(content: Any) -> str:
    """Text of a message's content: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and part.get("type") in ("text", "input_text", "output_text"):
                parts.append(str(part.get("text", "")))
        return "\n".join(p for p in parts if p)
    return ""


def conversation_text(conversation: Any, limit: int = CONVERSATION_LIMIT) -> str:
    """The person's and the model's turns as ``Person: …`` / ``Assistant: …`` blocks, the last
    ``limit`` characters (older turns are cut first; tool calls, tool results and system text are
    never read)."""
    blocks = []
    for turn in turns_of(conversation):
        if not isinstance(turn, Mapping):
            continue
        speaker = _SPEAKERS.get(str(turn.get("role", "")))
        text = text_of(turn.get("content")).strip()
        if speaker and text:
            blocks.append(f"{speaker}: {text}")
    whole = "\n\n".join(blocks)
    if len(whole) <= limit:
        return whole
    cut = whole[-limit:]
    start = cut.find("\n\n")  # begin at a turn when one starts near the cut
    if 0 <= start < limit // 4:
        cut = cut[start + 2 :]
    return cut


def conversation_meta(conversation: Any) -> dict[str, str]:
    """``title`` and ``date`` when the conversation file carries them (an object with those keys)."""
    meta: dict[str, str] = {}
    if isinstance(conversation, Mapping):
        for key, names in (("title", ("title", "name")), ("date", ("date", "created_at", "created"))):
            for name in names:
                value = conversation.get(name)
                if isinstance(value, (str, int, float)) and str(value).strip():
                    meta[key] = str(value).strip()
                    break
    return meta


# --------------------------------------------------------------------------- the request


def _render_known(known: Iterable[tuple[str, str]]) -> str:
    lines = [f"- {subject} / {attribute}" for subject, attribute in known]
    return "\n".join(lines) if lines else "(none yet)"


def _render_facts(current: Sequence[Fact]) -> str:
    lines = [f"- {fact.subject} / {fact.attribute}: {fact.text} (said {format_when(fact.said)})" for fact in current]
    return "\n".join(lines) if lines else "(none yet)"


def extraction_messages(
    template: str, conversation: str, *, today: datetime, current: Sequence[Fact], known: Iterable[tuple[str, str]]
) -> list[dict]:
    """The system prompt (``template`` with ``{{today}}``, ``{{known}}``, ``{{facts}}`` filled: up to
    80 current facts, latest said first) and the conversation as the user message."""
    shown = sorted(current, key=Fact.order, reverse=True)[:CURRENT_FACTS_SHOWN]
    system = (
        template.replace("{{today}}", today.strftime("%Y-%m-%d (%A)"))
        .replace("{{known}}", _render_known(known))
        .replace("{{facts}}", _render_facts(shown))
    )
    user = (
        "Write down the durable facts of this conversation, as JSON.\n\n"
        f"<conversation>\n{conversation}\n</conversation>"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


# --------------------------------------------------------------------------- the answer

_THINK = re.compile(r"<think>.*?</think>", re.S)
_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n(.*?)\n?```\s*$", re.S)


def parse_proposals(reply: str | None) -> list[dict[str, Any]]:
    """The facts a model proposed: ``{"facts": [...]}`` (or a bare list), after any thinking block
    or code fence. Anything else is one :class:`ModelError`, and nothing is kept."""
    text = _THINK.sub("", reply or "").strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    if not text:
        raise ModelError(
            "the model answered nothing; it was asked for JSON like "
            '{"facts": [...]}. Nothing was kept; try again or use another model'
        )
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ModelError(
            f"the model's answer is not valid JSON ({error.msg}: line {error.lineno}, "
            f'column {error.colno}); it was asked for {{"facts": [...]}}. Nothing was '
            "kept; try again or use another model"
        ) from None
    items = data.get("facts") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ModelError(
            'the model\'s JSON has no "facts" list; it was asked for {"facts": [...]}. '
            "Nothing was kept; try again or use another model"
        )
    return [item if isinstance(item, dict) else {"_not_an_object": item} for item in items]


# --------------------------------------------------------------------------- the proposals


@dataclass(frozen=True)
class Proposal:
    """One fact the model proposed, checked, and what keeping it would do."""

    number: int  # 1-based, as shown to the person (`--keep 1,3`)
    draft: Draft
    status: Status
    other: Fact | None = None  # the fact it would replace, or that already says it, or that holds

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "subject": self.draft.subject,
            "attribute": self.draft.attribute,
            "fact": self.draft.text,
            "said": format_when(self.draft.said),
            "source": self.draft.source,
            "status": self.status,
            "other": self.other.id if self.other else None,
        }

    def describe(self) -> str:
        """What keeping it would do, in words."""
        if self.status == "new":
            return "new"
        assert self.other is not None
        if self.status == "replaces":
            return f"would replace {self.other.id}: {self.other.text}"
        if self.status == "history":
            return f"would go to the history: {self.other.id} holds, said later: {self.other.text}"
        return f"already known: {self.other.id}"


def classify(
    resolution: Resolution, found: Sequence[Mapping[str, Any]], *, said: datetime, source: str, now: datetime
) -> tuple[list[Proposal], list[str]]:
    """Check each proposed fact by the rules and say what keeping it would do. Proposals that break
    a rule (a secret, a limit, a missing part) are dropped with a note; a secret is never repeated."""
    proposals: list[Proposal] = []
    notes: list[str] = []
    current = resolution.current()
    for index, item in enumerate(found, start=1):
        subject = item.get("subject")
        about = f"a fact about {' '.join(subject.split())}" if _nameable(subject) else f"proposal {index}"
        try:
            if "_not_an_object" in item:
                raise BadFact("it is not an object with subject, attribute and fact")
            missing = [name for name in ("subject", "attribute", "fact") if not item.get(name)]
            if missing:
                raise BadFact(f"it has no {' or '.join(missing)}")
            draft = check_draft(
                item["subject"], item["attribute"], item["fact"], source, item.get("said") or said, now=now
            )
        except FactSensitive as error:
            kind = getattr(error, "kind", None)
            what = f", {kind}" if kind else ""
            notes.append(f"{about} was dropped: it looked like a secret{what}")
            continue
        except BadFact as error:
            notes.append(f"{about} was dropped: {error.message}")
            continue
        holding = resolution.holding(draft.key)
        if holding is not None and same_sentence(holding.text, draft.text):
            proposals.append(Proposal(len(proposals) + 1, draft, "known", holding))
            continue
        twin = next((fact for fact in current if same_sentence(fact.text, draft.text)), None)
        if twin is not None:
            proposals.append(Proposal(len(proposals) + 1, draft, "known", twin))
        elif holding is None:
            proposals.append(Proposal(len(proposals) + 1, draft, "new"))
        elif draft.said >= holding.said:
            proposals.append(Proposal(len(proposals) + 1, draft, "replaces", holding))
        else:
            proposals.append(Proposal(len(proposals) + 1, draft, "history", holding))
    return proposals, notes


def _nameable(subject: object) -> TypeGuard[str]:
    """A subject may be named in a note only when it is short and not itself secret-looking."""
    from fsmem._core.secrets import find_fact_secret

    return isinstance(subject, str) and 0 < len(subject.strip()) <= 120 and find_fact_secret(subject) is None
