"""The resident's server: a long-lived process (``fsmem watch``) answers searches and reads of its
memory over a local socket in the root's state folder (the wire and the client: ``fsmem._index.resident``).

    with Resident(memory) as resident:     # serving, unless another live process already does
        ...                                # resident.serving says which

It answers by calling ``Memory.search``, the one search there is (and the memory tool's ``read``),
so an answer is the one the asking process would have computed. Only its owner may ask: the socket
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
import warnings
from typing import Any

from fsmem._errors import FsmemError
from fsmem._index.resident import MAX_LINE, address, hit_to_wire, peer_uid, read_line, settings_mark, socket_path
from fsmem._memory.memory import Memory

log = logging.getLogger("fsmem.resident")

__all__ = ["Resident"]


class Resident:
    """Serve ``memory``'s searches on its state folder's socket until stopped."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self.path = socket_path(memory.drive.state)
        self.serving = False
        self.why_not: str | None = None  # why it does not serve: another resident does, or the error
        self.refused = 0  # connections of another user, turned away
        self._listener: socket.socket | None = None
        self._inode: int | None = None
        self._thread: threading.Thread | None = None
        self._answering = threading.Lock()  # one question at a time: warnings are caught per answer
        self._mark = settings_mark(memory.settings)  # an asker with other settings searches by itself

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
        """``search``: ``Memory.search``; ``read``: the memory tool's read, in a run of its own (as the
        shell makes it). Anything else, and any refusal raised, is left to the asker to do itself."""
        if not isinstance(question, dict) or not isinstance(args := question.get("args"), dict):
            return {"ok": False, "why": "not a question"}
        if question.get("settings") != self._mark:
            return {"ok": False, "why": "asked with other settings: the asker searches by itself"}
        op, request = question.get("op"), args.get("request")
        if not (op == "search" or (op == "read" and isinstance(request, dict) and request.get("command") == "read")):
            return {"ok": False, "why": "not a question this resident answers"}
        with self._answering, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                if op == "search":
                    found = self.memory.search(**args)
                    answer: dict[str, Any] = {"hits": [hit_to_wire(hit) for hit in found], "meaning": found.meaning}
                else:
                    answer = {"result": self.memory.run(thread_id="cli").call(request)}
            except (FsmemError, TypeError) as error:  # the asker's own call says it in its words
                return {"ok": False, "why": type(error).__name__}
        return {"ok": True, **answer, "warnings": [str(w.message) for w in caught]}
