"""Many machines, one PostgreSQL: real processes racing, killed, and a server restarted under them.

Each worker (tests/procs/pg_worker.py) is its own process with its own pool, as if on its own machine.
Every change a worker saw acknowledged must be in the rows afterwards; none may be counted twice.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from tests.procs.common import read_json_line, spawn

pytestmark = pytest.mark.slow

WORKERS = 8


@pytest.fixture
def project(postgres):
    from fsmem._store.postgres.store import PgStore

    with PgStore.open(postgres, f"shared-{uuid.uuid4().hex[:8]}") as store:
        yield store


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in out.read_text().splitlines() if line.endswith("}")]


def test_eight_processes_killed_and_a_restart_lose_no_acknowledged_change(project, postgres, pg_server, tmp_path):
    """8 workers for ~5 s: two are killed with SIGKILL midway and the server restarts (-m fast) under
    the rest. Afterwards: every acknowledged increment, line and own write is in the rows, nothing is
    applied twice, and the log holds exactly the commits, in commit order."""
    with project.change("write") as tx:
        tx.write("counter.md", b"0")
        tx.write("shared.md", b"")
    go = tmp_path / "go"
    outs = [tmp_path / f"w{n}.jsonl" for n in range(WORKERS)]
    procs = [spawn("pg_worker.py", postgres, project.project, n, 5, go, outs[n]) for n in range(WORKERS)]
    try:
        for proc in procs:
            assert "ready" in read_json_line(proc)
        go.touch()
        time.sleep(1.5)
        for proc in procs[:2]:
            os.kill(proc.pid, signal.SIGKILL)
        time.sleep(0.5)
        pg_server.control("restart")
        for proc in procs[2:]:
            assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=30)

    records = [(n, r) for n in range(WORKERS) for r in _records(outs[n])]
    acked = {(n, r["op"], r["k"]) for n, r in records if r.get("state") == "ack"}
    tried = {(n, r["op"], r["k"]) for n, r in records if r.get("state") == "try"}
    undecided = tried - acked  # killed mid-change, or refused with an outcome unknown
    codes = Counter(r["code"] for _, r in records if r.get("state") == "error")
    assert set(codes) <= {"STORAGE", "BUSY"}
    assert all(any(r.get("done") == n for m, r in records if m == n) for n in range(2, WORKERS))

    # the counter: every acknowledged +1 is there; at most the undecided ones more
    final = int(project.read("counter.md") or b"")
    acked_counts = sum(1 for _, op, _ in acked if op == "count")
    assert acked_counts <= final <= acked_counts + sum(1 for _, op, _ in undecided if op == "count")
    assert acked_counts > WORKERS  # the run did real work

    # the shared file: each acknowledged line once; no line nobody tried; none twice
    lines = (project.read("shared.md") or b"").decode().splitlines()
    assert len(lines) == len(set(lines))
    wanted = {f"w{n}-{k:05d}" for n, op, k in acked if op == "line"}
    allowed = {f"w{n}-{k:05d}" for n, op, k in tried if op == "line"}
    assert wanted <= set(lines) <= allowed

    # own files: at least the last acknowledged value
    for n in range(WORKERS):
        ks = [k for m, op, k in acked if m == n and op == "own"]
        if ks:
            assert int(project.read(f"own/w{n}.md") or b"-1") >= max(ks)

    # the log: one entry per commit of counter.md, chained in sequence order (each starts where the
    # previous one ended), so sequence order is commit order and no commit is missing
    from fsmem._core.versions import version_of

    counter_log = [e for e in project.log() if e.path == "counter.md"]
    assert len(counter_log) == final + 1  # the first write, then one per increment
    assert [e.after for e in counter_log] == [version_of(str(n).encode()) for n in range(final + 1)]
    assert all(e.before == previous.after for previous, e in itertools.pairwise(counter_log))
    assert len(project.versions("counter.md")) == 20


def test_a_worker_killed_inside_a_change_leaves_nothing_and_holds_nothing(project, postgres):
    with project.change("write") as tx:
        tx.write("counter.md", b"5")
    holder = spawn("pg_worker.py", postgres, project.project, 0, "hold")
    try:
        assert read_json_line(holder) == {"inside": 0}
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
    finally:
        if holder.poll() is None:
            holder.kill()
    with project.change("write") as tx:  # the dead worker's row lock went with its connection
        assert tx.read("counter.md") == b"5"
        tx.write("counter.md", b"6")
    assert [e.after for e in project.log()][-2:] != [None, None]
    assert project.read("counter.md") == b"6" and b"999" not in [project.read_kept("counter.md", v.version)
                                                                for v in project.versions("counter.md")]


def test_an_outage_is_a_storage_error_and_the_pool_reconnects(project, pg_server):
    """Down: every call fails with STORAGE and changes nothing. Up again: the same store works,
    without reopening, and what was acknowledged before is there. A listener catches up too."""
    from fsmem._store.postgres.errors import StoreUnavailable
    from fsmem._store.postgres.store import PgStore

    with project.change("write") as tx:
        tx.write("kept.md", b"acknowledged\n")
    woken: list[int] = []
    listener = project.listen(woken.append)
    assert listener.ready.wait(10)
    with PgStore.open(project.url, project.project, connect_timeout=1) as store:
        pg_server.control("down")
        try:
            for call in (lambda: store.read("kept.md"), store.newest_seq, lambda: store.changes_since(0),
                         lambda: list(store.log()), lambda: store.versions("kept.md")):
                with pytest.raises(StoreUnavailable) as refused:
                    call()
                assert refused.value.code == "STORAGE"
            with pytest.raises(StoreUnavailable), store.change("write") as tx:
                tx.write("lost.md", b"never acknowledged\n")
        finally:
            pg_server.control("up")
        assert _once_back(lambda: store.read("kept.md")) == b"acknowledged\n" and store.read("lost.md") is None
        with store.change("write") as tx:
            tx.write("after.md", b"back\n")
    assert _once_back(lambda: project.read("after.md")) == b"back\n"  # the other store's pool too
    deadline = time.monotonic() + 30
    while project.newest_seq() not in woken and time.monotonic() < deadline:
        time.sleep(0.05)
    listener.stop()
    assert project.newest_seq() in woken


def _once_back(call):
    """The pool reconnects in the background, backing off while the server was away: a call may still
    be refused with STORAGE for a few seconds after it is back, never with anything else."""
    from fsmem._store.postgres.errors import StoreUnavailable

    deadline = time.monotonic() + 60
    while True:
        try:
            return call()
        except StoreUnavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_a_folder_rename_is_never_seen_half_done(project):
    """One thread renames a 30-file folder back and forth; readers always find all 30 on one side."""
    from fsmem._store.postgres.store import PgStore

    with project.change("write") as tx:
        for n in range(30):
            tx.write(f"a/{n:02d}.md", f"{n}\n".encode())
    stop, seen = threading.Event(), Counter[tuple[int, int]]()

    def rename() -> None:
        names = ("a", "b")
        turn = 0
        while not stop.is_set():
            with project.change("rename") as tx:
                tx.move(names[turn % 2], names[(turn + 1) % 2])
            turn += 1

    with PgStore.open(project.url, project.project) as reader:
        mover = threading.Thread(target=rename)
        mover.start()
        try:
            for _ in range(300):
                paths = [e.path for e in reader.walk_files()]
                seen[(sum(p.startswith("a/") for p in paths), sum(p.startswith("b/") for p in paths))] += 1
        finally:
            stop.set()
            mover.join(timeout=60)
    assert set(seen) <= {(30, 0), (0, 30)}, seen
