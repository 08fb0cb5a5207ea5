"""Rewriting a message for recall (the rules: ``fsmem._core.rewrite``): the chat model names what a
short or referential message refers to, within a time limit; on a timeout or a model error, recall
takes the message as it is. A turn never waits longer than the limit, and never fails for it.

    rewritten = rewrite_for_recall(model, "what did we decide about that?", thread)
    rewritten.query      # "decision Saturday market stall opening time"
    rewritten.outcome    # "rewritten" | "as_is" | "timeout" | "model_error" | "empty"
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from fsmem._core.rewrite import needs_rewrite, parse_rewrite, recent_turns, rewrite_messages
from fsmem._errors import ModelError

if TYPE_CHECKING:
    from fsmem._llm.model import ChatModel

__all__ = ["REWRITE_TIMEOUT", "REWRITE_TURNS", "Rewritten", "rewrite_for_recall"]

REWRITE_TIMEOUT = 3.0  # seconds a turn may wait for the rewrite
REWRITE_TURNS = 3  # earlier turns the model is shown
_MAX_TOKENS = 64  # the query is a line

Outcome = Literal["rewritten", "as_is", "timeout", "model_error", "empty"]


@dataclass(frozen=True)
class Rewritten:
    query: str  # what recall searches for
    outcome: Outcome


def rewrite_for_recall(
    model: ChatModel,
    message: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    timeout: float = REWRITE_TIMEOUT,
    turns: int = REWRITE_TURNS,
) -> Rewritten:
    """``message`` as a standalone query when it is short or referential and earlier turns explain it;
    the message itself otherwise, and whenever the model errs, answers nothing or takes longer than
    ``timeout`` seconds (its call then finishes, unheard, on a daemon thread)."""
    history = recent_turns(messages, turns, message)
    if not needs_rewrite(message, has_history=bool(history)):
        return Rewritten(message, "as_is")
    asked = rewrite_messages(message, history)
    answer: list[dict[str, Any]] = []
    failed: list[BaseException] = []

    def ask() -> None:
        try:
            answer.append(model.complete(asked, temperature=0.0))
        except BaseException as error:  # noqa: BLE001 - handed to the waiting caller below
            failed.append(error)

    worker = threading.Thread(target=ask, name="fsmem-rewrite", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        return Rewritten(message, "timeout")
    if failed:
        if isinstance(failed[0], ModelError):
            return Rewritten(message, "model_error")
        raise failed[0]  # a bug, not the model's failure: never hidden
    content = answer[0].get("content") if answer and isinstance(answer[0], Mapping) else None
    query = parse_rewrite(content if isinstance(content, str) else None)
    return Rewritten(query, "rewritten") if query else Rewritten(message, "empty")
