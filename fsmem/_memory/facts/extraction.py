"""Facts proposed from a conversation (``propose``): the model is asked for the durable facts, each
proposal says what keeping it would do, and nothing is kept until a person or a caller chooses.

The rules of the exchange (the messages sent, the reply read, each proposal classified) are
:mod:`fsmem._core.extract`; the prompt is the packaged ``extract_facts.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from fsmem._core import facts as rules
from fsmem._core.extract import (
    Proposal,
    classify,
    conversation_meta,
    conversation_text,
    extraction_messages,
    parse_proposals,
)
from fsmem._env.resources import data_dir
from fsmem._errors import SetupError
from fsmem._memory.facts.view import FactView, known_of

__all__ = ["Extraction", "PROMPT_FILE", "propose", "load_prompt"]

PROMPT_FILE = data_dir("prompts") / "extract_facts.md"


@dataclass(frozen=True)
class Extraction:
    """What the extractor proposed from a conversation. Nothing is kept until chosen."""

    proposals: list[Proposal] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"proposals": [p.to_dict() for p in self.proposals], "notes": list(self.notes)}


def propose(
    view: FactView,
    conversation: Any,
    llm: Any,
    *,
    now: datetime,
    source: str | None = None,
    said: object = None,
    prompt: str | None = None,
) -> Extraction:
    """What :meth:`fsmem._memory.facts.Facts.propose` answers, asked of ``view`` as it stands at ``now``."""
    text = conversation_text(conversation)
    if not text:
        return Extraction(
            [], ["the conversation has no turns by the person or the model; nothing was sent to the model"]
        )
    meta = conversation_meta(conversation)
    if source is None:
        source = f"chat: {meta['title']}" if "title" in meta else "a conversation"
    said_at = rules.parse_moment(said if said is not None else meta.get("date", now), now)
    template = prompt if prompt is not None else load_prompt()
    with view.guard:
        resolution = view.load()
        messages = extraction_messages(
            template, text, today=now, current=resolution.current(), known=known_of(view.load())
        )
    from fsmem._llm.model import JSON_OBJECT

    # JSON mode where the server has it: small models answer prose without it (fsmem._llm.model falls back)
    reply = llm.complete(messages, response_format=JSON_OBJECT)
    found = parse_proposals(reply.get("content"))
    with view.guard:
        proposals, notes = classify(view.load(), found, said=said_at, source=source, now=now)
    return Extraction(proposals, notes)


def load_prompt() -> str:
    try:
        return PROMPT_FILE.read_text(encoding="utf-8")
    except OSError as error:
        raise SetupError(
            f"the extractor's prompt {PROMPT_FILE} cannot be read ({error.strerror}); reinstall fsmem"
        ) from None
