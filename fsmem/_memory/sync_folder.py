"""The folder side of ``fsmem sync``: which paths are mirrored, the folder taken (its lock), its files
read as a person may be saving them, and the database's bytes swapped in without losing a save.

A write swaps the new bytes in with ``renameat2(RENAME_EXCHANGE)``, so a save that lands between the
pass's comparison and the write comes out under the temp name and is handed back to the caller, who
keeps it like any conflict: nothing a person saves is lost. Only memory files
(``core.paths.is_memory_file_name``) outside dot-folders are mirrored, and the scan follows no link.

Every read and write of a path goes through the folder's jail, the root's own
(``fsmem._store.folder.jail``) following no link: a path with a link on the way, one leading out of the
folder or into ``.fsmem-sync/`` or one inside it (which would make two of the project's paths one
file), is refused (``BAD_PATH``) and nothing is read or written there, whichever file the database
sends, conflict notes included. The jail is asked again just before a swap, so a link made between a
pass's look and its write is refused too.
"""

from __future__ import annotations

import fcntl
import os
import stat as stat_module
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from fsmem._core.layout import STATE_DIR
from fsmem._core.paths import is_memory_file_name, normalize_path
from fsmem._errors import BadPath, Busy, SetupError
from fsmem._store.atomic import exchange, make_dirs, place_new, temp_name, write_temp
from fsmem._store.folder.jail import Jail
from fsmem._store.folder.ondisk import nfc

__all__ = [
    "SYNC_DIR",
    "LOCK_FILE",
    "NOTE_SUFFIX",
    "SETTLE_MAX",
    "take_folder",
    "jail_of",
    "mirrored",
    "files_here",
    "read_here",
    "read_here_when",
    "place",
    "note_path",
    "is_dir_here",
]

SYNC_DIR = ".fsmem-sync"
LOCK_FILE = "lock"
NOTE_SUFFIX = ".conflict"
SETTLE_MAX = 5.0  # seconds: a file that never stays put this long is synced as it is


def take_folder(folder: Path) -> int:
    """The folder's lock (``DIR/.fsmem-sync/lock``, held while the descriptor is open): one ``fsmem sync``
    a folder at a time. A memory root of its own is refused."""
    if (folder / STATE_DIR).exists():
        raise SetupError(f"{folder} is a memory root of its own (it has {STATE_DIR}/); sync into a plain folder")
    if os.path.islink(folder / SYNC_DIR):
        raise SetupError(f"{folder / SYNC_DIR} is a link; sync keeps its state in the folder itself: remove the link")
    try:
        make_dirs(folder / SYNC_DIR)
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(folder / SYNC_DIR / LOCK_FILE, flags, 0o600)
    except OSError as error:
        raise SetupError(f"cannot make {folder / SYNC_DIR} ({error.strerror}); check the folder") from error
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        os.close(fd)
        raise Busy(f"another `fsmem sync` is running on {folder}; stop it first, or sync another folder") from error
    return fd


def jail_of(folder: Path) -> Jail:
    """The folder's jail: the root's, with ``.fsmem-sync/`` as its private part, following no link
    (each path is a file of the project's own: ``fsmem._store.folder.jail``)."""
    return Jail(folder, SYNC_DIR, name="the sync folder", links=False)


def mirrored(path: str) -> bool:
    """Whether a path is one sync mirrors: a memory file name, a normalized path, no dot-name."""
    if any(part.startswith(".") for part in path.split("/")) or not is_memory_file_name(path.rsplit("/", 1)[-1]):
        return False
    try:
        return normalize_path(path) == path
    except BadPath:
        return False


def files_here(folder: Path) -> Iterator[str]:
    """The mirrored files of the folder (no links, nothing under a dot-folder)."""
    for top, folders, names in os.walk(folder):
        folders[:] = [name for name in folders if not name.startswith(".")]
        for name in names:
            relative = nfc(Path(top, name).relative_to(folder).as_posix())
            if mirrored(relative) and not os.path.islink(Path(top, name)):
                yield relative


def read_here(jail: Jail, path: str) -> bytes | None:
    return read_here_when(jail, path)[0]


def read_here_when(jail: Jail, path: str) -> tuple[bytes | None, float]:
    """The folder's bytes of ``path`` (None: no file) and when they last changed, looked at after
    the read: a save in place (truncate, then write) under way while it read shows as just now."""
    read = _read_file(jail.resolve(path), path)
    if read is None:
        return None, 0.0
    data, seen = read
    return data, max(seen.st_mtime, seen.st_ctime)


def _read_file(target: Path, path: str) -> tuple[bytes, os.stat_result] | None:
    """The bytes at ``target`` (``path`` names it to the reader) and its stat after the read; None:
    no file. Never blocks: what is there may be anything a person (or a swap) put there, and a FIFO
    opened for reading would wait for a writer; anything but a regular file is refused (``BadPath``)."""
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError as error:
        raise BadPath(f"{path} cannot be read here ({error.strerror})") from error
    with os.fdopen(fd, "rb") as handle:
        if not stat_module.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise BadPath(f"{path} is not a regular file here; only regular files are mirrored")
        data = handle.read()
        return data, os.fstat(handle.fileno())


def place(
    jail: Jail,
    path: str,
    data: bytes | None,
    expected: bytes | None,
    settle: float,
    before_swap: Callable[[Path], None] | None = None,
) -> bytes | None:
    """Make the folder's ``path`` hold ``data`` (None: no file), swapping it in; returns what a
    person saved there meanwhile if it is not ``expected`` (the caller keeps it), else None.
    ``settle``: how long a file swapped out must stay put before it is taken as whole.
    ``before_swap`` is told the temp name the swap will use (what it holds after a kill tells what
    happened: ``fsmem._memory.sync`` journals it); a person's save swapped out stays there, for
    the caller to remove once it has kept it."""
    target = jail.resolve(path)
    if data is None:
        if expected is None:
            return None
        aside = temp_name(target)
        if before_swap is not None:
            before_swap(aside)
        try:
            os.rename(target, aside)  # take it out first: whatever it holds now is read, not lost
        except FileNotFoundError:
            return None
        try:
            read = _read_file(aside, path)
        except BadPath:
            place_new(aside, target)  # a FIFO, a device or a socket: put back, left as it was
            raise
        gone = None if read is None else read[0]
        if gone is None:
            return None  # removed by someone else meanwhile: nothing of a person's to keep
        if gone != expected:
            return gone  # a person's save: it stays at ``aside`` until the caller has kept it
        aside.unlink()
        _remove_empty_folders(target.parent, jail.root)
        return None
    make_dirs(target.parent)
    temp = write_temp(target, data, durable=True)
    out: bytes | None = expected
    try:
        if jail.resolve(path) != target:  # a link made on the way since: the write would land elsewhere
            raise BadPath(f"{path!r} changed into a link while it was being written; nothing was written")
        if before_swap is not None:
            before_swap(temp)
        if expected is None and place_new(temp, target):
            return None
        try:
            swapped = exchange(temp, target)
        except FileNotFoundError:  # the person removed it meanwhile: nothing of theirs to keep
            swapped = False
        if not swapped:  # no atomic swap here: the window shrinks to this read
            before = read_here(jail, path)
            os.replace(temp, target)
            return before if before is not None and before != expected else None
        try:
            out = _whole(temp, path, expected, settle)
        except BadPath:
            exchange(temp, target)  # a FIFO, a device or a socket: swapped back, left as it was
            raise
    finally:
        if out == expected:  # nothing of a person's in it (or never swapped): gone
            temp.unlink(missing_ok=True)
    return out if out != expected else None


def _whole(swapped: Path, path: str, expected: bytes | None, settle: float) -> bytes | None:
    """What the file swapped out of ``path`` holds once no editor is still writing into it: a save
    in place under way when the swap came goes on into that file (by its open handle), so it is read
    again until it has stayed put ``settle`` seconds (at most ``SETTLE_MAX``). None: it is gone;
    ``BadPath``: it is no regular file."""
    waited = 0.0
    while True:
        read = _read_file(swapped, path)
        if read is None:
            return None
        data, seen = read
        changed_at = seen.st_mtime  # not ctime: the swap itself sets that
        if data == expected or waited >= SETTLE_MAX or not 0 <= time.time() - changed_at < settle:
            return data
        time.sleep(settle)
        waited += settle


def _remove_empty_folders(folder: Path, top: Path) -> None:
    while folder != top:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def is_dir_here(jail: Jail, path: str) -> bool:
    """Whether ``path`` is a folder here (one a link out of the folder leads to is not)."""
    try:
        return jail.resolve(path).is_dir()
    except BadPath:
        return False


def note_path(jail: Jail, path: str) -> Path:
    """Where the note about ``path`` goes: ``<file>.conflict``, or ``-2``, ``-3`` … when one is there."""
    first = jail.resolve(f"{path}{NOTE_SUFFIX}")
    candidate, number = first, 1
    while os.path.lexists(candidate):
        number += 1
        candidate = first.with_name(f"{first.name}-{number}")
    return candidate
