"""The OpenAI-compatible chat-completions client over ``urllib`` (no SDK), and ``build_model``, the one
way fsmem makes a model from :class:`~fsmem._llm.model.ModelSettings`.

Any compatible server works: OpenAI, vLLM, llama.cpp, Ollama, LM Studio. Every failure — unreachable,
HTTP error, timeout, an answer that is not a chat completion — is one :class:`~fsmem._errors.ModelError`
that never repeats the key.
"""

from __future__ import annotations

import email.utils
import http.client
import itertools
import json
import os
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from fsmem._errors import ModelError
from fsmem._llm.model import DEFAULT_API_KEY_ENV, DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT, ModelSettings, _assistant_message

__all__ = ["OpenAICompatibleModel", "build_model", "chat_url"]

DEFAULT_RETRIES = 3  # after HTTP 429 or 503
MAX_RETRY_WAIT = 30.0  # seconds, whatever Retry-After says
_EXCERPT = 300
_USAGE_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")


def chat_url(url: str) -> str:
    """The chat-completions endpoint for a base URL: ``…/v1`` → ``…/v1/chat/completions``."""
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ModelError(f"the model URL {url!r} must start with http:// or https://, e.g. http://localhost:11434/v1")
    return url if url.endswith("/chat/completions") else url + "/chat/completions"


def build_model(settings: ModelSettings, *, sleep: Callable[[float], None] = time.sleep) -> OpenAICompatibleModel:
    """The one way fsmem makes a model from settings; a :class:`ModelError` says what is missing."""
    if not settings.url or not settings.model:
        raise ModelError(
            "no model: pass --model-url URL and --model NAME (or set $FSMEM_MODEL_URL and "
            "$FSMEM_MODEL) for an OpenAI-compatible chat-completions server"
        )
    extra = {"chat_template_kwargs": {"enable_thinking": False}} if settings.no_thinking else None
    return OpenAICompatibleModel(
        settings.url,
        settings.model,
        api_key_env=settings.api_key_env,
        timeout=settings.timeout,
        max_tokens=settings.max_tokens,
        temperature=settings.temperature,
        extra_body=extra,
        sleep=sleep,
        context_window=settings.context_window,
    )


class OpenAICompatibleModel:
    """A chat-completions client over urllib. The key is read from ``api_key_env`` at each call, and
    sent only when set (local servers rarely want one).

    What it sends, so that every common server takes it: ``max_tokens`` (a rambling local model
    otherwise generates until its context is full), ``""`` rather than ``null`` content beside tool
    calls (llama-cpp-python answers 500 to null), ``tool_choice: "auto"`` with tools (llama-cpp-python
    ignores tools without it), and ``response_format`` when a task asks for JSON — dropped, once and
    for the rest of this client's life, when the server answers 4xx/5xx naming it. HTTP 429 and 503
    are retried up to ``retries`` times, waiting as ``Retry-After`` says (at most
    ``MAX_RETRY_WAIT`` seconds) or 1, 2, 4… seconds.
    """

    def __init__(
        self,
        url: str,
        model: str,
        api_key_env: str = DEFAULT_API_KEY_ENV,
        timeout: float = DEFAULT_TIMEOUT,
        extra_body: dict | None = None,
        *,
        max_tokens: int | None = DEFAULT_MAX_TOKENS,
        temperature: float = 0.0,
        retries: int = DEFAULT_RETRIES,
        sleep: Callable[[float], None] = time.sleep,
        context_window: int | None = None,
    ) -> None:
        if not model:
            raise ModelError("no model name: pass --model NAME (the name the server knows it by)")
        if timeout <= 0:
            raise ModelError(f"the timeout must be a positive number of seconds, not {timeout:g}")
        if max_tokens is not None and max_tokens < 1:
            raise ModelError(f"max_tokens must be at least 1, not {max_tokens}")
        self.url = chat_url(url)
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.retries = retries
        self.extra_body = dict(extra_body or {})
        self.sleep = sleep
        self.response_format_refused = False  # the server said it does not take response_format
        self.context_window = context_window  # tokens, when known: the background review's budget

    def __repr__(self) -> str:
        return f"OpenAICompatibleModel({self.url!r}, {self.model!r}, api_key_env={self.api_key_env!r})"

    def complete(
        self,
        messages: list[dict],
        *,
        tools: list[dict] | None = None,
        temperature: float | None = None,
        response_format: dict | None = None,
    ) -> dict:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [_sendable(m) for m in messages],
            "temperature": self.temperature if temperature is None else temperature,
        }
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        body.update(self.extra_body)
        if response_format is not None and not self.response_format_refused:
            try:
                return self._post({**body, "response_format": response_format})
            except _Refused as refusal:
                if not _names_response_format(refusal.detail):
                    raise refusal.error from None
                self.response_format_refused = True  # ask once; this server answers in its own way
        try:
            return self._post(body)
        except _Refused as refusal:
            raise refusal.error from None

    def _post(self, body: dict[str, Any]) -> dict:
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        data = json.dumps(body).encode("utf-8")
        where = f"the model server at {self.url}"
        for attempt in itertools.count():
            request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            try:
                payload = self._send(request, where)
                break
            except urllib.error.HTTPError as error:
                try:
                    raw = error.read()
                except (OSError, http.client.HTTPException):  # the error body itself broke off
                    raw = b""
                detail = _server_message(raw, key)
                if error.code in (429, 503) and attempt < self.retries:
                    self.sleep(_retry_wait(error.headers.get("Retry-After"), attempt))
                    continue
                hint = (
                    f" Check the key in ${self.api_key_env}."
                    if error.code in (401, 403)
                    else " Check the model name."
                    if error.code == 404
                    else f" Tried {attempt + 1} times; try again later."
                    if error.code in (429, 503)
                    else f" It redirects to {error.headers.get('Location')}: give that address as --model-url."
                    if 300 <= error.code < 400
                    else ""
                )
                raise _Refused(ModelError(f"{where} answered HTTP {error.code}: {detail}.{hint}"), detail) from None
        try:
            decoded = json.loads(payload)
        except (ValueError, UnicodeDecodeError):
            raise ModelError(f"{where} answered with something that is not JSON: {_excerpt(payload, key)}") from None
        if isinstance(decoded, dict) and isinstance(decoded.get("error"), (dict, str)):
            detail = _server_message(payload, key)
            raise _Refused(ModelError(f"{where} answered with an error: {detail}"), detail)
        try:
            raw_message = decoded["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise ModelError(
                f"{where} answered without choices[0].message; is it an OpenAI-compatible chat-completions endpoint?"
            ) from None
        message = _assistant_message(raw_message, where)
        usage = decoded.get("usage")
        if isinstance(usage, dict) and isinstance(usage.get("prompt_tokens"), int) and usage["prompt_tokens"] > 0:
            # what the call cost, for the review's budget and `fsmem usage`; never sent back to a model
            # (a server answering 0 did not count: fsmem's estimate stands in, fsmem._core.due.input_tokens)
            message["usage"] = {k: v for k, v in usage.items() if k in _USAGE_KEYS and isinstance(v, int)}
        return message

    def _send(self, request: urllib.request.Request, where: str) -> bytes:
        late = (
            f"{where} did not answer within {self.timeout:g} seconds; raise --timeout, lower "
            "--max-tokens, or try a smaller conversation or a faster model"
        )
        return read_response(request, where, self.timeout, late)


def read_response(request: urllib.request.Request, where: str, timeout: float, late: str) -> bytes:
    """The response body, read within ``timeout`` seconds in all (a server that trickles bytes does not
    keep the call open past it); ``late`` is the message when it is not. HTTP errors are raised as
    urllib's ``HTTPError`` for the caller's retry; every other failure is a :class:`ModelError`."""
    deadline = time.monotonic() + timeout
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            chunks = []
            while chunk := response.read1(65536):
                chunks.append(chunk)
                if time.monotonic() > deadline:
                    raise ModelError(late)
            return b"".join(chunks)
    except urllib.error.HTTPError:
        raise
    except TimeoutError:
        raise ModelError(late) from None
    except urllib.error.URLError as error:
        if isinstance(error.reason, (TimeoutError, socket.timeout)):
            raise ModelError(late) from None
        raise ModelError(f"could not reach {where}: {error.reason}. Is the server running?") from None
    except (OSError, http.client.HTTPException) as error:
        raise ModelError(f"the connection to {where} failed: {error or type(error).__name__}") from None


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A chat request is never redirected: urllib would follow it as a GET with the key still in its
    ``Authorization`` header, to whatever host the answer names. The 3xx comes back as an error."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects())


class _Refused(Exception):
    """A server's refusal, with its own words kept to decide on a retry without ``response_format``."""

    def __init__(self, error: ModelError, detail: str) -> None:
        super().__init__(error.message)
        self.error = error
        self.detail = detail


def _names_response_format(detail: str) -> bool:
    text = detail.lower()
    return any(
        word in text
        for word in ("response_format", "response format", "json_schema", "json_object", "json mode", "grammar")
    )


def _sendable(message: dict) -> dict:
    """A message as every server takes it: text content, never null (llama-cpp-python refuses null
    beside tool calls with HTTP 500; OpenAI, vLLM and Ollama take ``""`` too)."""
    if message.get("content") is None:
        return {**message, "content": ""}
    return message


def _retry_wait(retry_after: str | None, attempt: int) -> float:
    """Seconds to wait before the next try: ``Retry-After`` (seconds or an HTTP date) when the
    server sends it, else 1, 2, 4…; never more than ``MAX_RETRY_WAIT``."""
    wait = float(2**attempt)
    if retry_after:
        text = retry_after.strip()
        try:
            wait = float(text)
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(text)
                wait = (when - datetime.now(UTC)).total_seconds()
            except (TypeError, ValueError, OverflowError):
                pass
    return min(max(wait, 0.0), MAX_RETRY_WAIT)


def _server_message(payload: bytes, secret: str | None) -> str:
    """The server's own words: ``error.message`` (or ``error``, ``detail``, ``message``) of a JSON
    body, else the body itself, cut short and with the key masked."""
    try:
        data = json.loads(payload)
    except (ValueError, UnicodeDecodeError):
        return _excerpt(payload, secret)
    text: Any = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict):
            text = error.get("message")
        elif isinstance(error, str):
            text = error
        for key in ("detail", "message"):
            if not isinstance(text, str) and isinstance(data.get(key), str):
                text = data[key]
    if not isinstance(text, str) or not text.strip():
        return _excerpt(payload, secret)
    return _excerpt(text.encode("utf-8"), secret)


def _excerpt(payload: bytes, secret: str | None) -> str:
    text = payload.decode("utf-8", "replace").strip().replace("\n", " ")
    if secret:
        text = text.replace(secret, "[key]")
    return (text[:_EXCERPT] + "…") if len(text) > _EXCERPT else (text or "(empty body)")
