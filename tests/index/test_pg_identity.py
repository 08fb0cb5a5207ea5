"""What PostgreSQL's derived copies are tied to: a worker's search cache and a `fsmem sync` folder
belong to one project of one database (its random identity, ``fsmem.projects.uid``), never to a name
or a sequence number alone. A cache folder used for two projects, a database restored from a backup
at the same URL, a sync folder pointed at another database: each is noticed, nothing stale is served
and nothing is deleted by mistake."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import as_url

import fsmem
from fsmem._memory.levels import Scope


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def write(memory: fsmem.Memory, path: str, text: str) -> None:
    run = memory.run(Scope.chat(), thread_id=f"t-{uuid.uuid4().hex[:6]}")
    if memory.drive.exists(path):
        run.call({"command": "read", "path": path})
    result = run.call({"command": "write", "path": path, "content": text})
    assert result["ok"], result


def found(memory: fsmem.Memory, query: str) -> list[str]:
    return sorted({hit.path for hit in memory.search(query)})


@pytest.fixture
def databases(pg_server) -> Iterator:
    """``make(name, template=None)``: a database of the test server (a copy of ``template``, as a
    restore from a backup makes), ``drop(name)``; the URL of each; all dropped after the test."""
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    made: list[str] = []

    def admin(statement: sql.Composable) -> None:
        with psycopg.connect(pg_server.url, autocommit=True) as conn:
            conn.execute(statement)

    class Databases:
        @staticmethod
        def make(name: str, template: str | None = None) -> str:
            if template is None:
                admin(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            else:
                admin(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(template)))
            made.append(name)
            return as_url(make_conninfo(pg_server.url, dbname=name))

        @staticmethod
        def drop(name: str) -> None:
            admin(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))

    yield Databases
    for name in made:
        Databases.drop(name)


# ---- the search cache -------------------------------------------------------------------------------


def test_a_cache_folder_used_for_another_project_never_serves_the_first_projects_text(
    postgres: str, tmp_path: Path
) -> None:
    cache = tmp_path / "shared-cache"
    a = fsmem.open(postgres, project=_name("tenant-a"), create=True, cache=cache)
    b = fsmem.open(postgres, project=_name("tenant-b"), create=True, cache=tmp_path / "unused")
    try:
        write(a, "notes/payroll.md", "Tenant A salary table: zanzibar-quokka\n")
        assert found(a, "zanzibar") == ["notes/payroll.md"]
        for number in range(3):  # B's newest number passes A's mark: only an identity tells them apart
            write(b, f"notes/b{number}.md", f"tenant b note {number}\n")
        assert b.drive.pg.newest_seq() > a.drive.pg.newest_seq()
    finally:
        a.close()
        b.close()
    b = fsmem.open(postgres, project=b.name, cache=cache)
    try:
        assert found(b, "zanzibar") == []
        assert found(b, "tenant") == ["notes/b0.md", "notes/b1.md", "notes/b2.md"]
    finally:
        b.close()
    a = fsmem.open(postgres, project=a.name, cache=cache)  # and back: A's own again, nothing of B's
    try:
        assert found(a, "zanzibar") == ["notes/payroll.md"] and found(a, "tenant") == ["notes/payroll.md"]
    finally:
        a.close()


def test_a_database_restored_from_a_backup_at_the_same_url_is_read_again_from_the_rows(
    databases, tmp_path: Path
) -> None:
    live, backup = _name("fsmem_live").replace("-", "_"), _name("fsmem_backup").replace("-", "_")
    url = databases.make(live)
    project = _name("restored")
    a = fsmem.open(url, project=project, create=True, cache=tmp_path / "a")
    write(a, "brand.md", "# Brand\nteal and sand\n")
    a.close()
    databases.make(backup, template=live)  # the backup, taken now
    a = fsmem.open(url, project=project, cache=tmp_path / "a")
    b = fsmem.open(url, project=project, cache=tmp_path / "b")
    write(a, "secret.md", "an axolotl written after the backup\n")
    assert found(b, "axolotl") == ["secret.md"]
    applied = b.drive.pg.newest_seq()
    a.close()
    b.close()
    databases.drop(live)
    databases.make(live, template=backup)  # restored at the same URL: secret.md was never written
    a = fsmem.open(url, project=project, cache=tmp_path / "a")
    try:
        number = 0
        while a.drive.pg.newest_seq() <= applied:  # new writes push the newest number past B's mark
            write(a, f"notes/n{number}.md", f"note {number}\n")
            number += 1
        write(a, "zoo.md", "an axolotl in the zoo\n")
        assert not a.drive.exists("secret.md")
    finally:
        a.close()
    b = fsmem.open(url, project=project, cache=tmp_path / "b")
    try:
        assert found(b, "axolotl") == ["zoo.md"]
        assert found(b, "teal") == ["brand.md"]
    finally:
        b.close()


def test_each_project_has_its_own_random_identity(postgres: str) -> None:
    from fsmem._store.postgres.store import PgStore

    name = _name("ident")
    with (
        PgStore.open(postgres, name) as one,
        PgStore.open(postgres, name) as same,
        PgStore.open(postgres, name + "-x") as other,
    ):
        assert one.identity == same.identity and one.uid == same.uid
        assert str(uuid.UUID(one.uid)) == one.uid and other.uid != one.uid and other.identity != one.identity


def test_projects_of_a_database_made_before_identities_each_get_their_own(databases) -> None:
    import psycopg

    from fsmem._store.postgres import schema as _pg_schema
    from fsmem._store.postgres.store import PgStore

    url = databases.make(_name("fsmem_v1").replace("-", "_"))
    with psycopg.connect(url, autocommit=True) as conn:  # as the first fsmem with PostgreSQL left it
        conn.execute("CREATE SCHEMA fsmem")
        conn.execute("CREATE TABLE fsmem.schema_version (version integer NOT NULL)")
        conn.execute(_pg_schema.MIGRATIONS[0])
        conn.execute("INSERT INTO fsmem.schema_version VALUES (1)")
        conn.execute("INSERT INTO fsmem.projects (name) VALUES ('one'), ('two')")
    with PgStore.open(url, "one", create=False) as one, PgStore.open(url, "two", create=False) as two:
        assert one.uid and two.uid and one.uid != two.uid
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT version FROM fsmem.schema_version").fetchall() == [(_pg_schema.CURRENT,)]


# ---- a sync folder ------------------------------------------------------------------------------------


def _put(store, path: str, text: str) -> None:
    with store.change("write") as tx:
        tx.write(path, text.encode())


def test_a_sync_folder_refuses_another_database_with_the_same_project_name(databases, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from fsmem.cli import main
    from fsmem._errors import BadStore
    from fsmem._store.postgres.store import PgStore
    from fsmem._memory.sync import Sync

    first = databases.make(_name("fsmem_first").replace("-", "_"))
    second = databases.make(_name("fsmem_second").replace("-", "_"))
    folder = tmp_path / "mirror"
    with PgStore.open(first, "shared-name") as one, PgStore.open(second, "shared-name") as two:
        for number in range(4):  # the second database's sequence runs further than the first's
            _put(two, f"other/{number}.md", "the other database\n")
        _put(one, "notes/kept.md", "the person's memory\n")
        with Sync.open(folder, one) as mirror:
            assert mirror.run_once(None).pulled == ["notes/kept.md"]
        state = (folder / ".fsmem-sync" / "state.json").read_text()
        with pytest.raises(BadStore, match="synced with another project named 'shared-name'"):
            Sync.open(folder, two)
        refused = CliRunner().invoke(
            main, ["sync", str(folder), "--store", second, "--project", "shared-name", "--once"]
        )
        assert refused.exit_code == 2 and refused.output.startswith("Error: [BAD_STORE] "), refused.output
        assert (folder / "notes" / "kept.md").read_text() == "the person's memory\n"  # nothing deleted
        assert not (folder / "other").exists() and (folder / ".fsmem-sync" / "state.json").read_text() == state
        assert two.read("notes/kept.md") is None  # nor pushed
        with Sync.open(folder, one) as mirror:  # its own project still syncs
            assert not mirror.run_once(None).changed


# ---- fsmem status --------------------------------------------------------------------------------------


def test_status_on_postgresql_does_not_send_the_person_to_fsmem_watch(postgres: str, tmp_path: Path) -> None:
    from conftest import run_fsmem

    project = _name("status")
    memory = fsmem.open(postgres, project=project, create=True, cache=tmp_path / "cache")
    write(memory, "brand.md", "# Brand\n")
    memory.close()
    env = {"FSMEM_STORE": postgres, "FSMEM_PROJECT": project, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    shown = run_fsmem("status", env=env)
    assert shown.returncode == 0, shown.stderr
    watcher = [line for line in shown.stdout.splitlines() if line.startswith("watcher:")]
    assert watcher == [
        "watcher:   not running (none is needed on PostgreSQL: each search catches up from the log first)"
    ]
    assert "fsmem watch" not in shown.stdout


def test_a_sync_folder_follows_a_database_restored_from_a_backup_after_a_full_pass(databases, tmp_path: Path) -> None:
    from fsmem._store.postgres.store import PgStore
    from fsmem._memory.sync import Sync

    live, backup = _name("fsmem_live").replace("-", "_"), _name("fsmem_backup").replace("-", "_")
    url = databases.make(live)
    folder = tmp_path / "mirror"
    with PgStore.open(url, "restored") as store:
        _put(store, "brand.md", "# Brand\n")
    databases.make(backup, template=live)
    with PgStore.open(url, "restored") as store, Sync.open(folder, store) as mirror:
        for number in range(4):
            _put(store, f"notes/{number}.md", "after the backup\n")
        mirror.run_once(None)
    databases.drop(live)
    databases.make(live, template=backup)  # restored: its sequence is behind the folder's
    with PgStore.open(url, "restored") as store, Sync.open(folder, store) as mirror:
        mirror.run_once(None)  # the full pass: the folder is as the restored database
        assert sorted(p.name for p in folder.rglob("*.md")) == ["brand.md"]
        _put(store, "late.md", "written after the restore\n")
        assert mirror.run_once(set()).pulled == ["late.md"]  # a watcher's pass: the log since
