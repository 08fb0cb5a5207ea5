"""A folder people edit, mirrored from a project in PostgreSQL, and back (``fsmem sync``).

    with Sync.open(Path("notes"), store) as sync:    # store: a PgStore of the project
        sync.run_once()                               # one pull + push pass (what cron and tests use)
        sync.run(stop)                                # or: watch both sides until ``stop`` is set

Each pass compares, for every path it looks at, three versions: what the folder and the database
last agreed on (the *base*, kept in ``DIR/.fsmem-sync/state.json``), what the folder holds now and
what the database holds now (``decide``, a pure function):

- only the database changed: the folder gets its bytes (or loses the file);
- only the folder changed (a person's save or delete): pushed as a change conditional on the base
  (``tx.write(path, data, expect=base)``); if the database moved meanwhile, it is a conflict;
- both changed, to different bytes: the database keeps its version, the person's text is kept as a
  version of the file (command ``conflict``) and written, unchanged, into a note beside it,
  ``<file>.conflict`` (``-2``, ``-3`` … when one is there already), which says what happened and
  how to take the text back. A note is not a memory file name, so it is never pushed.

A hand change the tool would refuse is not pushed either (``_refused``, as ``fsmem/_memory/tool.py`` decides):
a fact file changes only through the facts API and a file needs an agent or routine folder the
memory has, so such a text is kept as a version and in a note, and the folder gets the memory's
file back; a level folder deleted whole comes back, with a note saying the harness deletes agents
and routines; a level's top file (MEMORY.md, NOTES.md) deleted by hand is emptied, not removed.
The state file also names the project's identity (``PgStore.identity``): a folder synced with
another project of the same name (another database, a project made again) is refused (BAD_STORE).

A pass looks at the paths the log changed since the last sequence number it saw
(``PgStore.changes_since``) and the paths the folder's watcher named; the first pass, and one every
``FULL_EVERY`` seconds, compares everything. The folder's own writes swap the new bytes in with
``renameat2(RENAME_EXCHANGE)``, so a save that lands between the comparison and the write comes out
under the temp name and is kept like any conflict (held in the state file first, ``held``: a store
lost before it is kept finishes on the next pass): nothing a person saves is lost. Each folder write
is journaled first (``.fsmem-sync/swaps.jsonl``, with the temp name its swap uses), so a sync killed
after the swap, before the state recording it is saved, finds out at its next pass what the swap did
(``_recover_swaps``): the base follows it, and a save it took out is kept. A file the folder
changed less than ``SETTLE`` seconds ago is looked at again before it is pushed: an editor saving in
place truncates, then writes, and the empty file between must never reach the database. Only memory files
(``core.paths.is_memory_file_name``) outside dot-folders are mirrored; one ``fsmem sync`` runs per
folder at a time (a lock in ``.fsmem-sync/``).

This module holds the passes; the folder side (the lock, the reads, the swap) is
:mod:`fsmem._memory.sync_folder`, and the words of the notes are :mod:`fsmem._memory.sync_notes`.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Self

from fsmem._core.layout import is_fact_path, role_of
from fsmem._core.versions import version_of
from fsmem._errors import BadPath, BadStore, Busy, Conflict, Exists, FsmemError, NotFound, SetupError
from fsmem._memory.sync_folder import (
    SETTLE_MAX,
    SYNC_DIR,
    files_here,
    is_dir_here,
    jail_of,
    mirrored,
    note_path,
    place,
    read_here,
    read_here_when,
    take_folder,
)
from fsmem._memory.sync_notes import conflict_note, level_note, refused_note
from fsmem._store.atomic import append_line, json_lines, make_dirs, write_atomic
from fsmem._store.folder.ondisk import nfc
from fsmem._store.postgres.errors import StoreUnavailable
from fsmem._store.postgres.store import PgStore

log = logging.getLogger("fsmem._sync")  # the name logging configs know (from before the layers)

STATE_FILE = "state.json"  # under DIR/.fsmem-sync/: the base versions, the sequence number seen, the project
SWAPS_FILE = "swaps.jsonl"  # under DIR/.fsmem-sync/: the folder writes made since the state was last saved
PUSH_COMMAND = "hand_edit"  # as the folder store logs a person's edit
KEEP_COMMAND = "conflict"
LEVEL_GONE = "level folder gone: "  # _refused's answer for a level folder deleted whole by hand
FULL_EVERY = 60.0  # seconds between full comparisons while running (events can be lost)
POLL = 2.0  # seconds between looks at the log when no notification came
SETTLE = 0.1  # a file changed this recently may be half-saved (truncated, not yet written): look again

Action = Literal["none", "agree", "pull", "push", "conflict"]


def decide(base: str | None, here: str | None, there: str | None) -> Action:
    """What one path needs, from its base version and what the folder and the database hold now
    (None: no file). ``agree``: both hold the same, only the base moves to it."""
    if here == there:
        return "none" if base == here else "agree"
    if here == base:
        return "pull"
    if there == base:
        return "push"
    return "conflict"


@dataclass
class Report:
    """What one pass did, by path."""

    pulled: list[str] = field(default_factory=list)
    pushed: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)  # the notes written
    errors: list[str] = field(default_factory=list)  # "path: why", for paths left as they were
    seq: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.pulled or self.pushed or self.conflicts or self.errors)


class Sync:
    """One folder mirrored with one project. Open it with ``Sync.open`` (takes the folder's lock)."""

    def __init__(self, folder: Path, store: PgStore, lock_fd: int) -> None:
        self.folder, self.store = folder, store
        self.jail = jail_of(folder)  # the root's jail: no read or write through a link out of the folder
        self.meta = folder / SYNC_DIR
        self._lock_fd = lock_fd
        self._label = store.project
        self.base: dict[str, str] = {}
        self.kept: dict[str, str] = {}  # path: the version of a person's text kept by a conflict not yet done
        self.held: list[dict[str, str | None]] = []  # persons' saves a swap took out, not yet kept (_conflict)
        self._levels_noted: set[str] = set()  # level folders a pass put back (one note each)
        self._levels_gone: set[str] = set()  # level folders synced before, gone from the folder at a pass's start
        self.seq = 0
        self._load_state()
        self._pending: set[str] = set()
        self._full_wanted = False
        self._wake = threading.Condition()
        self.settle = SETTLE

    @classmethod
    def open(cls, folder: Path, store: PgStore) -> Sync:
        folder = Path(os.path.realpath(folder))
        fd = take_folder(folder)
        try:
            return cls(folder, store, fd)
        except BaseException:
            os.close(fd)
            raise

    def close(self) -> None:
        os.close(self._lock_fd)  # releases the lock

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the bookkeeping ------------------------------------------------------------------------

    def _load_state(self) -> None:
        file = self.meta / STATE_FILE
        try:
            state = json.loads(file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as error:
            raise SetupError(f"{file} cannot be read ({error}); delete it to compare everything afresh") from error
        if state.get("project") != self._label:
            raise SetupError(
                f"{self.folder} is synced with project {state.get('project')!r}, not {self._label!r}; "
                "sync this project into another folder"
            )
        identity = state.get("identity")  # absent in a folder an fsmem before identities synced: kept on
        if identity is not None and identity != self.store.identity:
            raise BadStore(
                f"{self.folder} is synced with another project named {self._label!r} (another database, or "
                "the project was made again): its files would be taken for deletions and its sequence number "
                "means nothing here. Sync this project into another folder, or delete "
                f"{self.meta / STATE_FILE} to merge the folder into it as a first sync does"
            )
        self.base, self.seq = dict(state.get("files", {})), int(state.get("seq", 0))
        self.kept = {str(path): str(version) for path, version in state.get("kept", {}).items()}
        self.held = list(state.get("held", []))

    def _save_state(self) -> None:
        state = {
            "project": self._label,
            "identity": self.store.identity,
            "seq": self.seq,
            "files": dict(sorted(self.base.items())),
            "kept": dict(sorted(self.kept.items())),
            "held": self.held,
        }
        write_atomic(self.meta / STATE_FILE, json.dumps(state, ensure_ascii=False, indent=1).encode("utf-8"))
        (self.meta / SWAPS_FILE).unlink(missing_ok=True)  # each journaled write's base is in the state now

    # ---- a folder write and a kill after it ------------------------------------------------------
    #
    # A write swaps the database's bytes in before the state saying so is saved: a sync killed in
    # between would find the folder's file at a version its base does not name, and take the
    # person's next save over it for a conflict (or, with a save the swap took out still in its temp
    # file, lose that save). So each write is journaled first, with the temp name the swap uses
    # (``SWAPS_FILE``), and the next pass reads what that name holds to tell what happened. The journal
    # only grows (one line a write; a refused write adds a line taking its own back) until the state is
    # saved: a pass of N writes costs N short appends, never N rewrites of the whole journal.

    def _put(self, path: str, data: bytes | None, expected: bytes | None, report: Report, base: str | None) -> bool:
        """Make the folder's file hold ``data`` and its base follow; a save swapped out meanwhile is
        kept as a conflict (``base``: the base its note names). True when there was one."""
        entry: dict[str, str | None] = {
            "path": path,
            "to": None if data is None else version_of(data),
            "expected": None if expected is None else version_of(expected),
            "base": self.base.get(path),
            "temp": None,
        }

        def journal(temp: Path) -> None:
            entry["temp"] = temp.relative_to(self.jail.root).as_posix()
            append_line(self.meta / SWAPS_FILE, entry)

        try:
            late = place(self.jail, path, data, expected, self.settle, journal)
        except BaseException:
            if entry["temp"] is not None:  # refused or failed: nothing to tell the next pass
                append_line(self.meta / SWAPS_FILE, {"cancelled": entry["temp"]})
            raise
        self._set_base(path, entry["to"])
        if late is None:
            return False
        self._conflict(path, late, data, base, report, placed=True)
        if entry["temp"] is not None:
            (self.jail.root / entry["temp"]).unlink(missing_ok=True)  # kept now: the swapped-out file can go
        return True

    def _recover_swaps(self) -> None:
        """Finish the folder writes a killed sync journaled but did not save the state of: a temp file
        still holding the new bytes means the swap never came (the base stays); otherwise it came, and
        the base follows, and what the temp file holds, if it is neither what the pass had seen nor
        the new bytes, is a person's save the swap took out: held, kept like any (``_finish_held``)."""
        journal = self.meta / SWAPS_FILE
        if not journal.exists():
            return
        records = [record for record in json_lines(journal) if isinstance(record, dict)]
        cancelled = {record["cancelled"] for record in records if "cancelled" in record}
        leftovers = []
        for swap in (record for record in records if "path" in record and record.get("temp") not in cancelled):
            path, to = str(swap["path"]), swap["to"]
            try:
                temp, out = self.jail.resolve(str(swap["temp"])), read_here(self.jail, str(swap["temp"]))
            except BadPath:  # its folder is a link now: nothing there is read; the base stays
                continue
            if out is not None:
                leftovers.append(temp)
            if to is not None:
                done = out is None or version_of(out) != to
            else:
                done = out is not None or read_here(self.jail, path) is None
            if not done:
                continue
            self._set_base(path, to)
            if out is not None and version_of(out) not in (swap["expected"], to):
                text64 = base64.b64encode(out).decode("ascii")
                if not any(held["path"] == path and held["text"] == text64 for held in self.held):
                    self.held.append({"path": path, "text": text64, "theirs": to, "base": swap["base"]})
        self._save_state()  # and the journal goes
        for temp in leftovers:
            temp.unlink(missing_ok=True)

    # ---- one pass ---------------------------------------------------------------------------------

    def run_once(self, paths: set[str] | None = None) -> Report:
        """Pull and push what changed: ``paths`` (the watcher's) and what the log changed since the
        last pass, or everything when ``paths`` is None. Saves the bookkeeping at the end."""
        report = Report()
        self._levels_noted.clear()
        self._recover_swaps()
        self._finish_held(report)
        if paths is None:
            newest = self.store.newest_seq()
            there = self.store.file_versions()
            todo = sorted(set(there) | set(files_here(self.folder)) | set(self.base))
        else:
            newest, changed = self.store.changes_since(self.seq)
            there = None
            todo = sorted(set(changed) | paths)
        unsettled: list[str] = []
        self._levels_gone = self._gone_levels(todo)
        for number, path in enumerate(path for path in todo if mirrored(path)):
            self._one_or_error(path, None if there is None else there.get(path), there is not None, report, unsettled)
            if number % 200 == 199:
                self._save_state()
        waited = 0.0
        while unsettled:  # saves caught half-way (an editor's truncate, then write): looked at again
            settle = self.settle if waited < SETTLE_MAX else 0.0
            time.sleep(self.settle)
            waited += self.settle
            again, unsettled = unsettled, []
            for path in again:
                self._one_or_error(path, None, False, report, unsettled, settle)
        # a full pass saw everything up to ``newest``: taken as it is, so a database restored from a
        # backup (its numbers behind this folder's) is followed again from there
        self.seq = report.seq = newest if paths is None else max(self.seq, newest)
        self._save_state()
        return report

    def _one_or_error(
        self,
        path: str,
        there_version: str | None,
        known: bool,
        report: Report,
        unsettled: list[str],
        settle: float | None = None,
    ) -> None:
        try:
            if not self._one(path, there_version, known, report, settle=self.settle if settle is None else settle):
                unsettled.append(path)
        except (StoreUnavailable, Busy):
            self._save_state()
            raise
        except (FsmemError, OSError) as error:
            report.errors.append(f"{path}: {getattr(error, 'message', None) or error}")

    def _one(
        self,
        path: str,
        there_version: str | None,
        known: bool,
        report: Report,
        again: bool = True,
        settle: float = 0.0,
    ) -> bool:
        """Sync one path; False when the folder's file changed too recently to trust (``settle``
        seconds: an in-place save may be half done) and was left for a second look."""
        base = self.base.get(path)
        here_bytes, changed_at = read_here_when(self.jail, path)
        here = None if here_bytes is None else version_of(here_bytes)
        if known and here == base == there_version:
            return True  # the full pass's fast way: nothing to read from the database
        if here != base and settle > 0 and 0 <= time.time() - changed_at < settle:
            return False
        there_bytes = self.store.read(path)
        there = None if there_bytes is None else version_of(there_bytes)
        action = decide(base, here, there)
        if action == "agree":
            self._set_base(path, here)
        elif action == "pull":
            # a save landing as we write is a conflict: the database's version stays, theirs is kept
            if not self._put(path, there_bytes, here_bytes, report, base):
                report.pulled.append(path)
        elif action == "push":
            why = self._refused(path, here_bytes)
            if why is not None:  # a change the tool would refuse too: the database's stays
                self._refuse(path, here_bytes, there_bytes, why, report)
                self._set_base(path, there)
                return True
            if here_bytes is None and role_of(path).is_top_file:
                self._empty_top_file(path, base, report)
                return True
            try:
                with self.store.change(PUSH_COMMAND) as tx:
                    if here_bytes is None:
                        tx.delete(path, expect=base)
                    else:
                        tx.write(path, here_bytes, expect=base)
            except (Conflict, Exists, NotFound, BadPath):
                if not again:
                    raise
                return self._one(path, None, False, report, again=False)  # the database moved: look again
            report.pushed.append(path)
            self._set_base(path, here)
        elif action == "conflict":
            self._conflict(path, here_bytes, there_bytes, base, report)
            self._set_base(path, there)
        return True

    def _set_base(self, path: str, version: str | None) -> None:
        if version is None:
            self.base.pop(path, None)
        else:
            self.base[path] = version

    def _conflict(
        self,
        path: str,
        mine: bytes | None,
        theirs: bytes | None,
        base: str | None,
        report: Report,
        placed: bool = False,
    ) -> None:
        """The database keeps ``theirs``; the person's ``mine`` is kept as a version and in a note;
        the folder's file becomes the database's (``placed``: it already is)."""
        theirs_version = None if theirs is None else version_of(theirs)
        if placed and mine is not None:
            # a swap took the save out and the folder holds the database's bytes: this process has the
            # only copy, so it is written down before the store is asked to keep it. A store lost, a
            # note with no room or a kill on the way leaves it held, and the next pass finishes it.
            held: dict[str, str | None] = {
                "path": path,
                "text": base64.b64encode(mine).decode("ascii"),
                "theirs": theirs_version,
                "base": base,
            }
            self.held.append(held)
            self._save_state()
            self._keep_and_note(path, mine, theirs_version, base, report)
            self.held.remove(held)
        else:
            self._keep_and_note(path, mine, theirs_version, base, report)
        if not placed:  # yet another save in the same instant is kept the same way
            self._put(path, theirs, mine, report, base)
        self.kept.pop(path, None)  # done: the note is written and the folder holds the database's

    def _keep_and_note(
        self, path: str, mine: bytes | None, theirs: str | None, base: str | None, report: Report
    ) -> None:
        kept = None if mine is None else self._keep(path, mine)
        note = note_path(self.jail, path)
        write_atomic(note, conflict_note(path, mine, kept, theirs, base))
        report.conflicts.append(note.relative_to(self.jail.root).as_posix())

    def _finish_held(self, report: Report) -> None:
        """Keep, and note, the saves an earlier pass swapped out but could not keep (``_conflict``)."""
        for held in list(self.held):
            path, mine = str(held["path"]), base64.b64decode(str(held["text"]))
            try:
                self._keep_and_note(path, mine, held["theirs"], held["base"], report)
            except (StoreUnavailable, Busy):
                self._save_state()
                raise
            except (FsmemError, OSError) as error:
                report.errors.append(f"{path}: {getattr(error, 'message', None) or error}")
                continue
            self.held.remove(held)
            if self.kept.get(path) == version_of(mine):
                self.kept.pop(path)

    def _keep(self, path: str, mine: bytes) -> str:
        """Keep a person's text as a version of ``path``, once: a conflict that cannot finish (no room
        for its note) is tried again every pass, and must not fill the file's versions with copies."""
        kept = version_of(mine)
        if self.kept.get(path) != kept:
            kept = self.kept[path] = self.store.keep_version(path, mine, KEEP_COMMAND)
        return kept

    # ---- the tool's rules (fsmem/_memory/tool.py): what a hand change may not do ---------------------------

    def _gone_levels(self, todo: list[str]) -> set[str]:
        """The level folders of ``todo`` synced before that are gone from the folder now (before this
        pass puts anything back: a pull into one would make it look present to the paths after it)."""
        levels: set[str] = set()
        for path in todo:
            if path not in self.base:
                continue
            role = role_of(path)
            levels.update(level for level in (role.agent_folder, role.routine_folder) if level is not None)
        return {level for level in levels if not is_dir_here(self.jail, level)}

    def _refused(self, path: str, mine: bytes | None) -> str | None:
        """Why the tool would refuse this hand change (``mine`` None: a deletion), else None. A level
        folder deleted whole names itself with ``LEVEL_GONE`` in front."""
        role = role_of(path)
        if is_fact_path(path):
            doing = "deleting the file" if mine is None else "editing the file"
            return (
                f"{path} is a fact file: facts change only through the facts API "
                f"(`fsmem facts keep|edit|forget`), not by {doing}"
            )
        if mine is None:
            for level in (role.agent_folder, role.routine_folder):
                if level is not None and level in self._levels_gone:
                    return LEVEL_GONE + level
            return None
        if role.is_level_folder:
            return (
                f"{path} is at the place of a level folder (agents/ holds only agent folders, "
                "routines/ only routine folders)"
            )
        for level, kind in ((role.agent_folder, "agent"), (role.routine_folder, "routine")):
            if level is not None and not self.store.is_dir(level):
                return (
                    f"there is no {kind} folder {level} in the memory; {kind}s are created by the harness "
                    f"(`fsmem {kind}s create`), not by making a folder"
                )
        return None

    def _refuse(self, path: str, mine: bytes | None, theirs: bytes | None, why: str, report: Report) -> None:
        """Put back what the database holds; keep the person's text (as a version and in a note)."""
        if why.startswith(LEVEL_GONE):
            level = why[len(LEVEL_GONE) :]
            if level not in self._levels_noted:
                note = note_path(self.jail, level)
                make_dirs(note.parent)  # agents/ itself may be gone
                write_atomic(note, level_note(level))
                report.conflicts.append(note.relative_to(self.jail.root).as_posix())
                self._levels_noted.add(level)
        else:
            kept = None if mine is None else self._keep(path, mine)
            note = note_path(self.jail, path)
            write_atomic(note, refused_note(path, mine, kept, why))
            report.conflicts.append(note.relative_to(self.jail.root).as_posix())
        # a save in the same instant: kept as a conflict
        self._put(path, theirs, mine, report, None if theirs is None else version_of(theirs))
        self.kept.pop(path, None)

    def _empty_top_file(self, path: str, base: str | None, report: Report) -> None:
        """A level's top file deleted by hand is emptied, as the tool's delete does; the folder gets
        the empty file back."""
        empty = version_of(b"")
        if base != empty:
            try:
                with self.store.change(PUSH_COMMAND) as tx:
                    tx.write(path, b"", expect=base)
            except (Conflict, Exists, NotFound, BadPath):
                self._one(path, None, False, report, again=False)  # the database moved: look again
                return
            report.pushed.append(path)
        self._put(path, b"", None, report, empty)  # a save in the same instant: the emptied file stays, theirs kept

    # ---- running ----------------------------------------------------------------------------------

    def run(self, stop: threading.Event, on_pass: Any = None) -> None:
        """Pass after pass until ``stop`` is set: woken by the folder's watcher and the project's
        notifications, and every ``POLL`` seconds; a full comparison first and every ``FULL_EVERY``."""
        from fsmem._index.watch import watch_folder

        full_every = FULL_EVERY
        try:
            stop_watching = watch_folder(str(self.folder), self._changed_here)
        except OSError as error:  # a watch limit reached: compare everything at every look instead
            log.warning("cannot watch %s (%s); comparing the whole folder every %g s", self.folder, error, POLL)
            stop_watching, full_every = (lambda: None), 0.0
        listener = self.store.listen(lambda _seq: self._poke())
        next_full = 0.0
        try:
            while not stop.is_set():
                with self._wake:
                    paths, full = self._pending, self._full_wanted
                    self._pending, self._full_wanted = set(), False
                full = full or time.monotonic() >= next_full
                try:
                    report = self.run_once(None if full else paths)
                except (FsmemError, OSError) as error:
                    log.warning("sync pass failed (%s); trying again", error)
                    with self._wake:
                        self._pending |= paths
                        self._full_wanted = self._full_wanted or full
                    stop.wait(POLL)
                    continue
                if full:
                    next_full = time.monotonic() + full_every
                if on_pass is not None and report.changed:
                    on_pass(report)
                with self._wake:
                    if not (self._pending or self._full_wanted or stop.is_set()):
                        self._wake.wait(timeout=POLL)
                time.sleep(0.05)  # let a burst of saves settle into one pass
        finally:
            listener.stop()
            stop_watching()

    def stop_waiting(self) -> None:
        self._poke()

    def _changed_here(self, path: str, is_folder: bool) -> None:
        """The watcher's news: a file names itself; a folder (made, moved, removed) asks for a full pass."""
        path = nfc(path)
        if is_folder:
            self._poke(full=True)
        elif mirrored(path):
            self._poke(path)

    def _poke(self, path: str | None = None, full: bool = False) -> None:
        with self._wake:
            if path is not None:
                self._pending.add(path)
            self._full_wanted = self._full_wanted or full
            self._wake.notify_all()
