"""The folder's side of freshness: which memory files a root holds and whether they changed.

The index asks ``Drive.changes_since(seen)`` what differs from what it last saw; this module is how a
folder on disk answers it (a walk with stats, made cheap by a cache of the last clean walk). Only
regular files are memory: FIFOs, devices and sockets are skipped from their directory entry, never
opened. Which names are memory is one predicate, ``core.search.is_indexable_name``.
"""

from __future__ import annotations

import marshal
import os
import struct
import time
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple, Protocol

from fsmem._core.search import (
    RACY_WINDOW_NS,
    Indexed,
    Plan,
    Stamp,
    is_indexable_name,
    plan_reconcile,
)
from fsmem._core.versions import version_of
from fsmem._store.folder.ondisk import is_utf8, nfc, on_disk

# --- the files -----------------------------------------------------------------------------------


def walk_files(root: Path) -> dict[str, tuple[int, int, int, int]]:
    """Every indexable markdown file under ``root`` with its stamp.

    Skips dot-folders (``.fsmem``, ``.git``) and dot-files. A symlinked file is indexed only when it
    leads to a file inside the root; symlinked folders are never entered (no cycles, nothing outside).
    """
    return walk_tree(root)[0]


_PACK = struct.Struct("<4q").pack
_PACK_FOLDER = struct.Struct("<3q").pack


class Walk(NamedTuple):
    """A walk as the cache keeps it, in columns, so that it loads as a few large objects and compares
    in two passes (every folder, then every file), each stat packed and dropped as it comes.

    Per folder, in walk order: its prefix, the names of its indexable files (sorted, NUL-joined) and of
    its sub-folders (sorted, NUL-joined), and its stamp, packed as three little-endian int64 (mtime,
    ctime, inode) in ``folder_stamps``. Per file, folder by folder in the same order, its stamp packed as
    four (size, mtime, ctime, inode) in ``file_stamps``. ``links``: the files that are symlinks (their
    stamp is their target's), root-relative."""

    prefixes: list[str]
    names: list[str]
    subfolders: list[str]
    folder_stamps: bytes
    file_stamps: bytes
    links: list[str]

    def files(self) -> int:
        return len(self.file_stamps) // 32


# One folder's share of each column: (names, sub-folders, its packed stamp, its files' packed stamps, links).
Columns = tuple[str, str, bytes, bytes, list[str]]


def _columns_of(
    prefix: str,
    stamp: tuple[int, int, int],
    files: dict[str, tuple[tuple[int, int, int, int], bool]],
    subfolders: list[str],
) -> Columns:
    names = sorted(files)
    return (
        "\0".join(names),
        "\0".join(sorted(subfolders)),
        _PACK_FOLDER(*stamp),
        b"".join([_PACK(*files[name][0]) for name in names]),
        [prefix + name for name in names if files[name][1]],
    )


def _joined(prefixes: list[str], columns: list[Columns]) -> Walk:
    return Walk(
        prefixes,
        [c[0] for c in columns],
        [c[1] for c in columns],
        b"".join([c[2] for c in columns]),
        b"".join([c[3] for c in columns]),
        [link for c in columns for link in c[4]],
    )


def _split(walk: Walk) -> dict[str, Columns]:
    """Each folder's columns, by prefix (slices of the walk's: nothing per file is built)."""
    starts = [0]
    for names in walk.names:
        starts.append(starts[-1] + (names.count("\0") + 1 if names else 0))
    links: dict[str, list[str]] = {}
    for link in walk.links:
        links.setdefault(link[: link.rfind("/") + 1], []).append(link)
    return {
        prefix: (
            walk.names[n],
            walk.subfolders[n],
            walk.folder_stamps[24 * n : 24 * n + 24],
            walk.file_stamps[32 * starts[n] : 32 * starts[n + 1]],
            links.get(prefix, []),
        )
        for n, prefix in enumerate(walk.prefixes)
    }


def walk_tree(root: Path, record: bool = False) -> tuple[dict[str, tuple[int, int, int, int]], Walk | None]:
    """``walk_files``, and with ``record`` the walk in columns too (``None`` if a folder could not be read)."""
    found: dict[str, tuple[int, int, int, int]] = {}
    folders: list[tuple[str, Columns]] | None = [] if record else None
    root_real = os.path.realpath(root)
    stack: list[tuple[str, str]] = [(str(root), "")]
    while stack:
        folder, prefix = stack.pop()
        stamp = _folder_stamp(folder) if folders is not None else None
        scanned = _scan(folder, root_real)
        if scanned is None:  # vanished or unreadable between listing and opening: nothing to index there
            folders = None
            continue
        files, subfolders = scanned
        for name, (file_stamp, _) in files.items():
            found[prefix + nfc(name)] = file_stamp  # paths are NFC; the name on disk may not be
        for name in subfolders:
            stack.append((os.path.join(folder, name), prefix + nfc(name) + "/"))
        if folders is not None:
            if stamp is None:
                folders = None
                continue
            folders.append((prefix, _columns_of(prefix, stamp, files, subfolders)))
    return found, None if folders is None else _joined([f[0] for f in folders], [f[1] for f in folders])


def _folder_stamp(folder: str) -> tuple[int, int, int] | None:
    try:
        info = os.stat(folder, follow_symlinks=False)
    except OSError:
        return None
    return info.st_mtime_ns, info.st_ctime_ns, info.st_ino


def _scan(folder: str, root_real: str) -> tuple[dict[str, tuple[tuple[int, int, int, int], bool]], list[str]] | None:
    """The indexable files of one folder (name: (stamp, is a symlink)) and its sub-folders."""
    files: dict[str, tuple[tuple[int, int, int, int], bool]] = {}
    subfolders: list[str] = []
    try:
        entries = os.scandir(folder)
    except OSError:
        return None
    with entries:
        for entry in entries:
            name = entry.name
            if name[0] == "." or not is_utf8(name):  # no valid path to give the tool or tantivy
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    subfolders.append(name)
                    continue
                if not is_indexable_name(name) or "\n" in name or "\t" in name:
                    continue
                link = entry.is_symlink()
                if link:
                    if not _link_stays_inside(entry.path, root_real):
                        continue
                    info = os.stat(entry.path)
                else:
                    info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if (info.st_mode & 0o170000) != 0o100000:  # regular files only
                continue
            files[name] = ((info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino), link)
    return files, subfolders


# --- the walk cache: a comparison that lists only the folders that changed ------------------------
#
# After a comparison that found the files exactly as indexed, the walk is saved beside the manifest
# (``walk.cache``, marshal, with a CRC), keyed by the manifest's inode and length. The next comparison,
# while the manifest is unchanged, stats every folder and every file it lists, but lists (scandir) only
# the folders whose stamp changed or is too recent to be trusted: a file created, removed or renamed in
# a folder changes the folder's mtime and ctime (ctime cannot be set back by hand); an edit in place
# changes the file's own stamp, which is compared for every file. Anything different sends the caller
# to the full comparison, so the cache can make a comparison fast, never wrong.

WALK_CACHE = "walk.cache"
_CACHE_MAGIC = b"fsmem-walk-4\n"

# Files read within one timestamp tick of their last change (``Indexed.racy``): their stamp cannot tell
# a later change in that tick, so the cache keeps their hash and checks it until the tick is long past.
Racy = dict[str, tuple[str, int]]  # path -> (version, newest of its mtime and ctime)


def save_walk_cache(
    file: Path, key: tuple[int, int], taken_ns: int, count: int, walk: Walk, racy: Racy | None = None
) -> None:
    """Write the cache (temp file and rename, no fsync: it is derived, and checked when read)."""
    payload = marshal.dumps((key, taken_ns, count, tuple(walk), racy or {}))
    data = _CACHE_MAGIC + zlib.crc32(payload).to_bytes(4, "big") + payload
    temp = file.parent / f".{file.name}.{os.getpid()}.{time.monotonic_ns()}.tmp"
    try:
        with open(temp, "wb") as handle:
            handle.write(data)
        os.replace(temp, file)
    except OSError:  # a cache that cannot be written only makes the next comparison slower
        try:
            os.unlink(temp)
        except OSError:
            pass


def load_walk_cache(file: Path) -> tuple[tuple[int, int], int, int, Walk, Racy] | None:
    try:
        with open(file, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    head = len(_CACHE_MAGIC)
    if not data.startswith(_CACHE_MAGIC) or len(data) < head + 4:
        return None
    payload = data[head + 4 :]
    if zlib.crc32(payload) != int.from_bytes(data[head : head + 4], "big"):
        return None
    try:
        key, taken_ns, count, columns, racy = marshal.loads(payload)
        walk = Walk(*columns)
    except (ValueError, TypeError, EOFError, IndexError):
        return None
    if not (  # the shape fsmem writes (a planted cache with a valid CRC may hold anything)
        all(type(column) is list for column in (walk.prefixes, walk.names, walk.subfolders, walk.links))
        and type(walk.folder_stamps) is bytes
        and type(walk.file_stamps) is bytes
        and len(walk.prefixes) == len(walk.names) == len(walk.subfolders) == len(walk.folder_stamps) // 24 > 0
        and {str} >= set(map(type, walk.prefixes)) | set(map(type, walk.names)) | set(map(type, walk.links))
    ):  # every walk records the root's own folder
        return None
    try:
        return (int(key[0]), int(key[1])), int(taken_ns), int(count), walk, dict(racy)
    except (ValueError, TypeError, IndexError):
        return None


def unchanged_since(root: Path, taken_ns: int, walk: Walk, window_ns: int) -> Walk | None:
    """The walk as it is now if every file is exactly as recorded, else ``None``.

    Every folder is stat'ed, in one pass, and its stamp compared packed; one whose stamp changed, or
    was within ``window_ns`` of the record being taken (a change within the same timestamp tick would
    leave the stamp as it was), is listed again and must hold the same files. Then every file is
    stat'ed, in one pass, by name, and the stamps compared packed against the record in one go: a
    file replaced by anything else (another file, a FIFO, a folder) has another inode or ctime.
    This is the one cost a search pays without a watcher, one ``lstat`` a folder and a file, so it
    builds no path object and no tuple per file, and nothing per folder that stayed as it was.
    """
    base = f"{root}/"
    root_real = os.path.realpath(root)
    lstat, pack, pack_folder = os.lstat, _PACK, _PACK_FOLDER
    try:
        stamps = b"".join(
            [pack_folder(i.st_mtime_ns, i.st_ctime_ns, i.st_ino) for i in map(lstat, [base + p for p in walk.prefixes])]
        )
        recent = {
            n
            for n, (mtime, ctime, _) in enumerate(_FOLDER_STAMPS(walk.folder_stamps))
            if max(mtime, ctime) + window_ns >= taken_ns
        }
        if (stamps != walk.folder_stamps or recent) and not _same_listings(base, root_real, walk, stamps, recent):
            return None
        paths = (
            base + prefix + name
            for prefix, names in zip(walk.prefixes, walk.names, strict=True)
            if names
            for name in names.split("\0")
        )
        if walk.links:  # rare: a symlink is followed (and must still lead inside the root)
            links = {base + link for link in walk.links}
            if not all(_link_stays_inside(link, root_real) for link in links):
                return None
            infos = [os.stat(path) if path in links else lstat(path) for path in paths]
            if any(info.st_mode & 0o170000 != 0o100000 for info in infos):
                return None
        else:
            infos = map(lstat, paths)  # type: ignore[assignment]  # each stat dropped once packed
        if b"".join([pack(i.st_size, i.st_mtime_ns, i.st_ctime_ns, i.st_ino) for i in infos]) != walk.file_stamps:
            return None
    except (OSError, ValueError, TypeError, struct.error):
        return None
    return walk if stamps == walk.folder_stamps else walk._replace(folder_stamps=stamps)


_FOLDER_STAMPS = struct.Struct("<3q").iter_unpack


def _same_listings(base: str, root_real: str, walk: Walk, stamps: bytes, recent: set[int]) -> bool:
    """Whether each folder whose stamp moved (or is too recent to trust) still lists exactly what the
    walk recorded: the same files with the same stamps, the same links and the same sub-folders."""
    recorded = _split(walk)
    for n, prefix in enumerate(walk.prefixes):
        stamp = stamps[24 * n : 24 * n + 24]
        if stamp == recorded[prefix][2] and n not in recent:
            continue
        scanned = _scan(base + prefix, root_real)
        if scanned is None:
            return False
        now = _columns_of(prefix, (0, 0, 0), *scanned)
        if (now[0], now[1], now[3], now[4]) != (
            recorded[prefix][0],
            recorded[prefix][1],
            recorded[prefix][3],
            recorded[prefix][4],
        ):
            return False
    return True


def _link_stays_inside(link: str, root_real: str) -> bool:
    target = os.path.realpath(link)
    inside = target.startswith(root_real + os.sep)
    return inside and not target[len(root_real) + 1 :].split(os.sep, 1)[0].startswith(".")


def stamp_of(root: Path, path: str) -> Stamp | None:
    """The stamp of one file, or ``None`` when it is gone, not a regular file, or not indexable."""
    full = on_disk(root, path)
    try:
        if any(part.startswith(".") for part in path.split("/")):
            return None
        if full.is_symlink() and not _link_stays_inside(str(full), os.path.realpath(root)):
            return None
        info = full.stat()
    except OSError:
        return None
    if (info.st_mode & 0o170000) != 0o100000 or not is_indexable_name(full.name):
        return None
    return Stamp(info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)


def read_stable(root: Path, path: str, limit: int) -> tuple[Stamp, bytes] | None:
    """Read a file with the stamp it had before the read, retrying while it changes underneath.

    The stamp recorded is the one taken *before* reading, so a write racing the read leaves a stamp
    that no longer matches the file and the next comparison reads it again.
    """
    for _ in range(5):
        before = stamp_of(root, path)
        if before is None:
            return None
        try:
            with open(on_disk(root, path), "rb") as handle:
                data = handle.read(limit)
        except OSError:
            return None
        if stamp_of(root, path) == before:
            return before, data
    return (before, data) if before is not None else None


class Memo(Protocol):
    """What the asker lets the walk keep: a file for the cache, and the identity of what it has seen."""

    file: Path

    def key(self) -> tuple[int, int] | None:
        """The identity of ``seen`` as it is now (``None``: do not cache)."""

    unrecorded: set[str]  # paths ``seen`` holds as they are now, beyond what ``key`` records

    def paths_since(self, key: tuple[int, int]) -> set[str] | None:
        """The paths ``seen`` changed for since it had ``key`` (``None``: cannot tell)."""


def changes_since(root: Path, seen: Mapping[str, Indexed], memo: Memo | None, limit: int) -> tuple[Plan, int]:
    """What differs between the files under ``root`` and ``seen``, and how many files there are.

    ``memo`` keeps the last clean walk: while ``seen`` is the same (or changed only for paths the index
    re-read, such as those changes through fsmem noted), only folders whose stamp changed are listed
    again, never the whole root. ``racy`` in the answer lists entries whose content was hashed (first
    ``limit`` bytes) and found unchanged, now old enough to be settled.
    """
    key = memo.key() if memo is not None else None
    if memo is not None and key is not None:
        try:
            counted = _unchanged_since_cached_walk(root, memo, key, seen, limit)
        except (TypeError, ValueError, AttributeError, IndexError, KeyError):
            counted = None  # a cache of another shape (damaged, or planted with a valid CRC): walk instead
        if counted is not None:
            return Plan((), (), ()), counted
    taken = time.time_ns()
    found, folders = walk_tree(root, record=key is not None)
    plan = plan_reconcile(found, seen)  # type: ignore[arg-type]
    stale, settle, racy = [], [], {}
    now = time.time_ns()
    for path in plan.racy:
        entry = seen[path]
        tick = max(entry[0][1], entry[0][2])
        if _hash_differs(root, path, entry[1], limit):
            stale.append(path)
        elif tick + RACY_WINDOW_NS < now:
            settle.append(path)
        else:
            racy[path] = (entry[1], tick)
    if not plan and not stale and folders is not None and memo is not None and key is not None:
        save_walk_cache(memo.file, key, taken, len(found), folders, racy)
    return Plan(tuple(sorted(plan.changed + tuple(stale))), plan.removed, tuple(settle)), len(found)


def _unchanged_since_cached_walk(
    root: Path, memo: Memo, key: tuple[int, int], seen: Mapping[str, Indexed], limit: int
) -> int | None:
    """The file count when the last clean walk still holds, else ``None`` (the caller walks)."""
    cached = load_walk_cache(memo.file)
    if cached is None:
        return None
    cached_key, taken_ns, count, folders, racy = cached
    moved = cached_key != key or bool(memo.unrecorded)
    if moved:  # the index re-read some paths since: bring their folders' records level, or give up
        paths = memo.paths_since(cached_key) if cached_key != key else set()
        paths = None if paths is None else paths | memo.unrecorded
        advanced = None if paths is None else _advance(root, folders, paths, seen)
        if paths is None or advanced is None:
            return None
        folders, count = advanced, len(seen)
        racy = {path: value for path, value in racy.items() if path not in paths}
        for path in paths & seen.keys():
            entry = seen[path]
            if max(entry[0][1], entry[0][2]) + RACY_WINDOW_NS > entry[2]:
                racy[path] = (entry[1], max(entry[0][1], entry[0][2]))
    started = time.time_ns()
    now = unchanged_since(root, taken_ns, folders, RACY_WINDOW_NS)
    if now is None:
        return None
    settled = {path for path, (_, tick) in racy.items() if tick + RACY_WINDOW_NS < started}
    for path, (version, _) in racy.items():
        if _hash_differs(root, path, version, limit):
            return None
    if moved or settled or now != folders:  # remember what was found, as of now
        save_walk_cache(
            memo.file, key, started, count, now, {path: value for path, value in racy.items() if path not in settled}
        )
    return count


def _advance(root: Path, walk: Walk, paths: set[str], seen: Mapping[str, Indexed]) -> Walk | None:
    """The walk with the folders of ``paths`` (and their parents) listed again, if every file in them
    is as ``seen`` holds it and no folder appeared that nobody listed; else ``None``."""
    records = _split(walk)
    todo: set[str] = set()
    for path in paths:
        parts = path.split("/")[:-1]
        todo.update("".join(part + "/" for part in parts[:depth]) for depth in range(len(parts) + 1))
    root_real = os.path.realpath(root)
    for prefix in sorted(todo, key=len):
        folder = f"{root}/{prefix}"
        stamp = _folder_stamp(folder)
        scanned = _scan(folder, root_real) if stamp is not None else None
        if stamp is None or scanned is None:
            records.pop(prefix, None)  # gone (its parent, listed again, no longer names it)
            continue
        files, subfolders = scanned
        for name, (file_stamp, _) in files.items():
            entry = seen.get(prefix + nfc(name))
            if entry is None or tuple(entry[0]) != file_stamp:
                return None  # a file the index does not hold as it is: only a full walk can say
        records[prefix] = _columns_of(prefix, stamp, files, subfolders)
    prefixes: list[str] = []
    reachable: list[Columns] = []
    stack = [""]
    while stack:
        prefix = stack.pop()
        record = records.get(prefix)
        if record is None:
            return None  # a folder no walk listed
        prefixes.append(prefix)
        reachable.append(record)
        if record[1]:
            stack.extend(prefix + nfc(name) + "/" for name in record[1].split("\0"))
    return _joined(prefixes, reachable)


def _hash_differs(root: Path, path: str, version: str, limit: int) -> bool:
    got = read_stable(root, path, limit)  # None: gone, or no longer a regular file (never opened)
    return got is None or version_of(got[1]) != version
