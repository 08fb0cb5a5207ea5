"""The resident's server: a long-lived process (``fsmem watch``) answers the shell's questions about
its memory over a local socket in the root's state folder (the wire and the client:
``fsmem._index.resident``).

    with Resident(memory, answer) as resident:   # serving, unless another live process already does
        ...                                      # resident.serving says which

``answer(memory, question)`` makes each answer (the CLI's ``fsmem.cli.served.answer`` runs the asker's
command itself, on this memory), one question at a time. Only its owner may ask: the socket
is 0600 in the 0700 state folder, and each connection's peer uid (``SO_PEERCRED``) must be this
process's. A socket left by a resident that died is found (nothing listens behind it) and replaced.
It takes no lock of its own: a search takes only what a search takes, so an idle resident holds
nothing.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import socket
import threading
from collections.abc import Callable
from typing import Any

from fsmem._index.resident import MAX_LINE, address, peer_uid, read_line, socket_path
from fsmem._memory.memory import Memory

log = logging.getLogger("fsmem.resident")

__all__ = ["Answerer", "Resident"]

# How a resident answers a question (a JSON value as it came): a JSON object, ``{"ok": true, ...}``
# or ``{"ok": false, "why": ...}``.
Answerer = Callable[[Memory, Any], dict[str, Any]]


class Resident:
    """Serve the questions about ``memory`` on its state folder's socket until stopped."""

    def __init__(self, memory: Memory, answer: Answerer) -> None:
        self.memory = memory
        self._answerer = answer
        self.path = socket_path(memory.drive.state)
        self.serving = False
        self.why_not: str | None = None  # why it does not serve: another resident does, or the error
        self.refused = 0  # connections of another user, turned away
        self._listener: socket.socket | None = None
        self._inode: int | None = None
        self._thread: threading.Thread | None = None
        self._answering = threading.Lock()  # one question at a time: an answer takes the process's streams

    def start(self) -> Resident:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._bind(listener)
        except OSError as error:
            listener.close()
            self.why_not = "another process serves them" if error.errno == errno.EADDRINUSE else str(error)
            log.info("not serving %s: %s", self.path, self.why_not)
            return self
        self._listener, self.serving = listener, True
        self._thread = threading.Thread(target=self._accept_loop, name="fsmem-resident", daemon=True)
        self._thread.start()
        return self

    def _bind(self, listener: socket.socket) -> None:
        """Bind the socket, replacing one a dead resident left; ``OSError`` when a live one serves."""
        with address(self.path) as where:
            try:
                listener.bind(where)
            except OSError:
                if not self._stale(where):
                    raise
                os.unlink(self.path)
                listener.bind(where)
        os.chmod(self.path, 0o600)  # before listen: nobody can connect in between
        self._inode = os.stat(self.path).st_ino
        listener.listen(16)

    @staticmethod
    def _stale(where: str) -> bool:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(where)
            except ConnectionRefusedError:
                return True  # nothing listens: its resident died
            except OSError:
                return False
        return False

    def stop(self) -> None:
        listener, self._listener = self._listener, None
        if listener is None:
            return
        self.serving = False
        try:
            listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        listener.close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        try:
            if os.stat(self.path).st_ino == self._inode:  # ours still: a successor's stays
                os.unlink(self.path)
        except OSError:
            pass

    def __enter__(self) -> Resident:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- answering -------------------------------------------------------------------------------

    def _accept_loop(self) -> None:
        while True:
            listener = self._listener
            if listener is None:
                return
            try:
                conn, _ = listener.accept()
            except OSError:
                return  # closed by stop()
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.settimeout(30)
                uid = peer_uid(conn)
                if uid is not None and uid != os.geteuid():
                    self.refused += 1
                    conn.sendall(b'{"ok": false, "why": "refused: another user"}\n')
                    return
                question = json.loads(read_line(conn, MAX_LINE) or b"null")
                conn.sendall(json.dumps(self._reply(question)).encode("utf-8") + b"\n")
            except (OSError, ValueError) as error:
                log.info("a question went unanswered: %s", error)

    def _reply(self, question: Any) -> dict[str, Any]:
        """The answerer's answer, one at a time; anything it raises is a refusal (the asker then does
        the work itself, and any error arises there again, in its own words)."""
        with self._answering:
            try:
                return self._answerer(self.memory, question)
            except Exception as error:  # noqa: BLE001 - the resident outlives a question it could not answer
                log.warning("a question went unanswered: %r", error)
                return {"ok": False, "why": type(error).__name__}
