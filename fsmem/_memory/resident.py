"""The resident's server: a long-lived process (``fsmem watch``, or one that already watches: ``fsmem
mcp``, ``fsmem chat``, ``fsmem ui``, a library user's ``serve``) answers the shell's questions about its
memory over a local socket in its home (``home_of``: a folder's state folder, or a PostgreSQL
project's folder named by its URL and project) (the wire and the client:
``fsmem._index.resident``; the claim and the start on first use: ``fsmem._index.autostart``).

    with Resident(memory, answer) as resident:   # serving, unless another live process already does
        ...                                      # resident.serving says which

One per root: it serves only while it holds the root's resident claim (an exclusive flock on
``resident.lock``, taken before the socket is bound and let go after it is removed), so two started at
once leave one serving, and one killed with ``kill -9`` leaves a claim the next one takes and a socket
it replaces. With ``idle_exit`` it stops serving after that many seconds with no question (``idle``
is set then); with ``standby`` a process that found the claim taken takes it over once its holder ends.

``answer(memory, question)`` makes each answer (the CLI's ``fsmem.cli.served.answer`` runs the asker's
command itself, on this memory), one question at a time. Only its owner may ask: the socket
is 0600 in the 0700 home, and each connection's peer uid (``SO_PEERCRED``) must be this
process's. It takes no lock of the root's: a search takes only what a search takes, so an idle
resident holds only its claim.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fsmem._index.autostart import claim, holder
from fsmem._index.resident import MAX_LINE, address, peer_uid, pg_home, read_line, socket_path
from fsmem._memory.memory import Memory
from fsmem._store.atomic import make_dirs
from fsmem._store.folder.drive import Drive

log = logging.getLogger("fsmem.resident")

__all__ = ["Answerer", "Resident", "serve"]

# How a resident answers a question (a JSON value as it came): a JSON object, ``{"ok": true, ...}``
# or ``{"ok": false, "why": ...}``.
Answerer = Callable[[Memory, Any], dict[str, Any]]

STANDBY_POLL = 2.0  # seconds between a standing-by process's tries of the claim


class Resident:
    """Serve the questions about ``memory`` on its home's socket until stopped (or idle that long)."""

    def __init__(
        self, memory: Memory, answer: Answerer, *, idle_exit: float | None = None, standby: bool = False
    ) -> None:
        self.memory = memory
        self._answerer = answer
        self.home = home_of(memory)
        self.path = socket_path(self.home)
        self.idle_exit = idle_exit
        self.standby = standby
        self.serving = False
        self.why_not: str | None = None  # why it does not serve: another resident does, or the error
        self.refused = 0  # connections of another user, turned away
        self.idle = threading.Event()  # set when it stopped serving after idle_exit with no question
        self._claim: int | None = None  # the descriptor holding the claim while it serves
        self._listener: socket.socket | None = None
        self._inode: int | None = None
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._life = threading.Lock()  # start, take-over and stop one at a time
        self._asked = time.monotonic()  # when the last question came or was answered
        self._in_flight = 0  # questions being answered now (a resident is not idle while it answers)
        self._counting = threading.Lock()
        self._answering = threading.Lock()  # one question at a time: an answer takes the process's streams

    def start(self) -> Resident:
        with self._life:
            self._serve()
        if not self.serving and self.standby and self.why_not and self.why_not.startswith("another"):
            self._spawn(self._stand_by, "fsmem-resident-standby")
        return self

    def _serve(self) -> None:
        """Under ``_life``: take the claim, then the socket; ``serving`` says whether both were had."""
        try:
            make_home(self.memory)
            held = claim(self.home, _who())
        except OSError as error:
            self.why_not = f"its claim cannot be taken ({error})"
            return
        if held is None:
            who = holder(self.home)
            self.why_not = "another process serves them" + (f" (pid {who})" if who else "")
            log.info("not serving %s: %s", self.path, self.why_not)
            return
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._bind(listener)
        except OSError as error:
            listener.close()
            os.close(held)
            self.why_not = str(error)
            log.info("not serving %s: %s", self.path, self.why_not)
            return
        self._claim, self._listener, self.serving, self.why_not = held, listener, True, None
        self._asked = time.monotonic()
        self._spawn(self._accept_loop, "fsmem-resident")
        if self.idle_exit is not None:
            self._spawn(self._watch_idle, "fsmem-resident-idle")

    def _bind(self, listener: socket.socket) -> None:
        """Bind the socket, replacing one a dead resident left (the claim is ours: none other serves)."""
        with address(self.path) as where:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
            listener.bind(where)
        os.chmod(self.path, 0o600)  # before listen: nobody can connect in between
        self._inode = os.stat(self.path).st_ino
        listener.listen(16)

    def _spawn(self, target: Any, name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _stand_by(self) -> None:
        """Try the claim every few seconds until it is had (its holder ended) or this one stops."""
        while not self._stopping.wait(STANDBY_POLL):
            with self._life:
                if self._stopping.is_set():
                    return
                self._serve()
            if self.serving:
                log.info("serving %s: the process that served it ended", self.path)
                return

    def _watch_idle(self) -> None:
        assert self.idle_exit is not None
        while True:
            quiet = time.monotonic() - self._asked
            if self._in_flight == 0 and quiet >= self.idle_exit:
                break
            if self._stopping.wait(max(0.05, min(1.0, self.idle_exit - quiet))):
                return
        log.info("no question for %g s: %s stops serving", self.idle_exit, self.path)
        self._let_go()
        self.idle.set()

    def stop(self) -> None:
        self._stopping.set()
        self._let_go()
        current = threading.current_thread()
        for thread in self._threads:
            if thread is not current:
                thread.join(timeout=5)

    def _let_go(self) -> None:
        """Close the socket, remove it (if it is still ours), then let go of the claim."""
        with self._life:
            listener, self._listener = self._listener, None
            held, self._claim = self._claim, None
            self.serving = False
            if listener is not None:
                try:
                    listener.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                listener.close()
                try:
                    if os.stat(self.path).st_ino == self._inode:  # ours still: a successor's stays
                        os.unlink(self.path)
                except OSError:
                    pass
            if held is not None:
                os.close(held)  # the claim goes last: a successor binds only once the socket is gone

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
        with self._counting:
            self._in_flight += 1
        try:
            self._answer_one(conn)
        finally:
            with self._counting:
                self._in_flight -= 1
                self._asked = time.monotonic()

    def _answer_one(self, conn: socket.socket) -> None:
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


def home_of(memory: Memory) -> Path:
    """Where the resident of ``memory`` keeps its claim, socket and log: a folder's state folder; a
    project in PostgreSQL's folder named by its URL and project (``pg_home``; ``make_home`` makes it)."""
    drive = memory.drive
    if isinstance(drive, Drive):
        return drive.state
    return Path(pg_home(getattr(drive, "url", ""), drive.name, os.environ))


def make_home(memory: Memory) -> None:
    """Make a PostgreSQL project's resident home (0700, with any missing parents). A folder's state
    folder is made with its root and never again here: a new empty one must not stand in for a root
    that was removed."""
    if not isinstance(memory.drive, Drive):
        make_dirs(home_of(memory))


def serve(memory: Memory, answer: Answerer) -> Resident:
    """Answer the shell's questions about ``memory`` from this long-lived process (one that already
    watches it: its index and watcher are open anyway) while no other process does, standing by to
    take over when the one that does ends. ``stop()`` it when the process is done with the memory."""
    return Resident(memory, answer, standby=True).start()


def _who() -> str:
    """What the claim's file says of this process: its command, for a message to name."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
    if name in {"__main__.py", "-m", "-c"}:
        name = "fsmem"
    return " ".join([name, *sys.argv[1:2]])
