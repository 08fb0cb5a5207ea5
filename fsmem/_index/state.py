"""The disk side of the index that needs no tantivy: the record of what was indexed (the manifest),
the pointer to the live index generation, the list of changes noted for it, and the watcher's heartbeat.

Layout under ``<state>/index/`` (``state`` is the store's: ``<root>/.fsmem`` for the folder, the
worker's cache folder for PostgreSQL)::

    CURRENT                 {"schema": 1, "generation": "g-…"}: the live generation (replaced atomically)
    g-<time>-<pid>/         one tantivy index and its ``files`` manifest
    g-…/.building           present while a rebuild fills that generation

The manifest is a journal: ``+`` lines record what was indexed for a path (its stamp, hash and when),
``-`` lines its removal. It is appended only after the tantivy commit it describes, so it can lag behind
the index (the next comparison re-reads those files) but never claim more than the index holds. A
rebuild or a compaction replaces it whole with a base (every entry, marshalled, checked by a CRC) that
the journal's lines then follow: a new process loads ten thousand entries in a few milliseconds.
"""

from __future__ import annotations

import array
import json
import marshal
import os
import threading
import time
import zlib
from collections.abc import Iterator, KeysView, Mapping
from pathlib import Path
from typing import Any

from fsmem._core.search import SCHEMA_VERSION, Indexed
from fsmem._errors import IndexError_
from fsmem._store.atomic import pid_alive, write_atomic

INDEX_DIR = "index"
CURRENT = "CURRENT"
MANIFEST = "files"
BUILDING = ".building"
# Readers reload when told (``reload``), never on their own: tantivy's reload-on-commit reader watches
# meta.json from a thread of its own and reloads there, taking the index's meta lock; in a RAM index
# (``fsmem._index.delta``) a reload meeting it waits tantivy's lock retry, 100 ms, on a search's path.
READER_RELOAD = "Manual"
HEARTBEAT = "watch.json"
# A base: this magic, a nonce (8 random bytes: each base is told from any other that took its inode),
# the payload's CRC-32 (4) and length (8), the payload, "\n". The payload, marshalled: the paths, their
# versions, their stamps' and indexed times as int64s (size, mtime, ctime, indexed) and the inodes as
# uint64s, five to a path in that order; then the folders and how many paths each holds. Only lists of
# str and machine integers: whatever the bytes, loading builds nothing else.
_BASE_MAGIC = b"fsmem-manifest-base-1\n"
_BASE_HEAD = len(_BASE_MAGIC) + 8 + 12
_HEAD = 64  # the bytes that tell one manifest file from another that replaced it


class DamagedManifest(IndexError_):
    """The manifest's base does not check out: the generation is rebuilt from the files."""


def file_key(path: str) -> tuple[int, int, int] | None:
    """What tells whether a small state file changed (replaced, grown, rewritten): its inode, size and
    modified time; ``None`` when it is missing."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns


def index_dir(state: Path) -> Path:
    return state / INDEX_DIR


# --- the manifest --------------------------------------------------------------------------------


class Manifest:
    """What the index holds, per path: loaded from the journal, kept current by reading its tail."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self.entries: dict[str, Indexed] = {}
        self.lines = 0
        self._offset = 0
        self._inode: int | None = None
        self._head = b""  # the file's first bytes as loaded: a file that took its inode differs there
        self._seen: tuple[int, int, int] | None = None  # (inode, size, mtime) when last loaded
        self._base_end = 0  # where the journal's lines start (after the base, if the file has one)
        self._lock = threading.Lock()  # threads of one process share it: a search and the watcher
        self._folders: dict[str, int] | None = None  # folder -> paths held under it, once asked (holds_under)
        self._checked: tuple[tuple[int, int, int], tuple[int, int]] | None = None  # (file key, key) of check()

    def load(self) -> dict[str, Indexed]:
        """Bring ``entries`` up to date with the file (only the new tail when it only grew). Raises
        ``DamagedManifest`` when its base does not check out."""
        with self._lock:
            return self._load()

    def check(self) -> None:
        """Know the file's ``key`` and check its base (checksum and shape) without building the entries:
        a search whose walk cache holds for that key needs none of them (at 10,000 files, building them
        costs a cold search more than the rest of opening the index). ``load`` builds them when first
        asked. Raises ``DamagedManifest`` as ``load`` does."""
        with self._lock:
            if self._seen is not None:
                self._load()
                return
            try:
                with open(self.file, "rb") as handle:
                    info = os.fstat(handle.fileno())
                    data = handle.read()
            except FileNotFoundError:
                self._load()
                return
            if data.startswith(_BASE_MAGIC):
                _check_base(data)
            self._checked = (
                (info.st_ino, info.st_size, info.st_mtime_ns),
                ((info.st_ino << 32) | zlib.crc32(data[:_HEAD]), data.rfind(b"\n") + 1),
            )

    def view(self) -> Mapping[str, Indexed]:
        """The entries as a mapping that loads them when first looked into (what a comparison is given)."""
        return _Entries(self)

    def _load(self) -> dict[str, Indexed]:
        try:
            info = self.file.stat()
        except FileNotFoundError:
            self._reset(None)
            return self.entries
        if (info.st_ino, info.st_size, info.st_mtime_ns) == self._seen:
            return self.entries
        with open(self.file, "rb") as handle:
            info = os.fstat(handle.fileno())
            if info.st_ino != self._inode or info.st_size < self._offset or not self._same_head(handle.fileno()):
                self._reset(info.st_ino)
            handle.seek(self._offset)
            data = handle.read(info.st_size - self._offset)
        self._seen = (info.st_ino, info.st_size, info.st_mtime_ns)
        if self._offset == 0:
            self._head = data[:_HEAD]
            if data.startswith(_BASE_MAGIC):
                try:
                    self.entries, self._folders, self._base_end = _read_base(data)
                except DamagedManifest:
                    self._reset(None)
                    raise
                data = data[self._base_end :]
                self._offset = self._base_end
        complete = data.rfind(b"\n") + 1  # a torn last line (crash mid-append) is ignored
        self._offset += complete
        entries, folders = self.entries, self._folders
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
                    entry = (stamp, parts[1], int(parts[6]))
                except ValueError:
                    continue
                if folders is not None and parts[7] not in entries:
                    _count_folders(folders, parts[7], 1)
                entries[parts[7]] = entry  # type: ignore[assignment]
            elif line[0] == "-":
                if entries.pop(line[2:], None) is not None and folders is not None:
                    _count_folders(folders, line[2:], -1)
        return entries

    def _reset(self, inode: int | None) -> None:
        self.entries, self.lines, self._offset, self._inode, self._folders = {}, 0, 0, inode, None
        self._head, self._seen, self._base_end, self._checked = b"", None, 0, None

    def _same_head(self, fd: int) -> bool:
        return os.pread(fd, len(self._head), 0) == self._head

    def holds_under(self, folder: str) -> bool:
        """Whether the index holds any path under ``folder`` (``"a/b"``): a change noted for a file
        then never scans every path held."""
        return self.count_under(folder) > 0

    def count_under(self, folder: str) -> int:
        """How many paths the index holds under ``folder`` (the count per folder is kept from the first
        question on)."""
        with self._lock:
            self._load()
            if self._folders is None:
                self._folders = {}
                for path in self.entries:
                    _count_folders(self._folders, path, 1)
            return self._folders.get(folder, 0)

    def paths_since(self, key: tuple[int, int]) -> set[str] | None:
        """The paths recorded since the journal had ``key`` (as loaded), ``None`` if it was replaced."""
        self.load()
        ident, offset = key
        if self._inode is None or ident != self._ident() or offset > self._offset or offset < self._base_end:
            return None
        with open(self.file, "rb") as handle:
            if os.fstat(handle.fileno()).st_ino != self._inode or not self._same_head(handle.fileno()):
                return None  # replaced since it was loaded
            handle.seek(offset)
            data = handle.read(self._offset - offset)
        paths = set()
        for line in data.decode("utf-8", "surrogateescape").split("\n"):
            if line.startswith("+\t"):
                parts = line.split("\t", 7)
                if len(parts) == 8:
                    paths.add(parts[7])
            elif line.startswith("-\t"):
                paths.add(line[2:])
        return paths

    def key(self) -> tuple[int, int] | None:
        """``(identity, length)`` of the journal as it is now (it only grows, or is replaced whole): as
        ``check`` found it while the file is still as it was then, else as loaded."""
        with self._lock:
            if self._seen is None and self._checked is not None:
                checked, key = self._checked
                try:
                    info = os.stat(self.file)
                except OSError:
                    info = None
                if info is not None and (info.st_ino, info.st_size, info.st_mtime_ns) == checked:
                    return key
            self._load()
            return None if self._inode is None else (self._ident(), self._offset)

    def _ident(self) -> int:
        """The file as loaded, as a number: its inode and its first bytes (a base's nonce among them)."""
        return ((self._inode or 0) << 32) | zlib.crc32(self._head)

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
        """Replace the journal with a base holding every entry and the count of paths under each folder
        (atomic), e.g. after a rebuild or to compact."""
        folders: dict[str, int] = {}
        for path in entries:
            _count_folders(folders, path, 1)
        values = entries.values()
        numbers = array.array(
            "q", [n for (size, mtime, ctime, _), _, indexed in values for n in (size, mtime, ctime, indexed)]
        )
        payload = marshal.dumps(
            (
                list(entries),
                [entry[1] for entry in values],
                numbers.tobytes(),
                array.array("Q", [entry[0][3] for entry in values]).tobytes(),
                list(folders),
                array.array("q", folders.values()).tobytes(),
            )
        )
        head = _BASE_MAGIC + os.urandom(8) + zlib.crc32(payload).to_bytes(4, "big")
        atomic_write(self.file, head + len(payload).to_bytes(8, "big") + payload + b"\n")

    def needs_compaction(self) -> bool:
        """Whether the journal's lines after the base cost a new process more than writing a base would."""
        return self.lines > len(self.entries) // 4 + 1000


def _check_base(data: bytes) -> tuple[list, list, array.array, array.array, list, array.array, int]:
    """The columns of the base at the start of ``data`` (paths, versions, stamps and indexed times,
    inodes, folders, their counts) and its payload's length; ``DamagedManifest`` when it does not check
    out (its CRC, its shape). Builds no entry: opening the index asks this alone."""
    crc = int.from_bytes(data[_BASE_HEAD - 12 : _BASE_HEAD - 8], "big")
    length = int.from_bytes(data[_BASE_HEAD - 8 : _BASE_HEAD], "big")
    payload = data[_BASE_HEAD : _BASE_HEAD + length]
    if len(payload) != length or zlib.crc32(payload) != crc:
        raise DamagedManifest("its manifest's base is damaged (a checksum does not match)")
    try:
        paths, versions, packed, packed_inodes, folder_names, packed_counts = marshal.loads(payload)
        numbers, inodes, counts = array.array("q"), array.array("Q"), array.array("q")
        numbers.frombytes(packed)
        inodes.frombytes(packed_inodes)
        counts.frombytes(packed_counts)
    except Exception as error:  # noqa: BLE001 - any shape the bytes may take is a damaged base
        raise DamagedManifest(f"its manifest's base could not be read ({type(error).__name__})") from None
    if not (
        type(paths) is list
        and type(versions) is list
        and type(folder_names) is list
        and len(paths) == len(versions) == len(inodes) == len(numbers) // 4
        and len(folder_names) == len(counts)
        and {str} >= set(map(type, paths)) | set(map(type, versions)) | set(map(type, folder_names))
    ):
        raise DamagedManifest("its manifest's base is not shaped as fsmem writes it")
    return paths, versions, numbers, inodes, folder_names, counts, length


def _read_base(data: bytes) -> tuple[dict[str, Indexed], dict[str, int], int]:
    """The entries of the base at the start of ``data``, its count of paths per folder, and where the
    journal's lines start; ``DamagedManifest`` when it does not check out."""
    paths, versions, numbers, inodes, folder_names, counts, length = _check_base(data)
    stamps = zip(numbers[0::4], numbers[1::4], numbers[2::4], inodes, strict=True)
    entries = dict(zip(paths, zip(stamps, versions, numbers[3::4], strict=True), strict=True))
    return entries, dict(zip(folder_names, counts, strict=True)), _BASE_HEAD + length + 1


class _Entries(Mapping[str, Indexed]):
    """A manifest's entries, loaded from its file when first looked into."""

    def __init__(self, manifest: Manifest) -> None:
        self._manifest = manifest
        self._entries: dict[str, Indexed] | None = None

    def _loaded(self) -> dict[str, Indexed]:
        if self._entries is None:
            self._entries = self._manifest.load()
        return self._entries

    def __getitem__(self, path: str) -> Indexed:
        return self._loaded()[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(self._loaded())

    def __contains__(self, path: object) -> bool:
        return path in self._loaded()

    def get(self, path: str, default: Any = None) -> Any:
        return self._loaded().get(path, default)

    def keys(self) -> KeysView[str]:
        return self._loaded().keys()


def _count_folders(folders: dict[str, int], path: str, delta: int) -> None:
    end = path.rfind("/")
    while end > 0:
        folder = path[:end]
        count = folders.get(folder, 0) + delta
        if count > 0:
            folders[folder] = count
        else:
            folders.pop(folder, None)
        end = path.rfind("/", 0, end)


def _record(path: str, entry: Indexed) -> str:
    (size, mtime_ns, ctime_ns, inode), version, indexed_ns = entry
    return f"+\t{version}\t{size}\t{mtime_ns}\t{ctime_ns}\t{inode}\t{indexed_ns}\t{path}\n"


# --- the live generation -------------------------------------------------------------------------


def read_current(state: Path) -> dict | None:
    """The CURRENT pointer, or ``None`` when missing or unreadable."""
    try:
        value = json.loads((index_dir(state) / CURRENT).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(value, dict) or not isinstance(value.get("generation"), str):
        return None
    return value


def write_current(state: Path, generation: str) -> None:
    atomic_write(index_dir(state) / CURRENT, json.dumps({"schema": SCHEMA_VERSION, "generation": generation}).encode())


def new_generation_name() -> str:
    return f"g-{time.time_ns():x}-{os.getpid()}"


def atomic_write(target: Path, data: bytes) -> None:
    write_atomic(target, data, mode=0o644)


# --- changes noted for the next search ------------------------------------------------------------
#
# ``<state>/index.pending`` (the folder's) lists, one JSON string a line, the paths changes through fsmem touched: the
# writer appends them under the root lock (no tantivy on the write path) and whoever searches next, in
# any process, indexes exactly those paths. Its first line is a token naming this list; each generation
# records how far it applied it (``applied``: token and offset), so applying never needs the root lock
# and never makes anyone walk the root. A writer starts a new list (a new token) once the old one is
# long and fully applied.

PENDING_FILE = "index.pending"
APPLIED = "applied"
PENDING_ROTATE_BYTES = 1 << 16

Mark = tuple[str, int]  # (token of the pending list, offset in it)


def pending_file(state: Path) -> Path:
    return state / PENDING_FILE


def note_pending(state: Path, paths: set[str]) -> None:
    """Append the paths a change touched (called under the root lock, by the drive's commit hook)."""
    file = pending_file(state)
    try:
        size = file.stat().st_size
    except FileNotFoundError:
        size = -1
    if size < 0 or (size > PENDING_ROTATE_BYTES and _fully_applied(state, file)):
        atomic_write(file, f"#{os.urandom(8).hex()}\n".encode())
    lines = "".join(json.dumps(path) + "\n" for path in sorted(paths)).encode()
    with open(file, "ab+") as journal:
        if journal.seek(0, os.SEEK_END) and os.pread(journal.fileno(), 1, journal.tell() - 1) != b"\n":
            lines = b"\n" + lines  # end a line torn by a crash, so the next path stands alone
        journal.write(lines)


def read_pending(state: Path, applied: object) -> tuple[set[str], Mark] | None:
    """The paths noted after ``applied`` and the mark after the last complete line; ``None`` when
    there is no list. A torn or unreadable line is skipped (the next comparison finds that change)."""
    try:
        with open(pending_file(state), "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return None
    first = data.find(b"\n") + 1
    token = data[:first].decode("utf-8", "replace").strip()
    start = applied[1] if _is_mark(applied) and applied[0] == token else first  # type: ignore[index]
    end = max(start, data.rfind(b"\n") + 1)
    paths = set()
    for line in data[start:end].split(b"\n"):
        try:
            path = json.loads(line) if line else None
        except ValueError:
            continue
        if isinstance(path, str):
            paths.add(path)
    return paths, (token, end)


def pending_mark(state: Path) -> Mark | None:
    """The mark at the end of the pending list as it is now."""
    got = read_pending(state, None)
    return None if got is None else got[1]


def read_applied(folder: Path) -> object:
    """How far a generation applied its store's feed (the store's own mark, as JSON), ``None`` when unknown."""
    try:
        value = json.loads((folder / APPLIED).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return tuple(value) if isinstance(value, list) else value


def write_applied(folder: Path, mark: object, durable: bool = False) -> None:
    if mark is not None:
        value = list(mark) if isinstance(mark, tuple) else mark
        write_atomic(folder / APPLIED, json.dumps(value).encode(), durable=durable, mode=0o644)


def _is_mark(value: object) -> bool:
    return isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str) and isinstance(value[1], int)


def _fully_applied(state: Path, file: Path) -> bool:
    current = read_current(state)
    if current is None:
        return True  # no index: nobody will apply it; the first build reads the files themselves
    applied = read_applied(index_dir(state) / current["generation"])
    mark = pending_mark(state)
    return mark is not None and applied == mark and mark[1] == file.stat().st_size


# --- the watcher's heartbeat ---------------------------------------------------------------------

HEARTBEAT_INTERVAL = 1.0


def heartbeat_file(state: Path) -> Path:
    return state / HEARTBEAT


def write_heartbeat(state: Path, beat: dict) -> None:
    write_atomic(heartbeat_file(state), json.dumps(beat).encode(), durable=False, mode=0o644)


def read_heartbeat(state: Path) -> dict | None:
    try:
        value = json.loads(heartbeat_file(state).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def watcher_health(state: Path, now: float | None = None) -> tuple[bool, dict | None]:
    """``(healthy, heartbeat)``: a watcher on this host, alive, beating, not degraded, nothing pending."""
    beat = read_heartbeat(state)
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
