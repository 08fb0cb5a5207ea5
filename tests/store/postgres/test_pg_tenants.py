"""Tenants apart outside the rows: with docs/postgres.md's row-level security, one project's role can
neither make another project's changes wait (locks) nor hear its commits (LISTEN), on a database made
with today's recipe and on one made by an older fsmem with the recipe as it was, then migrated."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.store.postgres.test_pg_store import _doc_sql, put

pytestmark = pytest.mark.timeout(120)

LOCK_TIMEOUT = 2.0  # B's wait before BUSY: a blocked write fails fast


@dataclass
class Tenants:
    owner: str  # the schema owner's URL
    a: str  # role A's URL (project alpha)
    b: str  # role B's URL (project beta)
    a_id: int
    b_id: int


def _once_per_database(group: str, before_locks: bool) -> str:
    sql = _doc_sql("once per database")
    if before_locks:  # the recipe as an older fsmem documented it: no fsmem.locks, tables' UPDATE and DELETE
        kept = [
            line
            for line in sql.splitlines()
            if not any(table in line for table in ("fsmem.locks", "fsmem.embedded", "fsmem.passages"))
            and not (line.startswith("GRANT") and "ON fsmem.kept_versions" in line)
        ]
        sql = "\n".join(kept).replace(
            "UPDATE (content, version, modified, path, gone) ON fsmem.files",
            "UPDATE, DELETE ON fsmem.files, fsmem.kept_versions, fsmem.proposals",
        )
    return sql.replace("fsmem_tenant", group)


@pytest.fixture(scope="module", params=["today", "migrated"])
def tenants(request, pg_server) -> Iterator[Tenants]:
    """Two projects, each with its own role made by docs/postgres.md's SQL: on a fresh database
    ("today"), or on a database an older fsmem made, with the recipe of its day, opened (so migrated)
    by this fsmem ("migrated")."""
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    from fsmem._store.postgres import schema as pg_schema
    from fsmem._store.postgres.store import PgStore
    from tests.conftest import as_url

    suffix = uuid.uuid4().hex[:8]
    name, group = f"fsmem_tenants_{suffix}", f"fsmem_tenant_{suffix}"
    roles = {"alpha": f"fsmem_alpha_{suffix}", "beta": f"fsmem_beta_{suffix}"}
    with psycopg.connect(pg_server.url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    owner = as_url(make_conninfo(pg_server.url, dbname=name))
    try:
        with psycopg.connect(owner, autocommit=True) as conn:
            if request.param == "migrated":  # as fsmem left it before locks and channels were keyed
                conn.execute("CREATE SCHEMA fsmem")
                conn.execute("CREATE TABLE fsmem.schema_version (version integer NOT NULL)")
                for migration in pg_schema.MIGRATIONS[:2]:
                    conn.execute(migration)
                conn.execute("INSERT INTO fsmem.schema_version VALUES (2)")
                conn.execute("INSERT INTO fsmem.projects (name) VALUES ('alpha'), ('beta')")
            else:
                for project in roles:
                    PgStore.open(owner, project).close()
            conn.execute(_once_per_database(group, before_locks=request.param == "migrated"))
            for project, role in roles.items():
                conn.execute(
                    _doc_sql("per project")
                    .replace("fsmem_rye_and_ember", role)
                    .replace("rye-and-ember", project)
                    .replace("fsmem_tenant", group)
                )
        ids = {}
        for project in roles:
            with PgStore.open(owner, project, create=False) as store:  # "migrated": the first open migrates
                ids[project] = store.project_id
        yield Tenants(
            owner,
            as_url(make_conninfo(owner, user=roles["alpha"])),
            as_url(make_conninfo(owner, user=roles["beta"])),
            ids["alpha"],
            ids["beta"],
        )
    finally:
        with psycopg.connect(pg_server.url, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
            for role in (*roles.values(), group):
                admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def _old_keys(b_id: int) -> list[tuple[str, tuple[object, ...]]]:
    """Every advisory lock an older fsmem took for project ``b_id``: the folder, commit, levels, facts
    and keep locks, and the path locks of the paths the test writes."""
    keys: list[tuple[str, tuple[object, ...]]] = [("%s, %s", (kind, b_id)) for kind in (1, 2, 3, 4, 5, 6)]
    for path in ("notes", "notes/new.md", "archive", "archive/new.md", "plan.md"):
        keys.append(("hashtextextended(%s, %s)", (path, b_id)))
    return keys


class Spy(threading.Thread):
    """Role A, taking (for its session, never releasing) every advisory lock it sees another role hold
    in pg_locks: a key derived from a secret would be named there the moment B's change took it."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.stop, self.taken = url, threading.Event(), set()

    def run(self) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self.stop.is_set():
                for high, low, form in conn.execute(
                    "SELECT classid::bigint, objid::bigint, objsubid FROM pg_locks JOIN pg_stat_activity "
                    "USING (pid) WHERE locktype = 'advisory' AND usename <> current_user"
                ).fetchall():
                    if form == 1:  # one bigint key: its high and low halves
                        conn.execute("SELECT pg_try_advisory_lock((%s::bigint << 32) | %s::bigint)", (high, low))
                    else:
                        conn.execute("SELECT pg_try_advisory_lock(%s::int, %s::int)", (high, low))
                    self.taken.add((high, low, form))


def test_a_tenant_cannot_make_another_tenants_writes_wait(tenants) -> None:
    import psycopg

    from fsmem._store.postgres.store import PgStore

    with psycopg.connect(tenants.a, autocommit=True) as a:
        for expression, params in _old_keys(tenants.b_id):  # the keys B's locks were named by
            assert a.execute(f"SELECT pg_try_advisory_lock({expression})", params).fetchone() == (True,)
        spy = Spy(tenants.a)
        spy.start()
        try:
            with PgStore.open(tenants.b, "beta", create=False, lock_timeout=LOCK_TIMEOUT) as b:
                started = time.monotonic()
                for round_ in range(3):  # new files, a file changed, a folder renamed, holds, a kept version
                    put(b, "plan.md", f"plan {round_}\n")
                    put(b, "notes/new.md", f"note {round_}\n")
                    with b.change("rename") as tx:
                        tx.lock_folder()
                        tx.move("notes", "archive")
                    with b.change("levels") as tx:
                        tx.hold("levels")
                        tx.hold("facts")
                        tx.delete("archive")
                    b.keep_version("plan.md", b"a person's text\n", "sync")
                took = time.monotonic() - started
                assert b.read("plan.md") == b"plan 2\n" and not b.exists("archive")
        finally:
            spy.stop.set()
            spy.join()
        assert took < LOCK_TIMEOUT, f"B's 15 changes took {took:.1f} s"
        assert spy.taken == set()  # B named no advisory lock A could see
        # B's lock rows: row-level security shows A none of them, and A may not lock the table.
        assert a.execute("SELECT count(*) FROM fsmem.locks WHERE project = %s", (tenants.b_id,)).fetchone() == (0,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege), a.transaction():
            a.execute("LOCK TABLE fsmem.locks IN EXCLUSIVE MODE")
    with psycopg.connect(tenants.b, autocommit=True) as b_rows:
        assert b_rows.execute("SELECT count(*) FROM fsmem.projects").fetchone() == (1,)


MODES = (
    "ACCESS SHARE",
    "ROW SHARE",
    "ROW EXCLUSIVE",
    "SHARE UPDATE EXCLUSIVE",
    "SHARE",
    "SHARE ROW EXCLUSIVE",
    "EXCLUSIVE",
    "ACCESS EXCLUSIVE",
)
TABLES = ("projects", "files", "kept_versions", "log", "proposals", "locks", "schema_version", "tenants",
          "embedded", "passages")  # every table of the schema: the test below checks that this names them all


def test_a_tenant_may_lock_no_table_in_a_mode_that_makes_another_wait(tenants) -> None:
    """LOCK TABLE is checked against table-level privileges, never row-level security: SELECT allows
    ACCESS SHARE, INSERT ROW EXCLUSIVE, and UPDATE, DELETE or TRUNCATE every mode. A tenant keeps
    only the first two, which no change of another project's waits for: B's changes (files made,
    changed, deleted, a folder renamed and deleted, kept versions trimmed, proposals saved and
    deleted) go through while A holds every lock it can take on every table."""
    import psycopg

    from fsmem._store.postgres.store import PgStore
    from fsmem._store.types import ChangeProposal

    may = {}
    with psycopg.connect(tenants.a) as a:
        in_schema = a.execute(
            "SELECT relname FROM pg_class WHERE relnamespace = 'fsmem'::regnamespace AND relkind = 'r'"
        )
        assert sorted(TABLES) == sorted(name for (name,) in in_schema)  # a new table is checked here too
        for table in TABLES:
            for mode in MODES:
                try:
                    a.execute(f"LOCK TABLE fsmem.{table} IN {mode} MODE NOWAIT")
                    may[table, mode] = True
                except psycopg.errors.InsufficientPrivilege:
                    may[table, mode] = False
                a.rollback()
    granted = {(table, mode) for (table, mode), ok in may.items() if ok}
    assert granted == {
        *(
            (table, "ACCESS SHARE")
            for table in (
                "projects", "files", "kept_versions", "log", "proposals", "locks", "schema_version", "embedded",
                "passages",
            )
        ),
        *(
            (table, "ROW EXCLUSIVE")
            for table in ("files", "kept_versions", "log", "proposals", "locks", "embedded", "passages")
        ),
    }

    with psycopg.connect(tenants.a) as a:  # A holds all of that in an open transaction
        for table, mode in sorted(granted):
            a.execute(f"LOCK TABLE fsmem.{table} IN {mode} MODE")
        with PgStore.open(tenants.b, "beta", create=False, lock_timeout=LOCK_TIMEOUT, versions_kept=3) as b:
            started = time.monotonic()
            for round_ in range(5):  # more writes than kept versions: each trims
                put(b, "locked/plan.md", f"plan {round_}\n")
            assert len(b.versions("locked/plan.md")) == 3  # trimmed to versions_kept, as B's own role
            put(b, "locked/other.md", "other\n")
            with b.change("delete") as tx:
                tx.delete("locked/other.md")
            with b.change("rename") as tx:
                tx.lock_folder()
                tx.move("locked", "moved")
            with b.change("delete") as tx:
                tx.lock_folder()
                tx.delete("moved")
            proposal = ChangeProposal(
                id="20261201T101010-lock01",
                made_at="2026-12-01T10:10:10Z",
                thread="t-1",
                scope="chat",
                request={"command": "delete", "path": "a.md"},
                base={},
                summary="delete a.md",
            )
            b.save_proposal(proposal)
            b.delete_proposal(proposal.id)
            took = time.monotonic() - started
            assert not b.exists("moved/plan.md") and b.proposals() == []
        a.rollback()
    assert took < LOCK_TIMEOUT, f"B's changes took {took:.1f} s while A held its locks"


def test_a_tenant_hears_none_of_another_tenants_commits(tenants) -> None:
    import psycopg

    from fsmem._store.postgres.store import PgStore

    with (
        PgStore.open(tenants.a, "alpha", create=False) as alpha,
        PgStore.open(tenants.b, "beta", create=False) as beta,
        psycopg.connect(tenants.a, autocommit=True) as a,
    ):
        # Every channel A can name: the old ones (fsmem_<id>) of any project, and its own project's.
        for name in [*(f"fsmem_{n}" for n in range(50)), alpha.channel]:
            a.execute(f'LISTEN "{name}"')
        heard: list[int] = []
        woke = threading.Event()
        listener = beta.listen(lambda seq: (heard.append(seq), woke.set()))
        try:
            deadline = time.monotonic() + 5
            while not listener.ready.is_set() and time.monotonic() < deadline:
                time.sleep(0.01)
            put(beta, "secret.md", "beta's\n")
            with beta.change("rename") as tx:
                tx.move("secret.md", "kept/secret.md")
            assert woke.wait(5), "B's own worker was not woken"
            deadline = time.monotonic() + 5
            while (not heard or heard[-1] < beta.newest_seq()) and time.monotonic() < deadline:
                time.sleep(0.01)
            assert heard[-1] == beta.newest_seq()
        finally:
            listener.stop()
        time.sleep(0.3)  # a notification is delivered at commit: long since, had A been sent one
        notes = list(a.notifies(timeout=0.2, stop_after=None))
        assert notes == [], [(note.channel, note.payload) for note in notes]
        assert not alpha.exists("kept/secret.md")
        assert alpha.channel != beta.channel


def test_an_older_worker_still_running_has_its_changes_refused_whole(tenants) -> None:
    """A worker of an older fsmem, opened before the migration, logs its change as it always did: the
    change is refused whole (nothing of it stays), never made under locks this fsmem does not take."""
    import psycopg

    with psycopg.connect(tenants.b) as old, pytest.raises(psycopg.errors.NotNullViolation):
        old.execute("SELECT pg_advisory_xact_lock_shared(1, %s)", (tenants.b_id,))
        old.execute(
            "INSERT INTO fsmem.files (project, path, content, version) VALUES (%s, 'old.md', 'x', 'v')", (tenants.b_id,)
        )
        old.execute(
            "INSERT INTO fsmem.log (project, command, thread, path, new_path, before, after) "
            "VALUES (%s, 'write', NULL, 'old.md', NULL, NULL, 'v')",
            (tenants.b_id,),
        )
    with psycopg.connect(tenants.b) as conn:
        assert conn.execute("SELECT count(*) FROM fsmem.files WHERE path = 'old.md'").fetchone() == (0,)


def test_a_tenant_keeps_and_drops_its_own_passages_and_sees_none_of_another(tenants) -> None:
    """Recall by meaning's rows (fsmem.embedded, fsmem.passages) are a project's like its files: its
    role writes, reads and drops them (marked gone: it has no DELETE), and another role sees none."""
    from types import SimpleNamespace

    from fsmem._index.pg_vectors import PgVectors
    from fsmem._store.postgres.store import PgStore

    with (
        PgStore.open(tenants.a, "alpha", create=False) as a,
        PgStore.open(tenants.b, "beta", create=False) as b,
    ):
        kept_a, kept_b = PgVectors(SimpleNamespace(pg=a)), PgVectors(SimpleNamespace(pg=b))  # type: ignore[arg-type]
        kept_a.put("m", "plan.md", "v1", [(1, "alpha's plan", b"\x01\x02")])
        kept_b.put("m", "plan.md", "w1", [(1, "beta's plan", b"\x03")])
        assert list(kept_a.vectors("m", {"plan.md": "v1"})) == [("plan.md", "v1", b"\x01\x02")]
        assert kept_a.passage("m", "plan.md", "v1", 0) == (1, "alpha's plan") and kept_a.count("m") == 1
        assert list(kept_a.vectors_of("m", {"plan.md": "v1"})) == [("plan.md", "v1", b"\x01\x02")]
        assert list(kept_b.vectors("m", {"plan.md": "v1"})) == []  # A's version is not B's to see
        assert list(kept_b.vectors_of("m", {"plan.md": "v1"})) == []
        assert kept_b.passage("m", "plan.md", "v1", 0) is None
        kept_a.put("m", "plan.md", "v2", [(2, "alpha's new plan", b"\x04")])  # the older version's rows go
        assert kept_a.held("m") == {"plan.md": "v2"} and kept_a.passage("m", "plan.md", "v1", 0) is None
        assert kept_a.prune("m", {}) == 1 and kept_a.held("m") == {}
        assert kept_b.held("m") == {"plan.md": "w1"}  # A's drops never reach B's rows
