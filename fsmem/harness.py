"""A reference agent loop: any OpenAI-compatible chat model, the memory tool, memory in context.

    memory = fsmem.open(root)
    session = Session(memory, Scope.agent(agent_id, name="SEO"), model)
    turn = session.turn("Shorten the /classes title")
    turn.given      # what was appended to the thread for this turn: the message, memory copies, recall
    turn.steps      # each memory-tool call and what it returned
    turn.answer     # the model's last text
    session.review_notices()   # what a background review did: "Memory updated · Skill 'x' updated"

After the turn that makes the conversation due (``fsmem._core.due.review_due``: the person's 10th, 20th …
message, the model's 10th, 20th … reply since the last skill change), a review of it starts in the
background; the answer is never delayed by it, and its line never enters the thread.

The system prompt and the tool list are rendered once and never change; memory reaches the model as
messages appended to the thread (``Run.context``), so the cached prefix survives every turn.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fsmem._core.due import SUMMARY_PREFIX, TurnEnded
from fsmem._errors import FsmemError
from fsmem._memory import prompts as _prompts
from fsmem._memory.background import BackgroundReviews
from fsmem._memory.curator import curate
from fsmem._memory.tool_calls import TOOL_NAME, ToolStep, assistant_message, execute_call, memory_tool_spec
from fsmem._memory.usage import Metered

__all__ = [
    "TOOL_NAME",
    "SUMMARY_PREFIX",
    "BAD_ARGUMENTS_NOTE",
    "ToolStep",
    "Turn",
    "Session",
    "memory_tool_spec",
    "execute_call",
    "assistant_message",
]

_SUMMARIZE = (
    "Summarize this conversation for your own later use in a few short lines: what was asked, what "
    "was done, what is still open. Memory files are loaded again on their own; do not copy them."
)


BAD_ARGUMENTS_NOTE = (
    "(stopped: the model twice sent memory-tool arguments that are not valid JSON, so this turn ended "
    "without an answer; a larger --max-tokens or a model with tool-calling support may help)"
)


def _curate(memory: Any) -> Any:
    """The curator's pass when one is due (cheap when not); it never keeps a session from starting."""
    try:
        return curate(memory)
    except (FsmemError, OSError) as error:
        logging.getLogger("fsmem.skills").warning("the curator's pass failed: %s", error)
        return None


@dataclass
class Turn:
    given: list[dict[str, Any]]
    steps: list[ToolStep] = field(default_factory=list)
    answer: str = ""
    model_calls: int = 0
    ended: TurnEnded = "answered"  # "stopped": out of steps, or malformed arguments twice
    review_started: bool = False  # this turn made the conversation due and a review began


class Session:
    """One thread of one scope: a chat, an agent's chat, or a routine's runs."""

    def __init__(
        self,
        memory: Any,
        scope: Any,
        model: Any,
        *,
        thread_id: str | None = None,
        project: str | None = None,
        recall: bool = False,
        recall_tokens: int | None = None,
        rewrite: bool = True,
        max_steps: int = 12,
        messages: Sequence[dict[str, Any]] = (),
        routines: Mapping[str, str] | None = None,
        temperature: float | None = None,
        review: bool = True,
        review_model: Any = None,
        window: int | None = None,
    ) -> None:
        self.memory = memory
        self.scope = scope
        self.model = model
        self.thread_id = thread_id or f"thread-{uuid.uuid4().hex[:12]}"
        self.run = memory.run(scope, thread_id=self.thread_id)
        self.system = _prompts.system_prompt(project or memory.name)
        self.tools = [memory_tool_spec()]
        self.recall = recall
        self.recall_tokens = recall_tokens
        self.rewrite = rewrite  # recall: a short or referential message rewritten by the model first
        self.max_steps = max_steps
        self.routines = dict(routines or {})  # routine id -> name, from the harness's records
        self.temperature = temperature  # None: the model's own setting (--temperature)
        self.messages: list[dict[str, Any]] = [dict(m) for m in messages]
        _curate(memory)  # a session starts after the memory was idle, if ever: the curator's time
        # review=False: the harness runs `fsmem.review` itself (`fsmem.review_due` says when)
        self.reviews = (
            BackgroundReviews(
                memory,
                scope,
                review_model or model,
                self.thread_id,
                project=project,
                window=window,
                temperature=temperature,
            )
            if review
            else None
        )

    @property
    def _chat_model(self) -> Metered:
        """``model`` with its calls recorded as ``chat`` (read each call: a harness may swap ``model``)."""
        return Metered(self.model, self.memory.drive.state, "chat")

    def model_input(self) -> list[dict[str, Any]]:
        return [{"role": "system", "content": self.system}, *self.messages]

    def turn(self, text: str) -> Turn:
        """Append the message and the memory it needs, then let the model work until it answers.

        If the model fails before any tool call ran, the thread is left as it was, so the turn can be
        retried; once a call changed memory, the thread keeps what happened.
        """
        start = len(self.messages)
        user = {"role": "user", "content": text}
        options: dict[str, Any] = {"routines": self.routines}
        if self.recall_tokens is not None:
            options["recall_tokens"] = self.recall_tokens
        if self.recall and self.rewrite:
            options["rewriter"] = self.model
        extra = self.run.context([*self.messages, user], recall=text if self.recall else None, **options)
        self.messages.extend([user, *extra])
        turn = Turn(given=[dict(m) for m in self.messages[start:]])
        try:
            self._work(turn)
        except Exception:  # a failed turn (or one stopped by an interrupt) starts no review
            if not turn.steps:
                del self.messages[start:]
            raise
        if self.reviews is not None:
            turn.review_started = self.reviews.after_turn(self.messages, ended=turn.ended)
        return turn

    def review_notices(self) -> list[str]:
        """One line per background review that finished since the last call and changed something."""
        return self.reviews.notices() if self.reviews is not None else []

    def wait_for_reviews(self, timeout: float | None = None) -> bool:
        """Let a running review finish (before the process ends); False if one still runs after ``timeout``."""
        return self.reviews.wait(timeout) if self.reviews is not None else True

    def _work(self, turn: Turn) -> Turn:
        corrected = False
        for _ in range(self.max_steps):
            reply = self._chat_model.complete(self.model_input(), tools=self.tools, temperature=self.temperature)
            turn.model_calls += 1
            message = assistant_message(reply)
            self.messages.append(message)
            calls = message.get("tool_calls") or []
            if not calls:
                turn.answer = message.get("content") or ""
                return turn
            malformed = False
            for call in calls:
                step = self._execute(call)
                turn.steps.append(step)
                malformed = malformed or step.malformed
                self.messages.append({"role": "tool", "tool_call_id": str(call.get("id", "")), "content": step.text})
            if malformed:
                # the refusal above is the one corrective reply; a model that cannot send JSON
                # arguments rarely learns in the next ten calls, so the turn ends instead
                if corrected:
                    turn.answer, turn.ended = BAD_ARGUMENTS_NOTE, "stopped"
                    return turn
                corrected = True
        turn.answer = f"(stopped after {self.max_steps} model calls without a final answer)"
        turn.ended = "stopped"
        return turn

    def _execute(self, call: dict[str, Any]) -> ToolStep:
        return execute_call(self.run, call)

    def compact(self, summary: str | None = None, *, keep_last: int = 0) -> str:
        """Replace the older messages with a summary (the model writes it when none is given).

        Memory copies go with them; the next turn puts the latest of each back, once.
        """
        if summary is None:
            reply = self._chat_model.complete(
                [*self.model_input(), {"role": "user", "content": _SUMMARIZE}], tools=None
            )
            summary = str(assistant_message(reply).get("content") or "").strip()
        kept = self.messages[len(self.messages) - keep_last :] if keep_last > 0 else []
        while kept and kept[0].get("role") == "tool":  # a tool result never opens a thread
            kept.pop(0)
        self.messages = [{"role": "user", "content": SUMMARY_PREFIX + summary}, *kept]
        return summary
