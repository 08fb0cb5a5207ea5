"""A resident index answers searches over a local socket, so a cold ``fsmem search`` costs a round
trip, not a start-up and a walk. This module is the wire and the client: the standard library and the
hit type only (no tantivy), so the shell can import it before it knows whether anything answers. The
server is ``fsmem._memory.resident`` (it calls ``Memory.search``, the one search there is).

    <root>/.fsmem/resident.sock          0600, in the 0700 state folder; the server checks the peer's uid
    <cache>/.fsmem/resident.sock         a project in PostgreSQL: this worker's cache of it (pg_state)

One connection, one question: a JSON line ``{"op": "search", "args": {...}, "settings": MARK}`` and a
JSON line back,
``{"ok": true, "hits": [...], "warnings": [...]}`` or ``{"ok": false, "why": "..."}``. Each side reads
the other's uid (``SO_PEERCRED``) and talks only to its own user. ``ask`` answers
``None`` whenever no resident gave an answer (no socket, a stale one left by a crash, a refusal, an
error, a timeout): the caller then does the work itself, and a refusal or an error arises there again,
in its own words. A resident answers only an asker whose settings are its own (``settings_mark``):
one started with other ``FSMEM_*`` variables or another config would answer differently.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import struct
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from fsmem._core.search import SearchHit
from fsmem._env.config import Settings

SOCKET_NAME = "resident.sock"
ANSWER_TIMEOUT = 30.0  # a first search may build the index; a hung resident is given up on after this
MAX_LINE = 1 << 20  # a question longer than this is no question of ours
_AF_UNIX_MAX = 100  # sun_path holds 108 bytes on Linux, 104 on macOS


def socket_path(state: Path) -> Path:
    return Path(state) / SOCKET_NAME


@contextlib.contextmanager
def address(path: Path) -> Iterator[str]:
    """``path`` as a socket address: itself when short, else reached through an open descriptor of
    its folder (``/proc/self/fd/N/…``), since a root may lie deeper than a socket address reaches."""
    text = os.fspath(path)
    if len(os.fsencode(text)) <= _AF_UNIX_MAX or not os.path.isdir("/proc/self/fd"):
        yield text
        return
    folder = os.open(os.path.dirname(text), os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{folder}/{os.path.basename(text)}"
    finally:
        os.close(folder)


def settings_mark(settings: Settings) -> str:
    """What the asker's and the resident's settings must share for one to answer for the other (whether
    a process watches, starts a resident or how long one waits idle is its own affair)."""
    return hashlib.sha256(repr(settings.for_answers()).encode("utf-8")).hexdigest()[:16]


def pg_state(url: str, project: str) -> Path:
    """Where the resident of this worker's cache of a project in PostgreSQL keeps its socket: the
    cache's state folder (``fsmem watch --store URL --project NAME`` serves there)."""
    from fsmem._core.layout import STATE_DIR
    from fsmem._store.postgres.cache import default_cache

    return default_cache(url, project) / STATE_DIR


def ask(
    state: Path, op: str, args: dict[str, Any], settings: str, timeout: float = ANSWER_TIMEOUT
) -> dict[str, Any] | None:
    """The resident's answer to one question asked with ``settings`` (a ``settings_mark``), or ``None``
    when none answered."""
    path = socket_path(state)
    if not os.path.exists(path):
        return None
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout)
            with address(path) as where:
                conn.connect(where)
            if peer_uid(conn) not in (None, os.geteuid()):
                return None  # not our resident: a socket another user put there is told nothing
            conn.sendall(json.dumps({"op": op, "args": args, "settings": settings}).encode("utf-8") + b"\n")
            answer = json.loads(read_line(conn) or b"null")
    except (OSError, ValueError):  # refused (stale: its server died), gone, timed out, garbled
        return None
    if not isinstance(answer, dict) or answer.get("ok") is not True:
        return None
    return answer


def peer_uid(conn: socket.socket) -> int | None:
    """The uid of the process at the other end (``None`` where the system cannot say)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    return int(uid)


def read_line(conn: socket.socket, limit: int | None = None) -> bytes:
    """Bytes up to the first newline (or the end); ``ValueError`` past ``limit``."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if b"\n" in chunk:
            break
        if limit is not None and size > limit:
            raise ValueError("line too long")
    return b"".join(chunks).split(b"\n", 1)[0]


def search_args(
    query: str,
    *,
    regex: bool,
    include: list[str],
    exclude: list[str],
    since: str | None,
    limit: int,
    mode: str | None = None,
) -> dict[str, Any]:
    """The arguments of ``Memory.search`` as they travel."""
    return {
        "query": query,
        "regex": regex,
        "include": include,
        "exclude": exclude,
        "since": since,
        "limit": limit,
        "mode": mode,
    }


def hit_to_wire(hit: SearchHit) -> dict[str, Any]:
    return hit.to_dict()


def hit_from_wire(value: dict[str, Any]) -> SearchHit:
    modified = value.get("modified")
    return SearchHit(**{**value, "modified": datetime.fromisoformat(modified) if modified else None})
