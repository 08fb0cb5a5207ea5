"""The systems fsmem runs on: Linux and macOS. Elsewhere it says plainly what does not work.

fsmem's promises rest on POSIX file-system calls: opening a file without following a symlink
(``O_NOFOLLOW``, the symlink guard), fsync of a folder after a rename (a crash keeps the old file or the
new one), and private modes (folders 0700, files 0600). Windows lacks them, so ``fsmem.open`` refuses
there with what is missing rather than failing, or guarding less, deep inside a write.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from fsmem._errors import Unsupported

SUPPORTED = "Linux and macOS"


def missing_features(os_name: str | None = None) -> list[str]:
    """What this system (or one whose ``os.name`` is ``os_name``) lacks of what fsmem relies on."""
    missing = []
    if not hasattr(os, "O_NOFOLLOW"):
        missing.append(
            "opening a file without following symlinks (O_NOFOLLOW), which keeps symlinks from leading out of the root"
        )
    if (os_name or os.name) != "posix":
        missing.append("fsync of a folder, which makes a rename survive a crash, and private file modes (0600/0700)")
    return missing


def check_system() -> None:
    """Raise :class:`Unsupported` naming what is missing, when fsmem cannot keep its promises here."""
    missing = missing_features()
    if missing:
        raise Unsupported(
            f"fsmem runs on {SUPPORTED}; this system ({sys.platform}) lacks "
            + "; and ".join(missing)
            + ". Use fsmem from Linux, macOS or WSL"
        )


def release_heap() -> None:
    """Give memory the process freed back to the system (glibc's ``malloc_trim``; elsewhere nothing).
    glibc keeps freed memory in its arenas, so a long-lived process's size would keep the peak of each
    big transient piece of work (a writer's heap, a full comparison's stamps); this costs microseconds
    to a few milliseconds."""
    global _libc
    if _libc is None:
        import ctypes

        try:
            libc = ctypes.CDLL("libc.so.6")  # by name: find_library would run ldconfig
            _libc = libc if hasattr(libc, "malloc_trim") else False  # glibc only
        except OSError:
            _libc = False
    if _libc:
        _libc.malloc_trim(0)


_libc: Any = None  # loaded on the first release_heap (False: not glibc)


def python_module(module: str, *args: str) -> list[str]:
    """The command line that runs ``module`` in this interpreter. ``-P``: the folder the command was
    typed in is not put on the import path, so a ``fsmem/`` folder there is never what is imported."""
    return [sys.executable, "-P", "-m", module, *args]


def start_detached(argv: Sequence[str], env: Mapping[str, str], output: int | None = None) -> int:
    """Start ``argv`` in a session of its own (no terminal: a shell's hangup or Ctrl-C never reaches
    it) and do not wait for it: stdin from /dev/null, stdout and stderr to the descriptor ``output``
    (/dev/null when None). ``posix_spawn``: no shell, and no subprocess module for a cold command to
    load. Those this process started before and that have ended are reaped first. The pid; ``OSError``
    when it cannot start."""
    for pid in list(_spawned):
        try:
            ended = os.waitpid(pid, os.WNOHANG)[0] != 0
        except ChildProcessError:
            ended = True
        if ended:
            _spawned.remove(pid)
    outputs: list[tuple[Any, ...]]
    if output is None:
        outputs = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_WRONLY, 0) for fd in (1, 2)]
    else:
        outputs = [(os.POSIX_SPAWN_DUP2, output, fd) for fd in (1, 2)]
    pid = os.posix_spawn(
        argv[0],
        list(argv),
        dict(env),
        setsid=True,
        file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0), *outputs],
    )
    _spawned.append(pid)
    return pid


_spawned: list[int] = []  # the processes start_detached started and has not reaped yet
