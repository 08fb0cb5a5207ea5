"""What one process knows of the facts (``FactView``): every fact file parsed once, the chains resolved,
and the looks that keep both up to date for as little as each call needs.

Before each call the view checks only what the call depends on (see :meth:`FactView.load`): the
facts folders' stamps, the journal of changes through fsmem (:mod:`.journal`) and the stamps of the
call's files; anything that look cannot explain falls back to the full look, every file's stamp,
parsed again only where it changed. A new process answers a listing from the kept view (:mod:`.kept`)
when the files it rests on are as kept, and otherwise starts from it: the files as parsed and the
chains as resolved, brought up to the files by resolving only the chains that changed; each look that
changed something, and each change, brings the kept view up to date in turn.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Container, Hashable, Iterable, Mapping
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from fsmem._core import chains
from fsmem._core import facts as rules
from fsmem._core.chains import Op, Resolution
from fsmem._core.facts import Fact
from fsmem._core.layout import FACTS_DIR, HISTORY_DIR
from fsmem._core.versions import version_of
from fsmem._errors import BadFact
from fsmem._memory.facts.journal import JOURNAL_FILE, append, journal_end, journal_since
from fsmem._memory.facts.kept import VIEW_FILE, KeptView, Listing, Read, every_entry
from fsmem._memory.facts.problems import ID_REPAIR, Problem, limit_problems
from fsmem._store.types import FactStamp

if TYPE_CHECKING:
    from fsmem._store.interface import Store, StoreChange

__all__ = ["FactView", "fact_paths", "thing_paths", "chain_paths", "known_of"]

_NOT_A_FILE = {  # what else the store found in the facts folders (Store.stamps)
    "link": "a link, not a fact file; facts are plain files written by fsmem",
    "folder": "a folder inside the facts folder; facts are files, one a fact",
    "special": "a FIFO, a device or a socket, not a fact file; facts are plain files written by fsmem",
}


@runtime_checkable
class _Word(Protocol):
    """A watcher whose word a view can follow (the folder's; a PostgreSQL feed names no file's event)."""

    def unapplied(self) -> set[str] | None: ...

    def listen(self, hear: Callable[[set[str] | None], None]) -> None: ...


def _place(path: str) -> tuple[str, rules.Location]:
    """The id and location of a path the scan found to be a fact file (it files any other as a problem)."""
    place = rules.fact_id_of_path(path)
    assert place is not None, path
    return place


def _about_facts(path: str) -> bool:
    """Whether a changed path may change the facts: a file in the facts folders, or a folder on the way."""
    return path.startswith(FACTS_DIR + "/") or path == FACTS_DIR or FACTS_DIR.startswith(path + "/")


def _listed(facts: list[Fact], broken: list[Problem], limits: dict[str, tuple[Fact, str | None]] | None) -> Listing:
    over = limit_problems(facts, limits) if limits is not None else []
    return Listing(facts, sorted([*broken, *over], key=lambda p: (p.path, p.message)))


def fact_paths(resolution: Resolution, fact_id: str) -> list[str] | None:
    """The files a call about ``fact_id`` depends on; None (look at all) for an id not known."""
    return chain_paths(resolution, fact_id) if fact_id in resolution.facts else None


def thing_paths(resolution: Resolution, key: tuple[str, str]) -> list[str]:
    """The files of the chain of the fact that holds for a thing (none for a new thing)."""
    holding = resolution.holding(key)
    return chain_paths(resolution, holding.id) if holding is not None else []


def chain_paths(resolution: Resolution, fact_id: str) -> list[str]:
    """Every file of the chain ``fact_id`` belongs to (both copies where a crash left two)."""
    ids = resolution.chains[resolution.chain_of[fact_id]] if fact_id in resolution.chain_of else [fact_id]
    return [rules.fact_path(fid, location) for fid in ids for location in resolution.stored.get(fid, {})]


def known_of(resolution: Resolution) -> list[tuple[str, str]]:
    """The subjects and attributes in use (by the facts that hold), as last written."""
    seen: dict[tuple[str, str], Fact] = {}
    for fact in resolution.current():
        seen[fact.key] = fact
    return sorted(
        ((f.subject, f.attribute) for f in seen.values()),
        key=lambda pair: (pair[0].casefold(), pair[1].casefold()),
    )


class FactView:
    """The parsed fact files of one root and their resolution. Every method runs under ``guard``."""

    def __init__(self, drive: Store, word: Callable[[], object | None] | None = None) -> None:
        self.drive = drive
        # The process's watcher, where one runs (``word()``; None: none): its events name every file
        # that changed, so a look needs no stat of the others. ``_heard``: the fact files named since
        # the last look (None: its word does not vouch, as before the first full look).
        self._word = word
        self._word_from: object | None = None
        self._heard: set[str] | None = None
        self._ear = threading.Lock()
        self._limits: dict[str, tuple[Fact, str | None]] = {}  # each fact's limit broken, found once
        self.guard = threading.RLock()
        self.files: dict[str, Read] = {}
        self._snapshot: dict[str, FactStamp] | None = None
        self.resolution: Resolution | None = None
        self._scan_problems: list[tuple[Problem, FactStamp | None]] = []
        self.kept = KeptView(drive.state / VIEW_FILE)
        self._started = False  # the kept view was read (at the first full look)
        self._dirty: set[str] | None = None  # files the kept view lacks (None: all: it is made anew)
        # What the last look saw beyond the files' own stamps: the facts folders' stamps and how far
        # the journal of changes was read. Together they say when a look at a few files is enough.
        self._folders: Hashable | None = None
        self._journal_file = drive.state / JOURNAL_FILE
        self._journal_read = (0, 0)  # the journal's inode and how far this view has read it

    def _scan(self) -> tuple[dict[str, FactStamp], list[tuple[Problem, FactStamp | None]]]:
        """The stamp of every fact file (the store's ``stamps``: one ``stat`` a file on the folder, one
        query on PostgreSQL), and what under the facts folders is no fact, with its stamp (None for
        what is no plain file)."""
        stamps, others = self.drive.stamps((FACTS_DIR, HISTORY_DIR))
        problems: list[tuple[Problem, FactStamp | None]] = [
            (Problem(path, _NOT_A_FILE.get(what) or f"the folder cannot be read ({what})"), None)
            for path, what in others.items()
            if not (path == HISTORY_DIR and what == "folder")
        ]
        known = self.files
        for path in [path for path in stamps if path not in known and rules.fact_id_of_path(path) is None]:
            problems.append((Problem(path, rules.NOT_A_FACT_NAME), stamps.pop(path)))
        return stamps, problems

    def _scan_all(self) -> dict[str, FactStamp | None]:
        """Every path under the facts folders with its stamp (None: no plain file), as the kept view
        records what it rests on."""
        return every_entry(*self.drive.stamps((FACTS_DIR, HISTORY_DIR)))

    def _read_many(self, paths: list[str]) -> dict[str, Read]:
        """Read and parse fact files (the store reads them all at once: one query on PostgreSQL)."""
        from fsmem._memory.facts import files as file_format  # YAML's reader: not for a listing the kept view answers

        found = self.drive.read_stamped(paths)
        reads = {}
        for path in paths:
            fid, location = _place(path)
            if path not in found:
                reads[path] = Read((0, 0, 0), problem="vanished while being read")
                continue
            data, stamp = found[path]
            version = version_of(data)
            known = self.files.get(path)
            if known is not None and known.version == version:  # read again, as it was: no parse
                reads[path] = known._replace(stamp=stamp)
                continue
            try:
                reads[path] = Read(stamp, location, file_format.parse(data, fid), version=version)
            except BadFact as error:
                mended, subject = file_format.parse_broken(data, fid)
                reads[path] = Read(stamp, problem=error.message, mended=mended, subject=subject, version=version)
        return reads

    def _folder_stamps(self) -> Hashable | None:
        """What changes when a fact file is added, removed or saved by rename (the store's
        ``folders_mark``; None where it cannot tell: every look is then the full one)."""
        return self.drive.folders_mark((FACTS_DIR, HISTORY_DIR))

    def load(self, scope: Callable[[Resolution], Iterable[str] | None] | None = None) -> Resolution:
        """The canonical state of the facts now.

        With ``scope`` (the files a call depends on, given the state last seen; None for "all") the
        look is cheap: the folders' stamps, the journal's new lines and the stamps of those files.
        Files added, removed or saved by rename change a folder's stamp; changes through fsmem are in
        the journal; an edit in place shows in the file's own stamp. Anything the cheap look cannot explain
        falls back to the full look: every file's stamp, parsed again only where it changed."""
        with self.guard:
            listening = self._listening()  # a watcher heard of first: its word counts from this full look on
            if self.resolution is not None and listening:
                resolution = self._heard_look(self.resolution)
                if resolution is not None:
                    return resolution
            elif scope is not None and self.resolution is not None and self._folders is not None:
                resolution = self._cheap_look(self.resolution, scope)
                if resolution is not None:
                    return resolution
            return self._full_look()

    # ---- the watcher's word -----------------------------------------------------------------

    def _listening(self) -> bool:
        """Whether the process's watcher's word vouches for every change since the last look: this
        view listens to the watcher that runs now (events named no change lost since), and a full look
        has begun since it started listening."""
        watcher = self._vouching_watcher()
        if watcher is None:
            self._word_from = None
            return False
        if watcher is not self._word_from:
            self._word_from = watcher
            with self._ear:
                self._heard = None  # its word counts from the next full look on
            watcher.listen(self._hear)
            return False
        with self._ear:
            return self._heard is not None

    def _vouching_watcher(self) -> _Word | None:
        """The process's watcher, while it runs with no event lost and can tell this view each event
        (None: none runs, or its word cannot vouch)."""
        watcher = self._word() if self._word is not None else None
        return watcher if isinstance(watcher, _Word) and watcher.unapplied() is not None else None

    def _hear(self, paths: set[str] | None) -> None:
        """The watcher's word (from its thread): these paths changed; None: events may have been lost."""
        with self._ear:
            if paths is None:
                self._heard = None
            elif self._heard is not None:
                self._heard.update(path for path in paths if _about_facts(path))

    def _cheap_look(
        self, resolution: Resolution, scope: Callable[[Resolution], Iterable[str] | None]
    ) -> Resolution | None:
        journal, folders = journal_end(self._journal_file), self._folder_stamps()
        assert self._folders is not None
        followed = journal_since(self._journal_file, journal, self._journal_read, self._folders)
        if followed is None or followed[1] != folders:
            return None  # the folders changed in a way no change through fsmem explains
        wanted = scope(resolution)
        if wanted is None:
            return None
        return self._refresh(resolution, {*wanted, *followed[0]}, folders, journal)

    def _heard_look(self, resolution: Resolution) -> Resolution | None:
        """The look of a process whose watcher runs: the files its events named since the last look,
        and nothing else (None where one of them is no fact file: a folder moved, a name that is no
        fact's; then the full look)."""
        journal, folders = journal_end(self._journal_file), self._folder_stamps()  # before the word is taken
        with self._ear:
            heard, self._heard = self._heard, set()
        if heard is None:
            return None
        if any(rules.fact_id_of_path(path) is None for path in heard):
            return None
        if folders != self._folders and any(self.drive.stamp(path) is None for path in heard):
            return None  # a file gone, or a link or a folder in its place: the full look says which
        return self._refresh(resolution, heard, folders, journal)

    def _refresh(
        self, resolution: Resolution, paths: Iterable[str], folders: Hashable | None, journal: tuple[int, int]
    ) -> Resolution | None:
        """The state brought up to ``paths`` as they are now (each one's stamp; read again where it
        changed); None where what changed needs the full look (a file that cannot be read, or one
        that could not before)."""
        ops: list[Op] = []
        reads: dict[str, Read] = {}
        for path in sorted(paths):
            known = self.files.get(path)
            try:
                stamp = self.drive.stamp(path)
            except OSError:
                return None
            if stamp is None:  # no plain file there: gone (a link or a folder in its place shows in the folders' mark)
                if known is None:
                    continue
                if known.fact is None:
                    return None
                ops.append(Op("delete", path))
                continue
            if known is not None and known.stamp == stamp:
                continue
            if known is not None and known.fact is None:
                return None
            read = reads[path] = self._read_many([path])[path]
            if read.fact is None:
                return None  # an unreadable file: the full look reports it and freezes its chain
            if known is not None and known.fact == read.fact:  # read again within its racy window: as it was
                self.files[path] = read
                if self._snapshot is not None:
                    self._snapshot[path] = read.stamp
                continue
            ops.append(Op("write", path, read.fact))
        if ops:
            snapshot = self._snapshot
            for op in ops:
                if op.kind == "delete":
                    self.files.pop(op.path, None)
                    if snapshot is not None:
                        snapshot.pop(op.path, None)
                else:
                    self.files[op.path] = reads[op.path]
                    if snapshot is not None:
                        snapshot[op.path] = reads[op.path].stamp
            resolution.apply(ops)
            self._note_dirty(op.path for op in ops)
        self._folders, self._journal_read = folders, journal
        if ops:
            self._save(folders)
        return resolution

    def _full_look(self) -> Resolution:
        """Every file's stamp; files parsed again only where they changed; the state advanced file
        by file (rebuilt only when an unreadable file appears or goes)."""
        with self.guard:
            if not self._started:
                self._start()
            if self._word_from is not None:
                with self._ear:
                    self._heard = set()  # before the look: what is heard from now on is looked at next time
            folders = self._folder_stamps()  # before the look: a change after it shows next time
            looked = self._look_at_files()
            if looked is None:
                assert self.resolution is not None
                if self._dirty is None:
                    self._save(folders)
                return self.resolution
            ops, incremental = looked
            if incremental and self.resolution is not None:
                if ops:  # none where only files read within their racy window were read again, as they were
                    self.resolution.apply(ops)
            else:
                self.resolution = chains.resolve(*self._stored())
                self._dirty = None  # resolved anew: every chain's rows are written again
            self._save(folders)
            return self.resolution

    def _start(self) -> None:
        """Start from the kept view: the files as parsed and the chains as resolved, where each chain
        still rests on the files as parsed (else every chain is resolved again)."""
        self._started = True
        kept = self.kept.load()
        if kept is None:
            return
        files, kept_chains, rests = kept
        self.files = files
        self._snapshot = {path: read.stamp for path, read in files.items()}
        if any(files.get(path) is None or files[path].stamp != stamp for path, stamp in rests.items()):
            return
        stored, broken = self._stored()
        self.resolution = chains.restore(stored, kept_chains, broken)
        if self.resolution is not None:
            self._dirty = set()

    def _note_dirty(self, paths: Iterable[str]) -> None:
        if self._dirty is not None:
            self._dirty.update(paths)

    def _save(self, folders: Hashable | None) -> None:
        """Bring the kept view up to what this view holds, read at the folders' mark ``folders``."""
        if self.resolution is None:
            return
        unreadable = [(problem, self.files[problem.path].stamp) for problem in self._unreadable()]
        self.kept.save(folders, self.files, self.resolution, self._dirty, [*self._scan_problems, *unreadable])
        self._dirty = set()

    def _look_at_files(self) -> tuple[list[Op], bool] | None:
        """Every file's stamp, and files parsed again where they changed: the ops that bring the
        state last resolved to the files, and whether applying them is enough (else resolve again);
        None when nothing changed since."""
        journal, folders = journal_end(self._journal_file), self._folder_stamps()  # before the scan: later changes show
        stamps, self._scan_problems = self._scan()
        self._folders, self._journal_read = folders, journal
        if self.resolution is not None and stamps == self._snapshot:
            return None
        incremental = self.resolution is not None
        ops: list[Op] = []
        files: dict[str, Read] = {}
        stale = [
            path for path, stamp in stamps.items() if (seen := self.files.get(path)) is None or seen.stamp != stamp
        ]
        changed = self._read_many(stale)  # at once: one query on PostgreSQL however many
        for path in stamps:
            known = self.files.get(path)
            if path not in changed:
                assert known is not None
                files[path] = known
                continue
            read = files[path] = changed[path]
            if read.fact is None or (known is not None and known.fact is None):
                incremental = False
            elif known is not None and known.fact == read.fact:  # read again within its racy window: as it was
                if read.stamp != stamps[path]:
                    changed.pop(path)  # the kept view's row stands; the next look reads it again
            else:
                ops.append(Op("write", path, read.fact))
        for path, known in self.files.items():
            if path not in stamps:
                if known.fact is None:
                    incremental = False
                ops.append(Op("delete", path))
        self.files = files
        # the stamps kept for what was read: a file read within its racy window is read again next look
        self._snapshot = {path: read.stamp for path, read in files.items()}
        self._note_dirty([*changed, *(op.path for op in ops if op.kind == "delete")])
        return ops, incremental

    def _stored(self, ids: Container[str] | None = None) -> tuple[list[tuple[rules.Location, Fact]], set[str]]:
        """The facts read (of ``ids`` only, when given) as :func:`chains.resolve` takes them, and the
        ids of the files that cannot be read."""
        pairs: list[tuple[rules.Location, Fact]] = []
        broken: set[str] = set()
        for path, read in sorted(self.files.items()):
            if read.fact is not None:
                assert read.location is not None  # a fact read from a file is placed by its path
                if ids is None or read.fact.id in ids:
                    pairs.append((read.location, read.fact))
            else:
                broken.add(_place(path)[0])
        return pairs, broken

    def listing(self, subject: str | None, limits: bool = True) -> Listing:
        """The facts that hold (about ``subject``, or all) and the broken files (that may be about it),
        with the facts that break a limit (unless ``limits`` is False: the facts are all a caller
        wants). A view that has not looked yet asks the kept view first: a new process's `fsmem facts list`."""
        with self.guard:
            # A process whose watcher runs takes one full look and follows the watcher's word from then
            # on; a peek would stat every file each time it lists every subject (a resident serving the
            # shell's `fsmem facts list` would pay it for every answer).
            if self.resolution is None and self._vouching_watcher() is None:
                every = self._scan_all if subject is None else None  # a process that stays: every file's stamp
                kept = self.kept.peek(subject, self._folder_stamps, self.drive.stamp, every)
                if kept is not None:
                    return kept
            if subject is None:
                return _listed(self.load().current(), self.problems(), self._limits if limits else None)
            resolution = self.load(
                lambda resolution: [
                    path for fact in resolution.current(subject) for path in chain_paths(resolution, fact.id)
                ]
            )
            wanted = rules.clean_name(subject).casefold()
            broken = [
                p for p in self.problems() if p.subject is None or rules.clean_name(p.subject).casefold() == wanted
            ]
            return _listed(resolution.current(subject), broken, self._limits if limits else None)

    def mendable_ids(self) -> list[Op]:
        """The writes that mend the files whose only fault is their id (the id taken from the name)."""
        return [Op("write", path, read.mended) for path, read in self._broken_reads() if read.mended is not None]

    def problems(self) -> list[Problem]:
        """Files that are no fact, and facts that cannot be read, as of the last load."""
        return sorted([*(problem for problem, _ in self._scan_problems), *self._unreadable()], key=lambda p: p.path)

    def _unreadable(self) -> list[Problem]:
        return [
            Problem(
                path,
                read.problem or "cannot be read",
                repair=ID_REPAIR if read.mended is not None else None,
                subject=read.subject,
            )
            for path, read in self._broken_reads()
        ]

    def _broken_reads(self) -> list[tuple[str, Read]]:
        """The files read that are no usable fact, by path. Where the state is resolved, only the
        files of the ids it holds as unreadable are looked at (a file turns unreadable only by a look
        that resolves again), not all 50,000: a watching process's listing of one subject needs them."""
        if self.resolution is None:
            return sorted((path, read) for path, read in self.files.items() if read.fact is None)
        found = []
        for fid in self.resolution.broken:
            for location in ("current", "history"):
                path = rules.fact_path(fid, location)
                read = self.files.get(path)
                if read is not None and read.fact is None:
                    found.append((path, read))
        return sorted(found)

    # ---- after a change ---------------------------------------------------------------------

    def remember(
        self, tx: StoreChange, resolution: Resolution, ops: list[Op], written: Mapping[str, str] | None = None
    ) -> None:
        """After ``ops`` were written in ``tx``: remember what was written so the next read parses nothing,
        and tell other views through the journal."""
        before = self._folders  # as the load under this change's lock saw them
        snapshot = (
            self._snapshot if self._snapshot is not None else {path: read.stamp for path, read in self.files.items()}
        )
        final = {op.path: op for op in ops}  # a batch may write a file and delete it later
        for path, op in final.items():
            if op.kind == "delete":
                self.files.pop(path, None)
                snapshot.pop(path, None)
            else:
                stamp = tx.stamp(path)
                found = rules.fact_id_of_path(path)
                assert found is not None and op.fact is not None and stamp is not None
                self.files[path] = Read(stamp, found[1], op.fact, version=(written or {}).get(path))
                snapshot[path] = stamp
        self._snapshot = snapshot
        self.resolution = resolution
        self._note_dirty(final)
        if final:
            self._note_change(before, final)

    def _note_change(self, before: Hashable | None, paths: Iterable[str]) -> None:
        """After a change (under the root lock): tell other views which files changed and what the
        folders' stamps went from and to, so they can follow without a full look."""
        after = self._folder_stamps()
        self._save(after)  # under the root's lock: the kept view follows each change
        end = None if after is None else append(self._journal_file, before, after, paths)
        if end is None:  # a store that cannot tell, or a journal not written: every look is the full one
            self._folders = None
            return
        if before is not None:
            self._folders, self._journal_read = after, end

    def distrust(self) -> None:
        """A change refused before, during or at its commit: what this view holds may be what was
        planned, not what is kept. The next call looks again."""
        self.resolution = None
        self._snapshot = None
        self._folders = None

    def want_full_look(self) -> None:
        """The next load looks at every file's stamp, whatever the journal or the watcher says."""
        self._snapshot = None
        with self._ear:
            self._heard = None
