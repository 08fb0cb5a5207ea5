"""Writing a file so that a crash leaves the old one or the new one, never a mix; and whether a process lives.

Standard library only and cheap to import: the cold ``fsmem search`` path uses it too.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

TEMP_SUFFIX = ".tmp"
_TEMP_STEM_BYTES = 64  # ".<stem>.<pid>.<12 hex>.tmp" stays far below NAME_MAX (255) for any target name


def temp_name(target: Path) -> Path:
    """A unique hidden temp file beside ``target``, named so its writer can be told: the writer's pid
    is the third field from the end (``remove_dead_temps``). The target's name is cut to 64 bytes, so
    a name of 255 bytes still gets a temp name the file system accepts."""
    stem = target.name.encode("utf-8")[:_TEMP_STEM_BYTES].decode("utf-8", "ignore").replace(".", "_")
    return target.parent / f".{stem}.{os.getpid()}.{os.urandom(6).hex()}{TEMP_SUFFIX}"


def write_temp(target: Path, data: bytes, *, durable: bool = True, mode: int = 0o600) -> Path:
    """The first half of an atomic write: ``data`` in a new ``O_EXCL`` temp file beside ``target``,
    with ``target``'s permissions when it exists (else ``mode``), fsynced when ``durable``."""
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        pass
    temp = temp_name(target)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), mode)
    try:
        os.fchmod(fd, mode)  # the umask must not widen or narrow what the file had
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if durable:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        temp.unlink(missing_ok=True)
        raise
    os.close(fd)
    return temp


def write_atomic(target: Path, data: bytes, *, durable: bool = True, mode: int = 0o600) -> None:
    """Unique ``O_EXCL`` temp file in the same folder, a write loop, fsync, ``os.replace``, fsync of the folder.

    An existing file keeps its permissions; a new one gets ``mode``. With ``durable=False`` (derived
    state, tests) the two fsyncs are skipped, not the atomic replace.
    """
    temp = write_temp(target, data, durable=durable, mode=mode)
    try:
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(target.parent)


_RENAME_NOREPLACE, _RENAME_EXCHANGE = 1, 2
_renameat2: Any = None


def _rename2(source: Path, target: Path, flags: int) -> bool:
    """Linux ``renameat2``; False where the system or the file system does not offer it."""
    global _renameat2
    if _renameat2 is None:
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            _renameat2 = libc.renameat2
            _renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
        except (OSError, AttributeError):
            _renameat2 = False
    if _renameat2 is False:
        return False
    import ctypes

    if _renameat2(-100, os.fsencode(source), -100, os.fsencode(target), flags) == 0:  # -100: AT_FDCWD
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(target))


def exchange(first: Path, second: Path) -> bool:
    """Swap two names atomically (each now names the other's file); False where unsupported.

    A write that swaps its temp file in, rather than replacing, still holds whatever was at the target
    at that instant (a person's save included) under the temp name, so nothing is overwritten unseen.
    """
    return _rename2(first, second, _RENAME_EXCHANGE)


def place_new(temp: Path, target: Path) -> bool:
    """Rename ``temp`` to ``target`` only if nothing is there; False if something is (or where the
    system cannot tell atomically and something is there now)."""
    try:
        if _rename2(temp, target, _RENAME_NOREPLACE):
            return True
    except FileExistsError:
        return False
    if os.path.lexists(target):
        return False
    os.replace(temp, target)
    return True


def make_dirs(folder: Path) -> None:
    """``folder`` and any missing parents, each made 0700 whatever the umask (state is the owner's)."""
    missing = []
    while not os.path.isdir(folder):
        missing.append(folder)
        folder = folder.parent
    for made in reversed(missing):
        try:
            os.mkdir(made, 0o700)
        except FileExistsError:
            continue
        os.chmod(made, 0o700)


_TAG_HEX = 12  # temp_name's random tag: 6 bytes in hex


def temp_owner(name: str) -> int | None:
    """The writer's pid in a temp file's name (``.<stem>.<pid>.<tag>.tmp``, the tag 12 hex digits as
    ``temp_name`` makes it), or None if it is not one: a person's ``.notes.2024.draft.tmp`` is not."""
    if not (name.startswith(".") and name.endswith(TEMP_SUFFIX)):
        return None
    parts = name.split(".")
    if len(parts) < 5 or not (parts[-3].isascii() and parts[-3].isdigit()):
        return None
    tag = parts[-2]
    if len(tag) != _TAG_HEX or tag.strip("0123456789abcdef"):
        return None
    return int(parts[-3])


def remove_dead_temps(top: Path, *, deep: bool = True) -> list[Path]:
    """Remove every temp file under ``top`` (in ``top`` alone unless ``deep``) whose writer is no longer
    alive; the files removed. A pid reused by a live process keeps its file until that one ends.
    A ``top`` that is a link (or not a folder) is not looked into: nothing outside it is removed."""
    removed: list[Path] = []
    try:
        if not stat.S_ISDIR(os.lstat(top).st_mode):
            return removed
        walk = os.walk(top) if deep else [(str(top), [], os.listdir(top))]
    except OSError:
        return removed
    for folder, _, names in walk:
        for name in names:
            pid = temp_owner(name)
            if pid is not None and pid != os.getpid() and not pid_alive(pid):
                try:
                    os.unlink(os.path.join(folder, name))
                except OSError:
                    continue
                removed.append(Path(folder, name))
    return removed


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


def append_line(file: Path, record: object) -> None:
    """Append ``record`` as one JSON line to ``file`` (made 0600): one write of a short line, whole and
    never interleaved with another process's. ``OSError`` when it cannot be written."""
    line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    fd = os.open(file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def json_lines(file: Path) -> Iterator[object]:
    """Each JSON line of ``file``, oldest first (none when it is missing); a line cut short by a crash
    is skipped."""
    try:
        with open(file, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                try:
                    yield json.loads(line)
                except ValueError:
                    continue
    except FileNotFoundError:
        return
