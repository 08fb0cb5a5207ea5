"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint (Ollama, llama.cpp ``--embeddings``,
vLLM, a hosted API), over ``urllib`` like the chat client.

    embedder = EndpointEmbedder("http://localhost:11434/v1", "nomic-embed-text", timeout=10)
    embedder.embed(["deploy to staging"])     # float32 (1, dim), rows of length 1

Texts go ``batch`` at a time; HTTP 429 and 503 are retried as ``Retry-After`` says (at most
``MAX_RETRY_WAIT`` seconds a wait); every failure is one :class:`~fsmem._errors.ModelError` that never
repeats the key.
"""

from __future__ import annotations

import http.client
import itertools
import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fsmem._errors import ModelError
from fsmem._llm.model import DEFAULT_API_KEY_ENV
from fsmem._llm.openai import DEFAULT_RETRIES, _retry_wait, _server_message, read_response

__all__ = ["EndpointEmbedder", "embeddings_url"]

DEFAULT_BATCH = 32
QUERY_TIMEOUT = 2.0  # seconds a search waits for its query's vector before it goes on by words alone


def embeddings_url(url: str) -> str:
    """The embeddings endpoint for a base URL: ``…/v1`` → ``…/v1/embeddings``."""
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ModelError(
            f"the embeddings URL {url!r} must start with http:// or https://, e.g. http://localhost:11434/v1"
        )
    return url if url.endswith("/embeddings") else url + "/embeddings"


class EndpointEmbedder:
    """One model of an embeddings server; the key is read from ``api_key_env`` at each call."""

    def __init__(
        self,
        url: str,
        model: str,
        *,
        api_key_env: str = DEFAULT_API_KEY_ENV,
        timeout: float = 10.0,
        batch: int = DEFAULT_BATCH,
        retries: int = DEFAULT_RETRIES,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not model:
            raise ModelError("no embedding model name: set embed_endpoint_model to the name the server knows it by")
        if timeout <= 0:
            raise ModelError(f"the embeddings timeout must be a positive number of seconds, not {timeout:g}")
        self.url = embeddings_url(url)
        self.model = model
        self.name = f"api-{model}"  # the vector space: the server's model of that name
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.batch = max(1, batch)
        self.retries = retries
        self.sleep = sleep

    def __repr__(self) -> str:
        return f"EndpointEmbedder({self.url!r}, {self.model!r})"

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text], timeout=min(self.timeout, QUERY_TIMEOUT))[0]

    def embed(self, texts: Sequence[str], *, timeout: float | None = None) -> np.ndarray:
        """One L2-normalised float32 row per text, in order; ``timeout`` bounds each request."""
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch):
            rows.extend(self._post(list(texts[start : start + self.batch]), timeout or self.timeout))
        matrix = np.asarray(rows, dtype=np.float32).reshape(len(rows), -1)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.clip(norms, 1e-12, None)

    def _post(self, texts: list[str], timeout: float) -> list[list[float]]:
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        data = json.dumps({"model": self.model, "input": texts}).encode("utf-8")
        where = f"the embeddings server at {self.url}"
        for attempt in itertools.count():
            request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            try:
                payload = self._send(request, where, timeout)
                break
            except urllib.error.HTTPError as error:
                try:
                    raw = error.read()
                except (OSError, http.client.HTTPException):
                    raw = b""
                if error.code in (429, 503) and attempt < self.retries:
                    self.sleep(_retry_wait(error.headers.get("Retry-After"), attempt))
                    continue
                raise ModelError(f"{where} answered HTTP {error.code}: {_server_message(raw, key)}") from None
        return _vectors(payload, len(texts), where, key)

    def _send(self, request: urllib.request.Request, where: str, timeout: float) -> bytes:
        return read_response(request, where, timeout, f"{where} did not answer within {timeout:g} seconds")


def _vectors(payload: bytes, count: int, where: str, key: str | None) -> list[list[float]]:
    """``data[*].embedding`` in ``index`` order, one per text sent, all of one length."""
    try:
        decoded: Any = json.loads(payload)
        items = sorted(decoded["data"], key=lambda item: item.get("index", 0))
        rows = [[float(value) for value in item["embedding"]] for item in items]
    except (ValueError, UnicodeDecodeError, KeyError, TypeError, AttributeError):
        raise ModelError(
            f"{where} answered without data[].embedding ({_server_message(payload, key)}); "
            "is it an OpenAI-compatible embeddings endpoint?"
        ) from None
    if len(rows) != count or not rows or len({len(row) for row in rows}) != 1 or not rows[0]:
        raise ModelError(f"{where} answered {len(rows)} vectors of uneven or no length for {count} texts")
    return rows
