"""Search on every worker: each keeps its own index of a project in its cache folder, fed from the log.

Two ``Memory`` objects on one project with two cache folders stand for two machines; a subprocess for
another worker. A change acknowledged on one is found by the next search on any other; a long-lived
worker's listener catches up between searches; a search asks the database one question when nothing
changed.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
import time
import uuid
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import fsmem
from fsmem._env.config import Settings
from fsmem._errors import Storage
from fsmem._index.index import IndexWarning, feed_of
from fsmem._index.postgres_feed import PgWatcher, applied_seq
from fsmem._index.state import index_dir, read_applied, read_current
from fsmem._memory.levels import Scope
from fsmem._store.postgres.errors import StoreUnavailable


def _project() -> str:
    return f"s-{uuid.uuid4().hex[:8]}"


def wait_until(condition, timeout: float = 15.0) -> None:
    """Poll until ``condition()`` holds (a listener works asynchronously); fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.02)


def paths(hits) -> list[str]:
    return sorted({hit.path for hit in hits})


@pytest.fixture
def project() -> str:
    return _project()


@pytest.fixture
def open_worker(postgres: str, project: str, tmp_path: Path):
    """``open_worker(name, watch=…)``: a Memory on the project with its own cache folder (a machine)."""
    opened = []

    def open_worker(name: str, watch: bool = False) -> fsmem.Memory:
        settings = dataclasses.replace(Settings(), watch=watch)
        memory = fsmem.open(postgres, project=project, create=True, cache=tmp_path / name, settings=settings)
        opened.append(memory)
        return memory

    yield open_worker
    for memory in opened:
        memory.close()


def write(memory: fsmem.Memory, path: str, text: str) -> None:
    run = memory.run(Scope.chat(), thread_id=f"t-{uuid.uuid4().hex[:6]}")
    if memory.drive.exists(path):
        run.call({"command": "read", "path": path})
    result = run.call({"command": "write", "path": path, "content": text})
    assert result["ok"], result


def test_a_write_on_one_worker_is_found_by_the_next_search_on_another(open_worker) -> None:
    a, b = open_worker("a"), open_worker("b")
    write(a, "seo/titles.md", "# Titles\nkeep them under sixty characters\n")
    assert paths(b.search("sixty")) == ["seo/titles.md"]  # B's first search builds its index from the rows
    write(a, "brand.md", "# Brand\nthe quokka is our mascot\n")
    assert paths(b.search("quokka")) == ["brand.md"]  # the next search: caught up from the log
    write(a, "brand.md", "# Brand\nthe wombat is our mascot now\n")
    assert paths(b.search("quokka")) == []
    assert paths(b.search("wombat")) == ["brand.md"]
    assert b.drive.state != a.drive.state and index_dir(b.drive.state).is_dir()


def test_a_rename_or_delete_on_one_worker_is_gone_from_the_next_search_on_another(open_worker) -> None:
    a, b = open_worker("a"), open_worker("b")
    write(a, "seo/titles.md", "# Titles\nmeta descriptions matter\n")
    write(a, "seo/slugs.md", "# Slugs\nshort meta slugs\n")
    assert paths(b.search("meta")) == ["seo/slugs.md", "seo/titles.md"]
    run = a.run(Scope.chat(), thread_id="mover")
    assert run.call({"command": "rename", "path": "seo", "new_path": "search"})["ok"]
    assert paths(b.search("meta")) == ["search/slugs.md", "search/titles.md"]
    run.call({"command": "read", "path": "search/slugs.md"})
    assert run.call({"command": "delete", "path": "search/slugs.md"})["ok"]
    assert paths(b.search("meta")) == ["search/titles.md"]
    assert paths(b.search("meta", regex=True)) == ["search/titles.md"]  # regex reads the rows themselves


def test_a_change_made_by_another_process_is_found_by_this_process_next_search(
    open_worker, postgres: str, project: str, tmp_path: Path
) -> None:
    b = open_worker("b")
    assert b.search("okapi") == []
    script = (
        "import sys, fsmem\n"
        "m = fsmem.open(sys.argv[1], project=sys.argv[2], cache=sys.argv[3])\n"
        "r = m.run(fsmem.Scope.chat(), thread_id='other')\n"
        "assert r.call({'command': 'write', 'path': 'zoo.md', 'content': 'an okapi lives here\\n'})['ok']\n"
        "m.close()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, postgres, project, str(tmp_path / "other")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert paths(b.search("okapi")) == ["zoo.md"]


def test_a_new_process_on_the_same_cache_goes_on_from_the_sequence_it_applied(open_worker) -> None:
    a, b = open_worker("a"), open_worker("b")
    write(a, "brand.md", "# Brand\nteal and sand\n")
    assert paths(b.search("teal")) == ["brand.md"]
    b.index.apply_pending()  # what b's committer does off the search's path
    generation = read_current(b.drive.state)["generation"]
    applied = read_applied(index_dir(b.drive.state) / generation)
    assert applied == (a.drive.pg.identity, *a.drive.pg.newest_time())  # kept beside the generation
    b.close()
    write(a, "brand.md", "# Brand\nteal, sand and coral\n")
    again = open_worker("b")  # the same cache folder, a new Memory (as a restarted worker)
    assert paths(again.search("coral")) == ["brand.md"]
    assert read_current(again.drive.state)["generation"] == generation  # caught up, not rebuilt
    again.index.apply_pending()
    assert read_applied(index_dir(again.drive.state) / generation)[1] == a.drive.pg.newest_seq()


def test_a_cache_folder_deleted_or_corrupt_is_rebuilt_from_the_rows(open_worker, tmp_path: Path) -> None:
    a, b = open_worker("a"), open_worker("b")
    write(a, "brand.md", "# Brand\nthe capybara is calm\n")
    assert paths(b.search("capybara")) == ["brand.md"]
    shutil.rmtree(tmp_path / "b")  # the whole cache folder, as a machine's cleanup would
    write(a, "notes.md", "a second capybara\n")
    with pytest.warns(IndexWarning, match="was missing; rebuilt it from the 3 files of the database"):
        assert paths(b.search("capybara")) == ["brand.md", "notes.md"]
    assert oct(b.drive.state.stat().st_mode & 0o777) == "0o700"  # made again, the owner's alone
    (index_dir(b.drive.state) / "CURRENT").write_text("garbage")
    write(a, "more.md", "a third capybara\n")
    with pytest.warns(IndexWarning, match="unreadable"):
        assert paths(b.search("capybara")) == ["brand.md", "more.md", "notes.md"]
    fresh = open_worker("c")
    shutil.rmtree(tmp_path / "c")  # gone before its first search: built, no warning needed
    assert paths(fresh.search("capybara")) == ["brand.md", "more.md", "notes.md"]


def test_a_long_lived_worker_catches_up_between_searches_and_stops_listening_on_close(open_worker) -> None:
    a, b = open_worker("a"), open_worker("b", watch=True)
    assert b.search("heron") == []  # the first search starts the listener
    watcher = b._watcher
    assert isinstance(watcher, PgWatcher) and watcher.watching
    assert b.index.status()["watcher"] is True
    before = applied_seq(b.index)
    write(a, "birds.md", "a grey heron at dawn\n")
    newest = a.drive.pg.newest_seq()
    assert newest > before
    wait_until(lambda: applied_seq(b.index) == newest)  # no search: the notification brought it in
    assert watcher.wakes >= 1 and watcher.errors == []
    assert paths(b.search("heron")) == ["birds.md"]
    listener = watcher._listener
    assert listener is not None
    b.close()
    assert not watcher.watching and not listener._thread.is_alive()
    write(a, "birds.md", "a grey heron and an egret\n")
    time.sleep(1.0)  # a notification now would find no listener: the index stays where it was
    assert applied_seq(b.index) == newest


def _queries_counted(worker, monkeypatch) -> list[str]:
    """The questions ``worker`` asks its database from now on, in order: "newest_seq" then each "query"."""
    store = worker.drive.pg
    asked: list[str] = []
    real_run, real_newest = store.run, store.newest_seq

    def counted_run(work):
        asked.append("query")
        return real_run(work)

    def counted_newest():
        asked.append("newest_seq")
        return real_newest()

    monkeypatch.setattr(store, "run", counted_run)
    monkeypatch.setattr(store, "newest_seq", counted_newest)
    return asked


def test_a_search_with_nothing_new_asks_the_database_one_question(open_worker, monkeypatch) -> None:
    a, b = open_worker("a"), open_worker("b", watch=True)
    write(a, "brand.md", "# Brand\nthe lynx\n")
    assert paths(b.search("lynx")) == ["brand.md"]  # built, caught up, listening
    asked = _queries_counted(b, monkeypatch)
    assert paths(b.search("lynx")) == ["brand.md"]
    assert asked == ["newest_seq", "query"]  # one query: the newest sequence number
    asked.clear()
    write(a, "brand.md", "# Brand\nthe lynx and the ibex\n")
    newest = b.drive.pg.newest_seq()
    watcher = b._watcher
    assert isinstance(watcher, PgWatcher)
    wait_until(lambda: watcher._applied == newest)  # the listener's read-ahead has returned
    asked.clear()
    assert paths(b.search("ibex")) == ["brand.md"]  # the listener read it ahead: still one query
    assert asked == ["newest_seq", "query"]


def test_a_notification_reads_the_change_ahead_of_the_next_search_and_commits_nothing(open_worker, monkeypatch) -> None:
    a, b = open_worker("a"), open_worker("b", watch=True)
    write(a, "brand.md", "# Brand\nthe lynx\n")
    assert paths(b.search("lynx")) == ["brand.md"]  # built, caught up, listening
    b.index.apply_pending()
    b.index.committer.close(0)  # b's background commits held off: what the notifications do is all there is
    generation = index_dir(b.drive.state) / read_current(b.drive.state)["generation"]
    meta = (generation / "meta.json").stat().st_mtime_ns, (generation / "meta.json").stat().st_ino
    applied = read_applied(generation)
    write(a, "brand.md", "# Brand\nthe lynx and the ibex\n")
    write(a, "zoo.md", "# Zoo\nan ibex herd\n")
    newest = a.drive.pg.newest_seq()
    watcher = b._watcher
    assert isinstance(watcher, PgWatcher)
    wait_until(lambda: watcher._applied == newest)  # both notifications acted on
    assert watcher.errors == []
    asked = _queries_counted(b, monkeypatch)
    assert paths(b.search("ibex")) == ["brand.md", "zoo.md"]
    assert asked == ["newest_seq", "query"]  # the log's rows and the rows themselves were read ahead
    assert read_applied(generation) == applied  # read into the delta, not committed
    assert ((generation / "meta.json").stat().st_mtime_ns, (generation / "meta.json").stat().st_ino) == meta
    asked.clear()
    write(a, "zoo.md", "# Zoo\nan ibex herd and a wolverine\n")  # a change the search's own probe finds first
    assert paths(b.search("wolverine")) == ["zoo.md"]  # never stale, whether or not its notification came yet


def test_a_search_without_a_listener_still_finds_every_commit(open_worker) -> None:
    a, b = open_worker("a"), open_worker("b", watch=False)
    for number in range(5):
        write(a, f"notes/n{number}.md", f"note {number} about lemurs\n")
        assert len(b.search("lemurs", limit=50)) == number + 1
    assert b._watcher is None
    status = b.index.status()
    assert status["stale"] == 0 and status["files"] == 6 and status["documents"] == 6


def test_the_shell_searches_a_project_and_fsmem_watch_stops_cleanly_when_idle(
    open_worker, postgres: str, project: str, tmp_path: Path
) -> None:
    from conftest import run_fsmem

    a = open_worker("a")
    write(a, "brand.md", "# Brand\nthe pangolin\n")
    env = {"FSMEM_STORE": postgres, "FSMEM_PROJECT": project, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    found = run_fsmem("search", "pangolin", env=env)
    assert found.returncode == 0 and "brand.md" in found.stdout, found.stderr
    status = run_fsmem("index", "status", "--json", env=env)
    assert status.returncode == 0, status.stderr
    assert '"stale": 0' in status.stdout and '"documents": 2' in status.stdout, status.stdout
    watched = run_fsmem("watch", "--idle-exit", "0.5", env=env)  # this worker's cache, served until idle
    assert watched.returncode == 0, watched.stderr
    assert f"Watching project {project} in" in watched.stderr and "Stopped: no question for 0.5 s." in watched.stderr


def test_an_index_ahead_of_the_log_is_read_again_from_the_rows(open_worker) -> None:
    a, b = open_worker("a"), open_worker("b")
    write(a, "brand.md", "# Brand\nthe axolotl\n")
    assert paths(b.search("axolotl")) == ["brand.md"]
    generation = index_dir(b.drive.state) / read_current(b.drive.state)["generation"]
    mark = json.dumps([b.drive.pg.identity, 1000000000, 1])  # as after the database was restored from a backup
    (generation / "applied").write_text(mark)
    b.close()
    run = a.run(Scope.chat(), thread_id="restorer")
    run.call({"command": "read", "path": "brand.md"})
    assert run.call({"command": "delete", "path": "brand.md"})["ok"]
    write(a, "zoo.md", "an axolotl in the zoo\n")
    again = open_worker("b")
    assert paths(again.search("axolotl")) == ["zoo.md"]
    assert read_applied(generation)[1] == a.drive.pg.newest_seq()


def test_the_feed_names_what_changed_after_a_mark_and_the_number_it_reaches(open_worker) -> None:
    a = open_worker("a")
    feed = feed_of(a.drive)
    start = feed.mark()
    assert feed.noted(start) is None and feed.probe() == start[1]
    write(a, "seo/titles.md", "# Titles\n")
    run = a.run(Scope.chat(), thread_id="mover")
    assert run.call({"command": "rename", "path": "seo", "new_path": "search"})["ok"]
    newest = feed.mark()
    assert newest[0] == start[0] == a.drive.pg.identity and newest[1] == a.drive.pg.newest_seq()
    assert feed.noted(start) == ({"seo/titles.md", "search/titles.md"}, newest)  # a move's both ends
    assert feed.noted(None) == ({""}, newest)  # no mark: the whole memory, read again
    assert feed.noted(newest) is None and feed.probe() == newest[1]
    plan, count = feed.compare({}, None, 1 << 20)
    assert plan.changed == ("MEMORY.md", "search/titles.md") and plan.removed == () and count == 2


def test_a_rebuild_holds_the_cache_folder_lock_not_the_project(open_worker) -> None:
    import threading

    from fsmem._errors import Busy
    from fsmem._index.postgres_feed import PgFeed

    a, b = open_worker("a"), open_worker("b")
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with b.index.feed.locked():
            holding.set()
            release.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert holding.wait(30)
        other = PgFeed(b.drive)
        other.timeout = 0.2
        with pytest.raises(Busy, match="being rebuilt by another process"):
            with other.locked():
                pass
        write(a, "brand.md", "still writable\n")  # the project is not held: other workers go on
        with a.index.feed.locked():  # nor is another worker's cache
            pass
    finally:
        release.set()
        thread.join()


def test_a_change_committed_while_a_worker_builds_its_index_is_found_after(open_worker) -> None:
    a, b = open_worker("a"), open_worker("b")
    write(a, "brand.md", "# Brand\nthe marmot\n")
    listed = b.drive.walk_files

    def walk_then_a_writes(path: str = ""):
        yield from listed(path)
        write(a, "late.md", "a marmot written while B was reading the rows\n")  # the build never sees it

    b.drive.walk_files = walk_then_a_writes  # type: ignore[method-assign]
    assert paths(b.search("marmot")) == ["brand.md", "late.md"]  # the first search: build, then the log since
    del b.drive.walk_files
    assert paths(b.search("marmot")) == ["brand.md", "late.md"]


def test_memories_on_one_worker_share_its_index_and_closing_the_first_breaks_none(open_worker) -> None:
    """A server opening a Memory per request on one worker: one cache index, one listener; closing the
    Memory whose connections the index reads through hands it to one that stays."""
    import threading

    a = open_worker("a")
    first, second, third = open_worker("b", watch=True), open_worker("b", watch=True), open_worker("b", watch=True)
    write(a, "birds.md", "a grey heron at dawn\n")
    assert paths(first.search("heron")) == ["birds.md"]
    assert first.index is second.index is third.index
    listening = first._watcher
    assert isinstance(listening, PgWatcher) and listening.watching and second._watcher is listening
    errors: list[BaseException] = []
    stop = threading.Event()

    def search_on() -> None:
        try:
            while not stop.is_set():
                assert paths(second.search("heron")) == ["birds.md"]
        except BaseException as error:  # noqa: BLE001 - asserted on below
            errors.append(error)

    searcher = threading.Thread(target=search_on)
    searcher.start()
    first.close()  # while the other searches
    stop.set()
    searcher.join(timeout=60)
    assert errors == []
    assert not listening.watching  # its connection closed with the first
    handed = second._watcher
    assert isinstance(handed, PgWatcher) and handed.watching and third._watcher is handed
    write(a, "birds.md", "a grey heron and an egret\n")
    assert paths(third.search("egret")) == ["birds.md"]
    second.close()  # if the index read through its connections, it is handed on again
    last = third._watcher
    assert isinstance(last, PgWatcher) and last.watching
    assert paths(third.search("egret")) == ["birds.md"]
    third.close()
    assert not last.watching and not handed.watching


def test_a_search_reads_new_log_rows_into_its_delta_and_commits_its_cache_index_off_its_path(open_worker) -> None:
    a, b = open_worker("a"), open_worker("b")
    write(a, "brand.md", "# Brand\nteal and sand\n")
    assert paths(b.search("teal")) == ["brand.md"]
    b.index.apply_pending()
    b.index.committer.close(0)  # b's own background commits are held off: only its searches run
    generation = index_dir(b.drive.state) / read_current(b.drive.state)["generation"]
    meta = (generation / "meta.json").stat().st_mtime_ns, (generation / "meta.json").stat().st_ino
    applied = read_applied(generation)
    write(a, "brand.md", "# Brand\nteal, sand and coral\n")
    write(a, "gone.md", "# Gone\ncoral reef\n")
    run = a.run()
    run.call({"command": "read", "path": "gone.md"})
    assert run.call({"command": "delete", "path": "gone.md"})["ok"]
    assert paths(b.search("coral")) == ["brand.md"]  # the new row, read into the delta; the deleted one hidden
    assert paths(b.search("sand")) == ["brand.md"]
    assert read_applied(generation) == applied  # the search committed nothing
    assert ((generation / "meta.json").stat().st_mtime_ns, (generation / "meta.json").stat().st_ino) == meta


def test_a_workers_delta_is_committed_in_the_background_once_it_has_waited(open_worker) -> None:
    a, b = open_worker("a"), open_worker("b")
    write(a, "brand.md", "# Brand\nteal and sand\n")
    assert paths(b.search("teal")) == ["brand.md"]
    b.index.apply_pending()
    write(a, "brand.md", "# Brand\nteal, sand and coral\n")
    assert paths(b.search("coral")) == ["brand.md"]
    # b's committer, after its grace (the count follows the commit's mark)
    wait_until(lambda: applied_seq(b.index) == a.drive.pg.newest_seq() and b.index.committer.commits >= 1)
    assert paths(b.search("coral")) == ["brand.md"]


# --- a server restarted or down under a search -------------------------------------------------------


def _behind(open_worker) -> tuple[fsmem.Memory, fsmem.Memory]:
    """Worker b's index committed with brand.md; then a writes zoo.md, which b has not applied yet."""
    a, b = open_worker("a"), open_worker("b", watch=False)
    write(a, "brand.md", "# Brand\nthe quokka\n")
    assert paths(b.search("quokka")) == ["brand.md"]
    b.index.apply_pending()
    b.index.committer.close(0)  # b commits nothing in the background: only its searches bring zoo.md in
    write(a, "zoo.md", "# Zoo\nthe quokka's cousin\n")
    return a, b


def test_the_first_search_after_a_server_restart_finds_a_write_made_before_it(open_worker, pg_server) -> None:
    a, b = _behind(open_worker)
    with b.drive.pg.connection(), b.drive.pg.connection():
        pass  # two connections idle in b's pool, as a busy worker has (its commits, its listener, its searches)
    pg_server.control("restart")  # the server drops every connection b holds
    with warnings.catch_warnings():
        warnings.simplefilter("error", IndexWarning)  # no answer "from its last commit"
        assert paths(b.search("quokka", mode="words")) == ["brand.md", "zoo.md"]
    assert paths(b.search("cousin")) == ["zoo.md"]


def test_a_search_while_the_server_is_down_is_refused_never_answered_from_the_last_commit(
    open_worker, pg_server
) -> None:
    a, b = _behind(open_worker)
    run = b.run(Scope.chat(), thread_id="t-down")
    pg_server.control("down")
    down_at = time.monotonic()
    try:
        with warnings.catch_warnings(), ThreadPoolExecutor(2) as callers:
            warnings.simplefilter("error", IndexWarning)  # the filter is the process's: both threads see it
            # Side by side: each waits its 5 s for a connection before it is refused.
            searched = callers.submit(b.search, "quokka", mode="words")  # words alone: nothing else asks the server
            called = callers.submit(run.call, {"command": "search", "query": "quokka"})
            with pytest.raises(Storage, match="PostgreSQL"):
                searched.result()
            found = called.result()
        assert not found["ok"] and found["error"]["code"] == "STORAGE", found
        # Up again at about 8 s, after the pool's fourth try: its doubling delay between tries (0, 1, 3, 7,
        # 15 s, then 31, each ±10%: the fourth by 7.7 s, the fifth from 13.5 s) would put its next one past
        # the 5 s the first search after the outage waits for a connection. Only the pool having given up
        # (RECONNECT_WINDOW) lets that search connect at once.
        time.sleep(max(0.0, 7.8 - (time.monotonic() - down_at)))
    finally:
        pg_server.control("up")
    assert paths(b.search("quokka", mode="words")) == ["brand.md", "zoo.md"]


def test_a_store_that_does_not_answer_a_folder_walk_is_never_taken_for_an_empty_folder(
    open_worker, monkeypatch
) -> None:
    a, b = open_worker("a"), open_worker("b", watch=False)
    write(a, "notes/one.md", "# One\nthe ibis\n")
    assert paths(b.search("ibis")) == ["notes/one.md"]
    b.index.apply_pending()

    def unreachable(path: str = ""):
        raise StoreUnavailable("PostgreSQL could not be reached (the server is restarting); nothing was changed")

    with monkeypatch.context() as patch:  # as the server answers while it shuts down: one query, not the next
        patch.setattr(b.drive, "walk_files", unreachable)
        with pytest.raises(StoreUnavailable):
            b.index.refresh({"notes"})  # a folder: its files walked, and what is held but gone dropped
        with pytest.raises(StoreUnavailable):
            b.index.store.expand({""})  # the whole memory, as a re-read from the rows names it
    assert paths(b.search("ibis")) == ["notes/one.md"]  # nothing was dropped
