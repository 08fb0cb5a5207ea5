"""psycopg's errors as fsmem's: by SQLSTATE, BUSY (a lock waited for too long, a deadlock) or STORAGE
(a lost server, anything else the server refused), and a transaction ended by COMMIT or ROLLBACK."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import psycopg

from fsmem._errors import Busy, RequestError, Storage


class StoreUnavailable(Storage):
    """The database cannot be reached (down, restarting, pool exhausted); nothing was changed
    unless the message says the commit's outcome is unknown."""


def closed(project: str) -> StoreUnavailable:
    return StoreUnavailable(
        f"this memory of project {project!r} was closed (memory.close()); nothing was done; "
        "open it again with fsmem.open(url, project=...)"
    )


@contextlib.contextmanager
def committed(conn: psycopg.Connection[Any], *, refused: str, unknown: str) -> Iterator[None]:
    """End the transaction open on ``conn``: COMMIT when the block succeeds, ROLLBACK when it raises;
    a driver error becomes fsmem's, saying ``refused`` (nothing was done) or, at the commit itself,
    ``unknown`` (it may or may not have been)."""
    try:
        yield
    except BaseException as error:
        with contextlib.suppress(psycopg.Error):
            conn.execute("ROLLBACK")
        if isinstance(error, psycopg.Error):
            raise translated(error, refused) from error
        raise
    try:
        conn.execute("COMMIT")
    except psycopg.Error as error:
        raise translated(error, unknown) from error


def first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def translated(error: psycopg.Error, outcome: str) -> RequestError:
    """A psycopg error as fsmem's, by its SQLSTATE (psycopg 3's classes do not nest the way the codes
    do: a deadlock is no ``TransactionRollback``): a lock waited for too long, a deadlock, a
    serialization failure or a cancelled query is BUSY; a lost server or anything else it refused, STORAGE."""
    state = getattr(error, "sqlstate", None) or ""
    if state.startswith("40") or state in _BUSY_STATES:
        return Busy(
            f"the memory is busy: another change held what this one needed too long; {outcome}; try again in a moment"
        )
    if isinstance(error, psycopg.OperationalError) and (not state or state.startswith(("08", "57P"))):
        return StoreUnavailable(f"PostgreSQL could not be reached ({first_line(error)}); {outcome}")
    # Anything else the server refused (read-only, a check, a value it cannot store): still a coded
    # answer, never a driver exception the caller has to know about.
    return StoreUnavailable(f"PostgreSQL refused the change ({first_line(error)}); {outcome}")


_BUSY_STATES = {"55P03", "57014"}  # lock_not_available (lock_timeout), query_canceled (class 40: rollbacks)
