"""One call of the memory tool as a chat model makes it (an OpenAI-style tool call), run on a ``Run``:
what the reference harness (``fsmem.harness``) and the review share.

    step = execute_call(run, {"function": {"name": "memory", "arguments": '{"command": "read", "path": "/"}'}})
    step.ok, step.text          # what the model is given back
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from fsmem._errors import ModelError
from fsmem._memory import prompts as _prompts
from fsmem._memory.tool_forms import TOOL_NAME


def memory_tool_spec() -> dict[str, Any]:
    """The memory tool as an OpenAI function: ``tool_schema/memory.json`` in the grammar-safe form
    (``fsmem._memory.tool_forms.grammar_safe_function``: no length limits, which local servers' grammar builders
    choke on; fsmem checks every call against the full schema), described by ``prompts/tool.md``."""
    from fsmem._memory.tool_forms import grammar_safe_function, load_source

    return grammar_safe_function(load_source(), _prompts.tool_description())


@dataclass
class ToolStep:
    """One tool call of the model and what it got back."""

    name: str
    arguments: dict[str, Any] | None
    result: dict[str, Any]
    malformed: bool = False  # the arguments were not JSON: the model gets one chance to send them again

    @property
    def text(self) -> str:
        return str(self.result.get("text", ""))

    @property
    def ok(self) -> bool:
        return bool(self.result.get("ok"))


def assistant_message(reply: dict[str, Any]) -> dict[str, Any]:
    """The assistant message as it goes back into the thread: role, content, tool calls only."""
    if not isinstance(reply, dict):
        raise ModelError(f"the model answered with {type(reply).__name__}, not a message")
    # "" rather than null beside tool calls: some servers (llama-cpp-python) refuse null content
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("content") or ""}
    calls = reply.get("tool_calls") or []
    if calls:
        message["tool_calls"] = calls
    return message


def refusal(code: str, message: str) -> dict[str, Any]:
    return {"ok": False, "error": {"code": code, "message": message}, "text": f"Error [{code}]: {message}"}


def execute_call(run: Any, call: dict[str, Any]) -> ToolStep:
    """Execute one tool call of the model on ``run``; anything malformed becomes a ``BAD_REQUEST``
    result the model can act on (used by :class:`Session` and by ``fsmem._memory.review``)."""
    function = call.get("function") or {}
    name = str(function.get("name", ""))
    raw = function.get("arguments") or "{}"
    if name != TOOL_NAME:
        return ToolStep(
            name, None, refusal("BAD_REQUEST", f"there is no tool named {name!r}; the only tool is {TOOL_NAME!r}")
        )
    try:
        arguments = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError as error:
        return ToolStep(
            name,
            None,
            refusal(
                "BAD_REQUEST",
                f"the arguments are not valid JSON ({error.msg}: line {error.lineno}, column "
                f"{error.colno}); send them again as one complete JSON object such as "
                '{"command": "read", "path": "MEMORY.md"}',
            ),
            malformed=True,
        )
    if not isinstance(arguments, dict):
        return ToolStep(name, None, refusal("BAD_REQUEST", 'the arguments must be one JSON object with a "command"'))
    return ToolStep(name, arguments, run.call(arguments))
