"""One change to a folder's memory files, made under the root's write lock: the only code that writes them.

Each operation keeps the previous content in ``.fsmem/versions/`` (a copy: never an inode a live file
or an editor's open handle shares, so a kept version always hashes to the version in its name) and a
write keeps what it wrote there too, as the file's live copy (``history``: renamed to the next change's
kept version, or listed as replaced by hand when a person saved over it unseen), so no content fsmem
acknowledged is ever the live file's alone; writes
atomically (unique ``O_EXCL`` temp file in the same folder, fsync, then swapped in with
``renameat2(RENAME_EXCHANGE)`` so whatever a person saved there in the meantime comes out under the
temp name and is kept as a hand edit; ``os.replace`` where the system cannot swap), fsync of the
folder, and appends a line to ``.fsmem/log.jsonl``. ``Drive.change`` makes one and holds the lock.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

from fsmem._core.layout import LEVEL_IDENTITY_FILE
from fsmem._core.paths import is_memory_file_name
from fsmem._core.versions import version_of
from fsmem._env.config import Settings
from fsmem._errors import Exists, NotFound, Storage
from fsmem._store.atomic import exchange, fsync_dir, make_dirs, place_new, write_atomic, write_temp
from fsmem._store.disk_faults import storage_error
from fsmem._store.folder.history import (
    LIVE,
    LOG_FILE,
    VERSIONS_DIR,
    kept_name,
    live_copies,
    live_name,
    new_stamp,
)
from fsmem._store.folder.regular import read_regular
from fsmem._store.folder.stamps import kept_stamp
from fsmem._store.types import Entry, FactStamp, HandEdit, LogEntry, log_line, now_iso


class Folder(Protocol):
    """What a change needs of the folder it changes (``Drive``): its places, its guard, its reads."""

    root: Path
    state: Path
    settings: Settings
    in_write_window: Callable[[str], None] | None  # test hooks: see ``Drive.__init__``
    after_swap: Callable[[str], None] | None

    def resolve(self, path: str) -> Path: ...
    def read(self, path: str, limit: int | None = None) -> bytes | None: ...
    def walk_files(self, path: str = "") -> Iterator[Entry]: ...
    def check_free(self, destination: str, label: str = "the new path") -> None: ...
    def stamp(self, path: str) -> FactStamp | None: ...


class Change:
    """The operations of one change, made while the root's lock is held.

    Not a transaction: each operation takes effect, and is logged, when it is called, and nothing is
    rolled back if the block raises later. So a caller does every check before its first write,
    delete or move; a crash part-way is what the versions and the facts' repair are for."""

    def __init__(self, drive: Folder, command: str, thread: str | None) -> None:
        self.drive = drive
        self.command = command
        self.thread = thread
        self.changed: list[str] = []
        self.hand_edits: list[HandEdit] = []
        self._seen: dict[str, bytes | None] = {}  # what the caller read under the lock, by path
        self._to_trim: set[Path] = set()  # versions/ folders that got a copy: trimmed when the change ends
        self._taken: dict[Path, Path] = {}  # kept version -> the live copy it was renamed from (for undo)

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
        before = read_regular(target, path)  # resolved once: realpath is a good part of a write's cost
        seen = self._seen.get(path, before)
        kept: list[Path] = []
        try:
            self._retire_stale_live(path, seen)
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
        after = version_of(data)
        try:
            if out is not None and out != before:  # a person's save landed in the window: keep it
                kept.append(self._keep(path, out, self.command, live=False))
            kept.append(self._keep_live(path, data, after))
        except OSError as error:
            self._undo_swap(temp, target, out)
            self._unkeep(kept)
            raise self._fault(f"keeping what was written to {path}", error) from error
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
            self._keep(path, late, "hand", live=False)
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
        out = read_regular(target, "")  # no swap here: the window shrinks to this read
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
                live = self._taken.pop(file, None)
                if live is None:
                    file.unlink()
                else:
                    os.rename(file, live)  # it was the live copy: the file still holds it
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
                    self._retire_stale_live(entry_path, data)
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
                self._retire_stale_live(path, data)
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
            moved = [
                (e.path, destination + e.path[len(source) :], self.drive.read(e.path))
                for e in self.drive.walk_files(source)
            ]
        else:
            moved = [(source, destination, self.drive.read(source))]
        try:
            for old_path, new_path, data in moved:
                self._retire_stale_live(old_path, data)
                self._retire_stale_live(new_path, None)  # nothing is there: a live copy there was replaced
        except OSError as error:
            raise self._fault(f"keeping what was replaced by hand before renaming {source}", error) from error
        self._place(source, source_real, destination, destination_real)
        try:
            for old_path, new_path, data in moved:
                self._log(old_path, _version(data), _version(data), new_path=new_path)
        except OSError as error:
            if not source_real.is_dir():
                with contextlib.suppress(OSError):  # put it back: the log says only what happened
                    place_new(destination_real, source_real)
            raise self._fault(f"logging the rename of {source}", error) from error
        for old_path, new_path, data in moved:
            self._carry_live(old_path, new_path, data)
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
        its version) overwrote, found by the index, which had read it. Named by its real hash.

        The file is not changed, so it is not noted for the index as a change through fsmem: a note
        would have the next search re-read it as one, and keep nothing of a second hand edit."""
        self._keep(path, replaced, self.command)
        self._log(path, version_of(replaced), now, noted=False)

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
        """The stamp to keep for ``path`` as this change leaves it (see :func:`.stamps.kept_stamp`)."""
        return kept_stamp(self.drive.root, path)

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

    def _keep(self, path: str, data: bytes, command: str, *, live: bool = True) -> Path:
        """``data`` kept under versions/, named by its hash: the file's live copy of it renamed (fsmem
        wrote it last, so it is there already; not with ``live=False``), else a copy. A copy, not a hard
        link: an editor saving in place (or through a handle it holds) must not rewrite a kept version."""
        folder = self.drive.state / VERSIONS_DIR / path
        version = version_of(data)
        kept = folder / f"{new_stamp()}-{version}-{command}.md"
        self._to_trim.add(folder)
        taken = live and self._take_live(folder, version, kept)
        if not taken:
            if not folder.is_dir():  # the file's first kept version: make its folder (only then)
                make_dirs(folder)
            write_atomic(kept, data, durable=False)
        return kept

    def _take_live(self, folder: Path, version: str, kept: Path) -> bool:
        """Rename the live copy of ``version`` to ``kept``; False when there is none."""
        found = [name for name, live_version in live_copies(folder) if live_version == version]
        if not found:
            return False
        os.rename(folder / found[0], kept)
        self._taken[kept] = folder / found[0]
        for extra in found[1:]:  # a crash between two steps left a twin: the same bytes, by their name
            with contextlib.suppress(OSError):
                os.unlink(folder / extra)
        return True

    def _keep_live(self, path: str, data: bytes, version: str) -> Path:
        """Keep ``data``, just written to ``path``, as its live copy: until a change replaces it, it is
        what a person's unseen save over the file would otherwise take with it."""
        folder = self.drive.state / VERSIONS_DIR / path
        if not folder.is_dir():
            make_dirs(folder)
        live = folder / live_name(version)
        write_atomic(live, data, durable=False)
        return live

    def _retire_stale_live(self, path: str, current: bytes | None) -> None:
        """A live copy of ``path`` that is not what the file holds (``current``; ``None``: no file) was
        replaced outside fsmem, unseen: keep it as a version replaced by hand, and log that hand edit."""
        folder = self.drive.state / VERSIONS_DIR / path
        now = _version(current)
        for name, version in live_copies(folder):
            if version == now:
                continue
            os.rename(folder / name, folder / f"{new_stamp()}-{version}-hand.md")
            self._to_trim.add(folder)
            self._log(path, version, now, command="hand")

    def _carry_live(self, source: str, destination: str, data: bytes | None) -> None:
        """A renamed file's live copy goes with it (a rename writes no bytes, so makes none)."""
        folder = self.drive.state / VERSIONS_DIR / source
        for name, version in live_copies(folder):
            if version != _version(data):
                continue
            target = self.drive.state / VERSIONS_DIR / destination
            try:
                if not target.is_dir():
                    make_dirs(target)
                os.rename(folder / name, target / name)
            except OSError:
                return  # the rename is done and logged; the copy stays under the old path, listed there

    def trim_versions(self) -> None:
        """Cut each versions/ folder this change added to down to ``versions_kept``: at the end of the
        change (``Drive.change`` calls it when the block ends), never before its write, so a write that
        fails has lost none of the versions kept."""
        for folder in sorted(self._to_trim):
            # Only kept versions count: the folder may also hold the version folders of files that
            # lived under a folder of this name once, or a crash's temp file.
            try:
                names = sorted(name for name in os.listdir(folder) if (parsed := kept_name(name)) and parsed[2] != LIVE)
                for extra in names[: max(0, len(names) - self.drive.settings.versions_kept)]:
                    os.unlink(folder / extra)
            except OSError:
                continue  # one version too many is kept until the next change; nothing is lost
        self._to_trim.clear()

    def _log(
        self,
        path: str,
        before: str | None,
        after: str | None,
        new_path: str | None = None,
        command: str | None = None,
        *,
        noted: bool = True,
    ) -> None:
        """Append the line; ``noted``: the change changed the file, so the index is told (``changed``)."""
        thread = None if command == "hand" else self.thread
        entry = LogEntry(now_iso(), command or self.command, path, before, after, thread, new_path)
        _append_line(self.drive.state / LOG_FILE, log_line(entry))
        if noted:
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


def _read_only(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _version(data: bytes | None) -> str | None:
    return None if data is None else version_of(data)
