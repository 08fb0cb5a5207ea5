"""Model clients: one small interface, the settings that name a model, and a scripted model for tests.

    model = fsmem.build_model(ModelSettings.from_env(url="http://localhost:11434/v1", model="qwen3:4b"))
    reply = model.complete([{"role": "user", "content": "Hi"}])   # key from $OPENAI_API_KEY
    reply["content"]          # "Hello!"  (an OpenAI-style assistant message; see ChatModel)

    scripted = ScriptedModel()
    scripted.enqueue("first reply")
    scripted.enqueue({"role": "assistant", "content": None, "tool_calls": [tool_call("memory", {...})]})

The HTTP client and ``build_model`` live in :mod:`fsmem._llm.openai`, so what only names a model (the
shell's model options, its ``--help``) loads no HTTP, TLS or e-mail modules.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from fsmem._errors import ModelError

__all__ = [
    "DEFAULT_API_KEY_ENV",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TIMEOUT",
    "JSON_OBJECT",
    "ChatModel",
    "ModelSettings",
    "ScriptedModel",
    "tool_call",
]

DEFAULT_TIMEOUT = 300.0  # a small model on a CPU takes minutes for 1,024 tokens; a hung server is cut off
DEFAULT_MAX_TOKENS = 1024  # enough for a tool call or a short answer; a rambling model stops here
JSON_OBJECT = {"type": "json_object"}  # the response_format a JSON task asks for
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
_CALL_IDS = itertools.count(1)


@runtime_checkable
class ChatModel(Protocol):
    def complete(
        self,
        messages: list[dict],
        *,
        tools: list[dict] | None = None,
        temperature: float | None = None,
        response_format: dict | None = None,
    ) -> dict:
        """One assistant message for ``messages``:

        ``{"role": "assistant", "content": str | None, "tool_calls": [{"id", "type": "function",
        "function": {"name", "arguments": "<json>"}}]}`` — ``tool_calls`` only when the model made some;
        ``usage`` (``prompt_tokens``, ``completion_tokens``) when the server said what the call cost.
        ``temperature`` None: the model's own setting. ``response_format`` (e.g. :data:`JSON_OBJECT`):
        a task that wants JSON asks for it; a model that cannot honour it answers as it can.
        """
        ...


def tool_call(name: str, arguments: dict | str, call_id: str | None = None) -> dict:
    """An OpenAI-style tool call (``arguments`` as a dict is encoded to JSON)."""
    return {
        "id": call_id or f"call_{next(_CALL_IDS)}",
        "type": "function",
        "function": {"name": name, "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)},
    }


def _assistant_message(raw: Any, where: str) -> dict:
    """Check and normalize one assistant message from a model."""
    if not isinstance(raw, dict):
        raise ModelError(
            f"{where} did not answer with a message object; check that the URL is a chat-completions endpoint"
        )
    content = raw.get("content")
    if content is not None and not isinstance(content, str):
        if isinstance(content, list):  # some servers answer with content parts
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        else:
            raise ModelError(f"{where} answered with content that is not text")
    message: dict[str, Any] = {"role": "assistant", "content": content}
    calls = raw.get("tool_calls") or []
    if not isinstance(calls, list):
        raise ModelError(f"{where} answered with tool_calls that are not a list")
    normalized = []
    for index, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise ModelError(f"{where} answered with tool call {index + 1} that has no function name")
        arguments = function.get("arguments", "{}")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        normalized.append(
            {
                "id": str(call.get("id") or f"call_{index}"),
                "type": "function",
                "function": {"name": function["name"], "arguments": arguments},
            }
        )
    if normalized:
        message["tool_calls"] = normalized
    usage = raw.get("usage")
    if isinstance(usage, dict):  # a scripted reply may say what it cost, as a server's does
        message["usage"] = {k: v for k, v in usage.items() if isinstance(v, int)}
    return message


@dataclass(frozen=True)
class ModelSettings:
    """Everything that says which model answers and how: the one set of model options of every
    command and API (``fsmem.cli.model_options`` renders it as ``--model-url`` … ``--temperature``).

        settings = ModelSettings.from_env(max_tokens=512)   # $FSMEM_MODEL_URL, $FSMEM_MODEL, $FSMEM_TIMEOUT
        model = fsmem.build_model(settings)
    """

    url: str | None = None
    model: str | None = None
    api_key_env: str = DEFAULT_API_KEY_ENV
    timeout: float = DEFAULT_TIMEOUT
    max_tokens: int | None = DEFAULT_MAX_TOKENS  # None: send no cap (the server's own default)
    temperature: float = 0.0
    no_thinking: bool = False
    context_window: int | None = None  # tokens; None: unknown (the background review then spends less)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> ModelSettings:
        """Settings from ``$FSMEM_MODEL_URL``, ``$FSMEM_MODEL`` and ``$FSMEM_TIMEOUT``; ``overrides`` win."""
        env = os.environ if environ is None else environ
        found: dict[str, Any] = {}
        if env.get("FSMEM_MODEL_URL"):
            found["url"] = env["FSMEM_MODEL_URL"]
        if env.get("FSMEM_MODEL"):
            found["model"] = env["FSMEM_MODEL"]
        if env.get("FSMEM_TIMEOUT"):
            try:
                found["timeout"] = float(env["FSMEM_TIMEOUT"])
            except ValueError:
                raise ModelError(
                    f"$FSMEM_TIMEOUT is {env['FSMEM_TIMEOUT']!r}; set it to a number of seconds, e.g. 120"
                ) from None
        found.update({key: value for key, value in overrides.items() if value is not None})
        return cls(**found)


class ScriptedModel:
    """A model that answers from a queue — for tests and demos. ``requests`` holds every messages list
    it was given (copies), ``calls`` the full keyword arguments too."""

    def __init__(self, *replies: str | dict | Exception) -> None:
        self._queue: deque[dict | Exception] = deque()
        self.requests: list[list[dict]] = []
        self.calls: list[dict[str, Any]] = []
        for reply in replies:
            self.enqueue(reply)

    def enqueue(self, message_or_text: str | dict | Exception) -> None:
        if isinstance(message_or_text, Exception):
            self._queue.append(message_or_text)
        elif isinstance(message_or_text, str):
            self._queue.append({"role": "assistant", "content": message_or_text})
        else:
            self._queue.append(_assistant_message(message_or_text, "the scripted reply"))

    @property
    def pending(self) -> int:
        return len(self._queue)

    def complete(
        self,
        messages: list[dict],
        *,
        tools: list[dict] | None = None,
        temperature: float | None = None,
        response_format: dict | None = None,
    ) -> dict:
        self.requests.append(copy.deepcopy(messages))
        self.calls.append(
            {
                "messages": copy.deepcopy(messages),
                "tools": copy.deepcopy(tools),
                "temperature": temperature,
                "response_format": copy.deepcopy(response_format),
            }
        )
        if not self._queue:
            raise ModelError("the scripted model has no reply left: enqueue one per expected call")
        reply = self._queue.popleft()
        if isinstance(reply, Exception):
            raise reply
        return copy.deepcopy(reply)
