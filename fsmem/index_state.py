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
import time
from pathlib import Path

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
    found: dict[str, tuple[int, int, int, int]] = {}
    root_real = os.path.realpath(root)
    stack: list[tuple[str, str]] = [(str(root), "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            entries = os.scandir(folder)
        except OSError:  # vanished or unreadable between listing and opening: nothing to index there
            continue
        with entries:
            for entry in entries:
                name = entry.name
                if name[0] == "." or not _is_utf8(name):  # no valid path to give the tool or tantivy
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append((entry.path, prefix + name + "/"))
                        continue
                    if not is_indexable_name(name) or "\n" in name or "\t" in name:
                        continue
                    if entry.is_symlink():
                        if not _link_stays_inside(entry.path, root_real):
                            continue
                        info = os.stat(entry.path)
                    else:
                        info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if (info.st_mode & 0o170000) != 0o100000:  # regular files only
                    continue
                found[prefix + name] = (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
    return found


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
    full = root / path
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
            with open(root / path, "rb") as handle:
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
    """Unique temp file in the same folder, fsync, ``os.replace``, fsync of the folder."""
    folder = target.parent
    temp = folder / f".{target.name}.{os.getpid()}.{time.monotonic_ns()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


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
        alive = beat.get("host") == socket.gethostname() and _pid_alive(int(beat.get("pid", -1)))
    except (TypeError, ValueError):
        return False, beat
    healthy = fresh and alive and beat.get("state") == "ok" and int(beat.get("pending", 0) or 0) == 0
    return healthy, beat


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
