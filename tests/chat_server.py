"""A real chat-completions server on localhost, answering from a script — for HTTP tests.

    from tests.chat_server import ChatServer, Reply
    from fsmem._llm.model import tool_call

    with ChatServer(["Hello!", Reply(tool_calls=[tool_call("memory", {"command": "read", "path": ""})]),
                     Reply(status=500, raw="boom")]) as server:
        model = OpenAICompatibleModel(server.base_url, "test-model")
        model.complete([{"role": "user", "content": "Hi"}])       # -> "Hello!"
        server.requests[0].body["messages"]                         # what the client sent
        server.enqueue("one more")                                  # replies may be added at any time

Each POST to a path ending in ``/chat/completions`` takes the next reply. A reply is a string (the
assistant's content), a dict (an assistant message), or a :class:`Reply` for tool calls, HTTP errors,
raw bodies (malformed JSON), headers (``Retry-After``), delays and bodies trickled byte by byte. With
the script used up, the server answers HTTP 500. It runs in a thread of the test process over a real
socket (``http.server``, port 0).

Modes make it behave as real local servers do (each seen with llama-cpp-python or llama.cpp):

    ChatServer(script, modes={"uncapped"})   # no max_tokens: generates "forever" (holds the request
                                             # until the client gives up); with it, cuts the answer
    "strict_content"      HTTP 500 when a message's content is null (llama-cpp-python)
    "needs_tool_choice"   tool calls only when the request has tool_choice; else the model just talks
    "grammar_limits"      HTTP 500 when a tool schema has length limits (the grammar builder fails)
    "json_needs_format"   JSON answers only with response_format; else a chatty preamble before them
    "no_response_format"  HTTP 400 naming response_format when a request has one
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ChatServer", "Reply", "Received", "MODES"]

MODES = frozenset({"uncapped", "strict_content", "needs_tool_choice", "grammar_limits", "json_needs_format",
                   "no_response_format"})
_LENGTH_LIMITS = ("maxLength", "minLength", "maxItems", "minItems", "pattern")


@dataclass
class Reply:
    content: str | None = None
    tool_calls: list[dict] | None = None
    status: int = 200
    raw: str | bytes | None = None  # sent as the body, as is (for malformed answers)
    delay: float = 0.0  # seconds to wait before answering (for timeouts)
    finish_reason: str | None = None
    headers: dict[str, str] = field(default_factory=dict)  # e.g. {"Retry-After": "2"}
    trickle: float = 0.0  # seconds between bytes of the body: a server that never quite finishes


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: Any  # the decoded JSON body, or the raw text when it was not JSON

    @property
    def messages(self) -> list[dict]:
        return self.body.get("messages", []) if isinstance(self.body, dict) else []


@dataclass
class ChatServer:
    script: list[str | dict | Reply] = field(default_factory=list)
    model_name: str = "scripted"
    modes: set[str] = field(default_factory=set)
    forever: float = 30.0  # how long "uncapped" generates before giving up on its own (nothing hangs)

    def __post_init__(self) -> None:
        self._replies: deque[Reply] = deque(self._as_reply(item) for item in self.script)
        self.requests: list[Received] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        unknown = set(self.modes) - MODES
        assert not unknown, f"unknown modes {unknown}; use {sorted(MODES)}"

    @staticmethod
    def _as_reply(item: str | dict | Reply) -> Reply:
        if isinstance(item, Reply):
            return item
        if isinstance(item, str):
            return Reply(content=item)
        return Reply(content=item.get("content"), tool_calls=item.get("tool_calls"))

    def enqueue(self, item: str | dict | Reply) -> None:
        with self._lock:
            self._replies.append(self._as_reply(item))

    @property
    def port(self) -> int:
        assert self._server is not None, "start the server first (use it as a context manager)"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "ChatServer":
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None,
                      trickle: float = 0.0) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                try:
                    if not trickle:
                        self.wfile.write(body)
                        return
                    for index in range(len(body)):
                        if owner._stopping.wait(trickle):
                            return
                        self.wfile.write(body[index:index + 1])
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout tests)
                    pass

            def _error(self, status: int, message: str) -> None:
                self._send(status, json.dumps({"error": {"code": status, "message": message}}).encode())

            def _refusal(self, body: Any) -> bool:
                """What a mode refuses, answered as that server does; True when it answered."""
                modes = owner.modes
                request = body if isinstance(body, dict) else {}
                if "no_response_format" in modes and "response_format" in request:
                    self._error(400, "'response_format' is not supported by this server")
                    return True
                if "strict_content" in modes and any(
                        isinstance(m, dict) and m.get("content") is None for m in request.get("messages", [])):
                    self._error(500, "Internal Server Error: 1 validation error for ChatCompletionRequest"
                                     "AssistantMessage content: Input should be a valid string")
                    return True
                if "grammar_limits" in modes and any(key in json.dumps(request.get("tools", []))
                                                     for key in _LENGTH_LIMITS):
                    self._error(500, "failed to build the grammar for the tools: repetition too large")
                    return True
                if "uncapped" in modes and request.get("max_tokens") is None:
                    # a base model with no cap generates until its context is full; the request is
                    # held until the client goes away or the server stops (or `forever` passes)
                    owner._stopping.wait(owner.forever)
                    self._error(500, "the context is full")
                    return True
                return False

            def do_GET(self) -> None:  # noqa: N802 - llama-server's readiness probe, for smoke-test dry runs
                if self.path.rstrip("/") == "/health":
                    self._send(200, b'{"status": "ok"}')
                else:
                    self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}).encode())

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode("utf-8", "replace")
                try:
                    body: Any = json.loads(raw)
                except ValueError:
                    body = raw
                with owner._lock:
                    owner.requests.append(Received(self.path, dict(self.headers.items()), body))
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}).encode())
                    return
                if self._refusal(body):  # a refused request takes no reply from the script
                    return
                with owner._lock:
                    reply = owner._replies.popleft() if owner._replies else None
                if reply is None:
                    self._send(500, json.dumps({"error": {"message": "the script has no reply left"}}).encode())
                    return
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.raw is not None:
                    data = reply.raw.encode() if isinstance(reply.raw, str) else reply.raw
                    self._send(reply.status, data, reply.headers, reply.trickle)
                    return
                request = body if isinstance(body, dict) else {}
                content, tool_calls, finish = reply.content, reply.tool_calls, reply.finish_reason
                if "needs_tool_choice" in owner.modes and tool_calls and "tool_choice" not in request:
                    content, tool_calls = "I would look in the memory file first.", None
                if "json_needs_format" in owner.modes and "response_format" not in request and content:
                    content = "Sure! Here is what I found:\n" + content
                cap = request.get("max_tokens")
                if isinstance(cap, int) and content and len(content.split(" ")) > cap:
                    content, finish = " ".join(content.split(" ")[:cap]), "length"
                message: dict[str, Any] = {"role": "assistant", "content": content}
                if tool_calls:
                    message["tool_calls"] = tool_calls
                finish = finish or ("tool_calls" if tool_calls else "stop")
                model = body.get("model", owner.model_name) if isinstance(body, dict) else owner.model_name
                completion = {
                    "id": f"chatcmpl-{len(owner.requests)}", "object": "chat.completion",
                    "created": int(time.time()), "model": model,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
                }
                self._send(reply.status, json.dumps(completion).encode(), reply.headers, reply.trickle)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="chat-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # held and trickled requests end now
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "ChatServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
