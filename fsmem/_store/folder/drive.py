"""The folder a root lives in: the store of one project on this machine (``fsmem._store.interface.Store``).

Every change goes through one transaction (``fsmem._store.folder.change.Change``), under the root's
write lock::

    with drive.change(command="write", thread="t-1") as tx:
        before = tx.read("MEMORY.md")
        tx.write("MEMORY.md", b"# Project\n")

When the block ends, the ``on_commit`` hooks (the index's note) get the changed paths, still under the
lock; then, the lock released, the ``after_change`` hooks (the index's commit of them).
Reads need no lock: a file is always the old one or the new one (the change swaps it in whole).

This module is the guard and the reads: paths here are already normalized by ``fsmem._core.paths``;
the drive adds the symlink guard (``resolve``), and hands the rest to one module a concern: kept
versions and the log (``history``), proposals (``proposals``), folders parked by a ``deleting_*``
block (``parking``), the facts' file stamps (``stamps``), a whole project's copy (``snapshot``).
Each but ``parking`` (which every open asks) is imported by the methods that use it, so a read or a
cold search loads none of them.
"""

from __future__ import annotations

import contextlib
import os
import stat as stat_module
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fsmem._core.layout import LEVEL_IDENTITY_FILE, STATE_DIR
from fsmem._core.paths import is_memory_file_name
from fsmem._core.search import Indexed, Plan, Stamp
from fsmem._core.text import check_thread
from fsmem._core.versions import version_of
from fsmem._env.config import Settings
from fsmem._errors import BadPath, Exists, NotFound
from fsmem._store.folder import parking
from fsmem._store.folder import walk as _walk
from fsmem._store.folder.jail import Jail
from fsmem._store.folder.ondisk import nfc
from fsmem._store.folder.regular import not_regular, read_regular
from fsmem._store.folder.rootlock import CRASH_MARK, RootLock

if TYPE_CHECKING:
    from fsmem._store.folder.change import Change
    from fsmem._store.types import Entry, FactStamp, LogEntry, Parked, ProjectCopy, VersionInfo

LOCK_FILE = "lock"


class Drive:
    def __init__(self, root: Path, settings: Settings) -> None:
        self.root = Path(os.path.realpath(root))
        self.settings = settings
        self.state = self.root / STATE_DIR
        self._jail = Jail(self.root, STATE_DIR)
        self.on_commit: list[Callable[[set[str]], None]] = []
        self.after_change: list[Callable[[set[str]], None]] = []  # with the changed paths, the lock let go
        self._lock = RootLock(self.state / LOCK_FILE, settings.lock_timeout)
        # A test hook: called with the path between the version check and the swap of a write (the
        # window a person's save can land in); None in use.
        self.in_write_window: Callable[[str], None] | None = None
        self.after_swap: Callable[[str], None] | None = None  # test hook: just after the swap
        self.name = self.root.name
        self.label = str(self.root)

    def close(self) -> None:
        """Nothing to let go: a folder holds no connection (the lock is taken per change)."""

    # ---- locating ---------------------------------------------------------------------------

    def resolve(self, path: str) -> Path:
        """The real location of a normalized path, refusing any that leads outside the root.

        A symlink anywhere on the way may point inside the root, never out of it, and never into
        ``.fsmem/`` (``fsmem._store.folder.jail``).
        """
        return self._jail.resolve(path)

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
        return read_regular(self.resolve(path), path, limit)

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
        from fsmem._store.types import Entry  # here, not at the top: a search never lists (nor builds the class)

        try:
            found = os.stat(self.resolve(path))
        except (FileNotFoundError, NotADirectoryError):
            return None
        return Entry(path, stat_module.S_ISDIR(found.st_mode), found.st_size, found.st_mtime)

    def entries(self, path: str) -> list[Entry]:
        """The visible children of a folder, sorted: no dot-names, no links leading out."""
        from fsmem._store.types import Entry  # as in ``info``

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
        from fsmem._store.folder.change import Change

        check_thread(thread)
        with self.locked(command):
            tx = Change(self, command, thread)
            try:
                yield tx
            finally:
                tx.trim_versions()  # only now: a change that failed part-way has lost no kept version
                if tx.changed:
                    for hook in self.on_commit:
                        hook(set(tx.changed))
        if tx.changed:
            for hook in self.after_change:
                hook(set(tx.changed))

    # ---- levels (store interface, "levels" block) ----------------------------------------------

    def level_identity(self, folder: str) -> bytes | None:
        """The identity kept in a level folder (its hidden ``.fsmem-level``), or None."""
        try:
            return (self.root / folder / LEVEL_IDENTITY_FILE).read_bytes()
        except OSError:
            return None

    def parked(self) -> list[Parked]:
        return parking.parked(self.state)

    def deleting(self, folder: str, command: str) -> contextlib.AbstractContextManager[None]:
        return parking.deleting(self, folder, command)

    def restore_parked(self) -> list[str]:
        return parking.restore_parked(self)

    # ---- facts (store interface, "facts" block) ------------------------------------------------

    def stamps(self, folders: Sequence[str]) -> tuple[dict[str, FactStamp], dict[str, str]]:
        from fsmem._store.folder import stamps

        return stamps.stamps(self.resolve, folders)

    def stamp(self, path: str) -> FactStamp | None:
        from fsmem._store.folder import stamps

        return stamps.stamp(self.root, path)

    def read_stamped(self, paths: Sequence[str]) -> dict[str, tuple[bytes, FactStamp]]:
        from fsmem._store.folder import stamps

        return stamps.read_stamped(self.root, paths)

    def folders_mark(self, folders: Sequence[str]) -> Hashable | None:
        from fsmem._store.folder import stamps

        return stamps.folders_mark(self.root, folders)

    # ---- history ----------------------------------------------------------------------------

    def versions(self, path: str) -> list[VersionInfo]:
        """Earlier contents of a file, newest first (a FIFO, a device or a socket there is refused: not memory)."""
        from fsmem._store.folder import history

        self.refuse_special(path)
        try:
            data = self.read(path)
        except BadPath:  # no file can be there (a folder on the way is a file now): none is live
            data = None
        return history.versions(self.state, path, None if data is None else version_of(data))

    def read_version(self, kept: VersionInfo) -> bytes:
        from fsmem._store.folder import history

        return history.read_version(kept)

    def log(self) -> Iterator[LogEntry]:
        from fsmem._store.folder import history

        return history.log(self.state)

    def last_change(self, path: str) -> LogEntry | None:
        from fsmem._store.folder import history

        return history.last_change(self.state, path)

    # ---- proposals: .fsmem/proposals/<id>.json ------------------------------------------------

    def save_proposal(self, record: dict[str, Any]) -> None:
        from fsmem._store.folder import proposals

        proposals.save_proposal(self.state, record, durable=self.settings.durable)

    def load_proposal(self, proposal_id: str) -> dict[str, Any] | None:
        from fsmem._store.folder import proposals

        return proposals.load_proposal(self.state, proposal_id)

    def proposal_ids(self) -> list[str]:
        from fsmem._store.folder import proposals

        return proposals.proposal_ids(self.state)

    def delete_proposal(self, proposal_id: str) -> None:
        from fsmem._store.folder import proposals

        proposals.delete_proposal(self.state, proposal_id)

    # ---- copy (fsmem/_memory/copy.py: a whole project into another store) ---------------------------

    def export_project(self) -> ProjectCopy:
        from fsmem._store.folder import snapshot

        return snapshot.export_project(self.root, self.state, self.locked)

    def import_project(self, copy: ProjectCopy) -> None:
        from fsmem._store.folder import snapshot

        snapshot.import_project(self.root, self.settings, copy)
