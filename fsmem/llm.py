"""Model clients: one small interface, an OpenAI-compatible HTTP client and a scripted model for tests.

    model = OpenAICompatibleModel("http://localhost:11434/v1", "qwen3:4b")   # key from $OPENAI_API_KEY
    reply = model.complete([{"role": "user", "content": "Hi"}])
    reply["content"]          # "Hello!"  (an OpenAI-style assistant message; see ChatModel)

    scripted = ScriptedModel()
    scripted.enqueue("first reply")
    scripted.enqueue({"role": "assistant", "content": None, "tool_calls": [tool_call("memory", {...})]})

The HTTP client speaks the chat-completions protocol over ``urllib`` (no SDK), so any compatible server
works: OpenAI, vLLM, llama.cpp, Ollama, LM Studio. Every failure — unreachable, HTTP error, timeout, an
answer that is not a chat completion — is one :class:`~fsmem.errors.ModelError` that never repeats the key.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import socket
import urllib.error
import urllib.request
from collections import deque
from typing import Any, Protocol, runtime_checkable

from fsmem.errors import ModelError

__all__ = ["ChatModel", "OpenAICompatibleModel", "ScriptedModel", "tool_call", "chat_url",
           "DEFAULT_TIMEOUT", "DEFAULT_API_KEY_ENV"]

DEFAULT_TIMEOUT = 600.0  # a small model on a CPU can take minutes
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
_EXCERPT = 300
_CALL_IDS = itertools.count(1)


@runtime_checkable
class ChatModel(Protocol):
    def complete(self, messages: list[dict], *, tools: list[dict] | None = None,
                 temperature: float = 0.0) -> dict:
        """One assistant message for ``messages``:

        ``{"role": "assistant", "content": str | None, "tool_calls": [{"id", "type": "function",
        "function": {"name", "arguments": "<json>"}}]}`` — ``tool_calls`` only when the model made some.
        """
        ...


def tool_call(name: str, arguments: dict | str, call_id: str | None = None) -> dict:
    """An OpenAI-style tool call (``arguments`` as a dict is encoded to JSON)."""
    return {
        "id": call_id or f"call_{next(_CALL_IDS)}",
        "type": "function",
        "function": {"name": name,
                     "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)},
    }


def _assistant_message(raw: Any, where: str) -> dict:
    """Check and normalize one assistant message from a model."""
    if not isinstance(raw, dict):
        raise ModelError(f"{where} did not answer with a message object; check that the URL is a "
                         "chat-completions endpoint")
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
        normalized.append({"id": str(call.get("id") or f"call_{index}"), "type": "function",
                           "function": {"name": function["name"], "arguments": arguments}})
    if normalized:
        message["tool_calls"] = normalized
    return message


def chat_url(url: str) -> str:
    """The chat-completions endpoint for a base URL: ``…/v1`` → ``…/v1/chat/completions``."""
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ModelError(f"the model URL {url!r} must start with http:// or https://, "
                         "e.g. http://localhost:11434/v1")
    return url if url.endswith("/chat/completions") else url + "/chat/completions"


class OpenAICompatibleModel:
    """A chat-completions client over urllib. The key is read from ``api_key_env`` at each call, and
    sent only when set (local servers rarely want one)."""

    def __init__(self, url: str, model: str, api_key_env: str = DEFAULT_API_KEY_ENV,
                 timeout: float = DEFAULT_TIMEOUT, extra_body: dict | None = None) -> None:
        if not model:
            raise ModelError("no model name: pass --model NAME (the name the server knows it by)")
        self.url = chat_url(url)
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.extra_body = dict(extra_body or {})

    def __repr__(self) -> str:
        return f"OpenAICompatibleModel({self.url!r}, {self.model!r}, api_key_env={self.api_key_env!r})"

    def complete(self, messages: list[dict], *, tools: list[dict] | None = None,
                 temperature: float = 0.0) -> dict:
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": temperature,
                                **self.extra_body}
        if tools:
            body["tools"] = tools
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(self.url, data=json.dumps(body).encode("utf-8"),
                                         headers=headers, method="POST")
        where = f"the model server at {self.url}"
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                payload = response.read()
        except urllib.error.HTTPError as error:
            detail = _excerpt(error.read(), key)
            hint = (f" Check the key in ${self.api_key_env}." if error.code in (401, 403) else
                    " Check the model name." if error.code == 404 else "")
            raise ModelError(f"{where} answered HTTP {error.code}: {detail}.{hint}") from None
        except (TimeoutError, socket.timeout):
            raise ModelError(f"{where} did not answer within {self.timeout:g} seconds; try a smaller "
                             "conversation or a faster model") from None
        except urllib.error.URLError as error:
            reason = error.reason
            if isinstance(reason, (TimeoutError, socket.timeout)):
                raise ModelError(f"{where} did not answer within {self.timeout:g} seconds; try a "
                                 "smaller conversation or a faster model") from None
            raise ModelError(f"could not reach {where}: {reason}. Is the server running?") from None
        except OSError as error:
            raise ModelError(f"the connection to {where} failed: {error}") from None
        try:
            data = json.loads(payload)
        except (ValueError, UnicodeDecodeError):
            raise ModelError(f"{where} answered with something that is not JSON: "
                             f"{_excerpt(payload, key)}") from None
        if isinstance(data, dict) and isinstance(data.get("error"), (dict, str)):
            error = data["error"]
            text = error.get("message", "") if isinstance(error, dict) else error
            raise ModelError(f"{where} answered with an error: {_excerpt(str(text).encode(), key)}")
        try:
            raw = data["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise ModelError(f"{where} answered without choices[0].message; is it an OpenAI-compatible "
                             "chat-completions endpoint?") from None
        return _assistant_message(raw, where)


def _excerpt(payload: bytes, secret: str | None) -> str:
    text = payload.decode("utf-8", "replace").strip().replace("\n", " ")
    if secret:
        text = text.replace(secret, "[key]")
    return (text[:_EXCERPT] + "…") if len(text) > _EXCERPT else (text or "(empty body)")


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

    def complete(self, messages: list[dict], *, tools: list[dict] | None = None,
                 temperature: float = 0.0) -> dict:
        self.requests.append(copy.deepcopy(messages))
        self.calls.append({"messages": copy.deepcopy(messages), "tools": copy.deepcopy(tools),
                           "temperature": temperature})
        if not self._queue:
            raise ModelError("the scripted model has no reply left: enqueue one per expected call")
        reply = self._queue.popleft()
        if isinstance(reply, Exception):
            raise reply
        return copy.deepcopy(reply)
