"""A resident process (``fsmem watch``) runs the shell's read-only commands over a local socket, so a
cold ``fsmem search`` costs a round trip, not a start-up and a walk. This module is the wire and the
client, the standard library alone, so the shell imports it before it knows whether anything answers
(the server: ``fsmem._memory.resident``; what it answers with: ``fsmem.cli.served``).

    <root>/.fsmem/resident.sock          0600, in the 0700 state folder; each side checks the other's uid
    <cache base>/fsmem/residents/<hash>/resident.sock
                                         a project in PostgreSQL: its folder named by the exact URL and
                                         project (``pg_home``), 0700 like a state folder

One connection, one question: a JSON line
``{"op": "run", "argv": [...], "prog": "fsmem", "cwd": "...", "environ": {...}, "streams": {...}}``
(the command line after ``fsmem``, where it was typed, the variables that decide settings and output,
and whether each stream is a terminal, in which encoding), and a JSON line back,
``{"ok": true, "code": 1, "stdout": "...", "stderr": "..."}`` (the bytes, each one character) or
``{"ok": false, "why": "..."}``. The resident runs the command itself, with the asker's everything:
the output is the one the shell would have printed. ``served`` answers ``None`` whenever no resident
gave an answer (no socket, a stale one left by a crash, a link or another user's socket in its place,
a refusal, a garbled line, a timeout): the shell then runs the command itself.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Iterator, Mapping

from fsmem._env.roots import STATE_FOLDER, cache_base, chosen_root

TYPE_CHECKING = False  # typing and pathlib cost a cold shell a few ms: the client takes paths as strings
if TYPE_CHECKING:
    import socket
    from pathlib import Path
    from typing import Any

    Where = str | os.PathLike[str]

SOCKET_NAME = "resident.sock"
RESIDENTS_FOLDER = "residents"  # under the user's fsmem cache: the homes of PostgreSQL projects' residents
ANSWER_TIMEOUT = 30.0  # a first search may build the index; a hung resident is given up on after this
MAX_LINE = 1 << 20  # a question longer than this is no question of ours
_AF_UNIX_MAX = 100  # sun_path holds 108 bytes on Linux, 104 on macOS

# The read-only commands a resident runs for the shell, as their words on the command line.
SERVED_COMMANDS = frozenset({("search",), ("read",), ("facts", "list")})
# The options the group takes before a command (each with its value, but --json); any other option
# there (--help, --version, …) leaves the command line to the shell.
_GROUP_OPTIONS = {"--root": True, "--store": True, "--project": True, "--json": False}
# Beside every FSMEM_* variable, those that decide what a command prints.
ASKER_VARIABLES = ("NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "TERM", "COLUMNS", "LINES")


def socket_path(state: Where) -> Path:
    """The socket in a root's state folder."""
    from pathlib import Path

    return Path(socket_file(state))


def socket_file(state: Where) -> str:
    return os.path.join(state, SOCKET_NAME)


def command_words(argv: list[str]) -> tuple[str, ...] | None:
    """The command a command line names (``("facts", "list")``), past the group's own options; ``None``
    when it asks for help or the version, or has an option before its command that the group lacks."""
    if any(token in ("-h", "--help", "--version") for token in argv):
        return None
    words: list[str] = []
    position = 0
    while position < len(argv) and len(words) < 2:
        token = argv[position]
        name = token.split("=", 1)[0]
        if name in _GROUP_OPTIONS:
            position += 2 if _GROUP_OPTIONS[name] and "=" not in token else 1
            continue
        if token.startswith("-"):
            return None if not words else tuple(words)
        words.append(token)
        position += 1
        if words[0] != "facts":
            break
    return tuple(words)


def given_root(argv: list[str]) -> str | None:
    """The last ``--root X`` or ``--root=X`` before any ``--`` (only to find the socket: the resident
    parses the command line itself, and answers only for its own root)."""
    return _given(argv, "--root")


def _given(argv: list[str], option: str) -> str | None:
    value = None
    for position, token in enumerate(argv):
        if token == "--":
            break
        if token == option and position + 1 < len(argv):
            value = argv[position + 1]
        elif token.startswith(option + "="):
            value = token.removeprefix(option + "=")
    return value


def socket_for(argv: list[str], environ: Mapping[str, str], here: str) -> str | None:
    """The socket of the resident that would serve this command line, found as the CLI finds its
    memory: a project in PostgreSQL (``--store``/``--project``, else ``$FSMEM_STORE``/``$FSMEM_PROJECT``
    when no ``--root`` is given) has it in the folder of that URL and project (``pg_home``), a folder
    in its root.
    ``None`` for a command line the CLI refuses (a root and a store, a store without a project)."""
    root, url, project = given_root(argv), _given(argv, "--store"), _given(argv, "--project")
    if root is not None:
        if url or project:
            return None
        folder = chosen_root(root, environ, here)
    else:
        url, project = url or environ.get("FSMEM_STORE"), project or environ.get("FSMEM_PROJECT")
        if url or project:
            return socket_file(pg_home(url, project, environ)) if url and project else None
        folder = chosen_root(None, environ, here)
    return None if folder is None else socket_file(os.path.join(folder, STATE_FOLDER))


def served(argv: list[str], prog: str) -> tuple[bytes, bytes, int] | None:
    """What a resident printed running ``prog argv`` as this process would (stdout, stderr, exit
    code), or ``None`` when none ran it (the shell then runs it itself)."""
    if command_words(argv) not in SERVED_COMMANDS:
        return None
    environ = os.environ
    if any(name.startswith("_") and name.endswith("_COMPLETE") for name in environ):
        return None  # the shell asks for completions, which only it words
    try:
        here = os.getcwd()
        path = socket_for(argv, environ, here)
        if path is None:
            return None
        question = {
            "op": "run",
            "argv": argv,
            "prog": prog,
            "cwd": here,
            "environ": _asker_environment(environ),
            "streams": {"stdout": _stream(sys.stdout), "stderr": _stream(sys.stderr)},
        }
    except (OSError, ValueError):  # the folder we stand in was removed, a stream closed
        return None
    answer = ask(path, question)
    if answer is None:
        return None
    code, out, err = answer.get("code"), answer.get("stdout"), answer.get("stderr")
    if type(code) is not int or not isinstance(out, str) or not isinstance(err, str):
        return None
    try:
        return out.encode("latin-1"), err.encode("latin-1"), code
    except UnicodeEncodeError:  # garbled: not bytes as we carry them
        return None


def _asker_environment(environ: Mapping[str, str]) -> dict[str, str]:
    chosen = {name: value for name, value in environ.items() if name.startswith("FSMEM_") or name in ASKER_VARIABLES}
    if sys.stdout.isatty() and "COLUMNS" not in chosen:  # the width click would read from the terminal
        with contextlib.suppress(OSError):
            size = os.get_terminal_size(sys.stdout.fileno())
            chosen.setdefault("COLUMNS", str(size.columns))
            chosen.setdefault("LINES", str(size.lines))
    return chosen


def _stream(stream: Any) -> dict[str, Any]:
    return {"tty": bool(stream.isatty()), "encoding": stream.encoding, "errors": stream.errors}


def ask(path: Where, question: dict[str, Any], timeout: float = ANSWER_TIMEOUT) -> dict[str, Any] | None:
    """The answer of the resident behind the socket at ``path``, or ``None`` when none answered."""
    try:
        found = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISSOCK(found.st_mode) or found.st_uid != os.geteuid():
        return None  # a link (or a file) planted in its place, or another user's: never followed
    import json  # only once a socket is there: a shell no resident serves loads neither
    import socket

    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout)
            with address(path) as where:
                conn.connect(where)
            if peer_uid(conn) not in (None, os.geteuid()):
                return None  # not our resident: a socket another user put there is told nothing
            conn.sendall(json.dumps(question).encode("utf-8") + b"\n")
            answer = json.loads(read_line(conn) or b"null")
    except (OSError, ValueError):  # refused (stale: its server died), gone, timed out, garbled
        return None
    if not isinstance(answer, dict) or answer.get("ok") is not True:
        return None
    return answer


@contextlib.contextmanager
def address(path: Where) -> Iterator[str]:
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


def pg_home(url: str, project: str, environ: Mapping[str, str]) -> str:
    """Where the resident of a project in PostgreSQL (``fsmem watch --store URL --project NAME``) keeps
    its claim and socket: ``<cache base>/fsmem/residents/<hash of the URL and project, as written>``.
    A resident runs only the commands naming its own URL and project, as written, so the shell finds
    it without reading the URL (which only the driver reads as libpq does); another spelling finds no
    resident, and the shell does the work itself."""
    import hashlib  # only for a project in PostgreSQL

    key = hashlib.sha256(f"{url}\0{project}".encode("utf-8", "surrogateescape")).hexdigest()[:20]
    return os.path.join(cache_base(environ), "fsmem", RESIDENTS_FOLDER, key)


def peer_uid(conn: socket.socket) -> int | None:
    """The uid of the process at the other end (``None`` where the system cannot say)."""
    import socket
    import struct

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
