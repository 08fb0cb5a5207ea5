"""File stamps for the facts view: (size, mtime_ns, inode), one ``stat`` a file.

A stamp tells that a file changed without reading it; ``folders_mark`` tells that a folder gained,
lost or had a file saved into it by rename. The facts keep what they parsed by these.

A stamp is kept for what was read (or written) only once it can tell: a file changed within one
timestamp tick of the read (the index's racy rule, :func:`fsmem._core.search.racy`) may be saved
again with the same size and mtime, so what was read of it gets a stamp no ``stat`` gives (a fourth
part) and the next look reads it again.
"""

from __future__ import annotations

import errno
import os
import stat as stat_module
import time
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a new process's `fsmem facts list` stats files and loads no search rules
    from fsmem._store.types import FactStamp

_now_ns = time.time_ns  # the clock a read is stamped by (a test moves it)


def stamps(resolve: Callable[[str], Path], folders: Sequence[str]) -> tuple[dict[str, FactStamp], dict[str, str]]:
    """Every plain file directly in each folder (found through ``resolve``, the drive's guard) with its
    stamp, (size, mtime_ns, inode): one ``stat`` a file. And what else is there, path → ``"link"``,
    ``"folder"``, ``"special"`` (a FIFO, a device, a socket), or for a folder that cannot be read, why.
    Dot-names are skipped (temp files of an atomic write, editor swap files); a missing folder holds
    nothing."""
    found: dict[str, FactStamp] = {}
    others: dict[str, str] = {}
    regular, link, folder_mode = stat_module.S_ISREG, stat_module.S_ISLNK, stat_module.S_ISDIR
    for folder in folders:
        try:
            entries = list(os.scandir(resolve(folder)))
        except (FileNotFoundError, NotADirectoryError):
            continue
        except Exception as error:  # noqa: BLE001 - a link leading out, a folder we may not read
            others[folder] = str(getattr(error, "message", error))
            continue
        prefix = folder + "/"
        for entry in entries:
            name = entry.name
            if name[0] == ".":
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue  # removed since the listing
            mode = info.st_mode
            if regular(mode):
                found[prefix + name] = (info.st_size, info.st_mtime_ns, info.st_ino)
            else:
                others[prefix + name] = "link" if link(mode) else "folder" if folder_mode(mode) else "special"
    return found, others


def stamp(root: Path, path: str) -> FactStamp | None:
    """The stamp of one file (as :func:`stamps` gives it); None when no plain file is there."""
    info = _plain_file(root, path)
    return None if info is None else (info.st_size, info.st_mtime_ns, info.st_ino)


def kept_stamp(root: Path, path: str) -> FactStamp | None:
    """The stamp to keep for a file just written (as :func:`read_stamped` gives it for a file read)."""
    info = _plain_file(root, path)
    return None if info is None else _kept(info)


def _plain_file(root: Path, path: str) -> os.stat_result | None:
    try:
        info = os.stat(root / path, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return info if stat_module.S_ISREG(info.st_mode) else None


def _kept(info: os.stat_result) -> FactStamp:
    """The stamp of what was read of a file whose ``stat`` is ``info``: its plain stamp, or, where
    it changed within the racy window of now, one that no later ``stat`` matches."""
    from fsmem._core.search import racy  # only where a file is read or written, not for a listing

    plain = (info.st_size, info.st_mtime_ns, info.st_ino)
    return (*plain, 0) if racy(max(info.st_mtime_ns, info.st_ctime_ns), _now_ns()) else plain


def read_stamped(root: Path, paths: Sequence[str]) -> dict[str, tuple[bytes, FactStamp]]:
    """Each file's bytes and the stamp of what was read (one open: never a stamp of another save);
    a path where no plain file is is left out."""
    found = {}
    base = str(root)  # joined as text: a look reads every file read within its racy window again
    for path in paths:
        read = _read_stamped(f"{base}/{path}")
        if read is not None:
            found[path] = read
    return found


def _read_stamped(file: str) -> tuple[bytes, FactStamp] | None:
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError as error:
        if error.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EISDIR):
            return None
        raise
    try:
        info = os.fstat(fd)
        if not stat_module.S_ISREG(info.st_mode):
            return None
        chunks = []
        while chunk := os.read(fd, max(info.st_size + 1, 4096)):  # one read for a file that stays put
            chunks.append(chunk)
        return b"".join(chunks), _kept(info)
    finally:
        os.close(fd)


def folders_mark(root: Path, folders: Sequence[str]) -> Hashable | None:
    """What changes when a file is added to, removed from or saved by rename into any of the
    folders (their mtime and inode). None would mean "cannot tell": every look is then a full one."""
    marks = []
    for folder in folders:
        try:
            info = os.stat(root / folder)
        except OSError:
            marks.append((0, 0))
        else:
            marks.append((info.st_mtime_ns, info.st_ino))
    return tuple(marks)
