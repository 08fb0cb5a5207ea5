"""The folder a root lives in: the only module that writes memory files.

Every change goes through one transaction, under the root's write lock::

    with drive.change(command="write", thread="t-1") as tx:
        before = tx.read("MEMORY.md")
        tx.write("MEMORY.md", b"# Project\n")

Each operation keeps the previous content in ``.fsmem/versions/`` (a copy: never an inode a live file
or an editor's open handle shares, so a kept version always hashes to the version in its name), writes
atomically (unique ``O_EXCL`` temp file in the same folder, fsync, then swapped in with
``renameat2(RENAME_EXCHANGE)`` so whatever a person saved there in the meantime comes out under the
temp name and is kept as a hand edit; ``os.replace`` where the system cannot swap), fsync of the
folder, and appends a line to ``.fsmem/log.jsonl``. When the block ends, the ``on_commit`` hooks (the index) get
the changed paths, still under the lock. Reads need no lock: a file is always the old one or the new one.

Paths here are already normalized by ``fsmem._core.paths``; the drive adds the symlink guard.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import re
import shutil
import stat as stat_module
import tempfile
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fsmem._core.layout import LEVEL_IDENTITY_FILE, STATE_DIR
from fsmem._core.paths import is_memory_file_name
from fsmem._core.search import Indexed, Plan, Stamp
from fsmem._core.text import check_thread
from fsmem._core.versions import version_of
from fsmem._env.config import Settings
from fsmem._errors import BadPath, BadRequest, Exists, LevelParked, NotFound, RootNotFound, Storage, TooLarge
from fsmem._store.atomic import exchange, fsync_dir, make_dirs, pid_alive, place_new, write_atomic, write_temp
from fsmem._store.folder import walk as _walk
from fsmem._store.folder.ondisk import is_case_blind, nfc, other_spelling, spelled, spelled_path
from fsmem._store.folder.root import init_root
from fsmem._store.folder.rootlock import CRASH_MARK, RootLock, storage_error
from fsmem._store.types import (
    CopiedFile,
    CopiedVersion,
    Entry,
    FactStamp,
    HandEdit,
    LogEntry,
    Parked,
    ProjectCopy,
    VersionInfo,
    log_line,
    now_iso,
)

VERSIONS_DIR = "versions"
_VERSION_NAME = re.compile(r"\d{8}T\d{12}Z-")  # "<time>-<version>-<command>.md", as _stamp() writes it
LOG_FILE = "log.jsonl"
LOCK_FILE = "lock"
PROPOSALS_DIR = "proposals"
PARKED_PREFIX = "deleting-"  # under .fsmem/: a level folder moved aside by a ``deleting_*`` block


_SPECIAL_KINDS = (
    (stat_module.S_ISFIFO, "a FIFO (named pipe)"),
    (stat_module.S_ISCHR, "a character device"),
    (stat_module.S_ISBLK, "a block device"),
    (stat_module.S_ISSOCK, "a socket"),
)


def not_regular(path: str, mode: int) -> BadPath:
    """The refusal of a path that holds something other than a regular file or a folder."""
    kind = next((name for test, name in _SPECIAL_KINDS if test(mode)), "not a regular file")
    return BadPath(
        f"{path} is {kind}, not a regular file; only regular files are memory, so fsmem neither reads "
        "nor changes it. Use another path (a person can remove it by hand)"
    )


class Drive:
    def __init__(self, root: Path, settings: Settings) -> None:
        self.root = Path(os.path.realpath(root))
        self.settings = settings
        self.state = self.root / STATE_DIR
        self._root_str, self._state_str = str(self.root), str(self.state)
        self.on_commit: list[Callable[[set[str]], None]] = []
        self._lock = RootLock(self.state / LOCK_FILE, settings.lock_timeout)
        # A test hook: called with the path between the version check and the swap of a write (the
        # window a person's save can land in); None in use.
        self.in_write_window: Callable[[str], None] | None = None
        self.after_swap: Callable[[str], None] | None = None  # test hook: just after the swap
        self._case_blind: bool | None = None  # found out on first use (once .fsmem/ can tell)
        self.name = self.root.name
        self.label = str(self.root)

    def close(self) -> None:
        """Nothing to let go: a folder holds no connection (the lock is taken per change)."""

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
                    return Path(step, *parts[index + 1 :])  # nothing exists below here, so no link either
                step = f"{current}/{other}"
                try:
                    mode = os.lstat(step).st_mode
                except OSError:
                    return self._realpath(candidate)
            except NotADirectoryError:
                return Path(step, *parts[index + 1 :])
            except OSError:
                return self._realpath(candidate)
            if stat_module.S_ISLNK(mode):
                return self._realpath(Path(step, *parts[index + 1 :]))
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
            raise BadPath(
                f"{label} {destination} cannot be made: {blocker} is a file, not a folder; "
                "choose a path inside a folder"
            )

    def exists(self, path: str) -> bool:
        return os.path.lexists(self.resolve(path))

    # ---- reading (no lock needed) -----------------------------------------------------------

    def read(self, path: str, limit: int | None = None) -> bytes | None:
        """The bytes of a file, or None when there is no file there.

        Only a regular file is read: a FIFO, a device or a socket is refused (``BadPath``), never
        opened for blocking I/O. With ``limit``, a file of more bytes is refused (``TooLarge``) after
        reading at most ``limit + 1`` of them.
        """
        return self._read_real(self.resolve(path), path, limit)

    def _read_real(self, real: Path, path: str, limit: int | None = None) -> bytes | None:
        """``read`` of a path already resolved (and so guarded) by ``resolve``."""
        try:
            # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever, and
            # with the root's lock held (the write path reads the old content under it).
            fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            return None
        except OSError as error:
            raise BadPath(f"{path!r} cannot be read ({error.strerror}); use a plain file path") from error
        mode = os.fstat(fd).st_mode
        if not stat_module.S_ISREG(mode):
            os.close(fd)
            if stat_module.S_ISDIR(mode):  # os.fdopen would raise on a folder
                return None
            raise not_regular(path, mode)
        with os.fdopen(fd, "rb") as handle:
            if limit is None:
                return handle.read()
            data = handle.read(limit + 1)
            if len(data) > limit:
                size = os.fstat(handle.fileno()).st_size
                raise TooLarge(
                    f"{path} is {size:,} bytes, more than the {limit:,} a read shows whole (it was put "
                    "there by hand); read part of it with start_line and end_line (say lines 1-200), "
                    "or search it"
                )
            return data

    def refuse_special(self, path: str) -> None:
        """Refuse (``BadPath``) a path that holds a FIFO, a device or a socket: it is not memory."""
        try:
            mode = os.stat(self.resolve(path)).st_mode
        except OSError:
            return
        if not stat_module.S_ISREG(mode) and not stat_module.S_ISDIR(mode):
            raise not_regular(path, mode)

    def info(self, path: str) -> Entry | None:
        """What is at ``path`` (a file or a folder, its size as ``stat`` gives it, modified time), or None."""
        try:
            found = os.stat(self.resolve(path))
        except (FileNotFoundError, NotADirectoryError):
            return None
        return Entry(path, stat_module.S_ISDIR(found.st_mode), found.st_size, found.st_mtime)

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
            if not is_dir and not stat_module.S_ISREG(info.st_mode):
                continue  # a FIFO, device or socket is not memory (and reading it could hang)
            found.append(Entry(child_path, is_dir, 0 if is_dir else info.st_size, info.st_mtime))
        return sorted(found, key=lambda entry: entry.path)

    def walk_files(self, path: str = "") -> Iterator[Entry]:
        """Every visible memory file (``core.paths.is_memory_file_name``) under a folder, depth first,
        links to folders not followed."""
        stack = [path]
        while stack:
            folder = stack.pop()
            for entry in reversed(self.entries(folder)):
                if entry.is_dir:
                    if not os.path.islink(self.root / entry.path):
                        stack.append(entry.path)
                elif is_memory_file_name(entry.path.rsplit("/", 1)[-1]):
                    yield entry

    def changes_since(self, seen: Mapping[str, Indexed], memo: _walk.Memo | None, limit: int) -> tuple[Plan, int]:
        """What differs between the memory files and ``seen`` (path → what an index last read), and
        how many files there are: the question the index's freshness keeper asks. A folder answers
        with a walk of stats (``fsmem._store.folder.walk``), kept short by ``memo`` (the last clean walk: only the
        folders that changed since are listed again)."""
        return _walk.changes_since(self.root, seen, memo, limit)

    # ---- the search index (issue 12, pg-index) ----------------------------------------------

    def index_read(self, paths: Iterable[str], limit: int) -> Iterator[tuple[str, tuple[Stamp, bytes] | None]]:
        """Each file's first ``limit`` bytes with the stamp taken before reading them (a save racing
        the read leaves a stamp the next comparison finds changed); ``None`` when gone."""
        for path in paths:
            yield path, _walk.read_stable(self.root, path, limit)

    # ---- changing ---------------------------------------------------------------------------

    def locked(self, command: str = "lock") -> contextlib.AbstractContextManager[None]:
        """The root's write lock (re-entrant per thread): ``BUSY`` after ``lock_timeout`` saying how long
        this call waited and who holds it; ``STORAGE`` (``read_only``) on a read-only root."""
        return self._lock.held(command)

    def held_if_free(self, command: str) -> contextlib.AbstractContextManager[bool]:
        """The root lock only if it is free now (never waits); yields whether it is held."""
        return self._lock.held_if_free(command)

    def crash_left(self) -> bool:
        """Whether a change may have been killed holding the lock (cheap: one or two stats)."""
        return os.path.lexists(self.state / CRASH_MARK) or self._lock.signed()

    @contextlib.contextmanager
    def change(self, command: str, thread: str | None = None) -> Iterator[Change]:
        check_thread(thread)
        with self.locked(command):
            tx = Change(self, command, thread)
            try:
                yield tx
            finally:
                tx._trim_versions()  # only now: a change that failed part-way has lost no kept version
                if tx.changed:
                    for hook in self.on_commit:
                        hook(set(tx.changed))

    # ---- levels (store interface, "levels" block) ----------------------------------------------

    def level_identity(self, folder: str) -> bytes | None:
        """The identity kept in a level folder (its hidden ``.fsmem-level``), or None."""
        try:
            return (self.root / folder / LEVEL_IDENTITY_FILE).read_bytes()
        except OSError:
            return None

    def parked(self) -> list[Parked]:
        """Each folder moved aside by a ``deleting_*`` block now (of any process)."""
        found = []
        for aside in sorted(self.state.glob(f"{PARKED_PREFIX}*")):
            try:
                origin = (aside / "from").read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue  # a block between making its place and writing where the folder came from
            try:
                identity: bytes | None = (aside / "folder" / LEVEL_IDENTITY_FILE).read_bytes()
            except OSError:
                identity = None
            found.append(Parked(origin, identity, str(aside / "folder")))
        return found

    @contextlib.contextmanager
    def deleting(self, folder: str, command: str) -> Iterator[None]:
        """Move the folder aside for the block; delete it (versions kept, logged as ``command``) if the
        block succeeds, put it back if not.

        The place aside is removed only once the folder is really back, or really deleted with its
        versions kept; a folder that cannot go back stays there, whole, and ``LevelParked`` says where.
        """
        aside = Path(tempfile.mkdtemp(prefix=f"{PARKED_PREFIX}{os.getpid()}-", dir=self.state))
        (aside / "from").write_text(folder, encoding="utf-8")
        parked = aside / "folder"
        try:
            with self.locked():
                (self.root / folder).rename(parked)
            try:
                yield
            except BaseException:
                with self.locked():
                    self._put_back(parked, folder)
                raise
            with self.change(command) as tx:
                self._put_back(parked, folder)
                tx.delete(folder)
        finally:
            if not os.path.lexists(parked):  # back in place, or deleted with its versions: nothing left to keep
                shutil.rmtree(aside, ignore_errors=True)

    def _put_back(self, parked: Path, folder: str) -> None:
        """Move a parked folder back where it came from (the lock held); on failure it stays parked."""
        try:
            parked.rename(self.root / folder)
        except OSError as error:
            raise LevelParked(
                f"could not put {folder} back ({error.strerror or error}): something now stands at {folder}; "
                f"its content is kept, whole, at {parked}; move it back by hand (or merge the two) and delete again",
                folder=folder,
                kept_at=str(parked),
            ) from error

    def restore_parked(self) -> list[str]:
        """Put back folders parked by a ``deleting_*`` block whose process died before the block ended.

        A folder whose place is taken stays parked (never dropped): fsmem never makes a folder there for
        the same id while it is parked, so only a person's hand can take it, and a person can move it back.
        """
        restored = []
        for aside in self.state.glob(f"{PARKED_PREFIX}*"):
            pid = aside.name[len(PARKED_PREFIX) :].split("-", 1)[0]
            if pid.isdigit() and pid_alive(int(pid)):
                continue
            parked, origin = aside / "folder", aside / "from"
            if parked.is_dir() and origin.is_file():
                folder = origin.read_text(encoding="utf-8")
                with self.locked():
                    if not (self.root / folder).exists():
                        try:
                            parked.rename(self.root / folder)
                            restored.append(folder)
                        except OSError:
                            pass  # its parent gone, the disk failing: it stays parked for a person
            if not os.path.lexists(parked):
                shutil.rmtree(aside, ignore_errors=True)
        return restored

    # ---- facts (store interface, "facts" block) ------------------------------------------------

    def stamps(self, folders: Sequence[str]) -> tuple[dict[str, FactStamp], dict[str, str]]:
        """Every plain file directly in each folder with its stamp, (size, mtime_ns, inode): one
        ``stat`` a file. And what else is there, path → ``"link"``, ``"folder"``, ``"special"`` (a
        FIFO, a device, a socket), or for a folder that cannot be read, why. Dot-names are skipped
        (temp files of an atomic write, editor swap files); a missing folder holds nothing."""
        stamps: dict[str, FactStamp] = {}
        others: dict[str, str] = {}
        regular, link, folder_mode = stat_module.S_ISREG, stat_module.S_ISLNK, stat_module.S_ISDIR
        for folder in folders:
            try:
                entries = list(os.scandir(self.resolve(folder)))
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
                    stamps[prefix + name] = (info.st_size, info.st_mtime_ns, info.st_ino)
                else:
                    others[prefix + name] = "link" if link(mode) else "folder" if folder_mode(mode) else "special"
        return stamps, others

    def stamp(self, path: str) -> FactStamp | None:
        """The stamp of one file (as :meth:`stamps` gives it); None when no plain file is there."""
        try:
            info = os.stat(self.root / path, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None
        return (info.st_size, info.st_mtime_ns, info.st_ino) if stat_module.S_ISREG(info.st_mode) else None

    def read_stamped(self, paths: Sequence[str]) -> dict[str, tuple[bytes, FactStamp]]:
        """Each file's bytes and the stamp of what was read (one open: never a stamp of another save);
        a path where no plain file is is left out."""
        found = {}
        for path in paths:
            read = self._read_stamped(path)
            if read is not None:
                found[path] = read
        return found

    def _read_stamped(self, path: str) -> tuple[bytes, FactStamp] | None:
        try:
            fd = os.open(self.root / path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        except OSError as error:
            if error.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EISDIR):
                return None
            raise
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat_module.S_ISREG(info.st_mode):
                return None
            return handle.read(), (info.st_size, info.st_mtime_ns, info.st_ino)

    def folders_mark(self, folders: Sequence[str]) -> Hashable | None:
        """What changes when a file is added to, removed from or saved by rename into any of the
        folders (their mtime and inode). None would mean "cannot tell": every look is then a full one."""
        marks = []
        for folder in folders:
            try:
                info = os.stat(self.root / folder)
            except OSError:
                marks.append((0, 0))
            else:
                marks.append((info.st_mtime_ns, info.st_ino))
        return tuple(marks)

    # ---- history ----------------------------------------------------------------------------

    def versions(self, path: str) -> list[VersionInfo]:
        """Earlier contents of a file, newest first (a FIFO, a device or a socket there is refused: not memory)."""
        self.refuse_special(path)
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
                VersionInfo(path, version, _stamp_to_iso(stamp), command.removesuffix(".md"), item.stat().st_size, item)
            )
        return kept

    def read_version(self, kept: VersionInfo) -> bytes:
        if kept.file is None:
            raise NotFound(f"version {kept.version} of {kept.path} is not kept in this folder")
        return kept.file.read_bytes()

    # ---- proposals: .fsmem/proposals/<id>.json ------------------------------------------------

    def _proposal_file(self, proposal_id: str) -> Path | None:
        if not proposal_id or "/" in proposal_id or proposal_id.startswith("."):
            return None
        return self.state / PROPOSALS_DIR / f"{proposal_id}.json"

    def save_proposal(self, record: dict[str, Any]) -> None:
        file = self._proposal_file(str(record["id"]))
        if file is None:
            raise BadPath(f"{record['id']!r} is not a proposal id")
        make_dirs(file.parent)
        data = json.dumps(record, ensure_ascii=False, indent=2).encode("utf-8")
        write_atomic(file, data, durable=self.settings.durable)

    def load_proposal(self, proposal_id: str) -> dict[str, Any] | None:
        file = self._proposal_file(proposal_id)
        try:
            return None if file is None else dict(json.loads(file.read_text(encoding="utf-8")))
        except (FileNotFoundError, NotADirectoryError):
            return None

    def proposal_ids(self) -> list[str]:
        folder = self.state / PROPOSALS_DIR
        return sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []

    def delete_proposal(self, proposal_id: str) -> None:
        file = self._proposal_file(proposal_id)
        try:
            if file is not None:
                os.unlink(file)
                return
        except FileNotFoundError:
            pass
        raise NotFound(f"there is no proposal {proposal_id!r}; `fsmem proposals` lists them")

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

    # ---- copy (fsmem/_memory/copy.py: a whole project into another store) ---------------------------

    def export_project(self) -> ProjectCopy:
        """Every memory file (and each level folder's identity file), kept version, log entry and
        proposal, read under the root's lock (when the root has one) so no change lands halfway."""
        if not self.root.is_dir():
            raise RootNotFound(f"there is no folder {self.root} to copy; check the path")
        with self.locked("copy") if self.state.is_dir() else contextlib.nullcontext():
            files, skipped = self._export_files()
            versions: list[CopiedVersion] = []
            versions_root = self.state / VERSIONS_DIR
            for folder, _, names in sorted(os.walk(versions_root)):
                path = nfc(Path(folder).relative_to(versions_root).as_posix())
                for name in sorted(name for name in names if _VERSION_NAME.match(name)):
                    stamp, _, rest = name.partition("-")
                    version, _, command = rest.partition("-")
                    data = (Path(folder) / name).read_bytes()
                    versions.append(
                        CopiedVersion(path, version, _stamp_to_iso(stamp), command.removesuffix(".md"), data)
                    )
            versions.sort(key=lambda kept: kept.kept_at)  # stable: each path's own order stays
            proposals = [record for record in map(self.load_proposal, self.proposal_ids()) if record is not None]
            return ProjectCopy(files, versions, list(self.log()), proposals, skipped)

    def _export_files(self) -> tuple[list[CopiedFile], list[str]]:
        files: list[CopiedFile] = []
        skipped: list[str] = []
        for folder, folders, names in os.walk(self.root):
            here = Path(folder)
            folders[:] = sorted(name for name in folders if not name.startswith("."))
            for name in [name for name in folders if not _is_utf8(name)]:
                folders.remove(name)
                skipped.append(
                    (here / name)
                    .relative_to(self.root)
                    .as_posix()
                    .encode("utf-8", "surrogateescape")
                    .decode("utf-8", "replace")
                )
            for name in list(folders):
                if (here / name).is_symlink():
                    folders.remove(name)
                    skipped.append(nfc((here / name).relative_to(self.root).as_posix()))
            for name in sorted(names):
                path = nfc((here / name).relative_to(self.root).as_posix())
                if not _is_utf8(path):  # a name no store can hold (nor a tool call name): listed, shown readable
                    skipped.append(path.encode("utf-8", "surrogateescape").decode("utf-8", "replace"))
                    continue
                if name.startswith(".") and name != LEVEL_IDENTITY_FILE:
                    continue  # an editor's swap file, a crash's temp file: never memory
                info = os.lstat(here / name)
                if not stat_module.S_ISREG(info.st_mode) or not (
                    is_memory_file_name(name) or name == LEVEL_IDENTITY_FILE
                ):
                    skipped.append(path)
                    continue
                data = self._read_real(here / name, path)
                if data is not None:
                    files.append(CopiedFile(path, data, info.st_mtime))
        return sorted(files, key=lambda file: file.path), sorted(skipped)

    def import_project(self, copy: ProjectCopy) -> None:
        """Make this root from ``copy``: written into a temp folder beside it and renamed into place
        at the end, so the root is whole or absent, never half made. Refuses (``EXISTS``) a root that
        is there and not empty."""
        if os.path.lexists(self.root) and (not self.root.is_dir() or any(os.scandir(self.root))):
            raise Exists(
                f"{self.root} already exists and is not empty; copy into a new folder (fsmem copy makes it: "
                "no `fsmem init` needed), or remove it first"
            )
        for file in copy.files:
            _check_copied_path(file.path)
        for kept in copy.versions:
            _check_copied_path(kept.path)
        try:
            self.root.parent.mkdir(parents=True, exist_ok=True)
            temp = Path(tempfile.mkdtemp(prefix=f".{self.root.name}.copy-", dir=self.root.parent))
        except OSError as error:
            raise storage_error(f"making {self.root}", error, changed=False) from error
        try:
            for file in copy.files:
                target = temp / file.path
                make_dirs(target.parent)
                write_atomic(target, file.data, durable=False)
                os.utime(target, (file.modified, file.modified))
            init_root(temp)  # .fsmem/ as `fsmem init` makes it (and MEMORY.md, if the copy had none)
            last: dict[str, int] = {}
            for kept in copy.versions:  # oldest first: each path's stamps must rise, as _stamp() makes them
                micros = max(_iso_to_micros(kept.kept_at), last.get(kept.path, -1) + 1)
                last[kept.path] = micros
                folder = temp / STATE_DIR / VERSIONS_DIR / kept.path
                make_dirs(folder)
                write_atomic(
                    folder / f"{_format_stamp(micros)}-{kept.version}-{kept.command}.md", kept.data, durable=False
                )
            made = Drive(temp, dataclasses.replace(self.settings, durable=False))
            for record in copy.proposals:
                made.save_proposal(record)
            if copy.log:
                lines = "".join(log_line(entry) + "\n" for entry in copy.log)
                write_atomic(temp / STATE_DIR / LOG_FILE, lines.encode("utf-8"), durable=False)
            if self.settings.durable:
                os.sync()  # once for every file above, before the rename makes them the root
            if os.path.isdir(self.root) and not os.path.islink(self.root):
                os.rmdir(self.root)  # empty (checked above): the rename below never replaces
            if not place_new(temp, self.root):
                raise Exists(f"{self.root} appeared while copying; nothing was changed there")
            if self.settings.durable:
                fsync_dir(self.root.parent)
        except OSError as error:
            shutil.rmtree(temp, ignore_errors=True)
            raise storage_error(f"copying into {self.root}", error, changed=False) from error
        except BaseException:
            shutil.rmtree(temp, ignore_errors=True)
            raise


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


class Change:
    """The operations of one change, made while the root's lock is held.

    Not a transaction: each operation takes effect, and is logged, when it is called, and nothing is
    rolled back if the block raises later. So a caller does every check before its first write,
    delete or move; a crash part-way is what the versions and the facts' repair are for."""

    def __init__(self, drive: Drive, command: str, thread: str | None) -> None:
        self.drive = drive
        self.command = command
        self.thread = thread
        self.changed: list[str] = []
        self.hand_edits: list[HandEdit] = []
        self._seen: dict[str, bytes | None] = {}  # what the caller read under the lock, by path
        self._to_trim: set[Path] = set()  # versions/ folders that got a copy: trimmed when the change ends

    def read(self, path: str) -> bytes | None:
        data = self.drive.read(path)
        self._seen[path] = data
        return data

    def write(self, path: str, data: bytes) -> str:
        """Write a whole file atomically, keeping what it held before. Returns the new version.

        What the caller read (``tx.read``) is what it checked; anything else found there — a person's
        save between that check and the swap, by rename or in place — is kept as a version under its own
        hash, logged as a hand edit and listed in ``hand_edits``.
        """
        target = self.drive.resolve(path)
        before = self.drive._read_real(target, path)  # resolved once: realpath is a good part of a write's cost
        seen = self._seen.get(path, before)
        kept: list[Path] = []
        try:
            if seen is not None and seen != before:  # a person saved after the caller's check
                kept.append(self._keep(path, seen, "hand"))
            if before is not None:
                kept.append(self._keep(path, before, self.command))
            if not target.parent.is_dir():  # a stat; mkdir of an existing folder costs a journal round on ext4
                make_dirs(target.parent)
            temp = write_temp(target, data, durable=self.drive.settings.durable)
        except OSError as error:
            self._unkeep(kept)
            raise self._fault(f"writing {path}", error) from error
        if self.drive.in_write_window is not None:
            self.drive.in_write_window(path)
        try:
            out = self._swap_in(temp, target, before)
        except OSError as error:
            temp.unlink(missing_ok=True)
            self._unkeep(kept)
            raise self._fault(f"writing {path}", error) from error
        if self.drive.after_swap is not None:
            self.drive.after_swap(path)
        replaced = out  # what the write really replaced: None if nothing was there at that instant
        if out is not None and out != before:  # a person's save landed in the window: keep it
            kept.append(self._keep(path, out, self.command))
        after = version_of(data)
        try:
            if seen != replaced:
                self._log(path, _version(seen), _version(replaced), command="hand")
                self.hand_edits.append(HandEdit(path, _version(replaced), _version(seen)))
            self._log(path, _version(replaced), after)
        except OSError as error:
            self._undo_swap(temp, target, out)
            self._unkeep(kept)
            raise self._fault(f"logging the write of {path}", error) from error
        self._fsync(target.parent)
        if out is not None:
            self._keep_late_save(path, temp, out)
            temp.unlink(missing_ok=True)
        return after

    def _keep_late_save(self, path: str, temp: Path, out: bytes) -> None:
        """An editor that opened the file before the swap may have written into it since we read it
        (truncate, then write: its save may straddle the swap). Read it once more, as late as we can
        (after the folder's fsync), and keep what it holds now if that differs."""
        try:
            late = temp.read_bytes()
        except OSError:
            return
        if late == out or not late:
            return
        try:
            self._keep(path, late, "hand")
            self._log(path, _version(out), version_of(late), command="hand")
        except OSError:
            return  # the write itself is done and logged; a full disk cannot be helped here
        self.hand_edits.append(HandEdit(path, version_of(late), _version(out)))

    def _swap_in(self, temp: Path, target: Path, before: bytes | None) -> bytes | None:
        """Put ``temp`` at ``target``; what was there at that instant (None for nothing), which stays
        at ``temp`` until the caller removes it. Nothing at the target is ever overwritten unread."""
        if before is None and place_new(temp, target):
            return None
        try:
            swapped = exchange(temp, target)
        except FileNotFoundError:  # a person removed the file in the window: nothing to swap with
            if place_new(temp, target):
                return None
            swapped = exchange(temp, target)
        if swapped:
            with open(temp, "rb") as handle:
                return handle.read()
        out = self.drive._read_real(target, "")  # no swap here: the window shrinks to this read
        os.replace(temp, target)
        return out

    def _undo_swap(self, temp: Path, target: Path, out: bytes | None) -> None:
        """Put back what ``_swap_in`` swapped out (a log that cannot be written undoes the write)."""
        try:
            if out is None:
                os.unlink(target)
            elif not exchange(temp, target):
                write_atomic(target, out, durable=self.drive.settings.durable)
        except OSError:
            return
        temp.unlink(missing_ok=True)

    def _unkeep(self, kept: list[Path]) -> None:
        for file in kept:
            try:
                file.unlink()
            except OSError:
                self._to_trim.discard(file.parent)  # it still counts: trimming would drop an older one

    def _fault(self, doing: str, error: OSError) -> Storage:
        if isinstance(error, (FileNotFoundError, NotADirectoryError)) and not self.drive.state.is_dir():
            return storage_error(doing, OSError(error.errno, "the memory folder is gone"), changed=False)
        if self.changed:
            done = ", ".join(sorted(set(self.changed)))
            return storage_error(
                doing,
                error,
                changed=f"the steps before it were made ({done}); `fsmem check --repair` finishes what they began",
            )
        return storage_error(doing, error, changed=False)

    def delete(self, path: str) -> None:
        """Remove a file or a folder, keeping every file's content in versions/."""
        target = self.drive.resolve(path)
        if target.is_dir():
            # Read everything first: a file that cannot be kept (a link leading out) refuses the
            # delete before anything is kept, logged or removed.
            held = [
                (entry.path, self.drive.read(entry.path))
                for entry in list(self.drive.walk_files(path)) + self._other_files(path)
            ]
            self._check_removable(path, target)
            keeping: list[tuple[str, bytes, Path]] = []
            try:
                for entry_path, data in held:
                    if data is not None:
                        keeping.append((entry_path, data, self._keep(entry_path, data, self.command)))
            except OSError as error:
                self._unkeep([file for _, _, file in keeping])
                raise self._fault(f"keeping the files of {path} before deleting them", error) from error
            failure: OSError | None = None
            try:
                shutil.rmtree(target)
            except OSError as error:
                failure = error  # removed part-way: the log says what is gone, no more
            try:
                for entry_path, data, file in keeping:
                    if failure is None or not os.path.lexists(self.drive.root / entry_path):
                        self._log(entry_path, version_of(data), None)
                    else:
                        self._unkeep([file])
            except OSError as error:
                raise self._fault(f"logging the delete of {path}", error) from error
            if failure is not None:
                raise self._fault(f"deleting {path}", failure) from failure
        else:
            data = self.drive.read(path)
            if data is None:
                raise NotFound(f"there is no file {path!r}")
            try:
                kept = self._keep(path, data, self.command)
            except OSError as error:
                raise self._fault(f"keeping {path} before deleting it", error) from error
            try:
                target.unlink()
            except OSError as error:
                self._unkeep([kept])
                raise self._fault(f"deleting {path}", error) from error
            try:
                self._log(path, version_of(data), None)
            except OSError as error:
                with contextlib.suppress(OSError):
                    write_atomic(target, data, durable=self.drive.settings.durable)
                    kept.unlink()
                raise self._fault(f"logging the delete of {path}", error) from error
        self._fsync(target.parent)

    def move(self, source: str, destination: str) -> None:
        """Rename a file or folder; never over an existing path."""
        source_real = self.drive.resolve(source)
        destination_real = self.drive.resolve(destination)
        self.drive.check_free(destination)
        try:
            make_dirs(destination_real.parent)
        except OSError as error:
            raise self._fault(f"making the folder for {destination}", error) from error
        if source_real.is_dir():
            moved = [(e.path, self.drive.read(e.path)) for e in self.drive.walk_files(source)]
            self._place(source, source_real, destination, destination_real)
            try:
                for old_path, data in moved:
                    new_path = destination + old_path[len(source) :]
                    self._log(old_path, _version(data), _version(data), new_path=new_path)
            except OSError as error:
                raise self._fault(f"logging the rename of {source}", error) from error
        else:
            data = self.drive.read(source)
            self._place(source, source_real, destination, destination_real)
            try:
                self._log(source, _version(data), _version(data), new_path=destination)
            except OSError as error:
                with contextlib.suppress(OSError):  # put it back: the log says only what happened
                    place_new(destination_real, source_real)
                raise self._fault(f"logging the rename of {source}", error) from error
        self._fsync(source_real.parent)
        self._fsync(destination_real.parent)
        self.changed.append(destination)

    def _place(self, source: str, source_real: Path, destination: str, destination_real: Path) -> None:
        """One atomic rename of ``source`` to ``destination``, never over a path that appeared there
        since the free check (a person's save): ``Exists`` then, a ``STORAGE`` fault on a disk fault;
        either way nothing changed."""
        try:
            placed = place_new(source_real, destination_real)
        except FileExistsError:
            placed = False
        except OSError as error:
            raise self._fault(f"renaming {source}", error) from error
        if not placed:
            raise Exists(
                f"the new path {destination} already exists (it appeared just now); nothing was changed. "
                "Choose another name or delete it first"
            )

    def _check_removable(self, path: str, target: Path) -> None:
        """Refuse (``STORAGE``, nothing changed) a folder delete that could not remove every entry:
        a folder in it (or the one holding it) that this process may not change, or a read-only disk."""
        folders = [target.parent, target] + [Path(top, name) for top, names, _ in os.walk(target) for name in names]
        for folder in folders:
            if os.path.islink(folder):
                continue  # a link is removed, not entered
            if not os.access(folder, os.W_OK | os.X_OK):
                code = errno.EROFS if _read_only(folder) else errno.EACCES
                error = OSError(code, os.strerror(code), str(folder))
                raise self._fault(f"deleting {path}", error)

    def keep_replaced(self, path: str, replaced: bytes, now: str) -> None:
        """Keep ``replaced`` as a version of ``path``: what a person's edit outside fsmem (``now`` is
        its version) overwrote, found by the index, which had read it. Named by its real hash."""
        self._keep(path, replaced, self.command)
        self._log(path, version_of(replaced), now)

    # ---- levels and facts (store interface) -----------------------------------------------------

    def write_identity(self, folder: str, data: bytes) -> None:
        """Keep ``data`` as the level folder's identity (its hidden ``.fsmem-level``): no version, no log."""
        write_atomic(self.drive.root / folder / LEVEL_IDENTITY_FILE, data, durable=self.drive.settings.durable)

    def hold(self, name: str) -> None:
        """No other change holding ``name`` runs until this one ends: on the folder, the root's lock
        already makes it so."""

    def lock_folder(self) -> None:
        """What a folder's rename or delete holds: on the folder, the root's lock, held already."""

    def stamp(self, path: str) -> FactStamp | None:
        """The stamp of ``path`` as this change leaves it (see :meth:`Drive.stamp`)."""
        return self.drive.stamp(path)

    # ---- internals --------------------------------------------------------------------------

    def _other_files(self, folder: str) -> list[Entry]:
        """Files that are not memory files under a folder, so a folder delete keeps them too."""
        extra = []
        for dirpath, _, filenames in os.walk(self.drive.resolve(folder)):
            for name in filenames:
                if not is_memory_file_name(name) and not name.startswith("."):
                    full = Path(dirpath, name)
                    rel = full.relative_to(self.drive.root).as_posix()
                    extra.append(Entry(rel, False, full.stat().st_size, full.stat().st_mtime))
        return extra

    def _fsync(self, folder: Path) -> None:
        if self.drive.settings.durable:
            fsync_dir(folder)

    def _keep(self, path: str, data: bytes, command: str) -> Path:
        """A copy of ``data`` under versions/, named by its hash. A copy, not a hard link: an editor
        saving in place (or through a handle it holds) must not rewrite a kept version."""
        folder = self.drive.state / VERSIONS_DIR / path
        kept = folder / f"{_stamp()}-{version_of(data)}-{command}.md"
        if not folder.is_dir():  # the file's first kept version: make its folder (only then)
            make_dirs(folder)
        write_atomic(kept, data, durable=False)
        self._to_trim.add(folder)
        return kept

    def _trim_versions(self) -> None:
        """Cut each versions/ folder this change added to down to ``versions_kept``: at the end of the
        change, never before its write, so a write that fails has lost none of the versions kept."""
        for folder in sorted(self._to_trim):
            # Only kept versions count: the folder may also hold the version folders of files that
            # lived under a folder of this name once, or a crash's temp file.
            try:
                names = sorted(name for name in os.listdir(folder) if _VERSION_NAME.match(name))
                for extra in names[: max(0, len(names) - self.drive.settings.versions_kept)]:
                    os.unlink(folder / extra)
            except OSError:
                continue  # one version too many is kept until the next change; nothing is lost
        self._to_trim.clear()

    def _log(
        self, path: str, before: str | None, after: str | None, new_path: str | None = None, command: str | None = None
    ) -> None:
        thread = None if command == "hand" else self.thread
        entry = LogEntry(now_iso(), command or self.command, path, before, after, thread, new_path)
        _append_line(self.drive.state / LOG_FILE, log_line(entry))
        self.changed.append(path)


def _append_line(log_file: Path, line: str) -> None:
    """Append one line; if a crash left the last line torn (no newline), start on a fresh one."""
    fd = os.open(log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    with open(fd, "ab") as handle:
        size = os.fstat(handle.fileno()).st_size
        if not size:
            os.fchmod(fd, 0o600)  # the log holds paths and threads: the owner's alone, whatever the umask
        prefix = b""
        if size:
            with open(log_file, "rb") as tail:
                tail.seek(size - 1)
                if tail.read(1) != b"\n":
                    prefix = b"\n"
        handle.write(prefix + line.encode("utf-8") + b"\n")


def _is_utf8(name: str) -> bool:
    """Whether a name read from the disk is UTF-8 (others come back from ``os`` with lone surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _read_only(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _version(data: bytes | None) -> str | None:
    return None if data is None else version_of(data)


_last_stamp = 0


def _stamp() -> str:
    """A sortable UTC time to the microsecond, strictly increasing within this process."""
    global _last_stamp
    micros = max(time.time_ns() // 1000, _last_stamp + 1)
    _last_stamp = micros
    return _format_stamp(micros)


def _format_stamp(micros: int) -> str:
    moment = datetime.fromtimestamp(micros / 1_000_000, UTC)
    return moment.strftime("%Y%m%dT%H%M%S") + f"{micros % 1_000_000:06d}Z"


def _stamp_to_iso(stamp: str) -> str:
    try:
        moment = datetime.strptime(stamp[:15], "%Y%m%dT%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        return stamp
    return moment.isoformat().replace("+00:00", "") + f".{stamp[15:21]}Z"


# ---- copy -----------------------------------------------------------------------------------------


def _iso_to_micros(moment: str) -> int:
    """Microseconds since the epoch of an ISO time as the log and kept versions write it."""
    try:
        parsed = datetime.fromisoformat(moment.replace("Z", "+00:00"))
    except ValueError as error:
        raise BadRequest(
            f"{moment!r} is not a time fsmem wrote (ISO 8601, e.g. 2026-12-01T17:06:21.000000Z)"
        ) from error
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    delta = parsed - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _check_copied_path(path: str) -> None:
    """Refuse a path from another store that could lead out of the root or into its state."""
    parts = path.split("/")
    if (
        not path
        or any(part in ("", ".", "..") or "\\" in part or "\0" in part for part in parts)
        or parts[0] == STATE_DIR
    ):
        raise BadPath(f"the source holds a path fsmem cannot place in a folder ({path!r}); nothing was copied")
