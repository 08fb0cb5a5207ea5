"""A resident runs a shell's command itself: ``answer(memory, question)`` runs the command line a
shell sent (``fsmem._index.resident`` carries it) through the same click group, on the resident's
memory, with the shell's folder, variables and terminals, and answers with what it printed and its
exit code. One implementation of every command: the bytes are the ones the shell would have printed.

It runs only the read-only commands of ``SERVED_COMMANDS``, for its own root with its own settings
(``fsmem.cli.options`` checks both where the command opens its memory, the way the CLI finds them);
anything else is refused and the shell runs the command itself. While a command runs, the process's
standard streams are the shell's to the thread running it (its other threads keep theirs: a long-lived
face that serves goes on printing), and the variables it was sent are the process's: the resident
answers one question at a time (its lock).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from fsmem._index.resident import ASKER_VARIABLES, SERVED_COMMANDS, command_words
from fsmem._memory.memory import Memory
from fsmem.cli.options import Asker, NotServed, asked_by

__all__ = ["answer"]


def answer(memory: Memory, question: Any) -> dict[str, Any]:
    """Run the shell's command of ``question`` on ``memory``: ``{"ok": true, "code", "stdout",
    "stderr"}`` (the bytes, each one character), or ``{"ok": false, "why"}`` for the shell to run it."""
    asked = _asked(question)
    if isinstance(asked, str):
        return {"ok": False, "why": asked}
    argv, prog, cwd, environ, streams = asked
    if command_words(argv) not in SERVED_COMMANDS:
        return {"ok": False, "why": "not a command a resident runs"}
    from fsmem.cli.group import group

    out, err = _Captured(streams["stdout"], "<stdout>"), _Captured(streams["stderr"], "<stderr>")
    try:
        with _environment(environ), _streams(out, err), asked_by(Asker(cwd, memory)):
            try:
                group.main(argv, prog_name=prog)  # click's own handling, as a shell's: it always exits
                code = 0
            except SystemExit as done:
                code = _exit_code(done.code, err)
    except NotServed as refused:
        return {"ok": False, "why": str(refused)}
    return {"ok": True, "code": code, "stdout": out.bytes().decode("latin-1"), "stderr": err.bytes().decode("latin-1")}


def _asked(question: Any) -> tuple[list[str], str, str, dict[str, str], dict[str, dict[str, Any]]] | str:
    """The parts of a ``run`` question, checked; or why it is none."""
    if not isinstance(question, dict) or question.get("op") != "run":
        return "not a question this resident answers"
    argv, prog, cwd = question.get("argv"), question.get("prog"), question.get("cwd")
    environ, streams = question.get("environ"), question.get("streams")
    if not (isinstance(argv, list) and all(isinstance(word, str) for word in argv)):
        return "no command line"
    if not (isinstance(prog, str) and prog and isinstance(cwd, str) and os.path.isabs(cwd)):
        return "no program name or folder"
    if not (isinstance(environ, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in environ.items())):
        return "no environment"
    if not (isinstance(streams, dict) and all(_stream_ok(streams.get(name)) for name in ("stdout", "stderr"))):
        return "no streams"
    return argv, prog, cwd, environ, streams


def _stream_ok(stream: Any) -> bool:
    if not isinstance(stream, dict) or not isinstance(stream.get("tty"), bool):
        return False
    encoding, errors = stream.get("encoding"), stream.get("errors")
    if not (isinstance(encoding, str) and isinstance(errors, str)):
        return False
    try:
        "".encode(encoding, errors)
    except LookupError:
        return False
    return True


class _Captured(io.TextIOWrapper):
    """A shell's stream, kept: its encoding and error handling, and whether it is a terminal (colour)."""

    def __init__(self, stream: dict[str, Any], name: str) -> None:
        self._buffer = io.BytesIO()
        super().__init__(self._buffer, encoding=stream["encoding"], errors=stream["errors"], write_through=True)
        self._tty = stream["tty"]
        self._name = name

    @property
    def name(self) -> str:  # a text stream's name, as sys.stdout has one
        return self._name

    def isatty(self) -> bool:
        return bool(self._tty)

    def bytes(self) -> bytes:
        self.flush()
        return self._buffer.getvalue()


@contextlib.contextmanager
def _streams(out: _Captured, err: _Captured) -> Iterator[None]:
    """The shell's streams for this thread's command; the process's own for its other threads (a
    long-lived face that serves, ``fsmem chat`` or ``fsmem mcp``, goes on reading and printing)."""
    saved = sys.stdin, sys.stdout, sys.stderr
    mine = threading.current_thread()
    routed = [_Routed(own, shells, mine) for own, shells in zip(saved, (io.StringIO(""), out, err), strict=True)]
    sys.stdin, sys.stdout, sys.stderr = routed  # a served command reads no input
    try:
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved


class _Routed:
    """A standard stream while a command runs for a shell: the shell's to the thread running it, the
    process's own to every other thread. Looked up on each use, as click and ``print`` look it up."""

    def __init__(self, own: Any, shells: Any, thread: threading.Thread) -> None:
        self._own, self._shells, self._thread = own, shells, thread

    def __getattr__(self, name: str) -> Any:
        return getattr(self._shells if threading.current_thread() is self._thread else self._own, name)


@contextlib.contextmanager
def _environment(environ: Mapping[str, str]) -> Iterator[None]:
    """The shell's ``FSMEM_*`` and output variables in place of the resident's, while its command runs."""
    names = {name for name in os.environ if _carried(name)} | {name for name in environ if _carried(name)}
    saved = {name: os.environ.get(name) for name in names}
    try:
        for name in names:
            if name in environ:
                os.environ[name] = environ[name]
            else:
                os.environ.pop(name, None)
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _carried(name: str) -> bool:
    return name.startswith("FSMEM_") or name in ASKER_VARIABLES


def _exit_code(code: object, err: _Captured) -> int:
    """A ``SystemExit``'s code as the interpreter makes it one: a message is printed, and is 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=err)
    return 1
