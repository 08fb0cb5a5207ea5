"""The index's life in processes: many ``Memory`` objects on one root, and a write in one process
until another's next search finds it.

    python -m bench.processes --files 10000        # or: bin/bench processes ...
    python -m bench.processes --quick              # 1,000 files, fewer rounds

- *many objects*: 50 threads of one process search the same root, through one ``Memory`` they share,
  then through 50 ``Memory`` objects (one each, as a server that opens one per request): p50/p95 of a
  search, and the first search of the 50 (each opens its index and its watcher, or shares them).
- *write in A → found by B*: process A writes through the memory tool; process B (long-lived,
  watching by default) searches for the new word until it finds it: p50/p95 from the write's start.
  The same with another process reading the disk hard meanwhile (``--busy``, a "busy disk").
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
from pathlib import Path

from bench.search import RACY_AGE_S, SEARCHER, child_env, generate, queries, rg_search
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


def write_in_a_found_by_b(root: Path, n: int, tag: str) -> list[float]:
    """A write through the memory tool here, then process B's next search, which must find it (ms)."""
    import fsmem

    memory = fsmem.open(root)
    run = memory.run(thread_id="bench")
    searcher = subprocess.Popen(
        [sys.executable, "-c", SEARCHER, str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    samples = []
    try:
        assert searcher.stdin is not None and searcher.stdout is not None
        assert searcher.stdout.readline() == "ready\n"
        for i in range(n):
            word, path = f"zqx{tag}{i}word", f"bench/{tag}{i}.md"
            start = time.perf_counter()
            result = run.call({"command": "write", "path": path, "content": f"# W {i}\n\n{word}\n"})
            assert result["ok"], result
            searcher.stdin.write(word + "\n")
            searcher.stdin.flush()
            found = searcher.stdout.readline().strip()
            samples.append((time.perf_counter() - start) * 1000)
            assert found == path, found
    finally:
        searcher.communicate("", timeout=60)
        memory.close()
    return samples


def write_to_b(root: Path, n: int, busy: bool) -> tuple[float, float]:
    hog = None
    if busy:
        hog = subprocess.Popen([sys.executable, "-c", DISK_HOG, str(root.parent / "hog.bin")], env=child_env())
        time.sleep(0.5)
    try:
        return median_p95(write_in_a_found_by_b(root, n, "busy" if busy else "quiet"))
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
            (root.parent / "hog.bin").unlink(missing_ok=True)


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


def cold_rows(temp: Path, sizes: list[int], rounds: int, meaning: str) -> list[Row]:
    """The cold rows at each size, on a corpus of its own (indexed first, as `fsmem watch` keeps it)."""
    import compileall

    compileall.compile_dir(str(Path(__file__).resolve().parents[1] / "fsmem"), quiet=1)  # a user's bytecode
    rows = []
    for size in sizes:
        print(f"[processes] cold searches, {size:,} files …", file=sys.stderr, flush=True)
        root = temp / f"cold-{size}"
        cold = cold_searches(root, indexed_corpus(root, size), rounds, meaning)
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


def print_cold(rows: list[Row], meaning: str) -> None:
    print()
    print(f"Cold searches, FSMEM_MEANING={meaning}:")
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
    parser.add_argument("--writes", type=int, default=None, help="writes of the A → B row (default 40)")
    parser.add_argument(
        "--sizes",
        default=None,
        help="files of the cold rows, comma-separated (default 1000,10000,100000; quick: 1000,10000)",
    )
    parser.add_argument("--cold-only", action="store_true", help="the cold rows alone")
    parser.add_argument(
        "--meaning",
        choices=["off", "auto"],
        default="off",
        help="FSMEM_MEANING of the cold rows (default off: words, as rg; auto: a query embedded too, and the "
        "resident embedding the new corpus meanwhile)",
    )
    args = parser.parse_args(argv)
    sizes = (
        [int(size) for size in args.sizes.split(",")]
        if args.sizes
        else ([1000, 10000] if args.quick else [1000, 10000, 100000])
    )
    rounds = 2 if args.quick else 3
    if args.cold_only:
        with tempfile.TemporaryDirectory(prefix="fsmem-bench-") as temp:
            print_cold(cold_rows(Path(temp), sizes, rounds, args.meaning), args.meaning)
        print(f"(cores: {os.cpu_count()}; the machine's other load is not controlled)")
        return 0
    files = args.files or (1000 if args.quick else 10000)
    writes = args.writes or (10 if args.quick else 40)
    with tempfile.TemporaryDirectory(prefix="fsmem-bench-") as temp:
        root = Path(temp) / "corpus"
        qs = indexed_corpus(root, files)
        many = many_objects(root, qs, rounds=1 if args.quick else 3)
        quiet = write_to_b(root, writes, busy=False)
        busy = write_to_b(root, writes, busy=True)
        shutil.rmtree(root, ignore_errors=True)
        cold = cold_rows(Path(temp), sizes, rounds, args.meaning)
    print(
        f"| files | search p50/p95 ms, {THREADS} threads on 1 `Memory` | on {THREADS} `Memory` objects "
        f"| first search p50/p95 ms, 1 / {THREADS} objects | write in A → found by B p50/p95 ms, quiet / busy disk |"
    )
    print("|---|---|---|---|---|")
    s1, s50 = many["search_1"], many[f"search_{THREADS}"]
    f1, f50 = many["first_1"], many[f"first_{THREADS}"]
    print(
        f"| {files:,} | {s1[0]:.1f} / {s1[1]:.1f} | {s50[0]:.1f} / {s50[1]:.1f} "
        f"| {f1[0]:.0f} / {f1[1]:.0f} · {f50[0]:.0f} / {f50[1]:.0f} "
        f"| {quiet[0]:.1f} / {quiet[1]:.1f} · {busy[0]:.1f} / {busy[1]:.1f} |"
    )
    if cold:
        print_cold(cold, args.meaning)
    print(f"(cores: {os.cpu_count()}; the machine's other load is not controlled)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
