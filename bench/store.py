"""The PostgreSQL store beside the folder drive: a conditional write, the freshness query, throughput.

    bin/bench store [--quick] [--rounds N] [--seconds S] [--workers 1,2,4,8] [--url CONNINFO] [--files 10000]

Both stores first hold a project of ``--files`` files of realistic size (``bench.search.generate``'s
corpus: 10,000, or 1,000 with ``--quick``), as the project a user writes into; PostgreSQL's is made by
``fsmem copy`` (one transaction), the folder's by copying the files in.

Without ``--url`` it starts its own throwaway cluster with fsync on (``bin/pg-throwaway``, as durable
as the folder drive's fsync'd writes) and removes it afterwards. Rows:

- a conditional write (read the version, write only if it is still that) on the folder drive
  (``drive.change`` + ``tx.read`` + ``tx.write``, no index hooks) and on PostgreSQL
  (``change`` + ``tx.write(expect=…)``), interleaved in the same run;
- ``read``, ``newest_seq()`` (target ≤ 0.5 ms p50: a search asks it every time) and an empty
  ``changes_since``;
- writes per second with 1, 2, 4 and 8 worker processes, each with its own pool, on distinct files
  and on one shared file (read, then write if unchanged; the CONFLICT rate is reported);
- search on every worker: two Memories on one project with their own cache folders (two machines):
  the freshness check a search makes when nothing changed (the newest-seq query; target ≤ 0.5 ms p50),
  a whole search, and a write on worker A until the next search on worker B finds it (≤ 50 ms p50).

Then the same through ``Memory`` and the tool (``run.call``), as a model's calls arrive:

- a tool write and a tool read on PostgreSQL (``fsmem.open(url, project=..., cache=...)``) beside the
  folder store (``fsmem.open(root)``), interleaved in the same run (target: the write's p50 at most
  2x the folder store's);
- tool writes per second with 1, 2, 4 and 8 worker processes, each its own ``Memory`` (on PostgreSQL
  its own cache folder, as if on its own machine), on distinct files and on one shared file (read,
  then write; the CONFLICT rate is reported), on both stores.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import multiprocessing
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from bench.timing import median_p95

REPO = Path(__file__).resolve().parent.parent
SEQ_TARGET_MS = 0.5
FOUND_TARGET_MS = 50.0


def main(argv: list[str]) -> None:
    options = _options(argv)
    rounds = options.rounds or (60 if options.quick else 400)
    options.files = options.files or (1000 if options.quick else 10000)
    seconds = options.seconds or (1.0 if options.quick else 3.0)
    workers = [int(count) for count in options.workers.split(",")]
    try:
        import psycopg  # noqa: F401
    except ImportError:
        print("skipped: psycopg is not installed (pip install -e '.[postgres]')")
        return
    if options.url:
        _run(options.url, rounds, seconds, workers, "the server given with --url", options.files)
        return
    with throwaway_server() as url:
        if url is None:
            return
        _run(url, rounds, seconds, workers, "a throwaway cluster, fsync on, unix socket", options.files)


@contextlib.contextmanager
def throwaway_server() -> Iterator[str | None]:
    """A throwaway PostgreSQL cluster with fsync on (``bin/pg-throwaway``, as durable as the folder
    drive's fsync'd writes), removed afterwards; ``None`` (said why) when none can start."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so the cluster below is still removed
    folder = tempfile.mkdtemp(prefix="fsmem-pg.", dir="/tmp")
    script = str(REPO / "bin" / "pg-throwaway")
    started = subprocess.run(
        [script, "start", folder],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "FSMEM_PG_DURABLE": "1"},
    )
    try:
        if started.returncode != 0:
            print(f"skipped: no PostgreSQL server could start ({started.stderr.strip()})")
            yield None
        else:
            yield started.stdout.strip()
    finally:
        subprocess.run([script, "stop", folder], capture_output=True, check=False)


def realistic_corpus(scratch: Path, count: int) -> Path:
    """A folder of ``count`` files of realistic size (``bench.search.generate``'s corpus), made once."""
    from bench.search import generate

    corpus = scratch / f"corpus-{count}"
    if not corpus.exists():
        corpus.mkdir(parents=True)
        generate(corpus, count)
    return corpus


def seed_folder(root: Path, count: int, scratch: Path) -> None:
    """Put the realistic corpus's files into the folder ``root`` (as a person's project holds them)."""
    import shutil

    shutil.copytree(realistic_corpus(scratch, count), root, dirs_exist_ok=True)


def seed_database(url: str, project: str, count: int, scratch: Path) -> None:
    """Make ``project`` on PostgreSQL holding the realistic corpus (``fsmem copy``: one transaction)."""
    from fsmem._memory.copy import copy

    copy(str(realistic_corpus(scratch, count)), url, project)


def _options(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bin/bench store", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="60 rounds and 1 s per throughput row")
    parser.add_argument("--rounds", type=int, default=0, help="timed calls per latency row")
    parser.add_argument("--seconds", type=float, default=0, help="length of each throughput row")
    parser.add_argument("--url", default="", help="a PostgreSQL conninfo to use instead of a throwaway cluster")
    parser.add_argument("--workers", default="1,2,4,8", help="worker counts of the throughput rows")
    parser.add_argument("--files", type=int, default=0, help="files the project holds first (default 10000)")
    return parser.parse_args(argv)


def _run(url: str, rounds: int, seconds: float, worker_counts: list[int], where: str, files: int) -> None:
    import fsmem
    from fsmem._core.versions import version_of
    from fsmem._store.folder.drive import Drive
    from fsmem._store.postgres.store import PgStore

    print(
        f"PostgreSQL: {where}; {rounds} timed calls a latency row, {seconds:g} s a throughput row; "
        f"each store holds {files:,} files of realistic size first"
    )
    project = f"bench-{uuid.uuid4().hex[:8]}"
    scratch_dir = tempfile.mkdtemp(prefix="fsmem-bench-")
    seed_database(url, project, files, Path(scratch_dir))  # the project a user writes into
    with contextlib.ExitStack() as cleanup, PgStore.open(url, project) as store:
        cleanup.callback(shutil.rmtree, scratch_dir, True)
        scratch = scratch_dir
        root = Path(scratch) / "root"
        seed_folder(root, files, Path(scratch))
        settings = fsmem.open(root, create=True).settings
        drive = Drive(root, settings)  # no on_commit hooks: the file work alone, as in the store
        paths = [f"notes/page-{n:03d}.md" for n in range(50)]
        with drive.change("write") as folder_tx, store.change("write") as pg_tx:
            for path in paths:
                folder_tx.write(path, f"# {path}\n".encode())
                pg_tx.write(path, f"# {path}\n".encode())

        def folder_write(path: str, data: bytes) -> None:
            version = version_of(drive.read(path) or b"")  # what the caller saw, then checked under the lock
            with drive.change("write") as tx:
                if version_of(tx.read(path) or b"") != version:
                    raise RuntimeError("the benchmark's file changed under it")
                tx.write(path, data)

        def pg_write(path: str, data: bytes) -> None:
            version = store.version(path)
            with store.change("write") as tx:
                tx.write(path, data, expect=version)

        times: dict[str, list[float]] = {
            name: []
            for name in (
                "folder drive conditional write",
                "PostgreSQL conditional write",
                "PostgreSQL read",
                "PostgreSQL newest_seq()",
                "PostgreSQL changes_since(newest)",
            )
        }
        rng = random.Random(12)
        for number in range(rounds + 5):
            path = rng.choice(paths)
            data = f"# {path}\n\n- note {number}\n".encode()
            newest = store.newest_seq()
            order: list[tuple[str, Callable[[], object]]] = [
                ("folder drive conditional write", functools.partial(folder_write, path, data)),
                ("PostgreSQL conditional write", functools.partial(pg_write, path, data)),
                ("PostgreSQL read", functools.partial(store.read, path)),
                ("PostgreSQL newest_seq()", store.newest_seq),
                ("PostgreSQL changes_since(newest)", functools.partial(store.changes_since, newest)),
            ]
            rng.shuffle(order)
            for name, action in order:
                start = time.perf_counter()
                action()
                if number >= 5:  # the first rounds warm connections and prepared statements
                    times[name].append(time.perf_counter() - start)
        for name, samples in times.items():
            median, p95 = median_p95(samples)
            print(f"{name:<40} p50 {median * 1000:7.3f} ms   p95 {p95 * 1000:7.3f} ms")
        ratio = (
            median_p95(times["PostgreSQL conditional write"])[0]
            / median_p95(times["folder drive conditional write"])[0]
        )
        seq = median_p95(times["PostgreSQL newest_seq()"])[0] * 1000
        print(f"PostgreSQL write / folder write (p50): {ratio:.2f}x")
        print(
            f"target: newest_seq() p50 <= {SEQ_TARGET_MS} ms: {seq:.3f} ms "
            f"({'met' if seq <= SEQ_TARGET_MS else 'NOT met'})"
        )

    _search_rows(url, rounds)
    print(f"{'workers':<8} {'distinct files, writes/s':>26} {'one shared file, writes/s':>27} {'conflicts':>10}")
    for workers in worker_counts:
        distinct = _throughput(url, workers, seconds, shared=False)[0]
        shared, conflict_rate = _throughput(url, workers, seconds, shared=True)
        print(f"{workers:<8} {distinct:>26.0f} {shared:>27.0f} {conflict_rate:>9.1%}")
    _tool_rows(url, rounds, seconds, worker_counts, files)


# ---- through Memory and the tool ------------------------------------------------------------------

TOOL_TARGET = 2.0  # PostgreSQL's tool write p50 at most this many times the folder store's


def _open(kind: str, place: str, project: str, cache: str):
    """A ``Memory`` on the folder root ``place``, or on PostgreSQL ``place`` with its own cache."""
    import fsmem

    if kind == "folder":
        return fsmem.open(place, create=True)
    return fsmem.open(place, create=True, project=project, cache=cache)


def _tool_rows(url: str, rounds: int, seconds: float, worker_counts: list[int], files: int) -> None:
    print("Through Memory and the tool (run.call), PostgreSQL beside the folder store:")
    project = f"bench-tool-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory(prefix="fsmem-bench-") as scratch:
        seed_folder(Path(scratch) / "root", files, Path(scratch))
        seed_database(url, project, files, Path(scratch))
        stores = {
            "folder store": _open("folder", str(Path(scratch) / "root"), "", ""),
            "PostgreSQL": _open("pg", url, project, str(Path(scratch) / "cache")),
        }
        for memory in stores.values():
            memory.search("warm")  # its index holds the project (a worker's cache is built from the rows)
        paths = [f"notes/page-{n:03d}.md" for n in range(50)]
        runs = {name: memory.run(thread_id="bench") for name, memory in stores.items()}
        for run in runs.values():
            for path in paths:
                run.call({"command": "write", "path": path, "content": f"# {path}\n"})
        times: dict[str, list[float]] = {f"{name} tool {what}": [] for name in stores for what in ("write", "read")}
        rng = random.Random(12)
        for number in range(rounds + 5):
            path = rng.choice(paths)
            request = {"command": "write", "path": path, "content": f"# {path}\n\n- note {number}\n"}
            order = [
                (f"{name} tool {what}", run, request if what == "write" else {"command": "read", "path": path})
                for name, run in runs.items()
                for what in ("write", "read")
            ]
            rng.shuffle(order)
            for label, run, call in order:
                start = time.perf_counter()
                result = run.call(call)
                elapsed = time.perf_counter() - start
                if not result["ok"]:
                    raise RuntimeError(f"{label}: {result['error']}")
                if number >= 5:
                    times[label].append(elapsed)
        for memory in stores.values():
            memory.close()
    for label, samples in times.items():
        median, p95 = median_p95(samples)
        print(f"{label:<40} p50 {median * 1000:7.3f} ms   p95 {p95 * 1000:7.3f} ms")
    ratio = median_p95(times["PostgreSQL tool write"])[0] / median_p95(times["folder store tool write"])[0]
    print(
        f"target: PostgreSQL tool write p50 <= {TOOL_TARGET:g}x the folder store's: {ratio:.2f}x "
        f"({'met' if ratio <= TOOL_TARGET else 'NOT met'})"
    )
    print(
        f"{'store':<13} {'workers':<8} {'distinct files, tool writes/s':>30} "
        f"{'one shared file, tool writes/s':>31} {'conflicts':>10}"
    )
    for kind, name in (("folder", "folder store"), ("pg", "PostgreSQL")):
        for workers in worker_counts:
            distinct = _tool_throughput(kind, url, workers, seconds, shared=False)[0]
            shared, conflict_rate = _tool_throughput(kind, url, workers, seconds, shared=True)
            print(f"{name:<13} {workers:<8} {distinct:>30.0f} {shared:>31.0f} {conflict_rate:>9.1%}")


def _tool_throughput(kind: str, url: str, workers: int, seconds: float, shared: bool) -> tuple[float, float]:
    """Tool writes per second over all workers (each its own Memory), and the share refused with CONFLICT."""
    project = f"bench-tool-{uuid.uuid4().hex[:8]}"
    with (
        tempfile.TemporaryDirectory(prefix="fsmem-bench-") as scratch,
        multiprocessing.get_context("spawn").Pool(workers) as pool,
    ):
        place = url if kind == "pg" else str(Path(scratch) / "root")
        setup = _open(kind, place, project, str(Path(scratch) / "cache-setup"))
        setup.run(thread_id="setup").call({"command": "write", "path": "shared.md", "content": "0\n"})
        setup.close()
        go = Path(scratch) / "go"
        pending = [
            pool.apply_async(
                _tool_worker, (kind, place, project, str(Path(scratch) / f"cache-{n}"), n, seconds, shared, str(go))
            )
            for n in range(workers)
        ]
        while len(list(Path(scratch).glob("ready-*"))) < workers:  # every worker has opened its Memory
            time.sleep(0.05)
        go.touch()
        results = [item.get(timeout=seconds + 120) for item in pending]
    done = sum(ok for ok, _ in results)
    conflicts = sum(refused for _, refused in results)
    return done / seconds, conflicts / max(1, done + conflicts)


def _tool_worker(
    kind: str, place: str, project: str, cache: str, number: int, seconds: float, shared: bool, go: str
) -> tuple[int, int]:
    memory = _open(kind, place, project, cache)
    run = memory.run(thread_id=f"w{number}")
    path = "shared.md" if shared else f"w{number}.md"
    if not shared:
        run.call({"command": "write", "path": path, "content": "0\n"})
    Path(go).with_name(f"ready-{number}").touch()
    while not os.path.exists(go):
        time.sleep(0.01)
    done = conflicts = 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        read = run.call({"command": "read", "path": path})
        if not read["ok"]:
            raise RuntimeError(f"worker {number}: {read['error']}")
        result = run.call({"command": "write", "path": path, "content": f"{int(read['content']) + 1}\n"})
        if result["ok"]:
            done += 1
        elif result["error"]["code"] in ("CONFLICT", "BUSY"):
            conflicts += 1
        else:
            raise RuntimeError(f"worker {number}: {result['error']}")
    memory.close()
    return done, conflicts


def _search_rows(url: str, rounds: int) -> None:
    """Two workers on one project (own cache folders): the freshness a search pays, and how soon a
    write on one is found by the other's next search."""
    import dataclasses

    import fsmem
    from fsmem._env.config import Settings
    from fsmem._memory.levels import Scope

    project = f"bench-search-{uuid.uuid4().hex[:8]}"
    settings = dataclasses.replace(Settings(), watch=False)  # no listener: each search catches up itself
    with tempfile.TemporaryDirectory(prefix="fsmem-bench-") as scratch:
        a = fsmem.open(url, project=project, create=True, cache=Path(scratch) / "a", settings=settings)
        b = fsmem.open(url, project=project, create=True, cache=Path(scratch) / "b", settings=settings)
        try:
            run = a.run(Scope.chat(), thread_id="bench")
            with a.drive.change("seed") as tx:  # the rows a real project has, in one transaction
                for number in range(200):
                    tx.write(f"notes/page-{number:03d}.md", f"# Page {number}\n\nplain notes about topic {number}\n".encode())
            b.search("plain")  # builds B's index from the rows
            times: dict[str, list[float]] = {name: [] for name in (
                "search freshness check (nothing new)", "search on worker B (nothing new)",
                "write on A, found by B's next search", "  of which B's search")}
            for number in range(rounds + 5):
                b.search("plain")  # after the last round's commit: a searcher on it is open
                start = time.perf_counter()
                b.index.freshness.noted()  # what a search asks first (the newest-seq query)
                checked = time.perf_counter()
                b.search("plain")
                searched = time.perf_counter()
                word = f"zq{number}x{uuid.uuid4().hex[:6]}"
                result = run.call({"command": "write", "path": f"found/w-{number}.md", "content": f"{word}\n"})
                written = time.perf_counter()
                hits = b.search(word)
                found = time.perf_counter()
                if not result["ok"] or [hit.path for hit in hits] != [f"found/w-{number}.md"]:
                    raise RuntimeError(f"worker B did not find the write of round {number}: {result}, {hits}")
                if number >= 5:
                    times["search freshness check (nothing new)"].append(checked - start)
                    times["search on worker B (nothing new)"].append(searched - checked)
                    times["write on A, found by B's next search"].append(found - written + (written - searched))
                    times["  of which B's search"].append(found - written)
        finally:
            a.close()
            b.close()
    for name, samples in times.items():
        median, p95 = median_p95(samples)
        print(f"{name:<40} p50 {median * 1000:7.3f} ms   p95 {p95 * 1000:7.3f} ms")
    check = median_p95(times["search freshness check (nothing new)"])[0] * 1000
    found_ms = median_p95(times["write on A, found by B's next search"])[0] * 1000
    print(f"target: search freshness check p50 <= {SEQ_TARGET_MS} ms: {check:.3f} ms "
          f"({'met' if check <= SEQ_TARGET_MS else 'NOT met'})")
    print(f"target: write on A found by B p50 <= {FOUND_TARGET_MS:g} ms: {found_ms:.1f} ms "
          f"({'met' if found_ms <= FOUND_TARGET_MS else 'NOT met'})")


def _throughput(url: str, workers: int, seconds: float, shared: bool) -> tuple[float, float]:
    """Acknowledged writes per second over all workers, and the share of tries refused with CONFLICT."""
    from fsmem._store.postgres.store import PgStore

    project = f"bench-{uuid.uuid4().hex[:8]}"
    with PgStore.open(url, project) as store, store.change("write") as tx:
        tx.write("shared.md", b"0")
    with (
        tempfile.TemporaryDirectory(prefix="fsmem-bench-") as scratch,
        multiprocessing.get_context("spawn").Pool(workers) as pool,
    ):
        go = str(Path(scratch) / "go")
        pending = [pool.apply_async(_worker, (url, project, n, seconds, shared, go)) for n in range(workers)]
        _wait_ready(url, project, workers)
        Path(go).touch()
        results = [item.get(timeout=seconds + 120) for item in pending]
    done = sum(ok for ok, _ in results)
    conflicts = sum(refused for _, refused in results)
    return done / seconds, conflicts / max(1, done + conflicts)


def _wait_ready(url: str, project: str, workers: int) -> None:
    """Every worker has opened its store (and said so with a write) before the clock starts."""
    from fsmem._store.postgres.store import PgStore

    with PgStore.open(url, project) as store:
        while store.newest_seq() < 1 + workers:  # shared.md, then one ready/w<n>.md each
            time.sleep(0.05)


def _worker(url: str, project: str, number: int, seconds: float, shared: bool, go: str) -> tuple[int, int]:
    from fsmem._core.versions import version_of
    from fsmem._errors import Conflict
    from fsmem._store.postgres.store import PgStore

    path = "shared.md" if shared else f"w{number}.md"
    with PgStore.open(url, project, pool_size=1) as store:
        with store.change("write") as tx:
            tx.write(f"ready/w{number}.md", b"ready")
            if not shared:
                tx.write(path, b"0")
        while not os.path.exists(go):
            time.sleep(0.01)
        done = conflicts = 0
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            data = store.read(path) or b"0"
            try:
                with store.change("write") as tx:
                    tx.write(path, str(int(data) + 1).encode(), expect=version_of(data))
                done += 1
            except Conflict:
                conflicts += 1
        return done, conflicts
