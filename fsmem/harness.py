"""A reference agent loop: any OpenAI-compatible chat model, the memory tool, memory in context.

    memory = fsmem.open(root)
    session = Session(memory, Scope.agent(agent_id, name="SEO"), model)
    turn = session.turn("Shorten the /classes title")
    turn.given      # what was appended to the thread for this turn: the message, memory copies, recall
    turn.steps      # each memory-tool call and what it returned
    turn.answer     # the model's last text

The system prompt and the tool list are rendered once and never change; memory reaches the model as
messages appended to the thread (``Run.context``), so the cached prefix survives every turn.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fsmem._memory import prompts as _prompts
from fsmem._memory.tool_calls import TOOL_NAME, ToolStep, assistant_message, execute_call, memory_tool_spec

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

SUMMARY_PREFIX = "Summary of the conversation so far (older messages were compacted):\n"
_SUMMARIZE = (
    "Summarize this conversation for your own later use in a few short lines: what was asked, what "
    "was done, what is still open. Memory files are loaded again on their own; do not copy them."
)


BAD_ARGUMENTS_NOTE = (
    "(stopped: the model twice sent memory-tool arguments that are not valid JSON, so this turn ended "
    "without an answer; a larger --max-tokens or a model with tool-calling support may help)"
)


@dataclass
class Turn:
    given: list[dict[str, Any]]
    steps: list[ToolStep] = field(default_factory=list)
    answer: str = ""
    model_calls: int = 0


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
            return self._work(turn)
        except Exception:
            if not turn.steps:
                del self.messages[start:]
            raise

    def _work(self, turn: Turn) -> Turn:
        corrected = False
        for _ in range(self.max_steps):
            reply = self.model.complete(self.model_input(), tools=self.tools, temperature=self.temperature)
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
                    turn.answer = BAD_ARGUMENTS_NOTE
                    return turn
                corrected = True
        turn.answer = f"(stopped after {self.max_steps} model calls without a final answer)"
        return turn

    def _execute(self, call: dict[str, Any]) -> ToolStep:
        return execute_call(self.run, call)

    def compact(self, summary: str | None = None, *, keep_last: int = 0) -> str:
        """Replace the older messages with a summary (the model writes it when none is given).

        Memory copies go with them; the next turn puts the latest of each back, once.
        """
        if summary is None:
            reply = self.model.complete([*self.model_input(), {"role": "user", "content": _SUMMARIZE}], tools=None)
            summary = str(assistant_message(reply).get("content") or "").strip()
        kept = self.messages[len(self.messages) - keep_last :] if keep_last > 0 else []
        while kept and kept[0].get("role") == "tool":  # a tool result never opens a thread
            kept.pop(0)
        self.messages = [{"role": "user", "content": SUMMARY_PREFIX + summary}, *kept]
        return summary
