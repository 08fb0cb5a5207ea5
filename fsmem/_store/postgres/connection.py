"""Connecting to one project of a PostgreSQL database: the URL's pool, the schema brought up to date,
the project found (or made) with its identity, and how one read or one write runs on a connection.

Every query is filtered by the project's id: a store opened for one project never reads or changes
another's rows. psycopg is imported by this package only; ``import fsmem`` works without it (the
``postgres`` extra).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Self, TypeVar

import psycopg
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from fsmem._errors import BadStore, Busy, RequestError, RootNotFound, SetupError
from fsmem._store.postgres import projects
from fsmem._store.postgres import schema as pg_schema
from fsmem._store.postgres.errors import StoreUnavailable, closed, first_line, translated

T = TypeVar("T")
RECONNECT_WINDOW = 2.0  # seconds the pool keeps retrying a lost server in the background (tries at 0, ~1 and 2 s)


class PgProject:
    """One project of a database, connected: its pool, its id and identity, its change's connection."""

    def __init__(
        self,
        pool: ConnectionPool,
        url: str,
        project_id: int,
        name: str,
        versions_kept: int,
        uid: str,
        secret: str,
    ) -> None:
        self._pool, self.url = pool, url
        self._current = threading.local()  # .conn: the connection of the change this thread has open
        self.project_id, self.project = project_id, name
        self.uid = uid  # the project's random identity (``fsmem.projects.uid``): see ``identity``
        self.versions_kept = versions_kept
        # LISTEN needs no privilege: only a name no other project's role can know keeps its commits
        # its own (``fsmem.projects.secret``, shown by row-level security to this project's role only).
        self.channel = f"fsmem_{secret}"
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
    ) -> Self:
        """Connect, migrate the schema if it is older than this fsmem, and find (or make) the project."""
        projects.check_name(project)
        connect: dict[str, Any] = {
            "autocommit": True,
            "options": f"-c lock_timeout={int(lock_timeout * 1000)}",
            "connect_timeout": max(1, round(connect_timeout)),
        }
        try:
            # One plain connection first: a wrong URL (no server there, a wrong password, no such
            # database, a host that does not resolve) fails at once with libpq's reason, where the
            # pool would retry it in the background, logging each try, until its timeout.
            with psycopg.connect(url, **connect) as conn:
                _migrate(conn)
                project_id, uid, secret, name = projects.find(conn, project, create)
        except psycopg.errors.InsufficientPrivilege as error:  # a tenant's role, asked for another project
            raise RootNotFound(
                f"there is no project {project!r} this database role may open "
                f"({first_line(error)}); connect with the project's own role"
            ) from error
        except psycopg.OperationalError as error:
            raise StoreUnavailable(
                f"cannot reach PostgreSQL to open project {project!r}: "
                f"{first_line(error)}; check the URL and that the server runs"
            ) from error
        except psycopg.ProgrammingError as error:  # libpq could not read the URL
            raise BadStore(
                f"that is not a PostgreSQL URL libpq can read ({first_line(error)}); "
                "write it as postgresql://user@host:port/database"
            ) from error
        # A thread holds at most one connection (its change's: reads inside a change go through it),
        # so ``pool_size`` threads of this process work at once and the rest wait their turn (BUSY
        # after ``connect_timeout``); the pool opens connections as the load asks and closes idle ones.
        # psycopg_pool retries a lost server with a doubling delay until ``reconnect_timeout``: after an
        # outage of 15 s its next try may be 16 s away, longer than a caller waits for a connection.
        # Giving up after RECONNECT_WINDOW lets the next caller's request start a new attempt at once.
        pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max(1, pool_size),
            timeout=connect_timeout,
            reconnect_timeout=min(connect_timeout, RECONNECT_WINDOW),
            open=False,
            kwargs=connect,
        )
        try:
            pool.open(wait=True, timeout=connect_timeout)
        except PoolTimeout as error:  # the server went away since the first connection
            pool.close()
            raise StoreUnavailable(
                f"cannot reach PostgreSQL to open project {project!r}: {first_line(error)}; try again in a moment"
            ) from error
        return cls(pool, url, project_id, name, versions_kept, uid, secret)

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def identity(self) -> str:
        """Which project this is, beyond its name: its random identity and its id. Another project, or
        one made again under the same name (``fsmem copy``, a drop and create), has another."""
        return f"{self.uid}/{self.project_id}"

    # ---- connections ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection inside BEGIN; a connection the server dropped (a restart) is replaced
        once, before anything was done on it."""
        for attempt in (1, 2):
            try:
                with self._pool.connection() as conn:
                    try:
                        conn.execute("BEGIN")
                    except psycopg.OperationalError:
                        if attempt == 1 and conn.broken:
                            self._drop_dropped()
                            continue
                        raise
                    yield conn
                    return
            except PoolTimeout as error:
                raise self._pool_timeout(error, "nothing was changed") from error
            except PoolClosed as error:
                raise closed(self.project) from error
            except psycopg.Error as error:
                raise translated(error, "nothing was changed") from error

    def run(self, work: Callable[[psycopg.Connection[Any]], T], *, write: bool = False, alone: bool = False) -> T:
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
                raise translated(error, "nothing was changed") from error
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
                raise closed(self.project) from error
            except psycopg.Error as error:
                if broken and not write and attempt == 1:
                    self._drop_dropped()
                    continue
                outcome = (
                    "it may or may not have been saved; look before trying again"
                    if broken and write
                    else "nothing was changed; try again in a moment"
                )
                raise translated(error, outcome) from error
        raise AssertionError("unreachable")

    def _drop_dropped(self) -> None:
        """One connection the server dropped (a restart, a terminated backend) means the others idle
        in the pool were most likely dropped too: check them all, so the one retry gets a live one."""
        with contextlib.suppress(PoolClosed):
            self._pool.check()

    def _pool_timeout(self, error: PoolTimeout, outcome: str) -> RequestError:
        """No connection came in time: every one this process may open is in use (BUSY), or none can be made."""
        stats = self._pool.get_stats()
        if stats.get("pool_size", 0) >= self._pool.max_size and not stats.get("pool_available", 0):
            return Busy(
                f"the memory is busy: all {self._pool.max_size} connections this process may open to "
                f"PostgreSQL are in use by other changes; {outcome}; try again in a moment (or raise pg_pool_size)"
            )
        return StoreUnavailable(f"PostgreSQL does not answer ({first_line(error)}); {outcome}; try again in a moment")

    def one(self, query: str, params: Sequence[object]) -> tuple[Any, ...] | None:
        """The first row of a query of this project's rows (its first parameter: the project's id)."""
        return self.run(lambda conn: conn.execute(query, (self.project_id, *params)).fetchone())

    def rows(self, query: str, params: Sequence[object]) -> list[tuple[Any, ...]]:
        """Every row of a query of this project's rows (its first parameter: the project's id)."""
        return self.run(lambda conn: conn.execute(query, (self.project_id, *params)).fetchall())


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
