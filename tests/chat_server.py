"""A real chat-completions server on localhost, answering from a script — for HTTP tests.

    from tests.chat_server import ChatServer, Reply
    from fsmem.llm import tool_call

    with ChatServer(["Hello!", Reply(tool_calls=[tool_call("memory", {"command": "read", "path": ""})]),
                     Reply(status=500, raw="boom")]) as server:
        model = OpenAICompatibleModel(server.base_url, "test-model")
        model.complete([{"role": "user", "content": "Hi"}])       # -> "Hello!"
        server.requests[0].body["messages"]                         # what the client sent
        server.enqueue("one more")                                  # replies may be added at any time

Each POST to a path ending in ``/chat/completions`` takes the next reply. A reply is a string (the
assistant's content), a dict (an assistant message), or a :class:`Reply` for tool calls, HTTP errors,
raw bodies (malformed JSON) and delays. With the script used up, the server answers HTTP 500.
It runs in a thread of the test process over a real socket (``http.server``, port 0).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ChatServer", "Reply", "Received"]


@dataclass
class Reply:
    content: str | None = None
    tool_calls: list[dict] | None = None
    status: int = 200
    raw: str | bytes | None = None  # sent as the body, as is (for malformed answers)
    delay: float = 0.0  # seconds to wait before answering (for timeouts)
    finish_reason: str | None = None


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

    def __post_init__(self) -> None:
        self._replies: deque[Reply] = deque(self._as_reply(item) for item in self.script)
        self.requests: list[Received] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

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

            def _send(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout tests)
                    pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode("utf-8", "replace")
                try:
                    body: Any = json.loads(raw)
                except ValueError:
                    body = raw
                with owner._lock:
                    owner.requests.append(Received(self.path, dict(self.headers.items()), body))
                    reply = owner._replies.popleft() if owner._replies else None
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}).encode())
                    return
                if reply is None:
                    self._send(500, json.dumps({"error": {"message": "the script has no reply left"}}).encode())
                    return
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.raw is not None:
                    data = reply.raw.encode() if isinstance(reply.raw, str) else reply.raw
                    self._send(reply.status, data)
                    return
                message: dict[str, Any] = {"role": "assistant", "content": reply.content}
                if reply.tool_calls:
                    message["tool_calls"] = reply.tool_calls
                finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
                model = body.get("model", owner.model_name) if isinstance(body, dict) else owner.model_name
                completion = {
                    "id": f"chatcmpl-{len(owner.requests)}", "object": "chat.completion",
                    "created": int(time.time()), "model": model,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
                }
                self._send(reply.status, json.dumps(completion).encode())

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="chat-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "ChatServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
