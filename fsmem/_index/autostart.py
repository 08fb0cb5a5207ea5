"""One resident per root, and starting one on first use: the standard library only, so the shell can
call it on its way to doing the work itself.

    <home>/resident.lock      0600; the resident holds an exclusive flock on it for its whole life
    <home>/resident.log       0600; what a resident started here said (its stdout and stderr)
    <home>/resident.sock      its socket (``fsmem._index.resident``)

``<home>`` is the resident's folder (``fsmem._memory.resident.home_of``): a folder's state folder, or a
project in PostgreSQL's folder under the user's cache (``fsmem._index.resident.pg_home``).

The claim (``claim``) is what makes a resident the only one: whoever holds the flock serves, a second
finds it taken and goes, and a resident killed with ``kill -9`` lets go of it with its last breath (the
kernel releases the lock), so the next one takes it and replaces the socket it left. The claim is not
the root's write lock (``.fsmem/lock``): an idle resident holds only this.

``start_on_first_use`` is what a one-shot command does when no resident answers and ``watch_daemon`` is
``"auto"``: it starts ``fsmem watch`` for the root in a session of its own (no terminal, its output to
the log) and returns at once; the command does its own work this time and never waits for it. Several
shells at once may each start one: all but one find the claim taken and exit at once. A start tried a
moment ago (``SPAWN_PAUSE``) is not tried again, so a resident that is still loading is not joined by a
crowd of others.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
import time
from pathlib import Path

from fsmem._env.system import python_module, start_detached

LOCK_NAME = "resident.lock"
LOG_NAME = "resident.log"
SPAWNED_NAME = "resident.spawned"
SPAWN_PAUSE = 10.0  # seconds after a start during which no other shell starts one again
LOG_KEPT_BYTES = 1 << 20  # a log longer than this is started afresh by the next resident


def _open_private(path: Path, flags: int) -> int:
    return os.open(path, flags | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def claim(home: Path, who: str) -> int | None:
    """Take the root's resident claim for this process's life: the descriptor holding it (close it, or
    exit, to let go), or ``None`` when another live process holds it. ``who`` is written in the file,
    for ``holder`` to say."""
    fd = _open_private(Path(home) / LOCK_NAME, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        os.close(fd)
        if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return None
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()} {who}\n".encode(), 0)
    return fd


def holder(home: Path, wait: float = 0.2) -> str:
    """Who holds the claim, as it wrote itself (``"1234 fsmem watch"``), or ``""`` when unknown. A claim
    just taken is written a moment after its lock: an empty file is looked at again for ``wait`` s."""
    deadline = time.monotonic() + wait
    while True:
        try:
            with open(Path(home) / LOCK_NAME, "rb") as handle:
                said = handle.read(200).decode("utf-8", "replace").strip()
        except OSError:
            return ""
        if said or time.monotonic() >= deadline:
            return said
        time.sleep(0.01)


def listening(path: Path, where: str) -> bool:
    """Whether a process listens on the socket ``path`` (reached at the address ``where``): ``False``
    when there is no socket or a dead resident's is left behind."""
    if not os.path.exists(path):
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(where)
        except OSError:
            return False
    return True


def _start_logged(home: Path, argv: list[str], env: dict[str, str]) -> int | None:
    """Start ``argv`` detached (``fsmem._env.system.start_detached``), its stdout and stderr to
    ``<home>/resident.log`` (0600). The pid, or ``None`` when a start was tried a moment ago or it
    could not start (the caller goes on with its own work)."""
    home = Path(home)
    marker = home / SPAWNED_NAME
    try:
        if time.time() - os.stat(marker).st_mtime < SPAWN_PAUSE:
            return None
    except FileNotFoundError:
        pass
    try:
        os.close(_open_private(marker, os.O_WRONLY))
        os.utime(marker)
        log_fd = _open_private(home / LOG_NAME, os.O_WRONLY | os.O_APPEND)
    except OSError:
        return None
    try:
        if os.fstat(log_fd).st_size > LOG_KEPT_BYTES:
            os.ftruncate(log_fd, 0)
        os.write(log_fd, f"--- {time.strftime('%Y-%m-%dT%H:%M:%S')} started on first use\n".encode())
        return start_detached(argv, env, output=log_fd)
    except OSError:
        return None
    finally:
        os.close(log_fd)


def start_on_first_use(home: Path, argv: list[str], env: dict[str, str], idle: float) -> int | None:
    """Start ``fsmem watch ARGV --idle-exit IDLE`` for the store whose resident's home is ``home``, with
    ``env`` added to this process's environment, unless a resident listens there already. The pid,
    or ``None`` when none was started."""
    from fsmem._index.resident import address, socket_path

    path = socket_path(home)
    with address(path) as where:
        if listening(path, where):
            return None  # one serves (it did not answer this asker: other settings, another op)
    if not os.path.isdir(home):
        return None  # a root's state folder not made yet: the command's own work makes it, for next time
    command = python_module("fsmem", "watch", *argv, "--idle-exit", repr(float(idle)))
    return _start_logged(home, command, {**os.environ, **env})
