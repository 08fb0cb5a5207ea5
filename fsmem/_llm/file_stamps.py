"""What this user's processes learnt about a model file, remembered by the file's stamp, so a new
process need not hash 22 MB (or make an optimised copy) again to learn it.

    recorded = recall(path)               # the digest recorded for path, None unless its stamp is unchanged
    remember(path, digest, stamp_of(path))

A stamp is (size, mtime_ns, ctime_ns, inode, device): a file written in place changes its mtime and
ctime, one put in its place by a rename its inode and ctime, and no one can set a ctime back. The
records live in this user's cache (``$XDG_CACHE_HOME/fsmem/models``, made 0700), one owner-only file
each; a record that is not a plain file of this user's with no group or other bits (a link, a planted
one) is not believed, nor is any record in a folder that is not this user's alone: the caller then
learns the file again. Records are derived: written atomically, never fsynced.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

from fsmem._env.roots import cache_base
from fsmem._store.atomic import make_dirs, write_atomic

__all__ = ["Stamp", "owned_privately", "private_folder", "recall", "remember", "stamp_of"]

Stamp = tuple[int, int, int, int, int]  # size, mtime_ns, ctime_ns, inode, device


def stamp_of(path: Path) -> Stamp:
    info = os.stat(path)
    return (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev)


def private_folder() -> Path | None:
    """``$XDG_CACHE_HOME/fsmem/models``, made 0700 if missing; None when it is not this user's alone
    (or cannot be made): then nothing is recalled or remembered."""
    folder = Path(cache_base(os.environ)) / "fsmem" / "models"
    try:
        make_dirs(folder)
        info = os.lstat(folder)
    except OSError:
        return None
    return folder if stat.S_ISDIR(info.st_mode) and owned_privately(info) else None


def owned_privately(info: os.stat_result) -> bool:
    """Of this user, with no group or other bits (the caller asks what kind of file it is)."""
    return info.st_uid == os.getuid() and not info.st_mode & 0o077


def recall(path: Path) -> str | None:
    """The digest recorded for ``path`` when its stamp then is its stamp now; else None."""
    record = _record_file(path)
    if record is None:
        return None
    try:
        fd = os.open(record, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not (stat.S_ISREG(info.st_mode) and owned_privately(info)):
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = json.loads(handle.read(4096))
        now = stamp_of(path)
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    if not isinstance(data, dict) or data.get("path") != str(path) or tuple(data.get("stamp", ())) != now:
        return None
    digest = data.get("digest")
    return digest if isinstance(digest, str) else None


def remember(path: Path, digest: str, stamp: Stamp) -> None:
    """Record that ``path`` at ``stamp`` is known as ``digest``; nothing when the cache is not private
    or cannot be written (the next process learns it again)."""
    record = _record_file(path)
    if record is None:
        return
    payload = json.dumps({"path": str(path), "stamp": list(stamp), "digest": digest}).encode()
    try:
        record.unlink(missing_ok=True)  # a planted record (a link, another's mode) lends the new one nothing
        write_atomic(record, payload, durable=False, mode=0o600)
    except OSError:
        return


def _record_file(path: Path) -> Path | None:
    folder = private_folder()
    if folder is None:
        return None
    name = hashlib.sha256(os.fsencode(str(path))).hexdigest()[:32]
    return folder / f"{name}.stamp"
