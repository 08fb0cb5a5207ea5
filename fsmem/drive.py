"""The folder a root lives in: the only module that writes memory files.

Every change goes through one transaction, under the root's write lock::

    with drive.change(command="write", thread="t-1") as tx:
        before = tx.read("MEMORY.md")
        tx.write("MEMORY.md", b"# Project\n")

Each operation keeps the previous content in ``.fsmem/versions/`` (a hard link: no copy), writes
atomically (unique ``O_EXCL`` temp file in the same folder, fsync, ``os.replace``, fsync of the folder)
and appends a line to ``.fsmem/log.jsonl``. When the block ends, the ``on_commit`` hooks (the index) get
the changed paths, still under the lock. Reads need no lock: a file is always the old one or the new one.

Paths here are already normalized by ``fsmem.core.paths``; the drive adds the symlink guard.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat as stat_module
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator
from collections.abc import Mapping

from filelock import FileLock, Timeout as LockTimeout

from fsmem.atomic import fsync_dir, write_atomic
from fsmem.ondisk import is_case_blind, nfc, other_spelling, spelled, spelled_path

from fsmem.config import Settings
from fsmem import walk
from fsmem.core.layout import STATE_DIR
from fsmem.core.search import Indexed, Plan
from fsmem.core.versions import version_of
from fsmem.errors import BadPath, Busy, Exists, NotFound

VERSIONS_DIR = "versions"
_VERSION_NAME = re.compile(r"\d{8}T\d{12}Z-")  # "<time>-<version>-<command>.md", as _stamp() writes it
LOG_FILE = "log.jsonl"
LOCK_FILE = "lock"


@dataclass(frozen=True)
class Entry:
    """One file or folder as listed for the model."""

    path: str
    is_dir: bool
    size: int
    modified: float


@dataclass(frozen=True)
class VersionInfo:
    """An earlier content of a file, kept when a change replaced or deleted it."""

    path: str
    version: str
    kept_at: str  # ISO time the content was replaced
    command: str  # what replaced it: write, delete, rename, revert, ...
    size: int
    file: Path


@dataclass(frozen=True)
class LogEntry:
    time: str
    command: str
    path: str
    before: str | None
    after: str | None
    thread: str | None
    new_path: str | None = None

    @classmethod
    def from_json(cls, line: str) -> "LogEntry":
        data = json.loads(line)
        return cls(
            time=data["time"],
            command=data["command"],
            path=data["path"],
            before=data.get("before"),
            after=data.get("after"),
            thread=data.get("thread"),
            new_path=data.get("new_path"),
        )


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


class Drive:
    def __init__(self, root: Path, settings: Settings) -> None:
        self.root = Path(os.path.realpath(root))
        self.settings = settings
        self.state = self.root / STATE_DIR
        self._root_str, self._state_str = str(self.root), str(self.state)
        self.on_commit: list[Callable[[set[str]], None]] = []
        lock_file = str(self.state / LOCK_FILE)
        self._lock = FileLock(lock_file, timeout=settings.lock_timeout)
        self._case_blind: bool | None = None  # found out on first use (once .fsmem/ can tell)

    # ---- locating ---------------------------------------------------------------------------

    def resolve(self, path: str) -> Path:
        """The real location of a normalized path, refusing any that leads outside the root.

        A symlink anywhere on the way may point inside the root, never out of it, and never into
        ``.fsmem/``.
        """
        real = self._real(path)
        where = str(real)  # real paths are normalized: a prefix test is the parents test, faster
        if where != self._root_str and not where.startswith(self._root_str + "/"):
            raise BadPath(f"{path!r} leads outside the memory folder (through a link); use a path inside it")
        if where == self._state_str or where.startswith(self._state_str + "/"):
            raise BadPath(f"{path!r} leads into fsmem's own state, which is not memory; use another path")
        return real

    def _real(self, path: str) -> Path:
        """``os.path.realpath`` of ``root/path``, cheaply: the root is real already, so only the parts
        under it can be links; with none among them (the usual case) the path is its own real path."""
        if self._case_blind is None:
            self._case_blind = is_case_blind(self.root)
        candidate = self.root / path if path else self.root
        parts = path.split("/") if path else []
        if any(part in ("", ".", "..") for part in parts):  # not normalized: let realpath settle it
            return self._realpath(candidate)
        current = str(self.root)
        for index, part in enumerate(parts):
            if self._case_blind:  # "memory.md" is MEMORY.md there: use the name as it is on disk
                part = parts[index] = spelled(current, part)
            step = f"{current}/{part}"
            try:
                mode = os.lstat(step).st_mode
            except FileNotFoundError:
                other = other_spelling(current, part)  # a name made by hand in another Unicode form
                if other is None:
                    return Path(step, *parts[index + 1:])  # nothing exists below here, so no link either
                step = f"{current}/{other}"
                try:
                    mode = os.lstat(step).st_mode
                except OSError:
                    return self._realpath(candidate)
            except NotADirectoryError:
                return Path(step, *parts[index + 1:])
            except OSError:
                return self._realpath(candidate)
            if stat_module.S_ISLNK(mode):
                return self._realpath(Path(step, *parts[index + 1:]))
            current = step
        return Path(current)

    def _realpath(self, path: Path) -> Path:
        """Where a path with a link or a dot on the way leads; on a case-blind file system, with the
        names under the root as spelled on disk (what a link names may be spelled in any case)."""
        real = Path(os.path.realpath(path))
        return spelled_path(self.root, real) if self._case_blind else real

    def canonical(self, path: str) -> str:
        """The root-relative path of where ``path`` really is (links inside the root resolved)."""
        real = self.resolve(path)
        return "" if real == self.root else nfc(real.relative_to(self.root).as_posix())

    def is_dir(self, path: str) -> bool:
        return self.resolve(path).is_dir()

    def file_in_the_way(self, path: str) -> str | None:
        """The first folder on the way to ``path`` that exists as a file (then ``path`` cannot be made)."""
        parts = path.split("/")[:-1]
        for end in range(1, len(parts) + 1):
            folder = "/".join(parts[:end])
            real = self.resolve(folder)
            if not os.path.lexists(real):
                return None
            if not real.is_dir():
                return folder
        return None


    def check_free(self, destination: str, label: str = "the new path") -> None:
        """Refuse a move or rename onto ``destination`` unless nothing is there and it can be made."""
        if os.path.lexists(self.resolve(destination)):
            raise Exists(f"{label} {destination} already exists; choose another name or delete it first")
        blocker = self.file_in_the_way(destination)
        if blocker is not None:
            raise BadPath(f"{label} {destination} cannot be made: {blocker} is a file, not a folder; "
                          "choose a path inside a folder")
    def exists(self, path: str) -> bool:
        return os.path.lexists(self.resolve(path))

    # ---- reading (no lock needed) -----------------------------------------------------------

    def read(self, path: str) -> bytes | None:
        """The bytes of a file, or None when there is no file there."""
        return self._read_real(self.resolve(path), path)

    def _read_real(self, real: Path, path: str) -> bytes | None:
        """``read`` of a path already resolved (and so guarded) by ``resolve``."""
        try:
            fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            return None
        except OSError as error:
            raise BadPath(f"{path!r} cannot be read ({error.strerror}); use a plain file path") from error
        if stat_module.S_ISDIR(os.fstat(fd).st_mode):  # os.fdopen would raise on a folder
            os.close(fd)
            return None
        with os.fdopen(fd, "rb") as handle:
            return handle.read()

    def stat(self, path: str) -> os.stat_result | None:
        try:
            return os.stat(self.resolve(path))
        except FileNotFoundError:
            return None

    def entries(self, path: str) -> list[Entry]:
        """The visible children of a folder, sorted: no dot-names, no links leading out."""
        folder = self.resolve(path)
        try:
            children = list(os.scandir(folder))
        except FileNotFoundError as error:
            raise NotFound(f"there is no folder {path or '/'!r}") from error
        found = []
        for child in children:
            if child.name.startswith("."):
                continue
            child_path = f"{path}/{nfc(child.name)}" if path else nfc(child.name)
            try:
                if child.is_symlink():  # only a link can lead out; plain children of a checked folder cannot
                    info = os.stat(self.resolve(child_path))
                else:
                    info = child.stat(follow_symlinks=False)
            except (BadPath, FileNotFoundError):
                continue
            is_dir = stat_module.S_ISDIR(info.st_mode)
            found.append(Entry(child_path, is_dir, 0 if is_dir else info.st_size, info.st_mtime))
        return sorted(found, key=lambda entry: entry.path)

    def walk_files(self, path: str = "") -> Iterator[Entry]:
        """Every visible ``.md`` file under a folder, depth first, links to folders not followed."""
        stack = [path]
        while stack:
            folder = stack.pop()
            for entry in reversed(self.entries(folder)):
                if entry.is_dir:
                    if not os.path.islink(self.root / entry.path):
                        stack.append(entry.path)
                elif entry.path.endswith(".md"):
                    yield entry

    def changes_since(self, seen: Mapping[str, Indexed], memo: walk.Memo | None, limit: int) -> tuple[Plan, int]:
        """What differs between the memory files and ``seen`` (path → what an index last read), and
        how many files there are: the question the index's freshness keeper asks. A folder answers
        with a walk of stats (``fsmem.walk``), kept short by ``memo`` (the last clean walk: only the
        folders that changed since are listed again)."""
        return walk.changes_since(self.root, seen, memo, limit)

    # ---- changing ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        try:
            with self._lock:
                yield
        except LockTimeout as error:
            raise Busy(
                f"the memory is busy: another change has held its lock for over "
                f"{self.settings.lock_timeout:g}s; nothing was changed, try again in a moment"
            ) from error

    @contextlib.contextmanager
    def change(self, command: str, thread: str | None = None) -> Iterator["Transaction"]:
        with self.locked():
            tx = Transaction(self, command, thread)
            try:
                yield tx
            finally:
                if tx.changed:
                    for hook in self.on_commit:
                        hook(set(tx.changed))

    # ---- history ----------------------------------------------------------------------------

    def versions(self, path: str) -> list[VersionInfo]:
        """Earlier contents of a file, newest first."""
        folder = self.state / VERSIONS_DIR / path
        if not folder.is_dir():
            return []
        kept = []
        for item in sorted(folder.iterdir(), reverse=True):
            if not item.is_file() or item.name.startswith("."):
                continue  # a folder's files keep their own versions; a dot-name is a crash's temp file
            stamp, _, rest = item.name.partition("-")
            version, _, command = rest.partition("-")
            kept.append(
                VersionInfo(path, version, _stamp_to_iso(stamp), command.removesuffix(".md"),
                            item.stat().st_size, item)
            )
        return kept

    def log(self) -> Iterator[LogEntry]:
        log_file = self.state / LOG_FILE
        if not log_file.exists():
            return
        with open(log_file, encoding="utf-8") as handle:
            for line in handle:
                if not line.strip():
                    continue
                try:
                    yield LogEntry.from_json(line)
                except (ValueError, KeyError, TypeError):
                    continue  # a line torn by a crash in the middle of its append

    def last_change(self, path: str) -> LogEntry | None:
        """The newest log entry that changed ``path``, read from the end of the log."""
        needle = json.dumps(path, ensure_ascii=False)  # as the log writes it
        for line in _lines_from_end(self.state / LOG_FILE):
            if needle not in line:
                continue
            try:
                entry = LogEntry.from_json(line)
            except (ValueError, KeyError, TypeError):
                continue  # a line torn by a crash in the middle of its append
            if path in (entry.path, entry.new_path):
                return entry
        return None


LOG_TAIL_BLOCK = 1 << 16


def _lines_from_end(file: Path) -> Iterator[str]:
    """The lines of a UTF-8 file, last first, reading it backwards a block at a time."""
    block = LOG_TAIL_BLOCK
    try:
        handle = open(file, "rb")
    except FileNotFoundError:
        return
    with handle:
        end = handle.seek(0, os.SEEK_END)
        rest = b""
        while end > 0:
            start = max(0, end - block)
            handle.seek(start)
            chunk = handle.read(end - start) + rest
            end = start
            lines = chunk.split(b"\n")
            rest = lines.pop(0) if start > 0 else b""  # may continue in the block before
            for line in reversed(lines):
                if line.strip():
                    yield line.decode("utf-8", "replace")
        if rest.strip():
            yield rest.decode("utf-8", "replace")


class Transaction:
    """The operations of one change, made while the root's lock is held."""

    def __init__(self, drive: Drive, command: str, thread: str | None) -> None:
        self.drive = drive
        self.command = command
        self.thread = thread
        self.changed: list[str] = []

    def read(self, path: str) -> bytes | None:
        return self.drive.read(path)

    def write(self, path: str, data: bytes) -> str:
        """Write a whole file atomically, keeping what it held before. Returns the new version."""
        target = self.drive.resolve(path)
        before = self.drive._read_real(target, path)  # resolved once: realpath is a good part of a write's cost
        if before is not None:
            self._keep(path, target, before)
        if not target.parent.is_dir():  # a stat; mkdir of an existing folder costs a journal round on ext4
            target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, data, durable=self.drive.settings.durable)
        after = version_of(data)
        self._log(path, _version(before), after)
        return after

    def delete(self, path: str) -> None:
        """Remove a file or a folder, keeping every file's content in versions/."""
        target = self.drive.resolve(path)
        if target.is_dir():
            # Read everything first: a file that cannot be kept (a link leading out) refuses the
            # delete before anything is kept, logged or removed.
            held = [(entry.path, self.drive.read(entry.path))
                    for entry in list(self.drive.walk_files(path)) + self._other_files(path)]
            for entry_path, data in held:
                if data is not None:
                    self._keep(entry_path, self.drive.resolve(entry_path), data)
                    self._log(entry_path, version_of(data), None)
            shutil.rmtree(target)
        else:
            data = self.drive.read(path)
            if data is None:
                raise NotFound(f"there is no file {path!r}")
            self._keep(path, target, data)
            target.unlink()
            self._log(path, version_of(data), None)
        self._fsync(target.parent)

    def move(self, source: str, destination: str) -> None:
        """Rename a file or folder; never over an existing path."""
        source_real = self.drive.resolve(source)
        destination_real = self.drive.resolve(destination)
        self.drive.check_free(destination)
        destination_real.parent.mkdir(parents=True, exist_ok=True)
        if source_real.is_dir():
            moved = [(e.path, self.drive.read(e.path)) for e in self.drive.walk_files(source)]
            os.rename(source_real, destination_real)
            for old_path, data in moved:
                new_path = destination + old_path[len(source):]
                self._log(old_path, _version(data), _version(data), new_path=new_path)
        else:
            data = self.drive.read(source)
            os.link(source_real, destination_real)  # fails if the destination appeared meanwhile
            source_real.unlink()
            self._log(source, _version(data), _version(data), new_path=destination)
        self._fsync(source_real.parent)
        self._fsync(destination_real.parent)
        self.changed.append(destination)

    def keep_replaced(self, path: str, replaced: bytes, now: str) -> None:
        """Keep ``replaced`` as a version of ``path``: what a person's edit outside fsmem (``now`` is
        its version) overwrote, found by the index, which had read it. Named by its real hash."""
        folder = self.drive.state / VERSIONS_DIR / path
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(folder / f"{_stamp()}-{version_of(replaced)}-{self.command}.md", replaced,
                     durable=self.drive.settings.durable)
        self._log(path, version_of(replaced), now)

    # ---- internals --------------------------------------------------------------------------

    def _other_files(self, folder: str) -> list[Entry]:
        """Non-markdown files under a folder, so a folder delete keeps them too."""
        extra = []
        for dirpath, _, filenames in os.walk(self.drive.resolve(folder)):
            for name in filenames:
                if not name.endswith(".md") and not name.startswith("."):
                    full = Path(dirpath, name)
                    rel = full.relative_to(self.drive.root).as_posix()
                    extra.append(Entry(rel, False, full.stat().st_size, full.stat().st_mtime))
        return extra

    def _fsync(self, folder: Path) -> None:
        if self.drive.settings.durable:
            fsync_dir(folder)

    def _keep(self, path: str, real: Path, data: bytes) -> None:
        folder = self.drive.state / VERSIONS_DIR / path
        kept = folder / f"{_stamp()}-{version_of(data)}-{self.command}.md"
        try:
            try:
                os.link(real, kept)  # the old inode lives on under versions/ once os.replace swaps it out
            except FileNotFoundError:  # the file's first kept version: make its folder (only then)
                folder.mkdir(parents=True, exist_ok=True)
                os.link(real, kept)
        except OSError:
            folder.mkdir(parents=True, exist_ok=True)
            write_atomic(kept, data, durable=False)
        # Only kept versions count: the folder may also hold the version folders of files that
        # lived under a folder of this name once, or a crash's temp file.
        names = sorted(name for name in os.listdir(folder) if _VERSION_NAME.match(name))
        for extra in names[: max(0, len(names) - self.drive.settings.versions_kept)]:
            os.unlink(folder / extra)

    def _log(self, path: str, before: str | None, after: str | None, new_path: str | None = None) -> None:
        entry = {"time": now_iso(), "command": self.command, "path": path,
                 "before": before, "after": after, "thread": self.thread}
        if new_path is not None:
            entry["new_path"] = new_path
        _append_line(self.drive.state / LOG_FILE, json.dumps(entry, ensure_ascii=False))
        self.changed.append(path)


def _append_line(log_file: Path, line: str) -> None:
    """Append one line; if a crash left the last line torn (no newline), start on a fresh one."""
    with open(log_file, "ab") as handle:
        size = os.fstat(handle.fileno()).st_size
        prefix = b""
        if size:
            with open(log_file, "rb") as tail:
                tail.seek(size - 1)
                if tail.read(1) != b"\n":
                    prefix = b"\n"
        handle.write(prefix + line.encode("utf-8") + b"\n")


def _version(data: bytes | None) -> str | None:
    return None if data is None else version_of(data)


_last_stamp = 0


def _stamp() -> str:
    """A sortable UTC time to the microsecond, strictly increasing within this process."""
    global _last_stamp
    micros = max(time.time_ns() // 1000, _last_stamp + 1)
    _last_stamp = micros
    moment = datetime.fromtimestamp(micros / 1_000_000, timezone.utc)
    return moment.strftime("%Y%m%dT%H%M%S") + f"{micros % 1_000_000:06d}Z"


def _stamp_to_iso(stamp: str) -> str:
    try:
        moment = datetime.strptime(stamp[:15], "%Y%m%dT%H%M%S").replace(tzinfo=timezone.utc)
    except ValueError:
        return stamp
    return moment.isoformat().replace("+00:00", "") + f".{stamp[15:21]}Z"
