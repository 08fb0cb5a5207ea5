"""fsmem._store.postgres.store on a real PostgreSQL server: every method, refusals, kept versions, log, tenants apart.

The server is bin/test's throwaway cluster (or one the session starts); each test gets a fresh database.
"""

from __future__ import annotations

import threading
import uuid

import pytest

from fsmem._core.versions import version_of
from fsmem._errors import BadPath, Conflict, Exists, NotFound, RootNotFound


@pytest.fixture
def store(postgres):
    from fsmem._store.postgres.store import PgStore

    with PgStore.open(postgres, f"rye-and-ember-{uuid.uuid4().hex[:8]}") as opened:
        yield opened


def put(store, path: str, text: str, command: str = "write", thread: str | None = None) -> str:
    with store.change(command, thread) as tx:
        return tx.write(path, text.encode())


# ---- files ----------------------------------------------------------------------------------------


def test_write_read_and_versions(store) -> None:
    assert store.read("MEMORY.md") is None
    version = put(store, "MEMORY.md", "# Project\n", thread="t-1")
    assert version == version_of(b"# Project\n")
    assert store.read("MEMORY.md") == b"# Project\n"
    assert store.version("MEMORY.md") == version
    assert store.exists("MEMORY.md") and not store.is_dir("MEMORY.md")
    put(store, "MEMORY.md", "# Project\n\n- two\n")
    kept = store.versions("MEMORY.md")
    assert [(k.version, k.command, k.size) for k in kept] == [(version, "write", len(b"# Project\n"))]
    assert store.read_kept("MEMORY.md", version) == b"# Project\n"
    assert store.read_kept("MEMORY.md", "000000000000") is None


def test_a_change_is_all_or_nothing(store) -> None:
    put(store, "a.md", "a\n")
    with pytest.raises(RuntimeError), store.change("write") as tx:
        tx.write("a.md", b"changed\n")
        tx.write("b.md", b"new\n")
        raise RuntimeError("the caller failed midway")
    assert store.read("a.md") == b"a\n" and store.read("b.md") is None
    assert [entry.path for entry in store.log()] == ["a.md"]


def test_conditional_writes_are_refused_when_the_version_moved(store) -> None:
    first = put(store, "notes/seo.md", "v1\n")
    put(store, "notes/seo.md", "v2\n")
    with pytest.raises(Conflict) as refused, store.change("write") as tx:
        tx.write("notes/seo.md", b"stale\n", expect=first)
    assert refused.value.code == "CONFLICT" and first in refused.value.message
    with pytest.raises(Exists), store.change("write") as tx:
        tx.write("notes/seo.md", b"fresh\n", expect=None)
    with pytest.raises(NotFound), store.change("write") as tx:
        tx.write("notes/gone.md", b"x\n", expect=first)
    with pytest.raises(Conflict), store.change("delete") as tx:
        tx.delete("notes/seo.md", expect=first)
    assert store.read("notes/seo.md") == b"v2\n"
    with store.change("write") as tx:
        assert tx.write("notes/seo.md", b"v3\n", expect=version_of(b"v2\n")) == version_of(b"v3\n")
    assert [entry.after for entry in store.log()] == [first, version_of(b"v2\n"), version_of(b"v3\n")]


def test_a_file_created_meanwhile_is_a_conflict(store) -> None:
    """Two changes both see no file; the second to write meets the first's row and is refused."""
    from fsmem._store.postgres.store import PgStore

    with PgStore.open(store.url, store.project) as other, pytest.raises(Conflict), store.change("write") as tx:
        assert tx.read("new.md") is None
        put(other, "new.md", "theirs\n")
        tx.write("new.md", b"mine\n")
    assert store.read("new.md") == b"theirs\n"


def test_read_in_a_change_locks_the_row_until_commit(store) -> None:
    """The folder drive's lock, per row: a second change waits for the first, and sees its result."""
    put(store, "count.md", "0")
    entered, results = threading.Event(), []

    def second() -> None:
        entered.wait()
        with store.change("write") as tx:
            value = int(tx.read("count.md") or b"0")
            tx.write("count.md", str(value + 1).encode())
            results.append(value)

    thread = threading.Thread(target=second)
    thread.start()
    with store.change("write") as tx:
        value = int(tx.read("count.md") or b"0")
        entered.set()
        thread.join(timeout=0.3)  # it cannot finish: the row is ours
        assert thread.is_alive()
        tx.write("count.md", str(value + 1).encode())
    thread.join(timeout=30)
    assert results == [1] and store.read("count.md") == b"2"


def test_paths_are_checked(store) -> None:
    for bad in ("", "/abs.md", "a//b.md", "a/../b.md", "x\\y.md"):
        with pytest.raises(BadPath):
            store.read(bad)
        with pytest.raises(BadPath), store.change("write") as tx:
            tx.write(bad, b"x")
    put(store, "notes.md", "a file\n")
    with pytest.raises(BadPath), store.change("write") as tx:
        tx.write("notes.md/inner.md", b"x")  # a file stands where the folder would be
    put(store, "folder/inner.md", "x\n")
    with pytest.raises(Exists), store.change("write") as tx:
        tx.write("folder", b"x")  # a folder is there


def test_entries_walk_and_folders(store) -> None:
    for path in ("MEMORY.md", "seo/a.md", "seo/b.md", "seo/deep/c.md", "seo/data.csv", "seoish.md"):
        put(store, path, path)
    assert [(e.path, e.is_dir, e.size) for e in store.entries("")] == [
        ("MEMORY.md", False, 9), ("seo", True, 0), ("seoish.md", False, 9)]
    assert [(e.path, e.is_dir) for e in store.entries("seo")] == [
        ("seo/a.md", False), ("seo/b.md", False), ("seo/data.csv", False), ("seo/deep", True)]
    assert [e.path for e in store.walk_files("seo")] == ["seo/a.md", "seo/b.md", "seo/data.csv", "seo/deep/c.md"]
    assert [e.path for e in store.walk_files()] == ["MEMORY.md", "seo/a.md", "seo/b.md", "seo/data.csv",
                                                    "seo/deep/c.md", "seoish.md"]
    assert store.is_dir("seo") and store.exists("seo") and not store.is_dir("seoish.md")
    with pytest.raises(NotFound):
        store.entries("nothing")


def test_delete_a_file_and_a_folder(store) -> None:
    for path in ("keep.md", "old/a.md", "old/b/c.md"):
        put(store, path, f"{path}\n")
    with store.change("delete", thread="t-9") as tx:
        tx.delete("keep.md")
    assert store.read("keep.md") is None
    assert [v.command for v in store.versions("keep.md")] == ["delete"]
    with store.change("delete") as tx:
        tx.delete("old")
    assert not store.exists("old") and [e.path for e in store.walk_files()] == []
    assert store.read_kept("old/b/c.md", version_of(b"old/b/c.md\n")) == b"old/b/c.md\n"
    deletes = [(e.path, e.after) for e in store.log() if e.command == "delete"]
    assert deletes == [("keep.md", None), ("old/a.md", None), ("old/b/c.md", None)]
    with pytest.raises(NotFound), store.change("delete") as tx:
        tx.delete("old")


def test_move_a_file_and_a_folder(store) -> None:
    for path in ("a.md", "src/x.md", "src/sub/y.md", "taken.md"):
        put(store, path, f"{path}\n")
    with store.change("rename") as tx:
        tx.move("a.md", "moved/a.md")
    assert store.read("a.md") is None and store.read("moved/a.md") == b"a.md\n"
    with store.change("rename") as tx:
        tx.move("src", "dst/inner")
    assert [e.path for e in store.walk_files()] == ["dst/inner/sub/y.md", "dst/inner/x.md", "moved/a.md",
                                                    "taken.md"]
    moves = [(e.path, e.new_path) for e in store.log() if e.command == "rename"]
    assert moves == [("a.md", "moved/a.md"), ("src/sub/y.md", "dst/inner/sub/y.md"), ("src/x.md", "dst/inner/x.md")]
    assert store.last_change("dst/inner/x.md").path == "src/x.md"
    with pytest.raises(Exists), store.change("rename") as tx:
        tx.move("moved/a.md", "taken.md")
    with pytest.raises(Exists), store.change("rename") as tx:
        tx.move("taken.md", "dst")
    with pytest.raises(BadPath), store.change("rename") as tx:
        tx.move("dst", "dst/inner/deeper")
    with pytest.raises(NotFound), store.change("rename") as tx:
        tx.move("nothing", "else")


def test_kept_versions_are_trimmed_to_twenty(store) -> None:
    for number in range(30):
        put(store, "busy.md", f"{number}\n")
    kept = store.versions("busy.md")
    assert len(kept) == 20
    assert [k.version for k in kept] == [version_of(f"{n}\n".encode()) for n in range(28, 8, -1)]
    with store.change("delete") as tx:
        tx.delete("busy.md")
    kept = store.versions("busy.md")
    assert len(kept) == 20 and kept[0].command == "delete" and kept[0].version == version_of(b"29\n")


def test_log_sequence_and_changes_since(store) -> None:
    assert store.newest_seq() == 0 and store.changes_since(0) == (0, [])
    put(store, "a.md", "1", thread="t-1")
    mark = store.newest_seq()
    put(store, "b.md", "1")
    with store.change("rename") as tx:
        tx.move("a.md", "c.md")
    newest, paths = store.changes_since(mark)
    assert newest == store.newest_seq() > mark and paths == ["b.md", "a.md", "c.md"]
    assert store.changes_since(newest) == (newest, [])
    entries = list(store.log())
    assert [(e.command, e.path, e.thread) for e in entries] == [
        ("write", "a.md", "t-1"), ("write", "b.md", None), ("rename", "a.md", None)]
    assert [e.path for e in store.log(since=mark)] == ["b.md", "a.md"]
    assert entries[0].time.endswith("Z") and entries[0].time < entries[2].time
    assert store.last_change("b.md") == entries[1] and store.last_change("zzz.md") is None


def test_sequence_numbers_become_visible_in_order(store, monkeypatch) -> None:
    """A change that took its sequence number first commits first: while it hangs between writing its
    log rows and COMMIT, a later change on another file waits, and readers see neither."""
    from fsmem._store.postgres.transaction import PgTransaction

    flushed, release = threading.Event(), threading.Event()
    original = PgTransaction._flush_log

    def slow_flush(tx) -> None:
        original(tx)
        if threading.current_thread().name == "first":
            flushed.set()
            release.wait(30)

    monkeypatch.setattr(PgTransaction, "_flush_log", slow_flush)
    put(store, "start.md", "0")
    before = store.newest_seq()
    first = threading.Thread(target=put, args=(store, "a.md", "first"), name="first")
    second = threading.Thread(target=put, args=(store, "b.md", "second"), name="second")
    first.start()
    assert flushed.wait(30)
    second.start()
    second.join(timeout=1.0)  # it must not commit ahead of the first, which holds a lower number
    assert store.changes_since(before) == (before, [])
    release.set()
    first.join(timeout=30)
    second.join(timeout=30)
    newest, paths = store.changes_since(before)
    assert paths == ["a.md", "b.md"] and newest == store.newest_seq()


def test_on_commit_hooks_get_the_changed_paths(store) -> None:
    seen: list[set[str]] = []
    store.on_commit.append(seen.append)
    put(store, "a.md", "1")
    with pytest.raises(Conflict), store.change("write") as tx:
        tx.write("a.md", b"2", expect="000000000000")
    assert seen == [{"a.md"}]


def test_listen_wakes_on_each_commit(store) -> None:
    woken: list[int] = []
    arrived = threading.Event()

    def wake(seq: int) -> None:
        woken.append(seq)
        arrived.set()

    listener = store.listen(wake)
    try:
        assert listener.ready.wait(10)
        put(store, "a.md", "1")
        assert arrived.wait(10)
        assert woken == [store.newest_seq()]
    finally:
        listener.stop()


def test_proposals(store) -> None:
    from fsmem._store.types import ChangeProposal

    proposal = ChangeProposal(id="20261201T101010-abc123", made_at="2026-12-01T10:10:10Z", thread="t-1",
                        scope="agent:seo", request={"command": "delete", "path": "a.md"},
                        base={"a.md": "0123456789ab", "b.md": None}, summary="delete a.md", diff="-a\n",
                        extra={"why": "stale"})
    store.save_proposal(proposal)
    assert store.load_proposal(proposal.id) == proposal and store.proposals() == [proposal]
    with pytest.raises(Exists):
        store.save_proposal(proposal)
    store.delete_proposal(proposal.id)
    assert store.proposals() == []
    with pytest.raises(NotFound):
        store.load_proposal(proposal.id)
    with pytest.raises(NotFound):
        store.delete_proposal(proposal.id)


def test_schema_is_made_once_and_a_missing_project_is_refused(postgres) -> None:
    import psycopg

    from fsmem._store.postgres import schema as _pg_schema
    from fsmem._store.postgres.store import PgStore

    with (PgStore.open(postgres, "one") as one, PgStore.open(postgres, "two") as two,
          PgStore.open(postgres, "one", create=False) as again):
        assert again.project_id == one.project_id != two.project_id
    with psycopg.connect(postgres) as conn:
        assert conn.execute("SELECT version FROM fsmem.schema_version").fetchall() == [(_pg_schema.CURRENT,)]
        names = [name for (name,) in conn.execute("SELECT name FROM fsmem.projects ORDER BY id")]
        assert names.count("one") == names.count("two") == 1
    with pytest.raises(RootNotFound):
        PgStore.open(postgres, "three", create=False)


def test_an_unreachable_server_is_a_storage_error(tmp_path) -> None:
    from fsmem._store.postgres.errors import StoreUnavailable
    from fsmem._store.postgres.store import PgStore

    with pytest.raises(StoreUnavailable) as refused:
        PgStore.open(f"postgresql:///x?host={tmp_path}", "p", connect_timeout=1)
    assert refused.value.code == "STORAGE"


# ---- tenants apart --------------------------------------------------------------------------------


def test_a_project_never_sees_another_projects_rows(postgres) -> None:
    """Project B's store, asked about A's paths through every method, finds nothing and changes nothing."""
    from fsmem._store.postgres.store import PgStore

    with PgStore.open(postgres, "alpha") as alpha, PgStore.open(postgres, "beta") as beta:
        put(alpha, "secret/plan.md", "alpha's plan\n", thread="t-a")
        put(alpha, "secret/plan.md", "alpha's plan, v2\n")
        alpha.save_proposal(_proposal("p-1"))
        before = list(alpha.log())

        assert beta.read("secret/plan.md") is None and beta.version("secret/plan.md") is None
        assert not beta.exists("secret/plan.md") and not beta.is_dir("secret")
        assert beta.entries("") == [] and list(beta.walk_files()) == []
        with pytest.raises(NotFound):
            beta.entries("secret")
        assert beta.versions("secret/plan.md") == []
        assert beta.read_kept("secret/plan.md", version_of(b"alpha's plan\n")) is None
        assert list(beta.log()) == [] and beta.last_change("secret/plan.md") is None
        assert beta.newest_seq() == 0 and beta.changes_since(0) == (0, [])
        assert beta.proposals() == []
        with pytest.raises(NotFound):
            beta.load_proposal("p-1")
        with pytest.raises(NotFound):
            beta.delete_proposal("p-1")
        for attempt in (lambda tx: tx.delete("secret/plan.md"), lambda tx: tx.delete("secret"),
                        lambda tx: tx.move("secret", "mine"), lambda tx: tx.move("secret/plan.md", "m.md"),
                        lambda tx: tx.write("secret/plan.md", b"x", expect=version_of(b"alpha's plan, v2\n"))):
            with pytest.raises(NotFound), beta.change("attack") as tx:
                attempt(tx)
        with beta.change("write") as tx:
            assert tx.read("secret/plan.md") is None
            tx.write("secret/plan.md", b"beta's own\n")  # its own row, beside alpha's

        assert alpha.read("secret/plan.md") == b"alpha's plan, v2\n"
        assert list(alpha.log()) == before and alpha.proposals() == [_proposal("p-1")]
        assert beta.read("secret/plan.md") == b"beta's own\n" and beta.versions("secret/plan.md") == []
        assert alpha.newest_seq() < beta.newest_seq() and beta.changes_since(0)[1] == ["secret/plan.md"]


def _proposal(proposal_id: str):
    from fsmem._store.types import ChangeProposal

    return ChangeProposal(id=proposal_id, made_at="2026-12-01T00:00:00Z", thread=None, scope="project",
                    request={}, base={}, summary="s")


def _doc_sql(heading: str) -> str:
    """The SQL block of docs/postgres.md that starts with ``-- <heading>``, as written there."""
    from tests.conftest import REPO

    text = (REPO / "docs" / "postgres.md").read_text(encoding="utf-8")
    blocks = [block.split("```", 1)[0] for block in text.split("```sql\n")[1:]]
    return next(block for block in blocks if block.startswith(f"-- {heading}\n"))


def test_row_level_security_keeps_a_role_to_its_project(postgres) -> None:
    """docs/postgres.md's SQL, run as written: project A's role sees, changes and adds only A's rows."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    from fsmem._store.postgres.store import PgStore

    suffix = uuid.uuid4().hex[:6]
    group, role = f"fsmem_tenant_{suffix}", f"fsmem_rye_{suffix}"
    with PgStore.open(postgres, "rye-and-ember") as alpha, PgStore.open(postgres, f"beta-{suffix}") as beta:
        put(alpha, "plan.md", "alpha\n")
        put(alpha, "plan.md", "alpha v2\n")
        put(beta, "plan.md", "beta's secret\n")
        put(beta, "plan.md", "beta's secret v2\n")
        beta.save_proposal(_proposal("p-beta"))
        with psycopg.connect(postgres, autocommit=True) as owner:
            owner.execute(_doc_sql("once per database").replace("fsmem_tenant", group))
            owner.execute(_doc_sql("per project").replace("fsmem_rye_and_ember", role)
                          .replace("fsmem_tenant", group))
        try:
            as_alpha = make_conninfo(postgres, user=role)
            with psycopg.connect(as_alpha, autocommit=True) as conn:
                for table in ("files", "kept_versions", "log", "proposals", "projects"):
                    column = "id" if table == "projects" else "project"
                    seen = {row[0] for row in conn.execute(f"SELECT DISTINCT {column} FROM fsmem.{table}")}
                    assert seen <= {alpha.project_id}, table
                assert conn.execute("SELECT content FROM fsmem.files WHERE project = %s",
                                    (beta.project_id,)).fetchall() == []
                changed = conn.execute("UPDATE fsmem.files SET content = 'x' WHERE project = %s", (beta.project_id,))
                assert changed.rowcount == 0
                with pytest.raises(psycopg.errors.InsufficientPrivilege):  # the log is append-only to it
                    conn.execute("DELETE FROM fsmem.log WHERE project = %s", (beta.project_id,))
                with pytest.raises(psycopg.errors.InsufficientPrivilege):  # row-level security's WITH CHECK
                    conn.execute("INSERT INTO fsmem.files (project, path, content, version) "
                                 "VALUES (%s, 'planted.md', 'x', 'x')", (beta.project_id,))
            with PgStore.open(as_alpha, "rye-and-ember") as store:  # the store works as the tenant's role
                assert store.read("plan.md") == b"alpha v2\n" and len(store.versions("plan.md")) == 1
                put(store, "plan.md", "alpha v3\n")
                with store.change("rename") as tx:
                    tx.move("plan.md", "plans/plan.md")
            with pytest.raises(RootNotFound):
                PgStore.open(as_alpha, f"beta-{suffix}")
            assert beta.read("plan.md") == b"beta's secret v2\n" and beta.proposals() == [_proposal("p-beta")]
            assert alpha.read("plans/plan.md") == b"alpha v3\n"
        finally:
            with psycopg.connect(postgres, autocommit=True) as owner:
                owner.execute(f"DROP OWNED BY {role}, {group}")
                owner.execute(f"DROP ROLE {role}")
                owner.execute(f"DROP ROLE {group}")
