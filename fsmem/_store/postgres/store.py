"""A project's memory as rows of PostgreSQL: the record the store interface will sit on (issue 12).

It mirrors ``fsmem._store.folder.drive``'s transaction, so both can stand behind one interface::

    store = PgStore.open("postgresql://host/db", project="rye-and-ember")
    with store.change(command="write", thread="t-1") as tx:
        before = tx.read("MEMORY.md")          # locks the row until the change commits
        tx.write("MEMORY.md", b"# Project\\n")  # or tx.write(path, data, expect=version_seen)

How concurrency is held (decided and measured; docs/postgres.md): each change is ONE transaction at
READ COMMITTED that locks the rows it reads or changes (``SELECT … FOR UPDATE``), so the version it
checked cannot move before it commits — no lost update, and no retry loop as SERIALIZABLE would need.
A file created meanwhile meets the primary key (``ON CONFLICT DO NOTHING``) and is refused with
CONFLICT/EXISTS. Every change holds a shared per-project advisory lock; a folder rename or delete
holds it exclusively, so it is atomic across all its files and no file appears in the folder halfway.
A change making a path locks it (and, shared, the folders above it) first: a file and a folder at one
path never both commit. While a thread has a change open, its reads go through that change.
Log rows are written last, under a per-project commit lock held to the commit, so sequence numbers
are in commit order: a worker that saw sequence N has seen every change up to N.

Paths are normalized by ``fsmem._core.paths`` (this store refuses any that is not). Every query is
filtered by the project's id: a store opened for one project never reads or changes another's rows.
psycopg is imported here only; ``import fsmem`` works without it (the ``postgres`` extra).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Self, TypeVar

import psycopg
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from fsmem._core.layout import LEVEL_IDENTITY_FILE
from fsmem._core.paths import normalize_path
from fsmem._core.text import check_thread
from fsmem._core.versions import version_of
from fsmem._errors import (
    BadPath,
    BadStore,
    Busy,
    Conflict,
    Exists,
    NotFound,
    RequestError,
    RootNotFound,
    SetupError,
    Storage,
)
from fsmem._store.postgres import schema as pg_schema
from fsmem._store.types import ChangeProposal, CopiedFile, CopiedVersion, Entry, HandEdit, LogEntry, ProjectCopy

T = TypeVar("T")
ANY: Any = object()  # ``expect=ANY``: write whatever the file holds (the caller locked it by reading)
_FOLDER_LOCK, _COMMIT_LOCK = 1, 2  # advisory lock classes, keyed by project id
_HOLDS = {"levels": 4, "facts": 5}  # PgTransaction.hold's lock classes, keyed by project id (3: PgDrive.locked)
_KEEP_LOCK = 6  # keep_version's check-then-insert, keyed by project id


class StoreUnavailable(Storage):
    """The database cannot be reached (down, restarting, pool exhausted); nothing was changed
    unless the message says the commit's outcome is unknown."""


@dataclass(frozen=True)
class KeptVersion:
    """An earlier content of a file, kept when a change replaced or deleted it."""

    path: str
    version: str
    kept_at: str
    command: str
    size: int


class PgStore:
    """One project's files, kept versions, log and proposals in one PostgreSQL database."""

    def __init__(
        self, pool: ConnectionPool, url: str, project_id: int, name: str, versions_kept: int, uid: str = ""
    ) -> None:
        self._pool, self._url = pool, url
        self._current = threading.local()  # .conn: the connection of the change this thread has open
        self.project_id, self.project = project_id, name
        self.uid = uid  # the project's random identity (``fsmem.projects.uid``): see ``identity``
        self.versions_kept = versions_kept
        self.channel = f"fsmem_{project_id}"
        self.on_commit: list[Callable[[set[str]], None]] = []

    @classmethod
    def open(
        cls,
        url: str,
        project: str,
        *,
        create: bool = True,
        pool_size: int = 8,
        lock_timeout: float = 10.0,
        connect_timeout: float = 5.0,
        versions_kept: int = 20,
    ) -> PgStore:
        """Connect, migrate the schema if it is older than this fsmem, and find (or make) the project."""
        if not isinstance(project, str) or not project.strip() or len(project) > 200:
            raise BadStore("a project name is 1 to 200 characters, e.g. 'rye-and-ember'")
        options = f"-c lock_timeout={int(lock_timeout * 1000)}"
        # A thread holds at most one connection (its change's: reads inside a change go through it),
        # so ``pool_size`` threads of this process work at once and the rest wait their turn (BUSY
        # after ``connect_timeout``); the pool opens connections as the load asks and closes idle ones.
        pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max(1, pool_size),
            timeout=connect_timeout,
            open=False,
            kwargs={"autocommit": True, "options": options, "connect_timeout": max(1, round(connect_timeout))},
        )
        try:
            pool.open(wait=True, timeout=connect_timeout)
            with pool.connection() as conn:
                _migrate(conn)
                project_id, uid = _project_id(conn, project, create)
        except psycopg.errors.InsufficientPrivilege as error:  # a tenant's role, asked for another project
            pool.close()
            raise RootNotFound(
                f"there is no project {project!r} this database role may open "
                f"({_first_line(error)}); connect with the project's own role"
            ) from error
        except (psycopg.OperationalError, PoolTimeout) as error:
            pool.close()
            raise StoreUnavailable(
                f"cannot reach PostgreSQL to open project {project!r}: "
                f"{_first_line(error)}; check the URL and that the server runs"
            ) from error
        except BaseException:
            pool.close()
            raise
        return cls(pool, url, project_id, project, versions_kept, uid)

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- reading --------------------------------------------------------------------------------

    def read(self, path: str) -> bytes | None:
        """The bytes of a file, or None when there is no file there."""
        row = self._one("SELECT content FROM fsmem.files WHERE project = %s AND path = %s", (_file(path),))
        return None if row is None else bytes(row[0])

    def version(self, path: str) -> str | None:
        row = self._one("SELECT version FROM fsmem.files WHERE project = %s AND path = %s", (_file(path),))
        return None if row is None else str(row[0])

    def exists(self, path: str) -> bool:
        low, high = _range(_folder(path))
        row = self._one(
            "SELECT EXISTS (SELECT 1 FROM fsmem.files WHERE project = %s AND (path = %s "
            "OR (path >= %s AND path < %s)))",
            (path, low, high),
        )
        return bool(row and row[0])

    def is_dir(self, path: str) -> bool:
        low, high = _range(_folder(path))
        row = self._one(
            "SELECT EXISTS (SELECT 1 FROM fsmem.files WHERE project = %s AND path >= %s AND path < %s)", (low, high)
        )
        return bool(row and row[0])

    def entries(self, path: str) -> list[Entry]:
        """The children of a folder, sorted: its files, and folders (a folder exists while it holds one)."""
        prefix = _folder(path)
        children: dict[str, Entry] = {}
        for child, size, modified in self._rows(
            "SELECT path, octet_length(content), modified FROM fsmem.files WHERE project = %s "
            "AND path >= %s AND path < %s ORDER BY path",
            _range(prefix),
        ):
            name, slash, _ = child[len(prefix) :].partition("/")
            if slash:
                children.setdefault(name, Entry(prefix + name, True, 0, modified.timestamp()))
            else:
                children[name] = Entry(child, False, size, modified.timestamp())
        if not children and path:
            raise NotFound(f"there is no folder {path!r}")
        return sorted(children.values(), key=lambda entry: entry.path)

    def walk_files(self, path: str = "") -> Iterator[Entry]:
        """Every file under a folder, in path order."""
        for child, size, modified in self._rows(
            "SELECT path, octet_length(content), modified FROM fsmem.files WHERE project = %s "
            "AND path >= %s AND path < %s ORDER BY path",
            _range(_folder(path)),
        ):
            yield Entry(child, False, size, modified.timestamp())

    def info(self, path: str) -> Entry | None:
        """A file (its size and modified time), a folder (while it holds a file), or None."""
        if path == "":
            return Entry("", True, 0, 0.0)
        low, high = _range(_folder(path))
        row = self._run(
            lambda conn: conn.execute(
                "SELECT octet_length(content), modified, path = %s FROM fsmem.files WHERE project = %s "
                "AND (path = %s OR (path >= %s AND path < %s)) ORDER BY path = %s DESC, modified DESC LIMIT 1",
                (path, self.project_id, path, low, high, path),
            ).fetchone()
        )
        if row is None:
            return None
        size, modified, is_file = row
        return Entry(path, not is_file, size if is_file else 0, modified.timestamp())

    def check_free(self, path: str, label: str = "the new path") -> None:
        """Refuse ``path`` when a file or folder is there, or a file where a folder of it must be."""
        self._run(lambda conn: check_free(conn, self.project_id, _file(path), label))

    # ---- history --------------------------------------------------------------------------------

    def versions(self, path: str) -> list[KeptVersion]:
        """Earlier contents of a file, newest first."""
        return [
            KeptVersion(path, version, _iso(kept_at), command, size)
            for version, kept_at, command, size in self._rows(
                "SELECT version, kept_at, command, octet_length(content) FROM fsmem.kept_versions "
                "WHERE project = %s AND path = %s ORDER BY id DESC",
                (_file(path),),
            )
        ]

    def read_kept(self, path: str, version: str) -> bytes | None:
        """The newest kept content of ``path`` with ``version``, or None."""
        row = self._one(
            "SELECT content FROM fsmem.kept_versions WHERE project = %s AND path = %s "
            "AND version = %s ORDER BY id DESC LIMIT 1",
            (_file(path), version),
        )
        return None if row is None else bytes(row[0])

    def log(self, since: int = 0) -> Iterator[LogEntry]:
        """The log after sequence number ``since``, in sequence (= commit) order."""
        for row in self._rows(
            f"SELECT {_LOG_COLUMNS} FROM fsmem.log WHERE project = %s AND seq > %s ORDER BY seq", (since,)
        ):
            yield _log_entry(row)

    def last_change(self, path: str) -> LogEntry | None:
        """The newest log entry that changed ``path`` (as its path or as the path it moved to)."""
        row = self._one(
            f"(SELECT seq, {_LOG_COLUMNS} FROM fsmem.log WHERE project = %s AND path = %s ORDER BY seq DESC LIMIT 1) "
            f"UNION ALL (SELECT seq, {_LOG_COLUMNS} FROM fsmem.log WHERE project = %s AND new_path = %s "
            "ORDER BY seq DESC LIMIT 1) ORDER BY seq DESC LIMIT 1",
            (_file(path), self.project_id, path),
        )
        return None if row is None else _log_entry(row[1:])

    def newest_seq(self) -> int:
        """The sequence number of the newest change (0 for none): one backward index scan."""
        row = self._one("SELECT coalesce(max(seq), 0) FROM fsmem.log WHERE project = %s", ())
        return int(row[0]) if row else 0

    @property
    def identity(self) -> str:
        """Which project this is, beyond its name: its random identity and its id. Another project, or
        one made again under the same name (``fsmem copy``, a drop and create), has another."""
        return f"{self.uid}/{self.project_id}"

    def log_from(self, since: int) -> tuple[int | None, tuple[int, int], list[str]]:
        """The log from row ``since`` on, in one query: (that row's time in microseconds, ``None`` when
        there is no such row — a database restored from a backup, a project made again; the newest
        row's (sequence number, time) at or after it, ``(since, time)`` when none is newer; the paths
        changed after ``since``, moves' both ends, in order)."""
        at: int | None = None
        newest, paths = (since, 0), dict[str, None]()
        rows = self._rows(
            "SELECT seq, time, path, new_path FROM fsmem.log WHERE project = %s AND seq >= %s ORDER BY seq", (since,)
        )
        for number, moment, path, new_path in rows:
            newest = (int(number), _micros(moment))
            if number == since:
                at = newest[1]
                continue
            paths[path] = None
            if new_path is not None:
                paths[new_path] = None
        return at, newest, list(paths)

    def newest_time(self) -> tuple[int, int]:
        """The newest log row's sequence number and time in microseconds ((0, 0): no change yet)."""
        row = self._one("SELECT seq, time FROM fsmem.log WHERE project = %s ORDER BY seq DESC LIMIT 1", ())
        return (0, 0) if row is None else (int(row[0]), _micros(row[1]))

    def changes_since(self, seq: int) -> tuple[int, list[str]]:
        """(the newest sequence number, the paths changed after ``seq``, moves' both ends, in order)."""
        newest, paths = seq, dict[str, None]()
        for number, path, new_path in self._rows(
            "SELECT seq, path, new_path FROM fsmem.log WHERE project = %s AND seq > %s ORDER BY seq", (seq,)
        ):
            newest = number
            paths[path] = None
            if new_path is not None:
                paths[new_path] = None
        return newest, list(paths)

    # ---- the search index (issue 12, pg-index) ----------------------------------------------------

    def read_rows(self, paths: Sequence[str]) -> dict[str, tuple[bytes, str, datetime]]:
        """Files' bytes, versions and when their rows last changed, in one query (a path with no file
        is left out): what the index and the facts read many files at once with."""
        if not paths:
            return {}
        rows = self._rows(
            "SELECT path, content, version, modified FROM fsmem.files WHERE project = %s AND path = ANY(%s::text[])",
            ([_file(path) for path in paths],),
        )
        return {str(path): (bytes(content), str(version), modified) for path, content, version, modified in rows}

    # ---- proposals ------------------------------------------------------------------------------

    def save_proposal(self, proposal: ChangeProposal) -> None:
        def save(conn: psycopg.Connection[Any]) -> None:
            try:
                conn.execute(_INSERT_PROPOSAL, _proposal_row(self.project_id, proposal))
            except psycopg.errors.UniqueViolation as error:
                raise Exists(f"there is already a proposal {proposal.id}; make a new id") from error

        self._run(save, write=True)

    def load_proposal(self, proposal_id: str) -> ChangeProposal:
        row = self._one(
            f"SELECT {_PROPOSAL_COLUMNS} FROM fsmem.proposals WHERE project = %s AND id = %s", (proposal_id,)
        )
        if row is None:
            raise NotFound(f"there is no proposal {proposal_id!r}; list them with `fsmem proposals`")
        return ChangeProposal(*row)

    def proposals(self) -> list[ChangeProposal]:
        return [
            ChangeProposal(*row)
            for row in self._rows(f"SELECT {_PROPOSAL_COLUMNS} FROM fsmem.proposals WHERE project = %s ORDER BY id", ())
        ]

    def delete_proposal(self, proposal_id: str) -> None:
        cursor = self._run(
            lambda conn: conn.execute(
                "DELETE FROM fsmem.proposals WHERE project = %s AND id = %s", (self.project_id, proposal_id)
            ),
            write=True,
        )
        if cursor.rowcount == 0:
            raise NotFound(f"there is no proposal {proposal_id!r}; list them with `fsmem proposals`")

    # ---- changing -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def change(self, command: str, thread: str | None = None) -> Iterator[PgTransaction]:
        """One transaction: every operation in the block commits together, or none does. While it is
        open, this thread's reads of the store go through its connection (they see what it changed,
        and a thread never holds two of the pool's connections)."""
        check_thread(thread)
        with self._connection() as conn:
            tx = PgTransaction(self, conn, command, thread)
            outer = getattr(self._current, "conn", None)
            self._current.conn = conn
            try:
                with _committed(
                    conn,
                    refused="nothing was changed",
                    unknown="the change may or may not have been applied; read the files to see before trying again",
                ):
                    yield tx
                    tx._flush_log()
            finally:
                self._current.conn = outer
        if tx.changed:
            for hook in self.on_commit:
                hook(set(tx.changed))

    def listen(self, callback: Callable[[int], None]) -> Listener:
        """Call ``callback(newest_seq)`` from a thread after each commit (and after a reconnect)."""
        return Listener(self, callback)

    # ---- copy (fsmem/_memory/copy.py: a whole project into another store) -------------------------------

    def export_project(self) -> ProjectCopy:
        """Every file, kept version, log entry and proposal of the project, read in one snapshot
        (REPEATABLE READ): a change committing meanwhile is in all of it or in none of it."""

        def read(conn: psycopg.Connection[Any]) -> ProjectCopy:
            project = (self.project_id,)
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            try:
                files = [
                    CopiedFile(path, bytes(content), modified.timestamp())
                    for path, content, modified in conn.execute(
                        "SELECT path, content, modified FROM fsmem.files WHERE project = %s ORDER BY path", project
                    ).fetchall()
                ]
                versions = [
                    CopiedVersion(path, version, _iso(kept_at), command, bytes(content))
                    for path, version, kept_at, command, content in conn.execute(
                        "SELECT path, version, kept_at, command, content FROM fsmem.kept_versions "
                        "WHERE project = %s ORDER BY id",
                        project,
                    ).fetchall()
                ]
                log = [
                    _log_entry(row)
                    for row in conn.execute(
                        f"SELECT {_LOG_COLUMNS} FROM fsmem.log WHERE project = %s ORDER BY seq", project
                    ).fetchall()
                ]
                proposals = [
                    asdict(ChangeProposal(*row))
                    for row in conn.execute(
                        f"SELECT {_PROPOSAL_COLUMNS} FROM fsmem.proposals WHERE project = %s ORDER BY id", project
                    ).fetchall()
                ]
            finally:
                if not conn.broken:
                    conn.execute("ROLLBACK")
            return ProjectCopy(files, versions, log, proposals)

        return self._run(read, alone=True)

    def import_project(self, copy: ProjectCopy) -> None:
        """Write ``copy`` into this project in ONE transaction: all of it or, on any failure (a
        killed process, a lost server), nothing. Refuses (``EXISTS``) a project that holds anything."""
        project = self.project_id
        with (
            self._connection() as conn,
            _committed(
                conn,
                refused="nothing was copied",
                unknown="the copy may or may not have been made; look at the project",
            ),
        ):
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (_FOLDER_LOCK, project))
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (_COMMIT_LOCK, project))
            held = conn.execute(
                "SELECT EXISTS (SELECT 1 FROM fsmem.files WHERE project = %(p)s) "
                "OR EXISTS (SELECT 1 FROM fsmem.kept_versions WHERE project = %(p)s) "
                "OR EXISTS (SELECT 1 FROM fsmem.log WHERE project = %(p)s) "
                "OR EXISTS (SELECT 1 FROM fsmem.proposals WHERE project = %(p)s)",
                {"p": project},
            ).fetchone()
            if held and held[0]:
                raise Exists(
                    f"project {self.project!r} already holds memory; copy into a new project (fsmem copy "
                    "makes it: no `fsmem init` needed), or delete this one first"
                )
            with conn.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO fsmem.files (project, path, content, version, modified) "
                    "VALUES (%s, %s, %s, %s, to_timestamp(%s))",
                    [(project, f.path, f.data, version_of(f.data), f.modified) for f in copy.files],
                )
                cursor.executemany(
                    "INSERT INTO fsmem.kept_versions (project, path, version, kept_at, command, content) "
                    "VALUES (%s, %s, %s, %s, %s, %s)",
                    [(project, k.path, k.version, k.kept_at, k.command, k.data) for k in copy.versions],
                )
                cursor.executemany(  # in order: the identity gives them rising sequence numbers
                    "INSERT INTO fsmem.log (project, time, command, path, new_path, before, after, thread) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                    [(project, e.time, e.command, e.path, e.new_path, e.before, e.after, e.thread) for e in copy.log],
                )
            for record in copy.proposals:
                conn.execute(
                    _INSERT_PROPOSAL,
                    _proposal_row(project, ChangeProposal(**record)),
                )
            conn.execute(
                "SELECT pg_notify(%s, coalesce(max(seq), 0)::text) FROM fsmem.log WHERE project = %s",
                (self.channel, project),
            )

    # ---- sync (fsmem/_memory/sync.py: a folder people edit, mirrored from the project) ------------------

    def file_versions(self) -> dict[str, str]:
        """Every file's path and version (one query, no content): what a full comparison needs."""
        return {
            str(path): str(version)
            for path, version in self._rows("SELECT path, version FROM fsmem.files WHERE project = %s", ())
        }

    def keep_version(self, path: str, data: bytes, command: str) -> str:
        """Keep ``data`` as a version of ``path`` without changing the file (a person's text that
        lost a conflict); trimmed to the newest N like any kept version. Returns its version. A version
        of ``path`` already kept is not kept again: a conflict tried pass after pass would otherwise
        push the file's real history out of the newest N."""
        version = version_of(data)

        def keep(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (_KEEP_LOCK, self.project_id))
                held = conn.execute(
                    "SELECT 1 FROM fsmem.kept_versions WHERE project = %s AND path = %s AND version = %s LIMIT 1",
                    (self.project_id, _file(path), version),
                ).fetchone()
                if held is not None:
                    return
                conn.execute(
                    "INSERT INTO fsmem.kept_versions (project, path, version, command, content) "
                    "VALUES (%s, %s, %s, %s, %s)",
                    (self.project_id, _file(path), version, command, data),
                )
                conn.execute(_TRIM_KEPT, (self.project_id, path, self.project_id, path, self.versions_kept))

        self._run(keep, write=True)
        return version

    # ---- connections ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection inside BEGIN; a connection the server dropped (a restart) is replaced
        once, before anything was done on it."""
        for attempt in (1, 2):
            try:
                with self._pool.connection() as conn:
                    try:
                        conn.execute("BEGIN")
                    except psycopg.OperationalError:
                        if attempt == 1 and conn.broken:
                            continue
                        raise
                    yield conn
                    return
            except PoolTimeout as error:
                raise self._pool_timeout(error, "nothing was changed") from error
            except PoolClosed as error:
                raise _closed(self.project) from error
            except psycopg.Error as error:
                raise _translated(error, "nothing was changed") from error

    def _run(self, work: Callable[[psycopg.Connection[Any]], T], *, write: bool = False, alone: bool = False) -> T:
        """Run one read, or one write (``write``: one statement, or a block of its own), on a pooled
        connection, or on the connection of the change this thread has open. A read the server's
        dropped connection broke is tried once more on another; a write never is (it may have
        committed: trying it again would answer EXISTS or NOT_FOUND for what it did itself).
        ``alone``: a block with a transaction of its own, never inside this thread's change."""
        current = None if alone else getattr(self._current, "conn", None)
        if current is not None:
            try:
                return work(current)
            except psycopg.Error as error:
                raise _translated(error, "nothing was changed") from error
        for attempt in (1, 2):
            broken = False
            try:
                with self._pool.connection() as conn:
                    try:
                        return work(conn)
                    except psycopg.Error:
                        broken = conn.broken
                        raise
            except PoolTimeout as error:
                raise self._pool_timeout(error, "nothing was changed") from error
            except PoolClosed as error:
                raise _closed(self.project) from error
            except psycopg.Error as error:
                if broken and not write and attempt == 1:
                    continue
                outcome = (
                    "it may or may not have been saved; look before trying again"
                    if broken and write
                    else "nothing was changed; try again in a moment"
                )
                raise _translated(error, outcome) from error
        raise AssertionError("unreachable")

    def _pool_timeout(self, error: PoolTimeout, outcome: str) -> RequestError:
        """No connection came in time: every one this process may open is in use (BUSY), or none can be made."""
        stats = self._pool.get_stats()
        if stats.get("pool_size", 0) >= self._pool.max_size and not stats.get("pool_available", 0):
            return Busy(
                f"the memory is busy: all {self._pool.max_size} connections this process may open to "
                f"PostgreSQL are in use by other changes; {outcome}; try again in a moment (or raise pg_pool_size)"
            )
        return StoreUnavailable(f"PostgreSQL does not answer ({_first_line(error)}); {outcome}; try again in a moment")

    def _one(self, query: str, params: Sequence[object]) -> tuple[Any, ...] | None:
        return self._run(lambda conn: conn.execute(query, (self.project_id, *params)).fetchone())

    def _rows(self, query: str, params: Sequence[object]) -> list[tuple[Any, ...]]:
        return self._run(lambda conn: conn.execute(query, (self.project_id, *params)).fetchall())


class PgTransaction:
    """The operations of one change, on one connection inside BEGIN … COMMIT."""

    def __init__(self, store: PgStore, conn: psycopg.Connection[Any], command: str, thread: str | None) -> None:
        self.store, self.conn = store, conn
        self.command, self.thread = command, thread
        self.changed: list[str] = []
        self.hand_edits: list[HandEdit] = []  # rows have no editor saving behind a change's back
        self._entries: list[tuple[str, str | None, str | None, str | None]] = []
        self._lock_held: Literal["", "shared", "exclusive"] = ""
        self._seen: dict[str, str | None] = {}  # path -> version read: later operations expect it

    def read(self, path: str) -> bytes | None:
        """The file's bytes, its row locked until the change ends (None: no file; nothing locked)."""
        self._lock("shared")
        row = self._execute(
            "SELECT content FROM fsmem.files WHERE project = %s AND path = %s FOR UPDATE", (_file(path),)
        ).fetchone()
        data = None if row is None else bytes(row[0])
        self._seen[path] = None if data is None else version_of(data)
        return data

    def write(self, path: str, data: bytes, expect: str | None = ANY) -> str:
        """Write a whole file, keeping what it held before. ``expect``: the version the caller saw
        (None: it must not exist). Returns the new version."""
        self._lock("shared")
        before = self._locked_version(_file(path), expect)
        after = version_of(data)
        if before is None:
            self._check_free(path, "the file", itself=False)  # itself: ON CONFLICT below
            inserted = self._execute(
                "INSERT INTO fsmem.files (project, path, content, version) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT DO NOTHING RETURNING 1",
                (path, data, after),
            ).fetchone()
            if inserted is None:  # made by a change that committed after this one looked
                raise Conflict(f"{path} was created by another change meanwhile; read it and write again")
        else:
            self._keep(path)
            self._execute(
                "UPDATE fsmem.files SET content = %s, version = %s, modified = now() WHERE project = %s AND path = %s",
                (data, after, self.store.project_id, path),
                project_first=False,
            )
        self._log(path, before, after)
        return after

    def delete(self, path: str, expect: str | None = ANY) -> None:
        """Remove a file (``expect``: the version the caller saw) or a folder with all its files,
        keeping every file's content as a kept version."""
        if self._is_file(path):
            self._lock("shared")
            before = self._locked_version(path, expect)
            if before is not None:
                self._keep(path)
                self._execute("DELETE FROM fsmem.files WHERE project = %s AND path = %s", (path,))
                self._log(path, before, None)
                return
        self._lock("exclusive")  # a folder: no file may appear in it or leave it meanwhile
        files = self._folder_files(path)
        if not files:
            raise NotFound(f"there is no file or folder {path!r}")
        for name, version in files:
            if not _hidden(name):  # a level folder's identity goes with it, unkept and unlogged
                self._keep(name)
                self._log(name, version, None)
        self._execute("DELETE FROM fsmem.files WHERE project = %s AND path >= %s AND path < %s", _range(_folder(path)))

    def move(self, source: str, destination: str) -> None:
        """Rename a file or a folder (all its files at once); never over an existing path."""
        if source == _file(destination) or destination.startswith(_folder(source)):
            raise BadPath(f"cannot move {source} into itself; choose a destination outside it")
        if self._is_file(source):
            self._lock("shared")
            version = self._locked_version(source, ANY)
            if version is not None:
                self._check_free(destination, "the new path")
                inserted = self._execute(
                    "INSERT INTO fsmem.files (project, path, content, version, modified) SELECT project, %s, "
                    "content, version, modified FROM fsmem.files WHERE project = %s AND path = %s "
                    "ON CONFLICT DO NOTHING RETURNING 1",
                    (destination, self.store.project_id, source),
                    project_first=False,
                ).fetchone()
                if inserted is None:
                    raise Exists(f"the new path {destination} already exists; choose another name or delete it first")
                self._execute("DELETE FROM fsmem.files WHERE project = %s AND path = %s", (source,))
                self._log(source, version, version, destination)
                return
        self._lock("exclusive")
        files = self._folder_files(source)
        if not files:
            raise NotFound(f"there is no file or folder {source!r}")
        self._check_free(destination, "the new path")
        low, high = _range(_folder(source))
        self._execute(
            "UPDATE fsmem.files SET path = %s || substr(path, %s) WHERE project = %s AND path >= %s AND path < %s",
            (destination, len(source) + 1, self.store.project_id, low, high),
            project_first=False,
        )
        for name, version in files:
            if not _hidden(name):  # a level folder's identity moves with it, unlogged
                self._log(name, version, version, destination + name[len(source) :])

    # ---- levels and facts (store interface; fsmem._store.postgres.levels_facts has the store's side) ------------

    def write_identity(self, folder: str, data: bytes) -> None:
        """Keep ``data`` as the level folder's identity: a row at ``<folder>/.fsmem-level`` (a path
        no tool call can name), never kept as a version nor logged; it moves and goes with its folder."""
        self._lock("shared")
        self._execute(
            "INSERT INTO fsmem.files (project, path, content, version) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (project, path) DO UPDATE SET content = excluded.content, version = excluded.version, "
            "modified = now()",
            (identity_path(folder), data, version_of(data)),
        )

    def lock_folder(self) -> None:
        """Take now the project's lock a folder rename or delete holds (exclusive), before this change
        reads the folder: taken after reading its files (the shared lock), two such changes would
        each wait for the other's shared lock (a deadlock). Reads after it see every change committed."""
        self._lock("exclusive")

    def hold(self, name: str) -> None:
        """No other change holding ``name`` ("levels", "facts") in this project runs until this one ends."""
        self.conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (_HOLDS[name], self.store.project_id))

    def stamp(self, path: str) -> str | None:
        """The file's version as this change leaves it (None: no file)."""
        if path in self._seen:
            return self._seen[path]
        row = self._execute(
            "SELECT version FROM fsmem.files WHERE project = %s AND path = %s", (_file(path),)
        ).fetchone()
        return None if row is None else str(row[0])

    # ---- internals --------------------------------------------------------------------------------

    def _execute(self, query: str, params: Sequence[object], project_first: bool = True) -> psycopg.Cursor[Any]:
        return self.conn.execute(query, (self.store.project_id, *params) if project_first else params)

    def _lock(self, mode: Literal["shared", "exclusive"]) -> None:
        """The project's folder lock: shared for file changes, exclusive for a whole folder's."""
        if self._lock_held == "exclusive" or self._lock_held == mode:
            return
        function = "pg_advisory_xact_lock_shared" if mode == "shared" else "pg_advisory_xact_lock"
        self.conn.execute(f"SELECT {function}(%s, %s)", (_FOLDER_LOCK, self.store.project_id))
        self._lock_held = mode

    def _is_file(self, path: str) -> bool:
        return (
            self._execute("SELECT 1 FROM fsmem.files WHERE project = %s AND path = %s", (_file(path),)).fetchone()
            is not None
        )

    def _locked_version(self, path: str, expect: str | None) -> str | None:
        """Lock the file's row and return its version, refusing it when it is not ``expect``."""
        row = self._execute(
            "SELECT version FROM fsmem.files WHERE project = %s AND path = %s FOR UPDATE", (path,)
        ).fetchone()
        current = None if row is None else str(row[0])
        read_here = expect is ANY and path in self._seen
        if read_here:  # a path read in this change must still hold what was read (no row: no lock)
            expect = self._seen[path]
        if expect is not ANY and current != expect:
            if expect is None and read_here:
                raise Conflict(f"{path} was created by another change after this one read it; read it again")
            if expect is None:
                raise Exists(f"{path} already exists (version {current}); read it first to change it")
            if current is None:
                raise NotFound(
                    f"there is no file {path!r} any more (it was at version {expect}); list the "
                    "folder to see what is there"
                )
            raise Conflict(
                f"{path} changed since version {expect}: it is now at version {current}; read it "
                "again and redo the change on what it holds now"
            )
        return current

    def _folder_files(self, folder: str) -> list[tuple[str, str]]:
        return [
            (str(name), str(version))
            for name, version in self._execute(
                "SELECT path, version FROM fsmem.files WHERE project = %s AND path >= %s AND path < %s "
                "ORDER BY path FOR UPDATE",
                _range(_folder(folder)),
            ).fetchall()
        ]

    def _check_free(self, path: str, label: str, itself: bool = True) -> None:
        """Refuse ``path`` when a file or folder is there, or a file stands where a folder of it must
        be. Before looking, lock the path (exclusive) and each of its folders (shared) to the end of
        the change: a file and a folder at one path, made by two changes at once, wait for each other
        (the second then sees the first's), so both never commit."""
        parts = path.split("/")
        ancestors = ["/".join(parts[:end]) for end in range(1, len(parts))]
        self.conn.execute(
            "SELECT pg_advisory_xact_lock_shared(hashtextextended(a, %s)) FROM unnest(%s::text[]) "
            "WITH ORDINALITY AS t(a, n) ORDER BY n",
            (self.store.project_id, ancestors),
        )
        self.conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, %s))", (path, self.store.project_id))
        check_free(self.conn, self.store.project_id, path, label, itself)

    def _keep(self, path: str) -> None:
        """Copy the file's current row into kept_versions and trim them to the newest N."""
        self._execute(
            "INSERT INTO fsmem.kept_versions (project, path, version, command, content) "
            "SELECT project, path, version, %s, content FROM fsmem.files WHERE project = %s AND path = %s",
            (self.command, self.store.project_id, path),
            project_first=False,
        )
        self._execute(_TRIM_KEPT, (path, self.store.project_id, path, self.store.versions_kept))

    def _log(self, path: str, before: str | None, after: str | None, new_path: str | None = None) -> None:
        self._entries.append((path, new_path, before, after))
        self._seen[path] = None if new_path is not None else after
        if new_path is not None:
            self._seen[new_path] = after
        self.changed.append(path)
        if new_path is not None:
            self.changed.append(new_path)

    def _flush_log(self) -> None:
        """Write the log rows under the commit lock (held to COMMIT: sequence order is commit order)
        and NOTIFY the project's listeners, delivered when the transaction commits."""
        if not self._entries:
            return
        project = self.store.project_id
        self.conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (_COMMIT_LOCK, project))
        paths, new_paths, befores, afters = (list(column) for column in zip(*self._entries, strict=True))
        self.conn.execute(
            "WITH added AS (INSERT INTO fsmem.log (project, command, thread, path, new_path, before, after) "
            "SELECT %s, %s, %s, e.path, e.new_path, e.before, e.after FROM unnest(%s::text[], %s::text[], "
            "%s::text[], %s::text[]) WITH ORDINALITY AS e(path, new_path, before, after, n) ORDER BY e.n "
            "RETURNING seq) "
            "SELECT pg_notify(%s, max(seq)::text) FROM added",
            (project, self.command, self.thread, paths, new_paths, befores, afters, self.store.channel),
        )


class Listener:
    """A thread LISTENing on the project's channel; reconnects (and calls back) after an outage."""

    def __init__(self, store: PgStore, callback: Callable[[int], None], poll: float = 0.5) -> None:
        self._store, self._callback, self._poll = store, callback, poll
        self._stopping = threading.Event()
        self.ready = threading.Event()  # set once LISTEN is in place (and again after each reconnect)
        self._thread = threading.Thread(target=self._loop, name=f"fsmem-listen-{store.project}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=self._poll * 4 + 5)

    def _loop(self) -> None:
        reconnected = False
        while not self._stopping.is_set():
            try:
                with psycopg.connect(self._store._url, autocommit=True, connect_timeout=5) as conn:
                    conn.execute(f"LISTEN {self._store.channel}")
                    self.ready.set()
                    if reconnected:  # commits made while we were away sent no notification we got
                        self._callback(self._store.newest_seq())
                    while not self._stopping.is_set():
                        for note in conn.notifies(timeout=self._poll):
                            self._callback(int(note.payload))
            except (psycopg.Error, RequestError):
                self.ready.clear()
                reconnected = True
                self._stopping.wait(self._poll)


# ---- helpers --------------------------------------------------------------------------------------

_LOG_COLUMNS = "time, command, path, before, after, thread, new_path"
_PROPOSAL_COLUMNS = "id, made_at, thread, scope, request, base, summary, diff, extra"
_INSERT_PROPOSAL = (
    f"INSERT INTO fsmem.proposals (project, {_PROPOSAL_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)
# Keep a path's newest N kept versions (params: project, path, project, path, N).
_TRIM_KEPT = (
    "DELETE FROM fsmem.kept_versions WHERE project = %s AND path = %s AND id <= ("
    "SELECT id FROM fsmem.kept_versions WHERE project = %s AND path = %s ORDER BY id DESC OFFSET %s LIMIT 1)"
)


def _migrate(conn: psycopg.Connection[Any]) -> None:
    """Bring the schema to ``pg_schema.CURRENT``: nothing to do (one query) in the usual case."""

    def applied() -> int:
        exists = conn.execute("SELECT to_regclass('fsmem.schema_version') IS NOT NULL").fetchone()
        if not (exists and exists[0]):
            return 0
        row = conn.execute("SELECT version FROM fsmem.schema_version").fetchone()
        return int(row[0]) if row else 0

    if applied() == pg_schema.CURRENT:
        return
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (pg_schema.SCHEMA_LOCK,))
        conn.execute("CREATE SCHEMA IF NOT EXISTS fsmem")
        conn.execute("CREATE TABLE IF NOT EXISTS fsmem.schema_version (version integer NOT NULL)")
        version = applied()
        if version > pg_schema.CURRENT:
            raise SetupError(
                f"the database's fsmem schema is version {version}, newer than this fsmem "
                f"knows ({pg_schema.CURRENT}); upgrade fsmem"
            )
        for migration in pg_schema.MIGRATIONS[version:]:
            conn.execute(migration)  # several statements: allowed without parameters
        conn.execute("DELETE FROM fsmem.schema_version")
        conn.execute("INSERT INTO fsmem.schema_version VALUES (%s)", (pg_schema.CURRENT,))


def _project_id(conn: psycopg.Connection[Any], name: str, create: bool) -> tuple[int, str]:
    """The project's id and random identity (``uid``)."""
    row = conn.execute("SELECT id, uid FROM fsmem.projects WHERE name = %s", (name,)).fetchone()
    if row is None and create:
        conn.execute("INSERT INTO fsmem.projects (name) VALUES (%s) ON CONFLICT DO NOTHING", (name,))
        row = conn.execute("SELECT id, uid FROM fsmem.projects WHERE name = %s", (name,)).fetchone()
    if row is None:
        raise RootNotFound(
            f"there is no project {name!r} in this database (or this role may not see it); "
            "open it with create=True to make it"
        )
    return int(row[0]), str(row[1])


def check_free(conn: psycopg.Connection[Any], project: int, path: str, label: str, itself: bool = True) -> None:
    """Refuse ``path`` when a file or folder is there (``itself``), or a file stands where a folder
    of it must be: ``PgDrive.check_free``'s answer, and a change's before it makes the path."""
    parts = path.split("/")
    ancestors = ["/".join(parts[:end]) for end in range(1, len(parts))]
    low, high = _range(path + "/")
    row = conn.execute(
        "SELECT path FROM fsmem.files WHERE project = %s AND (path = ANY(%s::text[]) OR path = %s "
        "OR (path >= %s AND path < %s)) LIMIT 1",
        (project, ancestors, path if itself else None, low, high),
    ).fetchone()
    if row is None:
        return
    if row[0] in ancestors:
        raise BadPath(f"{label} {path} cannot be made: {row[0]} is a file, not a folder; choose a path inside a folder")
    raise Exists(f"{label} {path} already exists; choose another name or delete it first")


def _file(path: str) -> str:
    """A normalized path of a file (the store refuses what the tool would have normalized)."""
    if not path or normalize_path(path) != path:
        raise BadPath(f"{path!r} is not a normalized path of a file, e.g. 'notes/seo.md'")
    return path


def identity_path(folder: str) -> str:
    """Where a level folder's identity row is: a dot name, which ``_file`` refuses on purpose."""
    return f"{_file(folder)}/{LEVEL_IDENTITY_FILE}"


def _hidden(path: str) -> bool:
    """A row no tool call can name (its last segment starts with a dot): a level folder's identity."""
    return path.rpartition("/")[2].startswith(".")


def _folder(path: str) -> str:
    """The prefix of the files under a folder ('' is the whole project)."""
    return "" if path == "" else _file(path) + "/"


def _range(prefix: str) -> tuple[str, str]:
    """Bounds of the paths starting with ``prefix`` under byte order: "/" + 1 is "0"."""
    if not prefix:
        return "", "\U0010ffff"
    return prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)


def _micros(moment: datetime) -> int:
    """A timestamptz as whole microseconds since the epoch: exact, whatever the session's time zone."""
    return (moment - _EPOCH) // timedelta(microseconds=1)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _log_entry(row: Sequence[Any]) -> LogEntry:
    time, command, path, before, after, thread, new_path = row
    return LogEntry(_iso(time), command, path, before, after, thread, new_path)


def _proposal_row(project: int, proposal: ChangeProposal) -> tuple[object, ...]:
    return (
        project,
        proposal.id,
        proposal.made_at,
        proposal.thread,
        proposal.scope,
        Jsonb(proposal.request),
        Jsonb(proposal.base),
        proposal.summary,
        proposal.diff,
        Jsonb(proposal.extra),
    )


def _closed(project: str) -> StoreUnavailable:
    return StoreUnavailable(
        f"this memory of project {project!r} was closed (memory.close()); nothing was done; "
        "open it again with fsmem.open(url, project=...)"
    )


@contextlib.contextmanager
def _committed(conn: psycopg.Connection[Any], *, refused: str, unknown: str) -> Iterator[None]:
    """End the transaction open on ``conn``: COMMIT when the block succeeds, ROLLBACK when it raises;
    a driver error becomes fsmem's, saying ``refused`` (nothing was done) or, at the commit itself,
    ``unknown`` (it may or may not have been)."""
    try:
        yield
    except BaseException as error:
        with contextlib.suppress(psycopg.Error):
            conn.execute("ROLLBACK")
        if isinstance(error, psycopg.Error):
            raise _translated(error, refused) from error
        raise
    try:
        conn.execute("COMMIT")
    except psycopg.Error as error:
        raise _translated(error, unknown) from error


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def _translated(error: psycopg.Error, outcome: str) -> RequestError:
    """A psycopg error as fsmem's, by its SQLSTATE (psycopg 3's classes do not nest the way the codes
    do: a deadlock is no ``TransactionRollback``): a lock waited for too long, a deadlock, a
    serialization failure or a cancelled query is BUSY; a lost server or anything else it refused, STORAGE."""
    state = getattr(error, "sqlstate", None) or ""
    if state.startswith("40") or state in _BUSY_STATES:
        return Busy(
            f"the memory is busy: another change held what this one needed too long; {outcome}; try again in a moment"
        )
    if isinstance(error, psycopg.OperationalError) and (not state or state.startswith(("08", "57P"))):
        return StoreUnavailable(f"PostgreSQL could not be reached ({_first_line(error)}); {outcome}")
    # Anything else the server refused (read-only, a check, a value it cannot store): still a coded
    # answer, never a driver exception the caller has to know about.
    return StoreUnavailable(f"PostgreSQL refused the change ({_first_line(error)}); {outcome}")


_BUSY_STATES = {"55P03", "57014"}  # lock_not_available (lock_timeout), query_canceled (class 40: rollbacks)
