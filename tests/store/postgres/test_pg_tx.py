"""Changes on PostgreSQL under load: threads sharing one Memory, changes racing for the same folder or
path, deadlocks, a read-only database, a connection dropped under a write, thread ids.

Every race here is made to happen, not hoped for: one side holds its change open while the test
waits (polling pg_stat_activity, never a sleep) until the other is seen waiting on its lock.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import fsmem
from fsmem._env.config import Settings
from fsmem._errors import BadRequest, Busy, RequestError
from fsmem._store.postgres.errors import StoreUnavailable
from fsmem._store.postgres.store import PgStore
from fsmem._store.types import ChangeProposal
from tests.procs.common import read_json_line, spawn


def _project() -> str:
    return f"tx-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def memory(postgres: str, tmp_path: Path):
    memory = fsmem.open(postgres, project=_project(), create=True, cache=tmp_path / "cache")
    yield memory
    memory.close()


def _waiting_on_a_lock(url: str) -> bool:
    """Whether a session on this database waits for a lock (a row's, or an advisory lock)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
        ).fetchone()
    return bool(row and row[0])


def _until(condition: Callable[[], bool], what: str) -> None:
    """Poll until ``condition`` holds (a generous bound only so a broken test ends, never a measure)."""
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.01)


def _in_thread(work: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def go() -> None:
        try:
            out["result"] = work()
        except BaseException as error:  # noqa: BLE001 - the test looks at it
            out["error"] = error

    thread = threading.Thread(target=go)
    thread.start()
    return thread, out


# ---- item 2: threads sharing one Memory ------------------------------------------------------------


def test_sixteen_threads_renaming_and_deleting_folders_at_once_all_succeed(memory) -> None:
    """Each change reads through its own connection: a thread never waits for a second one, so 16
    threads on a pool of 8 all get their turn (before: 7 of 8 starved with STORAGE)."""
    threads = 16
    setup = memory.run()
    for n in range(threads):
        assert setup.call({"command": "write", "path": f"f{n}/a.md", "content": f"file {n}\n"})["ok"]
    barrier = threading.Barrier(threads)
    results: dict[int, dict[str, Any]] = {}

    def go(n: int) -> None:
        run = memory.run(thread_id=f"t{n}")
        assert run.call({"command": "read", "path": f"f{n}/a.md"})["ok"]
        barrier.wait()
        if n % 2:
            results[n] = run.call({"command": "rename", "path": f"f{n}", "new_path": f"g{n}"})
        else:
            results[n] = run.call({"command": "delete", "path": f"f{n}"})

    workers = [threading.Thread(target=go, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert all(result["ok"] for result in results.values()), [r for r in results.values() if not r["ok"]]
    assert sorted(entry.path for entry in memory.drive.walk_files()) == sorted(
        [f"g{n}/a.md" for n in range(1, threads, 2)] + ["MEMORY.md"]
    )


def test_reads_inside_a_change_go_through_it_and_see_what_it_wrote(memory) -> None:
    drive = memory.drive
    with drive.change("write", "t-1") as tx:
        tx.write("inside.md", b"not committed yet\n")
        assert drive.read("inside.md") == b"not committed yet\n"  # this thread: the change's connection
        assert [e.path for e in drive.walk_files()] == ["MEMORY.md", "inside.md"]
        thread, out = _in_thread(lambda: drive.read("inside.md"))
        thread.join()
        assert out == {"result": None}  # another thread: the committed rows only
    assert drive.read("inside.md") == b"not committed yet\n"


def test_a_process_out_of_connections_answers_busy(postgres: str, tmp_path: Path) -> None:
    """pg_pool_size=1: a thread that finds the one connection held by another's change waits, then
    is refused with BUSY naming the setting (not STORAGE: the server is fine)."""
    memory = fsmem.open(
        postgres, project=_project(), create=True, cache=tmp_path / "c", settings=Settings(pg_pool_size=1)
    )
    try:
        with memory.drive.change("write", "holder") as tx:
            tx.write("held.md", b"x\n")
            thread, out = _in_thread(lambda: memory.run().call({"command": "write", "path": "b.md", "content": "y\n"}))
            thread.join()
        assert out["result"]["error"]["code"] == "BUSY" and "pg_pool_size" in out["result"]["error"]["message"]
        assert memory.run().call({"command": "write", "path": "b.md", "content": "y\n"})["ok"]
    finally:
        memory.close()


# ---- item 3: deadlocks are BUSY, and a folder's rename or delete takes its lock first --------------


def test_a_deadlock_is_busy_not_storage(postgres: str) -> None:
    """Two changes each read a file (the shared lock) then delete a folder (the exclusive lock): the
    server finds the deadlock and cancels one, which is BUSY (40P01), never "could not be reached"."""
    with PgStore.open(postgres, _project()) as store:
        with store.change("write") as tx:
            for n in (0, 1):
                tx.write(f"f{n}/a.md", b"x\n", expect=None)
        barrier = threading.Barrier(2)
        outcomes: dict[int, object] = {}

        def go(n: int) -> None:
            try:
                with store.change("delete") as tx:
                    tx.read(f"f{n}/a.md")
                    barrier.wait()
                    tx.delete(f"f{n}")
                outcomes[n] = "ok"
            except RequestError as error:
                outcomes[n] = error

        workers = [threading.Thread(target=go, args=(n,)) for n in (0, 1)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        refused = [o for o in outcomes.values() if o != "ok"]
        assert len(refused) == 1 and isinstance(refused[0], Busy), outcomes


@pytest.mark.parametrize("command", ["delete", "rename"])
def test_a_folder_change_waits_for_a_change_holding_a_file_instead_of_deadlocking(memory, postgres, command) -> None:
    """Another change holds the shared lock (it read a file) while the tool deletes or renames a
    folder, then takes the exclusive lock itself. The tool's change takes its lock before reading
    anything, so it only waits: both succeed (before: a deadlock, reported as STORAGE)."""
    run = memory.run(thread_id="tool")
    for path in ("mine/a.md", "mine/b.md", "other/c.md"):
        assert run.call({"command": "write", "path": path, "content": "x\n"})["ok"]
    request = {"command": "delete", "path": "mine"}
    if command == "rename":
        request = {"command": "rename", "path": "mine", "new_path": "moved"}
    with memory.drive.change("delete", "other") as tx:
        tx.read("other/c.md")
        thread, out = _in_thread(lambda: run.call(request))
        _until(lambda: _waiting_on_a_lock(postgres) or not thread.is_alive(), "the tool's change to wait")
        tx.delete("other")
    thread.join()
    assert out["result"]["ok"], out
    paths = [entry.path for entry in memory.drive.walk_files()]
    assert paths == (["MEMORY.md"] if command == "delete" else ["MEMORY.md", "moved/a.md", "moved/b.md"])


# ---- item 11: a folder's rename or delete checks what the run saw inside its transaction -----------


@pytest.mark.parametrize("command", ["delete", "rename"])
def test_a_write_committed_while_a_folder_change_waits_is_a_conflict(memory, postgres, command) -> None:
    """The run saw notes/a.md at v1; another change writes v2 and commits while the folder change
    waits for its lock. The check runs after the lock, in the change: CONFLICT, and v2 is kept
    where it was (before: checked on another connection first, so v2 was moved or deleted unseen)."""
    run = memory.run(thread_id="folder")
    assert run.call({"command": "write", "path": "notes/a.md", "content": "v1\n"})["ok"]
    request = {"command": "delete", "path": "notes"}
    if command == "rename":
        request = {"command": "rename", "path": "notes", "new_path": "moved"}
    with memory.drive.change("write", "other") as tx:
        tx.write("notes/a.md", b"v2\n")
        thread, out = _in_thread(lambda: run.call(request))
        _until(lambda: _waiting_on_a_lock(postgres) or not thread.is_alive(), "the folder change to wait")
    thread.join()
    assert out["result"]["error"]["code"] == "CONFLICT", out
    assert memory.drive.read("notes/a.md") == b"v2\n"
    assert not memory.drive.exists("moved")


# ---- item 4: a file and a folder at one path, made by two processes at once -------------------------


@pytest.mark.parametrize(
    ("first", "second", "code"),
    [("notes.md", "notes.md/inner.md", "BAD_PATH"), ("notes.md/inner.md", "notes.md", "EXISTS")],
)
def test_a_file_and_a_folder_at_one_path_never_both_commit(postgres, tmp_path, first, second, code) -> None:
    """Process A makes ``first`` and holds its change open; process B makes ``second`` meanwhile.
    B waits for A's path lock, then sees A's file and is refused: one of them, never both."""
    project = _project()
    PgStore.open(postgres, project).close()
    go = tmp_path / "go"
    holder = spawn("pg_create_worker.py", postgres, project, first, go)
    other = None
    try:
        assert read_json_line(holder) == {"inside": first}
        other = spawn("pg_create_worker.py", postgres, project, second)
        _until(lambda: _waiting_on_a_lock(postgres) or other.poll() is not None, "the second process to wait")
        go.touch()
        assert read_json_line(holder) == {"ok": True}
        said = read_json_line(other)
        if "inside" in said:  # it went on: it must not have committed
            said = read_json_line(other)
    finally:
        for proc in (holder, other):
            if proc is not None:
                if proc.poll() is None:
                    proc.kill()
                proc.wait(timeout=30)
    assert said.get("code") == code, said
    with PgStore.open(postgres, project) as store:
        assert [entry.path for entry in store.walk_files()] == [first]


# ---- item 9: every driver error is coded; a write is not tried twice; thread ids ------------------


@pytest.fixture
def read_only(pg_server, postgres):
    """A project in a database that has become read-only (default_transaction_read_only)."""
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    from tests.conftest import as_url

    name = f"fsmem_ro_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_server.url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = as_url(make_conninfo(pg_server.url, dbname=name))
    with PgStore.open(url, "ro") as store:
        with store.change("write") as tx:
            tx.write("a.md", b"hello\n")
        store.save_proposal(_proposal("p-1"))
    with psycopg.connect(pg_server.url, autocommit=True) as admin:
        admin.execute(sql.SQL("ALTER DATABASE {} SET default_transaction_read_only = on").format(sql.Identifier(name)))
    try:
        yield url
    finally:
        with psycopg.connect(pg_server.url, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def _proposal(proposal_id: str) -> ChangeProposal:
    return ChangeProposal(proposal_id, "2026-01-01T00:00:00Z", "t", "chat", {"command": "delete"}, {}, "s", "", {})


def test_a_read_only_database_answers_storage_to_every_write_and_still_reads(read_only) -> None:
    with PgStore.open(read_only, "ro", create=False) as store:
        assert store.read("a.md") == b"hello\n"
        for write in (
            lambda: store.save_proposal(_proposal("p-2")),
            lambda: store.delete_proposal("p-1"),
            lambda: store.keep_version("a.md", b"kept\n", "sync"),
        ):
            with pytest.raises(StoreUnavailable, match="read-only"):
                write()
        with pytest.raises(StoreUnavailable, match="read-only"), store.change("write") as tx:
            tx.write("a.md", b"changed\n")
        assert store.read("a.md") == b"hello\n" and [p.id for p in store.proposals()] == ["p-1"]


def _drop_connections(url: str) -> int:
    """Terminate every other session on this database (a server that dropped them)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
    return int(row[0]) if row else 0


def test_a_read_is_tried_again_after_a_dropped_connection_a_write_is_not(postgres) -> None:
    """A single-statement write on a connection the server dropped may have committed: it is never
    run a second time (that would answer EXISTS for its own row); a read is, on a new connection."""
    with PgStore.open(postgres, _project(), pool_size=1) as store:
        with store.change("write") as tx:
            tx.write("a.md", b"hello\n")
        assert _drop_connections(postgres) >= 1
        assert store.read("a.md") == b"hello\n"
        assert _drop_connections(postgres) >= 1
        with pytest.raises(StoreUnavailable, match="may or may not"):
            store.save_proposal(_proposal("p-1"))
        assert store.proposals() == []


@pytest.mark.parametrize("store", ["folder", "postgresql"])
def test_a_thread_id_with_a_control_character_is_refused_alike_by_both_stores(store, postgres, tmp_path) -> None:
    if store == "folder":
        memory = fsmem.open(tmp_path / "root", create=True)
    else:
        memory = fsmem.open(postgres, project=_project(), create=True, cache=tmp_path / "cache")
    try:
        for review in (False, True):
            for thread in ("t\x00x", "t\x1b[2Jx", "t\u2028x", "t\ud800x"):
                out = memory.run(thread_id=thread, review=review).call(
                    {"command": "write", "path": "c.md", "content": "ok\n"}
                )
                assert out["error"]["code"] == "BAD_REQUEST" and "thread id" in out["error"]["message"], out
        with pytest.raises(BadRequest), memory.drive.change("write", "a\x00b"):
            pass
        assert not memory.drive.exists("c.md") and "c.md" not in [e.path for e in memory.log()]
        assert memory.run(thread_id="t-1").call({"command": "write", "path": "c.md", "content": "ok\n"})["ok"]
    finally:
        memory.close()
