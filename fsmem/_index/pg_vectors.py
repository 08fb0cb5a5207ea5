"""Passage vectors of a project in PostgreSQL (``fsmem.embedded``, ``fsmem.passages``; migration 5),
so that whichever worker embeds a file first does it for every worker: a new worker's index finds
them there and embeds nothing again. The same contract as the folder's keep
(``fsmem._index.vectors.VectorKeep``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from fsmem._index.vectors import VectorRow

if TYPE_CHECKING:
    from fsmem._store.postgres.drive import PgDrive

__all__ = ["PgVectors"]


class PgVectors:
    def __init__(self, drive: PgDrive) -> None:
        self.pg = drive.pg

    def held(self, model: str) -> dict[str, str]:
        rows = self.pg.rows(
            "SELECT DISTINCT ON (path) path, version FROM fsmem.embedded WHERE project = %s AND model = %s "
            "ORDER BY path, made DESC",
            (model,),
        )
        return dict(rows)

    def put(self, model: str, path: str, version: str, passages: list[tuple[int, str, bytes]]) -> None:
        project = self.pg.project_id

        def work(conn: Any) -> None:
            with conn.transaction():
                _drop(conn, project, model, [path])  # older versions go; a worker behind embeds its own again
                with conn.cursor() as cursor:
                    cursor.executemany(
                        "INSERT INTO fsmem.passages (project, model, path, version, n, line, text, vector) "
                        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                        [
                            (project, model, path, version, n, line, text, vector)
                            for n, (line, text, vector) in enumerate(passages)
                        ],
                    )
                conn.execute(
                    "INSERT INTO fsmem.embedded (project, model, path, version) VALUES (%s, %s, %s, %s) "
                    "ON CONFLICT DO NOTHING",
                    (project, model, path, version),
                )

        self.pg.run(work, write=True, alone=True)

    def count(self, model: str) -> int:
        found = self.pg.one("SELECT count(*) FROM fsmem.passages WHERE project = %s AND model = %s", (model,))
        return int(found[0]) if found else 0

    def vectors(self, model: str, live: Mapping[str, str]) -> Iterator[VectorRow]:
        found = self.pg.rows(
            "SELECT path, version, vector FROM fsmem.passages WHERE project = %s AND model = %s ORDER BY path, n",
            (model,),
        )
        for path, kept, vector in found:
            if live.get(path) == kept:
                yield path, kept, bytes(vector)

    def vectors_of(self, model: str, files: Mapping[str, str]) -> Iterator[VectorRow]:
        found = self.pg.rows(
            "SELECT path, version, vector FROM fsmem.passages WHERE project = %s AND model = %s AND path = ANY(%s) "
            "ORDER BY path, n",
            (model, sorted(files)),
        )
        for path, kept, vector in found:
            if files.get(path) == kept:
                yield path, kept, bytes(vector)

    def passage(self, model: str, path: str, version: str, n: int) -> tuple[int, str] | None:
        found = self.pg.one(
            "SELECT line, text FROM fsmem.passages WHERE project = %s AND model = %s AND path = %s AND version = %s "
            "AND n = %s",
            (model, path, version, n),
        )
        return None if found is None else (int(found[0]), str(found[1]))

    def prune(self, model: str, live: Mapping[str, str]) -> int:
        gone = [path for path in self.held(model) if path not in live]
        if not gone:
            return 0
        project = self.pg.project_id

        def work(conn: Any) -> None:
            with conn.transaction():
                _drop(conn, project, model, gone)

        self.pg.run(work, write=True, alone=True)
        return len(gone)

    def holds_any(self) -> bool:
        return self.pg.one("SELECT 1 FROM fsmem.embedded WHERE project = %s LIMIT 1", ()) is not None

    def mark(self) -> object:
        """Any worker's put or prune changes the count or the newest time (one indexed query)."""
        return self.pg.one("SELECT count(*), max(made) FROM fsmem.embedded WHERE project = %s", ())

    def beside(self, name: str) -> None:
        """In the database: no file beside it (each worker builds its view)."""
        return None

    def close(self) -> None:
        """The store's pool is the memory's: closed with it."""


def _drop(conn: Any, project: int, model: str, paths: list[str]) -> None:
    """Rows are marked gone, and a trigger deletes them: a tenant's role has no DELETE (which would let
    it lock the whole table for every project; docs/postgres.md)."""
    for table in ("passages", "embedded"):
        conn.execute(
            f"UPDATE fsmem.{table} SET gone = true WHERE project = %s AND model = %s AND path = ANY(%s)",  # noqa: S608
            (project, model, paths),
        )
