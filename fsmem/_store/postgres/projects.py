"""A project's name and the row it finds: names checked, one project per key, made when asked.

A name is shown as typed (``fsmem.projects.name``, the first creator's spelling); what decides which
project it is, is its key (``fsmem.projects.key``, migration 4): NFC, case folded, trimmed, runs of
whitespace made one space. ``Rye and Ember``, ``rye  and ember`` and its NFD twin are one project.
A project made before migration 4 has no key: its exact name still opens it, and another spelling
opens it when it is the only old project with that key (two old projects that differ only so are
each opened by their exact name, never guessed between).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import psycopg

from fsmem._errors import BadStore, RootNotFound
from fsmem._store.postgres import locks

MAX_NAME = 200
_SPACES = re.compile(r"\s+")
_COLUMNS = "id, uid, secret, name"


def check_name(name: object) -> str:
    """``name`` if it can name a project; else BAD_STORE, saying what to type instead."""
    example = "e.g. 'rye-and-ember'"
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME:
        raise BadStore(f"a project name is 1 to {MAX_NAME} characters, {example}")
    for char in name:
        kind = unicodedata.category(char)
        if kind == "Cs":  # a lone surrogate: bytes that were not UTF-8 (a shell argument, a file name)
            raise BadStore(
                f"a project name must be UTF-8 text; {name!r} holds bytes that are not: retype it, {example}"
            )
        if kind in ("Cc", "Cf") and not char.isspace():  # NUL, escapes, invisible formatting
            raise BadStore(
                f"a project name may not hold control or invisible characters ({char!r} in {name!r}); {example}"
            )
    return name


def project_key(name: str) -> str:
    """What makes two names one project: NFC, case folded, trimmed, inner whitespace one space."""
    return _SPACES.sub(" ", unicodedata.normalize("NFC", name)).strip().casefold()


def find(conn: psycopg.Connection[Any], name: str, create: bool) -> tuple[int, str, str, str]:
    """The project ``name`` names (made when missing and ``create``): its id, random identity
    (``uid``), secret (its channel's name) and its name as first typed."""
    key = project_key(check_name(name))
    row = _existing(conn, name, key)
    if row is None and create:
        conn.execute(
            "INSERT INTO fsmem.projects (name, key) VALUES (%s, %s) ON CONFLICT DO NOTHING", (_shown(name), key)
        )
        row = conn.execute(f"SELECT {_COLUMNS} FROM fsmem.projects WHERE key = %s", (key,)).fetchone()
        if row is not None:
            locks.make_named(conn, int(row[0]))
    if row is None:
        raise RootNotFound(
            f"there is no project {name!r} in this database (or this role may not see it); "
            "open it with create=True to make it"
        )
    return int(row[0]), str(row[1]), str(row[2]), str(row[3])


def _existing(conn: psycopg.Connection[Any], name: str, key: str) -> tuple[Any, ...] | None:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM fsmem.projects WHERE key = %s OR (key IS NULL AND name = %s) "
        "ORDER BY key IS NULL LIMIT 1",
        (key, name),
    ).fetchone()
    if row is not None:
        return row
    # Projects made before migration 4 have no key: the one whose name has this key, if only one has.
    older = [
        found
        for found in conn.execute(f"SELECT {_COLUMNS} FROM fsmem.projects WHERE key IS NULL").fetchall()
        if project_key(str(found[3])) == key
    ]
    if len(older) > 1:
        spelled = ", ".join(repr(str(found[3])) for found in older)
        raise BadStore(
            f"{name!r} could name any of the projects {spelled} (made before names were compared ignoring "
            "case and spaces): open one by its exact name"
        )
    return older[0] if older else None


def _shown(name: str) -> str:
    """The name kept for display: as typed, in NFC and without the spaces around it."""
    return unicodedata.normalize("NFC", name).strip()
