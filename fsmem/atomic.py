"""Writing a file so that a crash leaves the old one or the new one, never a mix; and whether a process lives.

Standard library only and cheap to import: the cold ``fsmem search`` path uses it too.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def write_atomic(target: Path, data: bytes, *, durable: bool = True, mode: int = 0o600) -> None:
    """Unique ``O_EXCL`` temp file in the same folder, a write loop, fsync, ``os.replace``, fsync of the folder.

    An existing file keeps its permissions; a new one gets ``mode``. With ``durable=False`` (derived
    state, tests) the two fsyncs are skipped, not the atomic replace.
    """
    folder = target.parent
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        pass
    temp = folder / f".{target.name}.{os.getpid()}.{os.urandom(6).hex()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), mode)
    try:
        os.fchmod(fd, mode)  # the umask must not widen or narrow what the file had
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if durable:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        temp.unlink(missing_ok=True)
        raise
    os.close(fd)
    try:
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(folder)


def fsync_dir(folder: Path) -> None:
    """Make a folder's entries (a rename, a new or removed file) durable."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists on this machine (one we may not signal counts)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
