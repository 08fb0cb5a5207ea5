"""Project names on a real PostgreSQL server: bad names are coded refusals, names that differ only by
case, spaces or Unicode form are one project, and projects made before names had keys still open."""

from __future__ import annotations

import os
import subprocess
import sys
import unicodedata

import psycopg
import pytest

from fsmem._errors import BadStore


@pytest.mark.parametrize("name", ["rye\x00ember", "rye\udcffember", "rye\u200bember", "rye\x1b[2Jember"])
def test_a_name_with_nul_a_lone_surrogate_or_a_control_character_is_bad_store(postgres, name) -> None:
    from fsmem._store.postgres.store import PgStore

    PgStore.open(postgres, "rye").close()
    with pytest.raises(BadStore) as refused:
        PgStore.open(postgres, name)
    assert refused.value.code == "BAD_STORE" and "project name" in refused.value.message
    with psycopg.connect(postgres) as conn:
        assert conn.execute("SELECT name FROM fsmem.projects").fetchall() == [("rye",)]


def test_the_cli_refuses_a_project_name_that_is_not_utf8_in_one_line(postgres) -> None:
    env = {**os.environ, "FSMEM_STORE": postgres}
    done = subprocess.run(
        [sys.executable.encode(), b"-m", b"fsmem", b"init", b"--project", b"rye\xffember"],
        capture_output=True,
        env=env,
        timeout=60,
    )
    lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("Error: [BAD_STORE] a project name must be UTF-8"), lines


def test_names_that_differ_by_case_spaces_or_unicode_form_are_one_project(postgres) -> None:
    from fsmem._store.postgres.store import PgStore

    typed = "Café  Rye"
    spellings = [typed, "café rye", " CAFÉ RYE ", unicodedata.normalize("NFD", "Café Rye"), "cafe\u0301\tRYE"]
    with PgStore.open(postgres, typed) as first:
        for spelling in spellings:
            with PgStore.open(postgres, spelling, create=False) as again:
                assert again.project_id == first.project_id
                assert again.project == typed  # shown as first typed
    with psycopg.connect(postgres) as conn:
        rows = conn.execute("SELECT name, key FROM fsmem.projects WHERE key LIKE 'caf%'").fetchall()
        assert rows == [(typed, "café rye")]


def test_workers_making_two_spellings_at_once_make_one_project(postgres) -> None:
    import threading

    from fsmem._store.postgres.store import PgStore

    ids: list[int] = []
    barrier = threading.Barrier(6)

    def make(spelling: str) -> None:
        barrier.wait()
        with PgStore.open(postgres, spelling) as store:
            ids.append(store.project_id)

    threads = [threading.Thread(target=make, args=(s,)) for s in ["Oat", "oat", "OAT", " oat", "oAt ", "Oat"]]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(ids) == 6 and len(set(ids)) == 1


@pytest.fixture
def schema_3(pg_server):
    """A fresh database of its own, its schema made by migrations 1 to 3 (as an older fsmem left it)."""
    from fsmem._store.postgres import schema
    from tests.conftest import fresh_database

    for url in fresh_database(pg_server):
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE SCHEMA fsmem")
            conn.execute("CREATE TABLE fsmem.schema_version (version integer NOT NULL)")
            for migration in schema.MIGRATIONS[:3]:
                conn.execute(migration)
            conn.execute("INSERT INTO fsmem.schema_version VALUES (3)")
        yield url


def test_projects_made_before_names_had_keys_still_open(schema_3) -> None:
    """A database at schema 3 with projects whose names are not normal, two of them alike."""
    from fsmem._store.postgres.store import PgStore

    postgres = schema_3
    with psycopg.connect(postgres, autocommit=True) as conn:
        for name in (" Barley  Field", "Rye", "rye"):
            project = conn.execute("INSERT INTO fsmem.projects (name) VALUES (%s) RETURNING id", (name,)).fetchone()
            conn.execute("INSERT INTO fsmem.locks SELECT %s, unnest(ARRAY[1, 2, 4, 5, 6])", project)
        old = dict(conn.execute("SELECT name, id FROM fsmem.projects").fetchall())

    with PgStore.open(postgres, " Barley  Field", create=False) as exact:
        assert exact.project_id == old[" Barley  Field"]
    with PgStore.open(postgres, "barley field") as alike:  # the one old project with that key
        assert alike.project_id == old[" Barley  Field"]
    for name in ("Rye", "rye"):
        with PgStore.open(postgres, name, create=False) as each:
            assert each.project_id == old[name]
    with pytest.raises(BadStore, match="open one by its exact name"):
        PgStore.open(postgres, "RYE")  # two old projects could be meant: never a third, never a guess
    with psycopg.connect(postgres) as conn:
        assert conn.execute("SELECT count(*) FROM fsmem.projects").fetchone() == (3,)


def test_a_proposal_kept_before_migration_4_still_loads(schema_3) -> None:
    """Migration 4 turns the proposals' jsonb into json (kept as written): older rows keep their data."""
    from fsmem._store.postgres.store import PgStore

    with psycopg.connect(schema_3, autocommit=True) as conn:
        (project,) = conn.execute("INSERT INTO fsmem.projects (name) VALUES ('rye') RETURNING id").fetchone()
        conn.execute(
            "INSERT INTO fsmem.proposals (project, id, made_at, scope, request, base, summary) "
            "VALUES (%s, 'p-1', '2026-12-01T17:00:00Z', 'chat', %s, '{\"a.md\": null}', 'write a.md')",
            (project, '{"path": "a.md", "command": "write", "content": "é\\n"}'),
        )
    with PgStore.open(schema_3, "rye", create=False) as store:
        [kept] = store.proposals()
        assert kept.request == {"path": "a.md", "command": "write", "content": "é\n"} and kept.base == {"a.md": None}
        assert kept.extra == {}
