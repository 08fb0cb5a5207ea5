"""A project's locks as rows of ``fsmem.locks``, locked to the end of the transaction.

Not advisory locks: those are database-wide, need no privilege, and every one held is named in
``pg_locks`` to every role, so a tenant could take another project's keys (even keys derived from a
secret, once seen) and make its changes wait, then fail BUSY. A row of ``fsmem.locks`` is its
project's: row-level security shows it only to that project's role (docs/postgres.md), which may
lock it (``FOR SHARE`` / ``FOR UPDATE``, a column-level UPDATE grant) but not the table
(``LOCK TABLE`` needs table-level UPDATE).

The named locks' rows are made with the project (``make_named``; migration 3 for older projects):
a row made inside a change is another change's to wait for until it commits, sharer or not. A path's
row is made the first time a change makes that path (or a path under that folder): two changes
making the first files of one new folder at once take turns, once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

# A project's named locks (a path's key is hashtextextended(path, 0); meeting one of these is harmless).
FOLDER, COMMIT, LEVELS, FACTS, KEEP = 1, 2, 4, 5, 6
NAMED = (FOLDER, COMMIT, LEVELS, FACTS, KEEP)
_MAKE = "INSERT INTO fsmem.locks (project, key) SELECT %s, k FROM unnest(%s::bigint[]) AS k ON CONFLICT DO NOTHING"
_MAKE_PATHS = (
    "INSERT INTO fsmem.locks (project, key) SELECT %s, hashtextextended(p, 0) FROM unnest(%s::text[]) AS p "
    "ON CONFLICT DO NOTHING"
)


def make_named(conn: psycopg.Connection[Any], project: int) -> None:
    """Make the project's named locks' rows (with the project, committed before any change takes one)."""
    conn.execute(_MAKE, (project, list(NAMED)))


def take(conn: psycopg.Connection[Any], project: int, key: int, *, shared: bool = False) -> None:
    """Hold the project's lock ``key`` to the end of the transaction (``shared``: with other sharers)."""
    mode = "SHARE" if shared else "UPDATE"
    query = f"SELECT 1 FROM fsmem.locks WHERE project = %s AND key = %s FOR {mode}"
    if conn.execute(query, (project, key)).fetchone() is None:  # a project made without its rows
        conn.execute(_MAKE, (project, [key]))
        conn.execute(query, (project, key))


def take_path(conn: psycopg.Connection[Any], project: int, path: str, folders: Sequence[str]) -> None:
    """Hold ``path``'s lock, and (shared) each of its ``folders``', to the end of the transaction."""
    conn.execute(_MAKE_PATHS, (project, [*folders, path]))
    if folders:
        conn.execute(
            "SELECT 1 FROM fsmem.locks WHERE project = %s AND key IN (SELECT hashtextextended(f, 0) "
            "FROM unnest(%s::text[]) AS f) ORDER BY key FOR SHARE",
            (project, list(folders)),
        )
    conn.execute(
        "SELECT 1 FROM fsmem.locks WHERE project = %s AND key = hashtextextended(%s, 0) FOR UPDATE", (project, path)
    )
