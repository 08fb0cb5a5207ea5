"""How facts scale: keep 50,000 facts about 5,000 subjects, then time keep, current() and search.

    python -m bench.facts                 # the full run (50,000 facts)
    python -m bench.facts --quick         # 2,000 facts (bin/bench facts --quick)

Each figure is printed with its median and 95th percentile, and as a ratio against a baseline measured
in the same run on the same disk (a plain one-file change through the drive; a bare listing of the
facts folders), so noisy machines still compare like with like. The targets time the user's whole
call: ``facts.keep`` and ``facts.current(subject)`` in a process that has looked once (<= 5 ms), and
``fsmem facts list`` in a new process, interpreter start included (<= 0.3 s).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import fsmem
from bench.timing import measure, median_p95
from fsmem._core import chains
from fsmem._core import facts as rules
from fsmem._memory.facts import Facts, render

ATTRIBUTES = ["role", "team", "employer", "city", "manager", "project", "deadline", "preferred language",
              "decision", "status"]
TARGETS = {"keep (one fact, its own change)": 0.005, "current(subject)": 0.005,
           "cold `fsmem facts list` (a new process)": 0.3}


def _row(name: str, times: list[float], baseline: float | None = None, unit: str = "ms") -> None:
    p50, p95 = median_p95(times)
    ratio = f"  x{p50 / baseline:6.1f} baseline" if baseline else ""
    target = TARGETS.get(name)
    verdict = ""
    if target is not None:
        verdict = f"  target <= {target * 1000:g} ms: {'met' if p50 <= target else 'MISSED'}"
    print(f"  {name:<44} p50 {p50 * 1000:8.2f} {unit}   p95 {p95 * 1000:8.2f} {unit}{ratio}{verdict}")


def _write_as_kept(root: Path, items: list[dict], offset: int) -> int:
    """Write the files keeping ``items`` one by one would leave (the chain rules of fsmem._core),
    without a change a fact: the bench's setup, not what it measures."""
    now = datetime(2026, 1, 2, tzinfo=timezone.utc)
    resolution = chains.resolve([])
    for number, item in enumerate(items, start=offset):
        draft = rules.check_draft(item["subject"], item["attribute"], item["fact"], said=item["said"], now=now)
        step = chains.plan_keep(resolution, draft, new_id=rules.new_fact_id(now, f"{number:08x}"), now=now)
        resolution.apply(step.ops)
    for folder in ("notes/memory", "notes/memory/history"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    for fact in resolution.facts.values():
        (root / fact.path).write_bytes(render(fact))
    return len(resolution.facts)


CPU: dict[str, list[float]] = {}  # the new processes' user + system seconds, by row


def _fsmem(*args: str, row: str = "") -> None:
    """One shell command, as a person runs it: a new interpreter, output read and dropped. Its CPU
    seconds are kept under ``row``: on a loaded machine they say more than the wall clock."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-m", "fsmem", *args], capture_output=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"fsmem {' '.join(args)} failed: {done.stderr.decode(errors='replace')}")
    CPU.setdefault(row, []).append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)


def _cold_row(name: str, *args: str, baseline: float | None = None) -> None:
    _row(name, measure(lambda: _fsmem(*args, row=name), 5, warm=False), baseline)
    print(f"  {'':<44} CPU {median_p95(CPU[name])[0] * 1000:8.2f} ms (user + system of the new process)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.facts", description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=50_000, help="facts to keep (default 50,000)")
    parser.add_argument("--subjects", type=int, default=5_000, help="subjects they are about (default 5,000)")
    parser.add_argument("--batch", type=int, default=500, help="facts per change while building")
    parser.add_argument("--samples", type=int, default=100, help="timed calls per figure")
    parser.add_argument("--root", type=Path, help="build here instead of a temporary folder")
    parser.add_argument("--quick", action="store_true", help="2,000 facts about 200 subjects, fewer samples")
    args = parser.parse_args(argv)
    if args.quick:
        args.facts, args.subjects, args.samples = min(args.facts, 2_000), min(args.subjects, 200), 20

    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="fsmem-bench-facts-") as scratch:
        root = args.root or Path(scratch) / "root"
        memory = fsmem.open(root, create=True)
        facts = memory.facts
        print(f"facts bench: {args.facts:,} facts about {args.subjects:,} subjects in {root}")

        # baselines: a one-file change through the drive, and a bare listing of the facts folders
        def plain_write(counter=[0]) -> None:
            counter[0] += 1
            with memory.drive.change(command="write") as tx:
                tx.write(f"bench/plain-{counter[0] % 50}.md", f"line {counter[0]}\n".encode())

        write_base = median_p95(measure(plain_write, args.samples, warm=False))[0]

        # build: facts said over a year; each subject gets several attributes, some said twice
        per_subject = max(1, args.facts // args.subjects)
        items = []
        for number in range(args.facts):
            subject = f"Person {number % args.subjects:04d}"
            attribute = ATTRIBUTES[(number // args.subjects) % min(len(ATTRIBUTES), max(1, per_subject // 2))]
            day = rng.randrange(1, 365)
            items.append({"subject": subject, "attribute": attribute,
                          "fact": f"{subject} has {attribute} value {number}.",
                          "said": f"2025-{1 + day // 31 % 12:02d}-{1 + day % 28:02d}"})
        # Through keep_many a change costs the disk's fsyncs per file: the first batch is kept that
        # way (and timed); the rest are written as those changes would leave them, by the same rules.
        start = time.perf_counter()
        facts.keep_many(items[:args.batch])
        build = time.perf_counter() - start
        written = _write_as_kept(root, items[args.batch:], offset=args.batch)
        start = time.perf_counter()
        held = facts.current()
        first_look = time.perf_counter() - start
        print(f"  built in {build:.1f} s + the rest in place: kept {args.batch} in one change "
              f"({args.batch / build:,.0f} facts/s), wrote the other {written:,} as kept; {len(held):,} hold, {len(facts.all()) - len(held):,} "
              f"replaced; the first look of a view (parses every file) {first_look:.1f} s")

        def listing() -> None:
            for folder in ("notes/memory", "notes/memory/history"):
                for entry in os.scandir(root / folder):
                    entry.stat(follow_symlinks=False)

        list_base = median_p95(measure(listing, args.samples, warm=False))[0]
        print(f"  baselines: one-file change {write_base * 1000:.2f} ms, listing the facts folders "
              f"{list_base * 1000:.2f} ms")

        counter = [0]

        def keep_one() -> None:
            counter[0] += 1
            subject = f"Person {rng.randrange(args.subjects):04d}"
            facts.keep(subject, rng.choice(ATTRIBUTES[:3]), f"{subject} moved on, step {counter[0]}.",
                       said="2026-01-01")

        _row("keep (one fact, its own change)", measure(keep_one, args.samples, warm=False), write_base)
        _row("current() - every fact that holds", measure(lambda: facts.current(), args.samples, warm=False), list_base)
        _row("current(subject)", measure(lambda: facts.current(f"person {rng.randrange(args.subjects):04d}"),
                                        args.samples), list_base)

        def after_hand_edit() -> None:
            fact = held[rng.randrange(len(held))]
            path = root / fact.path
            if path.exists():
                path.write_text(path.read_text(encoding="utf-8").replace(" value ", " value  "), encoding="utf-8")
            facts.current()

        _row("current() after a hand edit of one file", measure(after_hand_edit, max(10, args.samples // 5), warm=False),
             list_base)
        cache = root / ".fsmem" / "cache" / "facts.json"

        def fresh_without_cache() -> None:
            cache.unlink(missing_ok=True)
            Facts(memory.drive).current()

        _row("current() in a new process, no cache (parses all)", measure(fresh_without_cache, 3, warm=False), list_base)
        Facts(memory.drive).current()  # leaves the cache behind
        _row("current() in a new process, with the cache", measure(lambda: Facts(memory.drive).current(), 5, warm=False),
             list_base)

        _fsmem("facts", "list", "--root", str(root))  # leaves the cache of what changed behind
        _cold_row("cold `fsmem --help` (start-up alone)", "--help")
        _cold_row("cold `fsmem facts list` (a new process)", "facts", "list", "--root", str(root), baseline=list_base)
        _cold_row("cold `fsmem facts list SUBJECT`", "facts", "list", f"person {rng.randrange(args.subjects):04d}",
                  "--root", str(root), baseline=list_base)

        queries = ["Person 0042 role", "what was the role of Person 0007 in March", "moved on"]
        _row("search (text, limit 10)", measure(lambda: memory.search(rng.choice(queries), limit=10), args.samples,
                                                 warm=False), list_base)
        memory.close()  # its first search started a watcher: stop it before the folder goes
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
