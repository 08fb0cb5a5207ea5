"""A real OpenAI-compatible embeddings server on localhost, for HTTP tests of the endpoint embedder.

    with EmbedServer() as server:                     # port 0, a thread of the test process
        EndpointEmbedder(server.base_url, "tiny").embed(["a", "b"])
        server.requests                               # each decoded body the client sent
        server.enqueue(Answer(status=429, headers={"Retry-After": "2"}))   # the next request's answer

Without a queued answer it embeds each input as a bag of its letters (26 numbers): texts sharing letters
are near, so order can be checked. A queued :class:`Answer` sends a status, headers, a raw body or a delay.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Answer:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None
    delay: float = 0.0


def letters(text: str) -> list[float]:
    return [float(text.lower().count(chr(ord("a") + i))) + 0.01 for i in range(26)]


class EmbedServer:
    def __init__(self) -> None:
        self.requests: list[Any] = []
        self._answers: deque[Answer] = deque()
        self._server: ThreadingHTTPServer | None = None

    def enqueue(self, answer: Answer) -> None:
        self._answers.append(answer)

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> EmbedServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                owner.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
                answer = owner._answers.popleft() if owner._answers else Answer()
                time.sleep(answer.delay)
                if answer.raw is not None or answer.status != 200:
                    data = answer.raw if answer.raw is not None else b'{"error": {"message": "slow down"}}'
                else:
                    items = [{"index": i, "embedding": letters(text)} for i, text in enumerate(body["input"])]
                    data = json.dumps({"data": items[::-1], "model": body["model"]}).encode()  # any order
                self.send_response(answer.status)
                for name, value in {"Content-Type": "application/json", **answer.headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()
