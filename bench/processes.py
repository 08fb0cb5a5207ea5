"""The index's life in processes: many ``Memory`` objects on one root, and a write in one process
until another's next search finds it.

    python -m bench.processes --files 10000        # or: bin/bench processes ...
    python -m bench.processes --quick              # 1,000 files, fewer rounds
    bin/bench processes --found-only --sizes 10000,100000 [--store postgres]

- *many objects*: 50 threads of one process search the same root, through one ``Memory`` they share,
  then through 50 ``Memory`` objects (one each, as a server that opens one per request): p50/p95 of a
  search, and the first search of the 50 (each opens its index and its watcher, or shares them).
- *write in A → found by B*: process A writes through the memory tool; process B (long-lived,
  watching by default; on PostgreSQL a worker with a cache folder of its own) searches once for the new
  word, which it must find. Three numbers: A's write (its call), from A's ack to B's answer (the
  target: "a change acknowledged by A is found by B's next search"), and from A's start to B's answer.
  Quiet, and with another process rewriting 64 MiB with fsync in a loop (a busy disk). ``--sizes
  10000,100000`` for each corpus size, ``--store postgres`` on a throwaway cluster (fsync on, as
  ``bin/bench store`` starts it) or ``--url``; ``--found-only`` for these rows alone.
- *cold*: at each of ``--sizes`` (a corpus each), a new `fsmem search` process with `fsmem watch`
  serving (the resident runs the command), then with none, each alternating query by query with a
  cold rg, and its ratio to that rg. ``--cold-only`` runs these rows alone.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from bench.search import RACY_AGE_S, child_env, generate, queries, rg_search
from bench.timing import median_p95

THREADS = 50


def many_objects(root: Path, qs: list[str], rounds: int) -> dict[str, tuple[float, float]]:
    import fsmem

    out = {}
    for count in (1, THREADS):
        memories = [fsmem.open(root) for _ in range(count)]
        samples: list[float] = []
        firsts: list[float] = []
        lock = threading.Lock()

        def work(number: int, memories=memories, lock=lock, firsts=firsts, samples=samples) -> None:
            memory = memories[number % len(memories)]
            mine = []
            for i in range(rounds * len(qs)):
                start = time.perf_counter()
                memory.search(qs[(number + i) % len(qs)])
                mine.append((time.perf_counter() - start) * 1000)
            with lock:
                firsts.append(mine[0])
                samples.extend(mine[1:])

        threads = [threading.Thread(target=work, args=(n,)) for n in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for memory in memories:
            memory.close()
        out[f"search_{count}"] = median_p95(samples)
        out[f"first_{count}"] = median_p95(firsts)
    return out


DISK_HOG = """
import os, sys, time
path = sys.argv[1]
block = os.urandom(1 << 20)
while True:
    with open(path, "wb") as f:
        for _ in range(64):
            f.write(block)
        f.flush()
        os.fsync(f.fileno())
"""


# Process B of "a write in A, found by B's next search": a long-lived process (the harness, `fsmem mcp`)
# with the default settings (watching), on the folder or on PostgreSQL with a cache folder of its own
# (another machine). It reads a word a line, searches once, answers with the paths.
SEARCHER_B = """
import sys, fsmem
place, project, cache = sys.argv[1], sys.argv[2] or None, sys.argv[3] or None
memory = fsmem.open(place, project=project, cache=cache) if project else fsmem.open(place)
memory.search("warm")
print("ready", flush=True)
for line in sys.stdin:
    print(",".join(hit.path for hit in memory.search(line.strip())), flush=True)
memory.close()
"""


def write_in_a_found_by_b(memory, b_args: list[str], n: int, tag: str) -> dict[str, list[float]]:
    """A write through the memory tool here (A), then process B's next search, which must find it: ms
    of A's call, from its return (the ack) to B's answer, and from its start to B's answer."""
    run = memory.run(thread_id="bench")
    searcher = subprocess.Popen(
        [sys.executable, "-c", SEARCHER_B, *b_args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**child_env(), "FSMEM_MEANING": memory.settings.meaning},
    )
    samples: dict[str, list[float]] = {"write": [], "ack_found": [], "start_found": []}
    try:
        assert searcher.stdin is not None and searcher.stdout is not None
        assert searcher.stdout.readline() == "ready\n"
        for i in range(n):
            word, path = f"zqx{tag}{i}word", f"bench/{tag}{i}.md"
            start = time.perf_counter()
            result = run.call({"command": "write", "path": path, "content": f"# W {i}\n\n{word}\n"})
            acked = time.perf_counter()
            assert result["ok"], result
            searcher.stdin.write(word + "\n")
            searcher.stdin.flush()
            found = searcher.stdout.readline().strip()
            done = time.perf_counter()
            assert path in found.split(","), found  # words, or fused with meaning
            samples["write"].append((acked - start) * 1000)
            samples["ack_found"].append((done - acked) * 1000)
            samples["start_found"].append((done - start) * 1000)
            time.sleep(0.05)  # as a model's calls arrive: not back to back
    finally:
        searcher.communicate("", timeout=120)
    return samples


def write_to_b(memory, b_args: list[str], n: int, busy: bool, scratch: Path) -> dict[str, tuple[float, float]]:
    hog = None
    if busy:
        hog = subprocess.Popen([sys.executable, "-c", DISK_HOG, str(scratch / "hog.bin")], env=child_env())
        time.sleep(0.5)
    try:
        found = write_in_a_found_by_b(memory, b_args, n, "busy" if busy else "quiet")
        return {name: median_p95(values) for name, values in found.items()}
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
            (scratch / "hog.bin").unlink(missing_ok=True)


def found_rows(store: str, sizes: list[int], writes: int, url: str | None, meaning: str) -> list[tuple]:
    """Each size: a corpus of that many files on the store, then A → B quiet and with the disk busy.
    ``meaning``: the setting A and B run with ("off": words alone; "auto": B embeds the new corpus in
    its background meanwhile, and fuses each search with the query's vector)."""
    import dataclasses

    import fsmem
    from fsmem._env.config import load_settings

    rows = []
    for files in sizes:
        with tempfile.TemporaryDirectory(prefix="fsmem-bench-") as temp:
            scratch = Path(temp)
            corpus = scratch / "corpus"
            corpus.mkdir()
            started = time.perf_counter()
            generate(corpus, files)
            time.sleep(max(0.0, RACY_AGE_S - (time.perf_counter() - started)))
            if store == "folder":
                settings = dataclasses.replace(load_settings(corpus), meaning=meaning)
                memory = fsmem.open(corpus, settings=settings)
                memory.index.rebuild()
                b_args = [str(corpus), "", ""]
            else:
                from fsmem._memory.copy import copy

                project = f"bench-found-{uuid.uuid4().hex[:8]}"
                copy(str(corpus), url, project)  # `fsmem copy`: the project's rows in one transaction
                settings = dataclasses.replace(load_settings(None), meaning=meaning)
                memory = fsmem.open(url, project=project, cache=scratch / "cache-a", settings=settings)
                memory.search("warm")  # A's cache is built (a worker that has searched before)
                b_args = [url, project, str(scratch / "cache-b")]
            try:
                for busy in (False, True):
                    rows.append((store, files, busy, write_to_b(memory, b_args, writes, busy, scratch)))
            finally:
                memory.close()
    return rows


def print_found(rows: list[tuple]) -> None:
    print(
        "| store | files | disk | A's write p50/p95 ms | A's ack → found by B p50/p95 ms (target p95 ≤ 50) "
        "| A's start → found by B p50/p95 ms |"
    )
    print("|---|---|---|---|---|---|")
    for store, files, busy, got in rows:  # B searches by words (--meaning off) unless told
        write, ack, start = got["write"], got["ack_found"], got["start_found"]
        print(
            f"| {store} | {files:,} | {'busy' if busy else 'quiet'} | {write[0]:.1f} / {write[1]:.1f} "
            f"| {ack[0]:.1f} / {ack[1]:.1f} | {start[0]:.1f} / {start[1]:.1f} |"
        )
    print(f"(load {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores as the rows ended)")


def cold_searches(root: Path, qs: list[str], rounds: int, meaning: str) -> dict[str, tuple[float, float]]:
    """A cold `fsmem search` (a new process of the console script each) with `fsmem watch` serving,
    then without it, each alternating query by query with rg, so the machine's other load falls on
    each alike: p50/p95 ms of each, and the rg samples of each phase."""
    if not resident_available():
        return {}
    environ = {**child_env(), "FSMEM_MEANING": meaning}
    watch = subprocess.Popen(
        [sys.executable, "-m", "fsmem", "watch", "--root", str(root)], env=environ, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 300
        while not (root / ".fsmem" / "resident.sock").exists():
            if time.monotonic() > deadline or watch.poll() is not None:
                raise RuntimeError("fsmem watch did not start serving")
            time.sleep(0.05)
        shell_search(root, qs[0], environ)  # its first question loads the commands' modules, once
        served, grep_served = alternating(root, qs, rounds, environ)
    finally:
        watch.terminate()
        watch.wait(timeout=60)
    alone, grep_alone = alternating(root, qs, max(1, rounds - 1), environ)
    return {
        "served": median_p95(served),
        "rg_served": median_p95(grep_served),
        "alone": median_p95(alone),
        "rg_alone": median_p95(grep_alone),
    }


def alternating(root: Path, qs: list[str], rounds: int, environ: dict[str, str]) -> tuple[list[float], list[float]]:
    fsmem_ms, rg_ms = [], []
    for _ in range(rounds):
        for q in qs:
            fsmem_ms.append(timed_ms(shell_search, root, q, environ))
            rg_ms.append(timed_ms(rg_search, root, q))
    return fsmem_ms, rg_ms


def shell_search(root: Path, query: str, environ: dict[str, str]) -> None:
    """``fsmem search QUERY --root ROOT`` as a person types it: the console script beside this Python
    (``python -m fsmem`` where none is installed)."""
    script = Path(sys.executable).with_name("fsmem")
    launcher = [str(script)] if script.exists() else [sys.executable, "-m", "fsmem"]
    done = subprocess.run(
        [*launcher, "search", query, "--root", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
        env=environ,
    )
    if done.returncode not in (0, 1):  # 1: nothing matched, as grep says it
        raise subprocess.CalledProcessError(done.returncode, done.args)


Row = tuple[int, dict[str, tuple[float, float]]]  # files, and each column's p50/p95


def cold_rows(temp: Path, sizes: list[int], rounds: int, meaning: str, embedded: bool = False) -> list[Row]:
    """The cold rows at each size, on a corpus of its own (indexed first, as `fsmem watch` keeps it;
    with ``embedded``, every passage in the keep under the local model's name first, as a root whose
    passages were all embedded: random vectors through meaning's own path, ``bench.daemon.embed_all``)."""
    import compileall

    compileall.compile_dir(str(Path(__file__).resolve().parents[1] / "fsmem"), quiet=1)  # a user's bytecode
    rows = []
    for size in sizes:
        print(f"[processes] cold searches, {size:,} files …", file=sys.stderr, flush=True)
        root = temp / f"cold-{size}"
        qs = indexed_corpus(root, size)
        if embedded:
            from bench.daemon import embed_all

            print(f"[processes] {embed_all(root):,} files embedded", file=sys.stderr, flush=True)
        cold = cold_searches(root, qs, rounds, meaning)
        shutil.rmtree(root, ignore_errors=True)
        if cold:
            rows.append((size, cold))
    return rows


def indexed_corpus(root: Path, files: int) -> list[str]:
    """A corpus of ``files`` in ``root``, past the racy window and indexed; ten queries of its words."""
    import fsmem

    root.mkdir()
    started = time.perf_counter()
    _, words, _ = generate(root, files)
    time.sleep(max(0.0, RACY_AGE_S - (time.perf_counter() - started)))
    with fsmem.open(root) as memory:
        memory.index.rebuild()
    return queries(words, random.Random(11), n=10)


def print_cold(rows: list[Row], meaning: str, embedded: bool = False) -> None:
    print()
    print(f"Cold searches, FSMEM_MEANING={meaning}{', every passage embedded' if embedded else ''}:")
    print(
        "| files | cold `fsmem search`, `fsmem watch` serving p50/p95 ms | cold rg p50/p95 ms | served ÷ rg "
        "| cold `fsmem search` with none p50/p95 ms | cold rg p50/p95 ms | none ÷ rg |"
    )
    print("|---|---|---|---|---|---|---|")
    for size, cold in rows:
        served, rg_served, alone, rg_alone = cold["served"], cold["rg_served"], cold["alone"], cold["rg_alone"]
        print(
            f"| {size:,} | {served[0]:.0f} / {served[1]:.0f} | {rg_served[0]:.0f} / {rg_served[1]:.0f} "
            f"| {served[0] / rg_served[0]:.2f}× | {alone[0]:.0f} / {alone[1]:.0f} "
            f"| {rg_alone[0]:.0f} / {rg_alone[1]:.0f} | {alone[0] / rg_alone[0]:.2f}× |"
        )
    if len(rows) > 1:
        (small, first), (large, last) = rows[0], rows[-1]
        print(
            f"(served p50 from {small:,} to {large:,} files: ×{last['served'][0] / first['served'][0]:.2f}; "
            f"rg ×{last['rg_served'][0] / first['rg_served'][0]:.2f})"
        )


def resident_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("fsmem._memory.resident") is not None and shutil.which("rg") is not None


def timed_ms(function, *args) -> float:
    start = time.perf_counter()
    function(*args)
    return (time.perf_counter() - start) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench processes", description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=None, help="files in the corpus (default 10000)")
    parser.add_argument("--quick", action="store_true", help="1,000 files, fewer rounds")
    parser.add_argument("--writes", type=int, default=None, help="writes of the A → B rows (default 40)")
    parser.add_argument(
        "--sizes",
        default=None,
        help="corpus sizes of the A → B rows and the cold rows, comma-separated (default: --files for A → B, "
        "1000,10000,100000 for the cold rows; quick: 1000,10000)",
    )
    parser.add_argument("--store", choices=("folder", "postgres"), default="folder", help="the store of the A → B rows")
    parser.add_argument("--url", default="", help="a PostgreSQL conninfo (default: a throwaway cluster, fsync on)")
    parser.add_argument("--found-only", action="store_true", help="only the A → B rows")
    parser.add_argument("--cold-only", action="store_true", help="the cold rows alone")
    parser.add_argument(
        "--meaning",
        choices=["off", "auto"],
        default="off",
        help="FSMEM_MEANING of A, B and the cold rows (default off: words, as rg; auto: a query embedded too, "
        "and the resident embedding the new corpus meanwhile)",
    )
    parser.add_argument(
        "--embedded",
        action="store_true",
        help="the cold rows on a root whose every passage is embedded (random vectors under the local model's "
        "name), with --meaning auto: what a cold search with the default settings meets once embedding is done",
    )
    args = parser.parse_args(argv)
    given = [int(size) for size in args.sizes.split(",")] if args.sizes else None
    cold_sizes = given or ([1000, 10000] if args.quick else [1000, 10000, 100000])
    rounds = 2 if args.quick else 3
    if args.cold_only:
        with tempfile.TemporaryDirectory(prefix="fsmem-bench-") as temp:
            cold = cold_rows(Path(temp), cold_sizes, rounds, args.meaning, args.embedded)
            print_cold(cold, args.meaning, args.embedded)
        print(f"(cores: {os.cpu_count()}; load {os.getloadavg()[0]:.2f} at the end)")
        return 0
    files = args.files or (1000 if args.quick else 10000)
    writes = args.writes or (10 if args.quick else 40)
    sizes = given or [files]
    if args.store == "postgres":
        from bench.store import throwaway_server

        if args.url:
            print_found(found_rows("postgres", sizes, writes, args.url, args.meaning))
        else:
            with throwaway_server() as url:
                if url is not None:
                    print_found(found_rows("postgres", sizes, writes, url, args.meaning))
        return 0
    found = found_rows("folder", sizes, writes, None, args.meaning)
    if args.found_only:
        print_found(found)
        return 0
    with tempfile.TemporaryDirectory(prefix="fsmem-bench-") as temp:
        root = Path(temp) / "corpus"
        qs = indexed_corpus(root, files)
        many = many_objects(root, qs, rounds=1 if args.quick else 3)
        shutil.rmtree(root, ignore_errors=True)
        cold = cold_rows(Path(temp), cold_sizes, rounds, args.meaning)
    print(
        f"| files | search p50/p95 ms, {THREADS} threads on 1 `Memory` | on {THREADS} `Memory` objects "
        f"| first search p50/p95 ms, 1 / {THREADS} objects |"
    )
    print("|---|---|---|---|")
    s1, s50 = many["search_1"], many[f"search_{THREADS}"]
    f1, f50 = many["first_1"], many[f"first_{THREADS}"]
    print(
        f"| {files:,} | {s1[0]:.1f} / {s1[1]:.1f} | {s50[0]:.1f} / {s50[1]:.1f} "
        f"| {f1[0]:.0f} / {f1[1]:.0f} · {f50[0]:.0f} / {f50[1]:.0f} |"
    )
    print()
    print_found(found)
    if cold:
        print_cold(cold, args.meaning)
    load = os.getloadavg()[0]
    print(f"(cores: {os.cpu_count()}; load {load:.2f} at the end; the machine's other load is not controlled)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
