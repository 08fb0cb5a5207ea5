"""Export and import of a whole project (``fsmem/_memory/copy.py``: a project into another store):
read in one snapshot, written in one transaction."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import psycopg

from fsmem._core.versions import version_of
from fsmem._errors import Exists
from fsmem._store.postgres import locks
from fsmem._store.postgres.connection import PgProject
from fsmem._store.postgres.errors import committed
from fsmem._store.postgres.log import LOG_COLUMNS, log_entry
from fsmem._store.postgres.proposals import INSERT_PROPOSAL, PROPOSAL_COLUMNS, proposal_row
from fsmem._store.postgres.reads import iso
from fsmem._store.types import ChangeProposal, CopiedFile, CopiedVersion, ProjectCopy


def export_project(db: PgProject) -> ProjectCopy:
    """Every file, kept version, log entry and proposal of the project, read in one snapshot
    (REPEATABLE READ): a change committing meanwhile is in all of it or in none of it."""

    def read(conn: psycopg.Connection[Any]) -> ProjectCopy:
        project = (db.project_id,)
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        try:
            files = [
                CopiedFile(path, bytes(content), modified.timestamp())
                for path, content, modified in conn.execute(
                    "SELECT path, content, modified FROM fsmem.files WHERE project = %s ORDER BY path", project
                ).fetchall()
            ]
            versions = [
                CopiedVersion(path, version, iso(kept_at), command, bytes(content))
                for path, version, kept_at, command, content in conn.execute(
                    "SELECT path, version, kept_at, command, content FROM fsmem.kept_versions "
                    "WHERE project = %s ORDER BY id",
                    project,
                ).fetchall()
            ]
            log = [
                log_entry(row)
                for row in conn.execute(
                    f"SELECT {LOG_COLUMNS} FROM fsmem.log WHERE project = %s ORDER BY seq", project
                ).fetchall()
            ]
            proposals = [
                asdict(ChangeProposal(*row))
                for row in conn.execute(
                    f"SELECT {PROPOSAL_COLUMNS} FROM fsmem.proposals WHERE project = %s ORDER BY id", project
                ).fetchall()
            ]
        finally:
            if not conn.broken:
                conn.execute("ROLLBACK")
        return ProjectCopy(files, versions, log, proposals)

    return db.run(read, alone=True)


def import_project(db: PgProject, copy: ProjectCopy) -> None:
    """Write ``copy`` into this project in ONE transaction: all of it or, on any failure (a
    killed process, a lost server), nothing. Refuses (``EXISTS``) a project that holds anything."""
    project = db.project_id
    with (
        db.connection() as conn,
        committed(
            conn,
            refused="nothing was copied",
            unknown="the copy may or may not have been made; look at the project",
        ),
    ):
        locks.take(conn, project, locks.FOLDER)
        locks.take(conn, project, locks.COMMIT)
        held = conn.execute(
            "SELECT EXISTS (SELECT 1 FROM fsmem.files WHERE project = %(p)s) "
            "OR EXISTS (SELECT 1 FROM fsmem.kept_versions WHERE project = %(p)s) "
            "OR EXISTS (SELECT 1 FROM fsmem.log WHERE project = %(p)s) "
            "OR EXISTS (SELECT 1 FROM fsmem.proposals WHERE project = %(p)s)",
            {"p": project},
        ).fetchone()
        if held and held[0]:
            raise Exists(
                f"project {db.project!r} already holds memory; copy into a new project (fsmem copy "
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
                "INSERT INTO fsmem.log (project, time, command, path, new_path, before, after, thread, row_locks) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, true)",
                [(project, e.time, e.command, e.path, e.new_path, e.before, e.after, e.thread) for e in copy.log],
            )
        for record in copy.proposals:
            conn.execute(
                INSERT_PROPOSAL,
                proposal_row(project, ChangeProposal(**record)),
            )
        conn.execute(
            "SELECT pg_notify(%s, coalesce(max(seq), 0)::text) FROM fsmem.log WHERE project = %s",
            (db.channel, project),
        )
