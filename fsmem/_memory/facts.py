"""Facts on the drive: ``notes/memory/<id>.md`` while they hold, ``notes/memory/history/<id>.md`` after.

    facts = memory.facts
    kept = facts.keep("Ana", "role", "Ana works in research.", source="chat: Planning", said="2026-10-12")
    kept.outcome, kept.replaced        # "current", the fact it moved to the history (or None)
    facts.current("ana")               # what holds now about Ana
    facts.history(kept.fact.id)        # the chain, newest first
    facts.edit(kept.fact.id, fact="Ana works in research, on search.")
    facts.forget(kept.fact.id)         # the fact and the chain it replaced

The rules are :mod:`fsmem._core.facts` and :mod:`fsmem._core.chains`; this module reads and writes the
files through :mod:`fsmem._index.front_matter` (python-frontmatter, the one reader of front matter), keeps
every fact in memory once parsed (a new process starts from a cache keyed by each file's size, mtime
and inode), checks before each call only what the call depends on (see :meth:`Facts._load`), and runs
each plan through one drive change: locked, atomic per file, versions kept, logged, indexed on commit.
A change cut short by a crash is finished by the next change (the repair), and every read already sees
it finished.
"""

from __future__ import annotations

import json
import os
import secrets as random_source
import tempfile
import threading
from collections.abc import Callable, Container, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import frontmatter

from fsmem._core import chains
from fsmem._core import facts as rules
from fsmem._core.chains import Op, Resolution
from fsmem._core.extract import (
    Proposal,
    classify,
    conversation_meta,
    conversation_text,
    extraction_messages,
    parse_proposals,
)
from fsmem._core.facts import Draft, Fact
from fsmem._core.layout import FACTS_DIR, HISTORY_DIR
from fsmem._env.resources import data_dir
from fsmem._errors import BadFact, BadPath, FactSensitive, FsmemError, SetupError
from fsmem._index.front_matter import HANDLER, SafeDumper, YAMLError
from fsmem._store.atomic import write_atomic
from fsmem._store.types import FactStamp

if TYPE_CHECKING:
    from fsmem._store.interface import Store, StoreChange

__all__ = ["Facts", "Kept", "Problem", "Extraction", "render", "parse", "PROMPT_FILE"]

PROMPT_FILE = data_dir("prompts") / "extract_facts.md"
CACHE_FILE = "cache/facts.json"  # under .fsmem/: derived, deletable, saves a new process the parsing
JOURNAL_FILE = "cache/facts.journal"  # under .fsmem/: one line a change through fsmem (derived, deletable)
JOURNAL_LIMIT = 1 << 20  # bytes; a change finding the journal longer starts a new one
CACHE_AFTER = 200  # files read or written since the cache was written before a full look writes it again
_TIME_FIELDS = {"said", "kept", "edited", "until"}
_NOT_A_FILE = {  # what else the store found in the facts folders (Store.stamps)
    "link": "a link, not a fact file; facts are plain files written by fsmem",
    "folder": "a folder inside the facts folder; facts are files, one a fact",
    "special": "a FIFO, a device or a socket, not a fact file; facts are plain files written by fsmem",
}


# --------------------------------------------------------------------------- the file format


class _FactDumper(SafeDumper):
    """YAML as a person would write a fact by hand: ``edited:`` rather than ``edited: null``, and
    times as ``2026-11-30T10:00:00Z`` (midnight as the date alone), which YAML reads back as times."""

    def ignore_aliases(self, data: Any) -> bool:
        return True  # two equal dates are written twice, never as an anchor and an alias


_FactDumper.add_representer(type(None), lambda dumper, _: dumper.represent_scalar("tag:yaml.org,2002:null", ""))
_FactDumper.add_representer(
    datetime, lambda dumper, moment: dumper.represent_scalar("tag:yaml.org,2002:timestamp", rules.format_when(moment))
)


def render(fact: Fact) -> bytes:
    """The file of a fact: front matter in a fixed order, then the sentence."""
    fields = rules.fields_of(fact)
    fields.update({name: getattr(fact, name) for name in _TIME_FIELDS})  # datetimes: written unquoted
    post = frontmatter.Post(fact.text)
    post.metadata.update(fields)
    text = frontmatter.dumps(
        post, handler=HANDLER, Dumper=_FactDumper, sort_keys=False, default_flow_style=None, width=1_000_000
    )
    return (text + "\n").encode("utf-8")


def parse(data: bytes, file_id: str) -> Fact:
    """A fact from its file, as a person may have edited it; :class:`BadFact` says what to mend."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise BadFact("the file is not UTF-8 text; save it as UTF-8") from None
    if not text.lstrip("\ufeff").startswith("---"):
        raise BadFact(
            "the file has no front matter: it should start with a `---` line, the fields, and another `---` line"
        )
    try:
        post = frontmatter.loads(text.lstrip("\ufeff"), handler=HANDLER)
    except YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise BadFact(
            f"the front matter is not valid YAML{where}; mend it or restore a version with `fsmem versions`"
        ) from None
    except Exception as error:  # noqa: BLE001 - whatever a broken file makes the parser raise
        raise BadFact(f"the front matter cannot be read ({type(error).__name__}); mend it") from None
    return rules.fact_from_fields(post.metadata, post.content, file_id)


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Kept:
    """What became of a fact kept: ``current``, ``history`` (said earlier), or ``known``."""

    outcome: str
    fact: Fact
    replaced: Fact | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "fact": self.fact.to_dict(),
            "replaced": self.replaced.to_dict() if self.replaced else None,
        }


@dataclass(frozen=True)
class Problem:
    """A fact file fsmem cannot use as it is, and what to do about it."""

    path: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


@dataclass(frozen=True)
class Extraction:
    """What the extractor proposed from a conversation. Nothing is kept until chosen."""

    proposals: list[Proposal] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"proposals": [p.to_dict() for p in self.proposals], "notes": list(self.notes)}


def _place(path: str) -> tuple[str, rules.Location]:
    """The id and location of a path the scan found to be a fact file (it files any other as a problem)."""
    place = rules.fact_id_of_path(path)
    assert place is not None, path
    return place


@dataclass(frozen=True)
class _Read:
    stamp: FactStamp  # the store's: (size, mtime_ns, inode) on the folder, the version on PostgreSQL
    location: rules.Location | None = None
    fact: Fact | None = None
    problem: str | None = None


# --------------------------------------------------------------------------- Facts


class Facts:
    """The facts of one root. Reads need no lock; every change holds the root's write lock."""

    def __init__(self, drive: Store, *, clock: Callable[[], datetime] | None = None) -> None:
        self.drive = drive
        self._clock = clock or (lambda: datetime.now(UTC))
        self._guard = threading.RLock()
        self._files: dict[str, _Read] = {}
        self._snapshot: dict[str, FactStamp] | None = None
        self._resolution: Resolution | None = None
        self._scan_problems: list[Problem] = []
        self._last_id: str | None = None
        self._cache_file = drive.state / CACHE_FILE
        self._files.update(_read_cache(self._cache_file))
        self._unsaved = 0  # files read or written since the cache file was last written
        # What the last look saw beyond the files' own stamps: the facts folders' stamps and how far
        # the journal of changes was read. Together they say when a look at a few files is enough.
        self._folders: Hashable | None = None
        self._journal_file = drive.state / JOURNAL_FILE
        self._journal_read = (0, 0)  # the journal's inode and how far this view has read it

    # ---- reading ----------------------------------------------------------------------------

    def _now(self) -> datetime:
        return self._clock().astimezone(UTC).replace(microsecond=0)

    def _scan(self) -> tuple[dict[str, FactStamp], list[Problem]]:
        """The stamp of every fact file (the store's ``stamps``: one ``stat`` a file on the folder, one
        query on PostgreSQL), and what under the facts folders is no fact: the freshness check every
        read pays."""
        stamps, others = self.drive.stamps((FACTS_DIR, HISTORY_DIR))
        problems = [
            Problem(path, _NOT_A_FILE.get(what) or f"the folder cannot be read ({what})")
            for path, what in others.items()
            if not (path == HISTORY_DIR and what == "folder")
        ]
        known = self._files
        for path in [path for path in stamps if path not in known and rules.fact_id_of_path(path) is None]:
            del stamps[path]
            problems.append(
                Problem(
                    path,
                    "not a fact file: facts are named <id>.md (letters, digits, - and _); keep notes "
                    "elsewhere, or keep the fact with `fsmem facts keep`",
                )
            )
        return stamps, problems

    def _read_many(self, paths: list[str]) -> dict[str, _Read]:
        """Read and parse fact files (the store reads them all at once: one query on PostgreSQL)."""
        found = self.drive.read_stamped(paths)
        reads = {}
        for path in paths:
            fid, location = _place(path)
            if path not in found:
                reads[path] = _Read((0, 0, 0), problem="vanished while being read")
                continue
            data, stamp = found[path]
            try:
                reads[path] = _Read(stamp, location, parse(data, fid))
            except BadFact as error:
                reads[path] = _Read(stamp, problem=error.message)
        return reads

    def _folder_stamps(self) -> Hashable | None:
        """What changes when a fact file is added, removed or saved by rename (the store's
        ``folders_mark``; None where it cannot tell: every look is then the full one)."""
        return self.drive.folders_mark((FACTS_DIR, HISTORY_DIR))

    def _journal_end(self) -> tuple[int, int]:
        """Which journal file (its inode: a reset makes a new one) and how long it is."""
        try:
            info = os.stat(self._journal_file)
        except OSError:
            return (0, 0)
        return (info.st_ino, info.st_size)

    def _journal_since(self, journal: tuple[int, int]) -> tuple[set[str], Hashable | None] | None:
        """The fact files changes through fsmem touched since this view last looked, and the folders'
        stamps after them; None unless each change started from the stamps the one before left
        (anything else — a hand edit between two changes, a torn line — calls for the full look)."""
        assert self._folders is not None
        state, touched = self._folders, set[str]()
        (inode, end), (read_inode, start) = journal, self._journal_read
        if inode != read_inode or end < start:
            return None  # the journal was reset since: start over
        if end == start:
            return touched, state
        try:
            with open(self._journal_file, "rb") as handle:
                if os.fstat(handle.fileno()).st_ino != inode:
                    return None
                handle.seek(start)
                lines = handle.read(end - start).split(b"\n")
        except OSError:
            return None
        for line in lines:
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                before = _mark(record["before"])
                after = _mark(record["after"])
                paths = record["paths"]
            except (ValueError, KeyError, TypeError):
                return None  # a line being appended, or torn by a crash
            if before != state:
                return None
            state = after
            touched.update(path for path in paths if isinstance(path, str) and rules.fact_id_of_path(path))
        return touched, state

    def _note_change(self, before: Hashable | None, paths: Iterable[str]) -> None:
        """After a change (under the root lock): tell other views which files changed and what the
        folders' stamps went from and to, so they can follow without a full look."""
        after = self._folder_stamps()
        if after is None:  # a store that cannot tell: every look is the full one
            self._folders = None
            return
        line = json.dumps({"before": before, "after": after, "paths": sorted(paths)}) + "\n"
        try:
            self._journal_file.parent.mkdir(parents=True, exist_ok=True)
            if self._journal_end()[1] > JOURNAL_LIMIT:  # start a new file: other views look at all once
                write_atomic(self._journal_file, b"", durable=False)
            fd = os.open(self._journal_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(fd, line.encode("utf-8"))
                info = os.fstat(fd)
            finally:
                os.close(fd)
        except OSError:
            self._folders = None  # others fall back to the full look; so does this view
            return
        if before is not None:
            self._folders, self._journal_read = after, (info.st_ino, info.st_size)

    def _fact_paths(self, resolution: Resolution, fact_id: str) -> list[str] | None:
        """The files a call about ``fact_id`` depends on; None (look at all) for an id not known."""
        return self._chain_paths(resolution, fact_id) if fact_id in resolution.facts else None

    def _thing_paths(self, resolution: Resolution, key: tuple[str, str]) -> list[str]:
        """The files of the chain of the fact that holds for a thing (none for a new thing)."""
        holding = resolution.holding(key)
        return self._chain_paths(resolution, holding.id) if holding is not None else []

    def _chain_paths(self, resolution: Resolution, fact_id: str) -> list[str]:
        """Every file of the chain ``fact_id`` belongs to (both copies where a crash left two)."""
        ids = resolution.chains[resolution.chain_of[fact_id]] if fact_id in resolution.chain_of else [fact_id]
        return [rules.fact_path(fid, location) for fid in ids for location in resolution.stored.get(fid, {})]

    def _load(self, scope: Callable[[Resolution], Iterable[str] | None] | None = None) -> Resolution:
        """The canonical state of the facts now.

        With ``scope`` (the files a call depends on, given the state last seen; None for "all") the
        look is cheap: the folders' stamps, the journal's new lines and the stamps of those files.
        Files added, removed or saved by rename change a folder's stamp; changes through fsmem are in
        the journal; an edit in place shows in the file's own stamp. Anything the cheap look cannot explain
        falls back to the full look: every file's stamp, parsed again only where it changed."""
        with self._guard:
            if scope is not None and self._resolution is not None and self._folders is not None:
                resolution = self._cheap_look(self._resolution, scope)
                if resolution is not None:
                    return resolution
            return self._full_look()

    def _cheap_look(
        self, resolution: Resolution, scope: Callable[[Resolution], Iterable[str] | None]
    ) -> Resolution | None:
        journal, folders = self._journal_end(), self._folder_stamps()
        followed = self._journal_since(journal)
        if followed is None or followed[1] != folders:
            return None  # the folders changed in a way no change through fsmem explains
        touched = followed[0]
        wanted = scope(resolution)
        if wanted is None:
            return None
        ops: list[Op] = []
        reads: dict[str, _Read] = {}
        for path in sorted({*wanted, *touched}):
            known = self._files.get(path)
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
            ops.append(Op("write", path, read.fact))
        if ops:
            snapshot = self._snapshot
            for op in ops:
                if op.kind == "delete":
                    self._files.pop(op.path, None)
                    if snapshot is not None:
                        snapshot.pop(op.path, None)
                else:
                    self._files[op.path] = reads[op.path]
                    if snapshot is not None:
                        snapshot[op.path] = reads[op.path].stamp
            resolution.apply(ops)
            self._unsaved += len(ops)
        self._folders, self._journal_read = folders, journal
        return resolution

    def _full_look(self) -> Resolution:
        """Every file's stamp; files parsed again only where they changed; the state advanced file
        by file (rebuilt only when an unreadable file appears or goes)."""
        with self._guard:
            looked = self._look_at_files()
            if looked is None:
                assert self._resolution is not None
                return self._resolution
            ops, incremental = looked
            if incremental and self._resolution is not None:
                self._resolution.apply(ops)
                return self._resolution
            self._resolution = chains.resolve(*self._stored())
            return self._resolution

    def _look_at_files(self) -> tuple[list[Op], bool] | None:
        """Every file's stamp, and files parsed again where they changed: the ops that bring the
        state last resolved to the files, and whether applying them is enough (else resolve again);
        None when nothing changed since."""
        journal, folders = self._journal_end(), self._folder_stamps()  # before the scan: later changes show
        stamps, self._scan_problems = self._scan()
        self._folders, self._journal_read = folders, journal
        if self._resolution is not None and stamps == self._snapshot:
            return None
        incremental = self._resolution is not None
        ops: list[Op] = []
        files: dict[str, _Read] = {}
        stale = [
            path for path, stamp in stamps.items() if (seen := self._files.get(path)) is None or seen.stamp != stamp
        ]
        changed = self._read_many(stale)  # at once: one query on PostgreSQL however many
        for path in stamps:
            known = self._files.get(path)
            if path not in changed:
                assert known is not None
                files[path] = known
                continue
            read = files[path] = changed[path]
            if read.fact is None or (known is not None and known.fact is None):
                incremental = False
            else:
                ops.append(Op("write", path, read.fact))
        for path, known in self._files.items():
            if path not in stamps:
                if known.fact is None:
                    incremental = False
                ops.append(Op("delete", path))
        self._files = files
        self._snapshot = stamps  # a file changed between scan and read is simply read again
        self._unsaved += len(ops)
        if self._unsaved >= CACHE_AFTER:
            _write_cache(self._cache_file, files)
            self._unsaved = 0
        return ops, incremental

    def _stored(self, ids: Container[str] | None = None) -> tuple[list[tuple[rules.Location, Fact]], set[str]]:
        """The facts read (of ``ids`` only, when given) as :func:`chains.resolve` takes them, and the
        ids of the files that cannot be read."""
        pairs: list[tuple[rules.Location, Fact]] = []
        broken: set[str] = set()
        for path, read in sorted(self._files.items()):
            if read.fact is not None:
                assert read.location is not None  # a fact read from a file is placed by its path
                if ids is None or read.fact.id in ids:
                    pairs.append((read.location, read.fact))
            else:
                broken.add(_place(path)[0])
        return pairs, broken

    def _current_first(self, subject: str) -> list[Fact]:
        """``current(subject)`` in a view that has not resolved the chains yet (a new process's
        `fsmem facts list SUBJECT`): every file is checked as a full look checks it, but only the
        chains that hold a fact about the subject are resolved — the facts joined to those by any
        link, either way, as :func:`chains.resolve` joins them. The next call resolves them all."""
        self._look_at_files()
        wanted = rules.clean_name(subject).casefold()
        linked: dict[str, list[str]] = {}
        chain = []
        for read in self._files.values():
            fact = read.fact
            if fact is None:
                continue
            for other in (*fact.replaces, fact.replaced_by):
                if other is not None:
                    linked.setdefault(fact.id, []).append(other)
                    linked.setdefault(other, []).append(fact.id)
            if fact.key[0] == wanted:
                chain.append(fact.id)
        reached = set(chain)
        while chain:
            for other in linked.get(chain.pop(), ()):
                if other not in reached:
                    reached.add(other)
                    chain.append(other)
        return chains.resolve(*self._stored(reached)).current(subject)

    def _problems(self) -> list[Problem]:
        """Files that are no fact, and facts that cannot be read, as of the last load."""
        unreadable = [
            Problem(path, read.problem or "cannot be read")
            for path, read in sorted(self._files.items())
            if read.fact is None
        ]
        return [*self._scan_problems, *unreadable]

    def get(self, fact_id: str) -> Fact:
        with self._guard:
            return self._load(lambda resolution: self._fact_paths(resolution, fact_id)).get(fact_id)

    def resolve_id(self, typed: str) -> str:
        """The full id an unambiguous prefix stands for, as a person types it (``fsmem facts show 2026113``)."""
        from fsmem._core.prefix import resolve_prefix

        with self._guard:
            resolution = self._load()
            return resolve_prefix(typed, [*resolution.facts, *resolution.broken], "fact", "fsmem facts list --all")

    def current(self, subject: str | None = None) -> list[Fact]:
        """The facts that hold now (of ``subject``, ignoring case and extra spaces), oldest said first."""
        with self._guard:
            if subject is None:
                return self._load().current()
            if self._resolution is None:
                return self._current_first(subject)
            return self._load(
                lambda resolution: [
                    path for fact in resolution.current(subject) for path in self._chain_paths(resolution, fact.id)
                ]
            ).current(subject)

    def history(self, fact_id: str) -> list[Fact]:
        """The chain ``fact_id`` belongs to, newest first: what holds now, then what it replaced."""
        with self._guard:
            resolution = self._load(lambda resolution: self._fact_paths(resolution, fact_id))
            resolution.get(fact_id)
            return list(reversed(resolution.chain(fact_id)))

    def known(self) -> list[tuple[str, str]]:
        """The subjects and attributes in use (by the facts that hold), as last written."""
        with self._guard:
            seen: dict[tuple[str, str], Fact] = {}
            for fact in self._load().current():
                seen[fact.key] = fact
            return sorted(
                ((f.subject, f.attribute) for f in seen.values()),
                key=lambda pair: (pair[0].casefold(), pair[1].casefold()),
            )

    def all(self) -> list[Fact]:
        """Every readable fact, holding or replaced, oldest said first."""
        with self._guard:
            return sorted(self._load().facts.values(), key=Fact.order)

    def check(self) -> list[Problem]:
        """What a person should mend: unreadable files, rule breaks, half-finished changes."""
        with self._guard:
            resolution = self._load()
            problems = self._problems()
            for fact in sorted(resolution.facts.values(), key=lambda f: f.id):
                try:
                    rules.check_draft(
                        fact.subject, fact.attribute, fact.text, fact.source, fact.said, now=max(self._now(), fact.said)
                    )
                except FsmemError as error:  # limits, secrets (the message never repeats one)
                    problems.append(Problem(fact.path, error.message))
            for ids in resolution.duplicates():
                fact = resolution.facts[ids[0]]
                problems.append(
                    Problem(
                        FACTS_DIR,
                        f"{len(ids)} facts hold for {fact.subject} / "
                        f"{fact.attribute} ({', '.join(ids)}); forget or edit all but one",
                    )
                )
            for fact in sorted(resolution.facts.values(), key=lambda f: f.id):
                if (
                    fact.replaced_by is not None
                    and fact.replaced_by not in resolution.facts
                    and fact.replaced_by not in resolution.broken
                ):
                    problems.append(
                        Problem(
                            fact.path,
                            f"replaced by {fact.replaced_by}, which is gone; "
                            "its history ends here. Forget this fact if it no longer "
                            "matters",
                        )
                    )
            if resolution.fixes:
                paths = sorted({op.path for op in resolution.fixes})
                problems.append(
                    Problem(
                        FACTS_DIR,
                        f"{len(paths)} fact file(s) left half-changed "
                        f"({', '.join(paths[:5])}{', …' if len(paths) > 5 else ''}); "
                        "reads already see the change finished; `fsmem check --repair` "
                        "or the next change writes it",
                    )
                )
            return sorted(problems, key=lambda p: (p.path, p.message))

    # ---- changing ---------------------------------------------------------------------------

    def _run(self, tx: StoreChange, resolution: Resolution, ops: list[Op]) -> None:
        """Write the ops, then remember what was written so the next read parses nothing."""
        before = self._folders  # as the load under this change's lock saw them
        for op in ops:
            if op.kind == "write":
                assert op.fact is not None
                tx.write(op.path, render(op.fact))
            else:
                tx.delete(op.path)
        snapshot = (
            self._snapshot if self._snapshot is not None else {path: read.stamp for path, read in self._files.items()}
        )
        final = {op.path: op for op in ops}  # a batch may write a file and delete it later
        for path, op in final.items():
            if op.kind == "delete":
                self._files.pop(path, None)
                snapshot.pop(path, None)
            else:
                stamp = tx.stamp(path)
                found = rules.fact_id_of_path(path)
                assert found is not None and op.fact is not None and stamp is not None
                self._files[path] = _Read(stamp, found[1], op.fact)
                snapshot[path] = stamp
        self._snapshot = snapshot
        self._resolution = resolution
        self._unsaved += len(final)
        if final:
            self._note_change(before, final)

    def _change(
        self,
        command: str,
        thread: str | None,
        plan: Callable[[Resolution], list[Op]],
        applies: bool = False,
        scope: Callable[[Resolution], Iterable[str] | None] | None = None,
    ) -> list[Op]:
        """Under the lock: read, repair what a crash left, plan, then write. A plan that raises
        writes nothing. ``applies``: the plan advanced the resolution itself. Returns the repairs made."""
        with self._guard:
            try:
                with self.drive.change(command=command, thread=thread) as tx:
                    tx.hold("facts")  # the root's lock on the folder; on PostgreSQL, one facts change at a time
                    resolution = self._load(scope)  # looked at again under the lock
                    fixes = list(resolution.fixes)
                    if fixes:
                        resolution.apply(fixes)
                    ops = plan(resolution)
                    if not applies:
                        resolution.apply(ops)
                    self._run(tx, resolution, [*fixes, *ops])
            except BaseException:
                # Refused before, during or at the commit (PostgreSQL commits when the block ends): what
                # this view holds may be what was planned, not what is kept. Look again next time.
                self._resolution = None
                self._snapshot = None
                self._folders = None
                raise
        return fixes

    def repair(self, thread: str | None = None) -> list[str]:
        """Write what a change cut short left unwritten; the paths written or deleted."""

        def plan(resolution: Resolution) -> list[Op]:
            return []

        with self._guard:
            self._snapshot = None  # a full look: every file's stamp, whatever the journal says
            return sorted({op.path for op in self._change("facts.repair", thread, plan)})

    def _new_id(self, resolution: Resolution, now: datetime) -> str:
        """A fresh id that sorts after every id made before it: the kept second, then the
        microsecond (20 bits) and 12 random bits, so two facts kept in one second keep their order."""
        while True:
            moment = self._clock().astimezone(UTC)
            micro = moment.microsecond if moment.replace(microsecond=0) == now else 999_999
            tail = (micro << 12) | random_source.randbelow(1 << 12)
            candidate = rules.new_fact_id(now, f"{tail:08x}")
            last = self._last_id
            if last is not None and candidate <= last and last[16:] < "ffffffff":
                # the clock stood still or went back: follow the last id rather than wait for it
                candidate = last[:16] + f"{int(last[16:], 16) + 1:08x}"
            if (
                candidate not in resolution.stored
                and candidate not in resolution.broken
                and not self._taken(rules.fact_path(candidate, "current"))
                and not self._taken(rules.fact_path(candidate, "history"))
            ):
                self._last_id = candidate
                return candidate

    def _taken(self, path: str) -> bool:
        """Whether anything stands at ``path`` (a link there leading out counts as taken)."""
        try:
            return self.drive.exists(path)
        except BadPath:  # a store that cannot be reached raises on: this loop must not spin on it
            return True

    def keep(
        self,
        subject: str,
        attribute: str,
        fact: str,
        source: str = rules.DEFAULT_SOURCE,
        said: object = None,
        *,
        thread: str | None = None,
    ) -> Kept:
        """Keep a fact by the rules; returns what became of it and what it replaced."""
        draft = rules.check_draft(subject, attribute, fact, source, said, now=self._now())
        return self.keep_drafts([draft], thread=thread)[0]

    def keep_many(self, items: Iterable[Mapping[str, Any]], *, thread: str | None = None) -> list[Kept]:
        """Keep several facts in one change (one lock, one index update). Each item has ``subject``,
        ``attribute``, ``fact`` and optionally ``source`` and ``said``. All are checked first: one bad
        item keeps none."""
        now = self._now()
        drafts = []
        for number, item in enumerate(items, start=1):
            try:
                drafts.append(
                    rules.check_draft(
                        item.get("subject"),
                        item.get("attribute"),
                        item.get("fact"),
                        item.get("source", rules.DEFAULT_SOURCE),
                        item.get("said"),
                        now=now,
                    )
                )
            except (BadFact, FactSensitive) as error:
                message = error.message.replace(". Nothing was kept;", ";").rstrip(".")
                raise type(error)(f"fact {number}: {message}; nothing was kept") from None
        return self.keep_drafts(drafts, thread=thread)

    def keep_drafts(self, drafts: Iterable[Draft], *, thread: str | None = None) -> list[Kept]:
        """Keep checked drafts (see :func:`fsmem._core.facts.check_draft`) in one change, in order."""
        drafts = list(drafts)
        results: list[Kept] = []
        if not drafts:
            return results

        def plan(resolution: Resolution) -> list[Op]:
            now = self._now()
            ops: list[Op] = []
            for draft in drafts:
                step = chains.plan_keep(resolution, draft, new_id=self._new_id(resolution, now), now=now)
                resolution.apply(step.ops)
                ops.extend(step.ops)
                results.append(Kept(step.outcome, resolution.facts.get(step.fact.id, step.fact), step.replaced))
            return ops

        with self._guard:
            self._change(
                "facts.keep",
                thread,
                plan,
                applies=True,
                scope=lambda resolution: [
                    path for draft in drafts for path in self._thing_paths(resolution, draft.key)
                ],
            )
            # later keeps of the same batch may have moved an earlier one: report each as it stands now
            final = self._resolution or self._load()
            return [
                Kept(
                    k.outcome,
                    final.facts.get(k.fact.id, k.fact),
                    final.facts.get(k.replaced.id, k.replaced) if k.replaced else None,
                )
                for k in results
            ]

    def edit(
        self,
        fact_id: str,
        *,
        fact: str | None = None,
        subject: str | None = None,
        attribute: str | None = None,
        thread: str | None = None,
    ) -> Fact:
        """Correct a fact's words, subject or attribute; it keeps its id and history, replaces nothing."""
        edited: list[Fact] = []

        def plan(resolution: Resolution) -> list[Op]:
            step = chains.plan_edit(
                resolution, fact_id, now=self._now(), fact=fact, subject=subject, attribute=attribute
            )
            edited.append(step.fact)
            return list(step.ops)

        def scope(resolution: Resolution) -> list[str] | None:
            old = resolution.facts.get(fact_id)
            if old is None:
                return None
            key = rules.thing_key(
                old.subject if subject is None else subject, old.attribute if attribute is None else attribute
            )
            return [*self._chain_paths(resolution, fact_id), *self._thing_paths(resolution, key)]

        self._change("facts.edit", thread, plan, scope=scope)
        return edited[0]

    def forget(self, fact_id: str, *, thread: str | None = None) -> list[Fact]:
        """Delete a fact and the facts it replaced, back to the first; returns them, newest first."""
        deleted: list[Fact] = []

        def plan(resolution: Resolution) -> list[Op]:
            step = chains.plan_forget(resolution, fact_id)
            deleted.extend(step.deleted)
            return list(step.ops)

        self._change("facts.forget", thread, plan, scope=lambda resolution: self._fact_paths(resolution, fact_id))
        return deleted

    # ---- the extractor ----------------------------------------------------------------------

    def propose(
        self, conversation: Any, llm: Any, *, source: str | None = None, said: object = None, prompt: str | None = None
    ) -> Extraction:
        """Ask ``llm`` (a :class:`fsmem._llm.model.ChatModel`) for the durable facts of ``conversation`` (a
        list of messages, or an object with ``messages`` and optionally ``title`` and ``date``).
        Each proposal says what keeping it would do; nothing is kept. Keep the chosen ones with
        ``keep_drafts([p.draft for p in chosen])``."""
        now = self._now()
        text = conversation_text(conversation)
        if not text:
            return Extraction(
                [], ["the conversation has no turns by the person or the model; nothing was sent to the model"]
            )
        meta = conversation_meta(conversation)
        if source is None:
            source = f"chat: {meta['title']}" if "title" in meta else "a conversation"
        said_at = rules.parse_moment(said if said is not None else meta.get("date", now), now)
        template = prompt if prompt is not None else load_prompt()
        with self._guard:
            resolution = self._load()
            messages = extraction_messages(template, text, today=now, current=resolution.current(), known=self.known())
        from fsmem._llm.model import JSON_OBJECT

        # JSON mode where the server has it: small models answer prose without it (fsmem._llm.model falls back)
        reply = llm.complete(messages, response_format=JSON_OBJECT)
        found = parse_proposals(reply.get("content"))
        with self._guard:
            proposals, notes = classify(self._load(), found, said=said_at, source=source, now=now)
        return Extraction(proposals, notes)


def _mark(value: Any) -> Hashable:
    """A folders' mark as the journal's JSON gave it back: its lists as tuples again."""
    return tuple(_mark(item) for item in value) if isinstance(value, list) else value


CACHE_FORMAT = 2  # one row a file: path, stamp, then the fact's fields in the order of Fact's


def _read_cache(cache_file: Path) -> dict[str, _Read]:
    """Parsed facts a previous process saved, keyed by file stamp; anything odd means no cache."""
    try:
        data = json.loads(cache_file.read_bytes())
        if data.get("format") != CACHE_FORMAT:
            return {}
        when = datetime.fromisoformat
        found: dict[str, _Read] = {}
        for path, stamp, fid, subject, attribute, text, source, said, kept, edited, replaces, by, until in data[
            "files"
        ]:
            place = rules.fact_id_of_path(path)
            if place is None or place[0] != fid:
                return {}
            if isinstance(stamp, list) and len(stamp) == 3:
                stamp = tuple(stamp)  # the folder's (size, mtime_ns, inode)
            elif not isinstance(stamp, str):  # PostgreSQL's: the version
                return {}
            fact = Fact(
                fid,
                subject,
                attribute,
                text,
                source,
                when(said),
                when(kept),
                when(edited) if edited else None,
                tuple(replaces),
                by,
                when(until) if until else None,
            )
            found[path] = _Read(stamp, place[1], fact)
        return found
    except Exception:  # noqa: BLE001 - a missing, old or damaged cache is simply not used
        return {}


def _write_cache(cache_file: Path, files: Mapping[str, _Read]) -> None:
    rows = []
    for path, read in files.items():
        fact = read.fact
        if fact is None:
            continue
        rows.append(
            [
                path,
                list(read.stamp) if isinstance(read.stamp, tuple) else read.stamp,
                fact.id,
                fact.subject,
                fact.attribute,
                fact.text,
                fact.source,
                fact.said.isoformat(),
                fact.kept.isoformat(),
                fact.edited.isoformat() if fact.edited else None,
                list(fact.replaces),
                fact.replaced_by,
                fact.until.isoformat() if fact.until else None,
            ]
        )
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        # pid in the name: the debris of a dead writer can be told from a live one's file
        fd, temp = tempfile.mkstemp(prefix=f".facts.{os.getpid()}.", suffix=".tmp", dir=cache_file.parent)
        with os.fdopen(fd, "wb") as handle:
            # one dumps then one write: json.dump to a file runs the encoder in Python, 10x slower
            text = json.dumps({"format": CACHE_FORMAT, "files": rows}, ensure_ascii=False, separators=(",", ":"))
            handle.write(text.encode("utf-8"))
        os.replace(temp, cache_file)
    except OSError:
        pass  # a cache we cannot write only costs the next process some parsing


def load_prompt() -> str:
    try:
        return PROMPT_FILE.read_text(encoding="utf-8")
    except OSError as error:
        raise SetupError(
            f"the extractor's prompt {PROMPT_FILE} cannot be read ({error.strerror}); reinstall fsmem"
        ) from None
