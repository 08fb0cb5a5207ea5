"""The disk side of the index that needs no tantivy: walking the files, the record of what was
indexed (the manifest), the pointer to the live index generation, and the watcher's heartbeat.

Layout under ``<root>/.fsmem/index/``::

    CURRENT                 {"schema": 1, "generation": "g-…"}: the live generation (replaced atomically)
    g-<time>-<pid>/         one tantivy index and its ``files`` manifest
    g-…/.building           present while a rebuild fills that generation

The manifest is a journal: ``+`` lines record what was indexed for a path (its stamp, hash and when),
``-`` lines its removal. It is appended only after the tantivy commit it describes, so it can lag behind
the index (the next comparison re-reads those files) but never claim more than the index holds.
"""

from __future__ import annotations

import json
import os
import struct
import time
from pathlib import Path

from fsmem.atomic import pid_alive, write_atomic
from fsmem.ondisk import nfc, on_disk
from fsmem.core.layout import STATE_DIR
from fsmem.core.search import SCHEMA_VERSION, Indexed, Stamp, is_indexable_name

INDEX_DIR = "index"
CURRENT = "CURRENT"
MANIFEST = "files"
BUILDING = ".building"
HEARTBEAT = "watch.json"


def index_dir(root: Path) -> Path:
    return root / STATE_DIR / INDEX_DIR


# --- the files -----------------------------------------------------------------------------------


def walk_files(root: Path) -> dict[str, tuple[int, int, int, int]]:
    """Every indexable markdown file under ``root`` with its stamp.

    Skips dot-folders (``.fsmem``, ``.git``) and dot-files. A symlinked file is indexed only when it
    leads to a file inside the root; symlinked folders are never entered (no cycles, nothing outside).
    """
    return walk_tree(root)[0]


# One folder as a walk saw it: its root-relative prefix ("" or "seo/"), its stamp (mtime, ctime,
# inode) taken before listing it, the names of its indexable files joined by NUL, their stamps packed
# as four little-endian int64 each (size, mtime, ctime, inode) in the same order, which of them are
# symlinks, and the names of its sub-folders. Packed, a cache of 100,000 files loads and compares fast.
FolderRecord = tuple[str, tuple[int, int, int], str, bytes, tuple[str, ...], tuple[str, ...]]
_PACK = struct.Struct("<4q").pack


def walk_tree(root: Path, record: bool = False) -> tuple[dict[str, tuple[int, int, int, int]],
                                                         list[FolderRecord] | None]:
    """``walk_files``, and with ``record`` every folder's record too (``None`` if one could not be read)."""
    found: dict[str, tuple[int, int, int, int]] = {}
    folders: list[FolderRecord] | None = [] if record else None
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
            folders.append(_record_folder(prefix, stamp, files, subfolders))
    return found, folders


def _record_folder(prefix: str, stamp: tuple[int, int, int],
                   files: dict[str, tuple[tuple[int, int, int, int], bool]], subfolders: list[str]) -> FolderRecord:
    names = sorted(files)
    return (prefix, stamp, "\0".join(names), b"".join(_PACK(*files[name][0]) for name in names),
            tuple(name for name in names if files[name][1]), tuple(sorted(subfolders)))


def _folder_stamp(folder: str) -> tuple[int, int, int] | None:
    try:
        info = os.stat(folder, follow_symlinks=False)
    except OSError:
        return None
    return info.st_mtime_ns, info.st_ctime_ns, info.st_ino


def _scan(folder: str, root_real: str) -> tuple[dict[str, tuple[tuple[int, int, int, int], bool]],
                                                 list[str]] | None:
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
            if name[0] == "." or not _is_utf8(name):  # no valid path to give the tool or tantivy
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
_CACHE_MAGIC = b"fsmem-walk-2\n"


def save_walk_cache(file: Path, key: tuple[int, int], taken_ns: int, count: int,
                    folders: list[FolderRecord]) -> None:
    """Write the cache (temp file and rename, no fsync: it is derived, and checked when read)."""
    import marshal
    import zlib

    payload = marshal.dumps((key, taken_ns, count, folders))
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


def load_walk_cache(file: Path) -> tuple[tuple[int, int], int, int, list[FolderRecord]] | None:
    import marshal
    import zlib

    try:
        with open(file, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    head = len(_CACHE_MAGIC)
    if not data.startswith(_CACHE_MAGIC) or len(data) < head + 4:
        return None
    payload = data[head + 4:]
    if zlib.crc32(payload) != int.from_bytes(data[head:head + 4], "big"):
        return None
    try:
        key, taken_ns, count, folders = marshal.loads(payload)
        return (int(key[0]), int(key[1])), int(taken_ns), int(count), list(folders)
    except (ValueError, TypeError, EOFError, IndexError):
        return None


def unchanged_since(root: Path, taken_ns: int, folders: list[FolderRecord],
                    window_ns: int) -> list[FolderRecord] | None:
    """The folders as they are now if every file is exactly as recorded, else ``None``.

    A folder is listed again unless its stamp is the recorded one and older than ``window_ns`` before
    the record was taken (a change within the same timestamp tick would leave the stamp as it was).
    """
    base = str(root)
    root_real = os.path.realpath(root)
    stat = os.stat
    pack = _PACK
    regular = 0o100000
    now: list[FolderRecord] = []
    try:
        for record in folders:
            prefix, stamp, joined, packed, links, subfolders = record
            folder = f"{base}/{prefix}"
            info = stat(folder, follow_symlinks=False)
            seen = (info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
            names = joined.split("\0") if joined else []
            if seen != stamp or max(seen[0], seen[1]) + window_ns >= taken_ns:
                scanned = _scan(folder, root_real)
                if scanned is None or _record_folder(prefix, seen, *scanned) != (prefix, seen, *record[2:]):
                    return None
                now.append((prefix, seen, *record[2:]))
                continue
            now.append(record)
            for name in links:
                if not _link_stays_inside(folder + name, root_real):
                    return None
            parts = []
            for name in names:
                info = stat(folder + name, follow_symlinks=bool(links) and name in links)
                if info.st_mode & 0o170000 != regular:
                    return None
                parts.append(pack(info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino))
            if b"".join(parts) != packed:
                return None
    except (OSError, ValueError, TypeError, struct.error):
        return None
    return now


def _is_utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes in the name (os.fsdecode's surrogates)
        return False
    return True


def _link_stays_inside(link: str, root_real: str) -> bool:
    target = os.path.realpath(link)
    inside = target.startswith(root_real + os.sep)
    return inside and not target[len(root_real) + 1:].split(os.sep, 1)[0].startswith(".")


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


# --- the manifest --------------------------------------------------------------------------------


class Manifest:
    """What the index holds, per path: loaded from the journal, kept current by reading its tail."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self.entries: dict[str, Indexed] = {}
        self.lines = 0
        self._offset = 0
        self._inode: int | None = None

    def load(self) -> dict[str, Indexed]:
        """Bring ``entries`` up to date with the file (only the new tail when it only grew)."""
        try:
            info = self.file.stat()
        except FileNotFoundError:
            self.entries, self.lines, self._offset, self._inode = {}, 0, 0, None
            return self.entries
        if info.st_ino != self._inode or info.st_size < self._offset:
            self.entries, self.lines, self._offset, self._inode = {}, 0, 0, info.st_ino
        if info.st_size == self._offset:
            return self.entries
        with open(self.file, "rb") as handle:
            handle.seek(self._offset)
            data = handle.read()
        complete = data.rfind(b"\n") + 1  # a torn last line (crash mid-append) is ignored
        self._offset += complete
        entries = self.entries
        for line in data[:complete].decode("utf-8", "surrogateescape").split("\n"):
            if not line:
                continue
            self.lines += 1
            if line[0] == "+":
                parts = line.split("\t", 7)
                if len(parts) != 8:
                    continue
                try:
                    # Plain tuples shaped like Indexed: tens of thousands are read per comparison.
                    stamp = (int(parts[2]), int(parts[3]), int(parts[4]), int(parts[5]))
                    entries[parts[7]] = (stamp, parts[1], int(parts[6]))  # type: ignore[assignment]
                except ValueError:
                    continue
            elif line[0] == "-":
                entries.pop(line[2:], None)
        return entries

    def key(self) -> tuple[int, int] | None:
        """``(inode, length)`` of the journal as loaded: it only grows, or is replaced whole."""
        return None if self._inode is None else (self._inode, self._offset)

    def append(self, added: dict[str, Indexed], removed: list[str]) -> None:
        """Record one commit's worth of changes (call only after the tantivy commit succeeded)."""
        if not added and not removed:
            return
        lines = [f"-\t{path}\n" for path in removed]
        lines.extend(_record(path, entry) for path, entry in added.items())
        with open(self.file, "ab+") as handle:
            if handle.seek(0, os.SEEK_END) and os.pread(handle.fileno(), 1, handle.tell() - 1) != b"\n":
                lines.insert(0, "\n")  # end a line torn by a crash, so this record stands alone
            handle.write("".join(lines).encode("utf-8", "surrogateescape"))

    def rewrite(self, entries: dict[str, Indexed]) -> None:
        """Replace the journal with one line per entry (atomic), e.g. after a rebuild or to compact."""
        text = "".join(_record(path, entry) for path, entry in sorted(entries.items()))
        atomic_write(self.file, text.encode("utf-8", "surrogateescape"))

    def needs_compaction(self) -> bool:
        return self.lines > 2 * len(self.entries) + 1000


def _record(path: str, entry: Indexed) -> str:
    (size, mtime_ns, ctime_ns, inode), version, indexed_ns = entry
    return f"+\t{version}\t{size}\t{mtime_ns}\t{ctime_ns}\t{inode}\t{indexed_ns}\t{path}\n"


# --- the live generation -------------------------------------------------------------------------


def read_current(root: Path) -> dict | None:
    """The CURRENT pointer, or ``None`` when missing or unreadable."""
    try:
        value = json.loads((index_dir(root) / CURRENT).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(value, dict) or not isinstance(value.get("generation"), str):
        return None
    return value


def write_current(root: Path, generation: str) -> None:
    atomic_write(index_dir(root) / CURRENT,
                 json.dumps({"schema": SCHEMA_VERSION, "generation": generation}).encode())


def new_generation_name() -> str:
    return f"g-{time.time_ns():x}-{os.getpid()}"


def atomic_write(target: Path, data: bytes) -> None:
    write_atomic(target, data, mode=0o644)


# --- changes noted for the next search ------------------------------------------------------------

PENDING_FILE = "index.pending"  # beside index/: paths changed through fsmem, applied by the next search


def pending_file(root: Path) -> Path:
    return root / STATE_DIR / PENDING_FILE


def note_pending(root: Path, paths: set[str]) -> None:
    """Append the paths a change touched (called under the root lock, by the drive's commit hook).

    A line torn by a crash is skipped when read; the size/mtime comparison then finds that change.
    """
    with open(pending_file(root), "a", encoding="utf-8") as journal:
        journal.write("".join(json.dumps(path) + "\n" for path in sorted(paths)))


# --- the watcher's heartbeat ---------------------------------------------------------------------

HEARTBEAT_INTERVAL = 1.0


def heartbeat_file(root: Path) -> Path:
    return root / STATE_DIR / HEARTBEAT


def write_heartbeat(root: Path, state: dict) -> None:
    atomic_write(heartbeat_file(root), json.dumps(state).encode())


def read_heartbeat(root: Path) -> dict | None:
    try:
        value = json.loads(heartbeat_file(root).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def watcher_health(root: Path, now: float | None = None) -> tuple[bool, dict | None]:
    """``(healthy, heartbeat)``: a watcher on this host, alive, beating, not degraded, nothing pending."""
    beat = read_heartbeat(root)
    if beat is None:
        return False, None
    now = time.time() if now is None else now
    import socket

    try:
        fresh = now - float(beat.get("beat", 0)) < 3 * float(beat.get("interval", HEARTBEAT_INTERVAL))
        alive = beat.get("host") == socket.gethostname() and pid_alive(int(beat.get("pid", -1)))
    except (TypeError, ValueError):
        return False, beat
    healthy = fresh and alive and beat.get("state") == "ok" and int(beat.get("pending", 0) or 0) == 0
    return healthy, beat
