"""Proposals as rows of ``fsmem.proposals``: saved, loaded, listed and deleted one statement each.

Their JSON columns are ``json`` (migration 4), kept as written: a proposal's keys come back in their
order, so a copy into a folder writes the bytes the folder store would have.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.types.json import Json

from fsmem._errors import Exists, NotFound
from fsmem._store.postgres.connection import PgProject
from fsmem._store.types import ChangeProposal

PROPOSAL_COLUMNS = "id, made_at, thread, scope, request, base, summary, diff, extra"
INSERT_PROPOSAL = (
    f"INSERT INTO fsmem.proposals (project, {PROPOSAL_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)


def save(db: PgProject, proposal: ChangeProposal) -> None:
    def insert(conn: psycopg.Connection[Any]) -> None:
        try:
            conn.execute(INSERT_PROPOSAL, proposal_row(db.project_id, proposal))
        except psycopg.errors.UniqueViolation as error:
            raise Exists(f"there is already a proposal {proposal.id}; make a new id") from error

    db.run(insert, write=True)


def load(db: PgProject, proposal_id: str) -> ChangeProposal:
    row = db.one(f"SELECT {PROPOSAL_COLUMNS} FROM fsmem.proposals WHERE project = %s AND id = %s", (proposal_id,))
    if row is None:
        raise NotFound(f"there is no proposal {proposal_id!r}; list them with `fsmem proposals`")
    return ChangeProposal(*row)


def every(db: PgProject) -> list[ChangeProposal]:
    return [
        ChangeProposal(*row)
        for row in db.rows(f"SELECT {PROPOSAL_COLUMNS} FROM fsmem.proposals WHERE project = %s ORDER BY id", ())
    ]


def delete(db: PgProject, proposal_id: str) -> None:
    cursor = db.run(
        lambda conn: conn.execute(
            "UPDATE fsmem.proposals SET gone = true WHERE project = %s AND id = %s", (db.project_id, proposal_id)
        ),
        write=True,
    )
    if cursor.rowcount == 0:
        raise NotFound(f"there is no proposal {proposal_id!r}; list them with `fsmem proposals`")


def proposal_row(project: int, proposal: ChangeProposal) -> tuple[object, ...]:
    """The parameters of ``INSERT_PROPOSAL``: the project's id, then the proposal's fields."""
    return (
        project,
        proposal.id,
        proposal.made_at,
        proposal.thread,
        proposal.scope,
        Json(proposal.request),
        Json(proposal.base),
        proposal.summary,
        proposal.diff,
        Json(proposal.extra),
    )
