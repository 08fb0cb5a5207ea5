"""The kept view of a root's facts, ``.fsmem/cache/facts.sqlite`` (derived: delete it and it comes
back): what a new process reads instead of parsing every fact file and resolving every chain.

    meta     format, and the facts folders' mark when the view was last brought up to the files
    files    each readable fact file as parsed, with its stamp (a new process parses only what changed)
    chains   each chain's files and the stamps they had when it was resolved, and whether it was frozen
    facts    each fact as resolved: its chain, its subject (as compared), whether it holds
    broken   the files that are no usable fact, with their stamps and problems

Each change through fsmem updates it under the root's lock, for the chains the change touched; a look
that found a person's edit updates it for what it found. A chain is believed only while every file it
was resolved from still has the stamp it had then (:meth:`KeptView.peek` checks), whoever wrote the
row and whenever: a view that disagrees with the files is rebuilt, never believed. A damaged file, or
one of another format, is no view (a new one is written).
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from fsmem._core import facts as rules
from fsmem._core.facts import Fact, limit_problem
from fsmem._core.layout import HISTORY_DIR
from fsmem._memory.facts.problems import Problem

if TYPE_CHECKING:  # a new process's listing loads neither the chains' rules nor the store's types
    from fsmem._core.chains import Resolution
    from fsmem._store.types import FactStamp

__all__ = ["VIEW_FILE", "VIEW_FORMAT", "Read", "Listing", "KeptView", "every_entry"]

_T = TypeVar("_T")


class _Behind(Exception):  # noqa: N818 - never leaves save: the view is left as it is
    """The view holds a fact the saving process has not seen: its rows are newer than this state."""


VIEW_FILE = "cache/facts.sqlite"  # under .fsmem/
VIEW_FORMAT = "fsmem-facts-5"  # a file of any other format is no view: it is written anew
_FACT_COLUMNS = "subject, attribute, text, source, said, kept, edited, replaces, replaced_by, until"

_SCHEMA = """
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (path TEXT PRIMARY KEY, stamp TEXT NOT NULL, fact TEXT NOT NULL, version TEXT);
CREATE TABLE chains (chain TEXT PRIMARY KEY, frozen INTEGER NOT NULL, sources TEXT NOT NULL);
CREATE TABLE facts (id TEXT PRIMARY KEY, chain TEXT NOT NULL, key TEXT NOT NULL, holds INTEGER NOT NULL,
                    subject TEXT, attribute TEXT, text TEXT, source TEXT, said TEXT, kept TEXT, edited TEXT,
                    replaces TEXT, replaced_by TEXT, until TEXT, problem TEXT);
CREATE INDEX facts_key ON facts (key);
CREATE INDEX facts_chain ON facts (chain);
CREATE TABLE broken (path TEXT PRIMARY KEY, stamp TEXT, message TEXT NOT NULL, repair TEXT, subject TEXT,
                     named TEXT, mended TEXT);
"""


class Read(NamedTuple):
    """What one fact file held when read, keyed by the store's stamp of it: (size, mtime_ns, inode) on
    the folder, the row's version on PostgreSQL. (A named tuple: a cold listing imports this module and
    never reads a file; a frozen dataclass's methods would cost it ~0.5 ms to compile.)"""

    stamp: FactStamp
    location: rules.Location | None = None
    fact: Fact | None = None
    problem: str | None = None  # why the file is no usable fact; then:
    mended: Fact | None = None  # the fact it holds once its id is taken from its name (fsmem check --repair)
    subject: str | None = None  # the subject its front matter names, where it can be read
    version: str | None = None  # the hash of the bytes read, where this process read them: a file read
    # again (its stamp could not tell, see fsmem._store.folder.stamps) is parsed again only if it differs


@dataclass(frozen=True)
class Listing:
    """What ``fsmem facts list`` shows: the facts that hold (oldest said first) and the broken files."""

    facts: list[Fact]
    broken: list[Problem]


def every_entry(found: Mapping[str, FactStamp], others: Mapping[str, str]) -> dict[str, FactStamp | None]:
    """Every path under the facts folders with its stamp (None: no plain file), from the store's
    ``stamps`` of both folders: what the view's rows rest on (the history folder itself aside)."""
    return {**found, **{path: None for path, what in others.items() if not (path == HISTORY_DIR and what == "folder")}}


def _as_kept(
    path: str, now: str, kept: str, kept_version: str | None, version: Callable[[str], str | None] | None
) -> bool:
    """Whether a file whose stamp was kept within its racy window (a fourth part no ``stat`` gives)
    still holds what was kept: its stamp otherwise the same, and its content the version kept."""
    if version is None or kept_version is None or kept.count(",") != 3 or kept.rsplit(",", 1)[0] != now:
        return False
    return version(path) == kept_version


def _stamp_text(stamp: FactStamp | None) -> str | None:
    """A stamp as text: ``size,mtime_ns,inode`` for the folder's, the version itself for a row's."""
    if stamp is None:
        return None
    return ",".join(map(str, stamp)) if isinstance(stamp, tuple) else str(stamp)


def _stamp_of(text: str) -> FactStamp:
    return tuple(int(part) for part in text.split(",")) if "," in text else text


def _sources_text(sources: Mapping[str, str | None]) -> str:
    return "\n".join(f"{path}\t{'' if stamp is None else stamp}" for path, stamp in sources.items())


def _sources_of(text: str) -> dict[str, str]:
    return dict(line.split("\t") for line in text.split("\n")) if text else {}


def _fact_cells(fact: Fact) -> tuple[str | None, ...]:
    """A fact as the facts table's columns (after id, chain, key, holds)."""
    return (
        fact.subject,
        fact.attribute,
        fact.text,
        fact.source,
        fact.said.isoformat(),
        fact.kept.isoformat(),
        fact.edited.isoformat() if fact.edited else None,
        " ".join(fact.replaces),
        fact.replaced_by,
        fact.until.isoformat() if fact.until else None,
    )


def _fact_row(fact: Fact) -> tuple[str | int | None, ...]:
    """A fact as the facts table's columns after id and chain: key, holds, the fact, its limit broken."""
    return (fact.key[0], int(fact.holds), *_fact_cells(fact), limit_problem(fact))


def _fact_of_cells(fid: str, cells: Sequence[str | None]) -> Fact:
    subject, attribute, text, source, said, kept, edited, replaces, by, until = cells
    when = datetime.fromisoformat
    assert subject is not None and attribute is not None and text is not None and source is not None
    assert said is not None and kept is not None and replaces is not None
    return Fact(
        fid,
        subject,
        attribute,
        text,
        source,
        when(said),
        when(kept),
        when(edited) if edited else None,
        tuple(replaces.split()),
        by,
        when(until) if until else None,
    )


def _fact_text(fact: Fact) -> str:
    """A fact as one JSON cell (the files table's): its id, then the facts table's columns."""
    return json.dumps([fact.id, *_fact_cells(fact)], ensure_ascii=False, separators=(",", ":"))


def _fact_of(text: str) -> Fact:
    fid, *cells = json.loads(text)
    return _fact_of_cells(fid, cells)


def _mended_text(read: Read | None) -> str | None:
    return _fact_text(read.mended) if read is not None and read.mended is not None else None


def _problem(row: Sequence[str | None]) -> Problem:
    path, _, message, repair, _, named, _ = row
    assert path is not None and message is not None
    return Problem(path, message, repair=repair, subject=named)


def _busy(error: sqlite3.DatabaseError) -> bool:
    """Another process holds the view file: its rows are fine, this save is only skipped."""
    return isinstance(error, sqlite3.OperationalError) and ("locked" in str(error) or "busy" in str(error))


def _remove(path: Path) -> None:
    """Remove the file at ``path``, or the link itself (never its target); a folder stays."""
    try:
        os.unlink(path)
    except OSError:
        pass


class KeptView:
    """The view file of one root. Every method swallows what a damaged file raises: no view then."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self.whole = False  # the file held a view of this format when last opened by this process

    def _owned(self) -> bool:
        """Whether the view file, its folder and its journals are this user's own plain files (a
        link, another user's file or a folder in their place is no view: never opened, never followed)."""
        uid = os.geteuid()
        try:
            folder = os.lstat(self.file.parent)
            info = os.lstat(self.file)
        except OSError:
            return False
        if not (stat.S_ISDIR(folder.st_mode) and folder.st_uid == uid):
            return False
        if not (stat.S_ISREG(info.st_mode) and info.st_uid == uid and info.st_nlink == 1):
            return False
        for suffix in ("-wal", "-shm", "-journal"):
            try:
                other = os.lstat(f"{self.file}{suffix}")
            except FileNotFoundError:
                continue
            except OSError:
                return False
            if not (stat.S_ISREG(other.st_mode) and other.st_uid == uid):
                return False
        return True

    def _open(self) -> sqlite3.Connection | None:
        """The view file, if it holds a view of this format and is this user's own plain file."""
        if not self._owned():
            return None
        try:
            conn = sqlite3.connect(self.file, timeout=5, isolation_level=None)
        except (sqlite3.DatabaseError, OSError):
            return None
        try:
            found = conn.execute("SELECT value FROM meta WHERE name = 'format'").fetchone()
            if found is not None and found[0] == VIEW_FORMAT:
                conn.execute("PRAGMA synchronous=OFF")  # derived state: a crash costs a rebuild, not a wrong answer
                return conn
        except sqlite3.DatabaseError:
            pass
        conn.close()
        return None

    def _create(self) -> sqlite3.Connection | None:
        """The view file, made anew where it holds no view of this format (another version's, a
        damaged file, a link, another user's file, none)."""
        conn = self._open()
        if conn is not None:
            return conn
        self._discard()
        try:
            folder = os.lstat(self.file.parent)
        except FileNotFoundError:
            pass
        except OSError:
            return None
        else:
            if not stat.S_ISDIR(folder.st_mode):
                _remove(self.file.parent)  # a link (or a file) in the cache folder's place: never written through
            elif folder.st_uid != os.geteuid():
                return None  # another user's folder: left alone, and no view kept in it
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            if not self._made_here():
                return None
            conn = sqlite3.connect(self.file, timeout=5, isolation_level=None)
            conn.execute("PRAGMA synchronous=OFF")
            conn.executescript(
                f"BEGIN IMMEDIATE; {_SCHEMA} INSERT INTO meta VALUES ('format', '{VIEW_FORMAT}'); COMMIT;"
            )
            return conn
        except (sqlite3.DatabaseError, OSError):
            return None

    def _made_here(self) -> bool:
        """Make the empty view file itself (O_EXCL, never through a link); False where another
        process made one first or something else stands there."""
        try:
            fd = os.open(self.file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            return self._owned()  # another process made it at the same time: use it if it is a plain file
        os.close(fd)
        return True

    # ---- a new process's answer, checked against the files ---------------------------------

    def peek(
        self,
        subject: str | None,
        mark: Callable[[], Hashable | None],
        stamp: Callable[[str], FactStamp | None],
        scan: Callable[[], Mapping[str, FactStamp | None]] | None = None,
        version: Callable[[str], str | None] | None = None,
    ) -> Listing | None:
        """The listing of ``subject`` (every subject when None) as kept, if the files it rests on are
        as kept; None otherwise (then look at the files). With ``scan`` (every file's stamp, None for
        what is no plain file; about every subject only) every file must have the stamp the view
        holds for it. Without: the facts folders' ``mark`` must not have moved (no file added,
        removed or saved by rename since) and, about one subject, the ``stamp`` of each file of its
        chains and of the broken files that may be about it must be as kept. What the mark cannot
        tell (a person's save in place of another subject's file) is the caller's to follow: a
        watcher's word, or a check after the answer (:mod:`.recheck`). A file kept within its racy
        window (a stamp no ``stat`` gives) is vouched for by ``version``, the version of what it
        holds now, where given and the view knows the version it kept."""
        return self._reading(lambda conn: self._peek(conn, subject, mark, stamp, scan, version))

    def _reading(self, answer: Callable[[sqlite3.Connection], _T | None]) -> _T | None:
        """``answer`` asked of the view file; None where there is none, or its rows make no sense."""
        conn = self._open()
        if conn is None:
            return None
        try:
            return answer(conn)
        except sqlite3.DatabaseError as error:
            if not _busy(error):
                conn.close()
                self._discard()  # a damaged file or another schema: no view, made anew whole by the next save
            return None
        except (ValueError, TypeError, KeyError, AttributeError):
            return None  # rows that make no sense: no view
        finally:
            conn.close()

    def _peek(
        self,
        conn: sqlite3.Connection,
        subject: str | None,
        mark: Callable[[], Hashable | None],
        stamp: Callable[[str], FactStamp | None],
        scan: Callable[[], Mapping[str, FactStamp | None]] | None,
        version: Callable[[str], str | None] | None = None,
    ) -> Listing | None:
        conn.execute("BEGIN")  # one snapshot of the file: a writer's change lands whole or not at all
        kept_mark = conn.execute("SELECT value FROM meta WHERE name = 'mark'").fetchone()
        if kept_mark is None:
            return None
        if scan is not None:
            # Every file as the view has it, against every file as it is: equal, or no answer. The
            # rows of every chain were resolved from the files as the files table has them (each save
            # writes a changed file's row and its chain's rows in one transaction).
            kept = dict(conn.execute("SELECT path, stamp FROM files"))
            broken_rows = conn.execute("SELECT * FROM broken ORDER BY path").fetchall()
            kept.update((path, value or "") for path, value, *_ in broken_rows)
            if {path: _stamp_text(value) or "" for path, value in scan().items()} != kept:
                return None
        else:
            now_mark = mark()
            if now_mark is None or json.dumps(now_mark) != kept_mark[0]:
                return None
        if subject is None:
            if scan is None:
                broken_rows = conn.execute("SELECT * FROM broken ORDER BY path").fetchall()
            rows = conn.execute(f"SELECT id, {_FACT_COLUMNS}, problem FROM facts WHERE holds = 1").fetchall()
        else:
            key = rules.clean_name(subject).casefold()
            paths = {
                path
                for (text,) in conn.execute(
                    "SELECT sources FROM chains WHERE chain IN (SELECT chain FROM facts WHERE key = ?)", (key,)
                )
                for path in _sources_of(text)
            }
            broken_rows = conn.execute(
                "SELECT * FROM broken WHERE subject IS NULL OR subject = ? ORDER BY path", (key,)
            ).fetchall()
            kept = {path: value or "" for path, value, *_ in broken_rows}
            versions: dict[str, str | None] = {}
            for path in paths - kept.keys():
                found = conn.execute("SELECT stamp, version FROM files WHERE path = ?", (path,)).fetchone()
                if found is None:
                    kept[path] = self._broken_stamp(conn, path)
                else:
                    kept[path], versions[path] = found
            if scan is None:
                for path, value in kept.items():
                    now = _stamp_text(stamp(path)) or ""
                    if now != value and not _as_kept(path, now, value, versions.get(path), version):
                        return None
            rows = conn.execute(
                f"SELECT id, {_FACT_COLUMNS}, problem FROM facts WHERE key = ? AND holds = 1", (key,)
            ).fetchall()
        facts = sorted((_fact_of_cells(row[0], row[1:-1]) for row in rows), key=Fact.order)
        over = {row[0]: row[-1] for row in rows if row[-1] is not None}  # a limit a person's hand broke
        problems = [_problem(row) for row in broken_rows]
        if over:
            problems += [Problem(f.path, over[f.id], subject=f.subject) for f in facts if f.id in over]
        return Listing(facts, sorted(problems, key=lambda p: (p.path, p.message)))

    @staticmethod
    def _broken_stamp(conn: sqlite3.Connection, path: str) -> str:
        found = conn.execute("SELECT stamp FROM broken WHERE path = ?", (path,)).fetchone()
        return (found[0] or "") if found is not None else ""  # a file the view lacks: stat says no file

    # ---- a whole view for a process that looks at every file --------------------------------

    def load(self) -> tuple[dict[str, Read], list[tuple[list[Fact], bool]], dict[str, FactStamp]] | None:
        """The files as read (broken ones too), the chains as resolved (each its facts oldest first,
        and whether it was frozen) and the stamps the chains rest on; None when there is no view."""
        return self._reading(self._load)

    def _load(
        self, conn: sqlite3.Connection
    ) -> tuple[dict[str, Read], list[tuple[list[Fact], bool]], dict[str, FactStamp]] | None:
        conn.execute("BEGIN")
        if conn.execute("SELECT value FROM meta WHERE name = 'mark'").fetchone() is None:
            return None
        files: dict[str, Read] = {}
        for path, stamp, text in conn.execute("SELECT path, stamp, fact FROM files"):
            place = rules.fact_id_of_path(path)
            fact = _fact_of(text)
            if place is None or place[0] != fact.id:
                return None
            files[path] = Read(_stamp_of(stamp), place[1], fact)
        for path, stamp, message, _, _, named, mended in conn.execute("SELECT * FROM broken"):
            if stamp is not None and rules.fact_id_of_path(path) is not None:
                files[path] = Read(
                    _stamp_of(stamp), problem=message, mended=_fact_of(mended) if mended else None, subject=named
                )
        members: dict[str, list[Fact]] = {}
        for fid, chain, *cells in conn.execute(f"SELECT id, chain, {_FACT_COLUMNS} FROM facts"):
            members.setdefault(chain, []).append(_fact_of_cells(fid, cells))
        chains: list[tuple[list[Fact], bool]] = []
        rests: dict[str, FactStamp] = {}
        for chain, frozen, sources in conn.execute("SELECT chain, frozen, sources FROM chains"):
            chains.append((sorted(members.pop(chain, []), key=Fact.order), bool(frozen)))
            rests.update((path, _stamp_of(value)) for path, value in _sources_of(sources).items() if value)
        return (files, chains, rests) if not members else None

    def save(
        self,
        mark: Hashable | None,
        files: Mapping[str, Read],
        resolution: Resolution,
        paths: Iterable[str] | None,
        problems: Iterable[tuple[Problem, FactStamp | None]],
        again: bool = True,
    ) -> None:
        """Bring the view up to this state: the files of ``paths`` (None: every file, the view made
        anew) and the chains of the ids the resolution changed (every chain when made anew).
        ``mark`` is the facts folders' mark the state was read at (None: the store cannot tell)."""
        if mark is None:
            return
        problems = list(problems)  # read again where the view is made anew
        conn = self._create()
        if conn is None:
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
            if paths is not None and conn.execute("SELECT 1 FROM meta WHERE name = 'mark'").fetchone() is None:
                paths = None  # a view made anew (here or by another process) holds every row or none
            changed: Iterable[str]
            if paths is None:
                for table in ("files", "chains", "facts", "broken"):
                    conn.execute(f"DELETE FROM {table}")  # noqa: S608 - the table names above
                paths, changed = files, resolution.facts
            else:
                paths = list(paths)
                changed = set(resolution.changed)
                for path in paths:  # a file read again as it was: its chain's rows rest on its new stamp
                    place = rules.fact_id_of_path(path)
                    if place is not None and place[0] in resolution.chain_of:
                        changed.add(place[0])
                rewritten = {
                    resolution.chains[resolution.chain_of[fid]][0] for fid in changed if fid in resolution.chain_of
                }
                gone = rewritten | {
                    chain
                    for fid in resolution.changed
                    for (chain,) in conn.execute("SELECT chain FROM facts WHERE id = ?", (fid,)).fetchall()
                }
                for chain in gone:  # its other facts are written again below, as this view has them
                    members = [fid for (fid,) in conn.execute("SELECT id FROM facts WHERE chain = ?", (chain,))]
                    if any(fid not in resolution.facts and fid not in resolution.changed for fid in members):
                        raise _Behind  # another process kept a fact this view has not seen: leave its rows
                    changed.update(members)
                    conn.execute("DELETE FROM facts WHERE chain = ?", (chain,))
                    conn.execute("DELETE FROM chains WHERE chain = ?", (chain,))
            for path in paths:
                read = files.get(path)
                if read is None or read.fact is None:
                    conn.execute("DELETE FROM files WHERE path = ?", (path,))
                else:
                    conn.execute(
                        "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?)",
                        (path, _stamp_text(read.stamp), _fact_text(read.fact), read.version),
                    )
            for number in {resolution.chain_of[fid] for fid in changed if fid in resolution.chain_of}:
                self._save_chain(conn, files, resolution, number)
            conn.execute("DELETE FROM broken")
            conn.executemany(
                "INSERT INTO broken VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        p.path,
                        _stamp_text(stamp),
                        p.message,
                        p.repair,
                        None if p.subject is None else rules.clean_name(p.subject).casefold(),
                        p.subject,
                        _mended_text(files.get(p.path)),
                    )
                    for p, stamp in problems
                ],
            )
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('mark', ?)", (json.dumps(mark),))
            conn.execute("COMMIT")
            resolution.changed.clear()
        except (_Behind, sqlite3.DatabaseError, OSError, TypeError, ValueError, KeyError) as error:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.DatabaseError:
                pass
            if isinstance(error, sqlite3.DatabaseError) and not _busy(error) and again:
                conn.close()
                self._discard()  # rows it cannot take (a damaged file, another schema): made anew, whole
                self.save(mark, files, resolution, None, problems, again=False)
        finally:
            conn.close()

    def _discard(self) -> None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            _remove(Path(f"{self.file}{suffix}"))

    def _save_chain(
        self, conn: sqlite3.Connection, files: Mapping[str, Read], resolution: Resolution, number: int
    ) -> None:
        """One chain's rows: named by its first fact, with the stamps of every file it was resolved
        from (a frozen chain's broken neighbours included: mending one changes what the chain says)."""
        ids = resolution.chains[number]
        key = ids[0]
        sources: dict[str, str | None] = {}
        for fid in ids:
            copies = resolution.stored.get(fid, {})
            for location in copies:
                path = rules.fact_path(fid, location)
                sources[path] = _stamp_text(files[path].stamp)
            for copy in copies.values():
                for other in (*copy.replaces, copy.replaced_by):
                    if other is not None and other in resolution.broken:
                        for path in (rules.fact_path(other, "current"), rules.fact_path(other, "history")):
                            if path in files:
                                sources[path] = _stamp_text(files[path].stamp)
        conn.execute("DELETE FROM facts WHERE chain = ?", (key,))
        conn.execute(
            "INSERT OR REPLACE INTO chains VALUES (?, ?, ?)",
            (key, int(number in resolution.frozen), _sources_text(sources)),
        )
        conn.executemany(
            "INSERT OR REPLACE INTO facts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(fid, key, *_fact_row(resolution.facts[fid])) for fid in ids],
        )
