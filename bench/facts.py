"""How facts scale: keep 10,000 facts about 1,000 subjects, then time keep, current() and search.

    python -m bench.facts                 # the full run (10,000 facts)
    python -m bench.facts --quick         # 2,000 facts (bin/bench facts --quick)

Each figure is printed with its median and 95th percentile, and as a ratio against a baseline measured
in the same run on the same disk (a plain one-file change through the drive; a bare listing of the
facts folders), so noisy machines still compare like with like.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

ATTRIBUTES = ["role", "team", "employer", "city", "manager", "project", "deadline", "preferred language",
              "decision", "status"]


def _timed(action: Callable[[], object], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return times


def _stats(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return statistics.median(ordered), p95


def _row(name: str, times: list[float], baseline: float | None = None, unit: str = "ms") -> None:
    p50, p95 = _stats(times)
    ratio = f"  x{p50 / baseline:6.1f} baseline" if baseline else ""
    print(f"  {name:<44} p50 {p50 * 1000:8.2f} {unit}   p95 {p95 * 1000:8.2f} {unit}{ratio}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.facts", description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=10_000, help="facts to keep (default 10,000)")
    parser.add_argument("--subjects", type=int, default=1_000, help="subjects they are about (default 1,000)")
    parser.add_argument("--batch", type=int, default=200, help="facts per change while building")
    parser.add_argument("--samples", type=int, default=100, help="timed calls per figure")
    parser.add_argument("--root", type=Path, help="build here instead of a temporary folder")
    parser.add_argument("--quick", action="store_true", help="2,000 facts about 200 subjects, fewer samples")
    args = parser.parse_args(argv)
    if args.quick:
        args.facts, args.subjects, args.samples = min(args.facts, 2_000), min(args.subjects, 200), 20

    import fsmem
    from fsmem.facts import Facts

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

        write_base = _stats(_timed(plain_write, args.samples))[0]

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
        start = time.perf_counter()
        for offset in range(0, len(items), args.batch):
            facts.keep_many(items[offset:offset + args.batch])
        build = time.perf_counter() - start
        held = facts.current()
        print(f"  built in {build:.1f} s ({len(items) / build:,.0f} facts/s in changes of {args.batch}); "
              f"{len(held):,} hold, {len(facts.all()) - len(held):,} replaced")

        def listing() -> None:
            for folder in ("notes/memory", "notes/memory/history"):
                for entry in os.scandir(root / folder):
                    entry.stat(follow_symlinks=False)

        list_base = _stats(_timed(listing, args.samples))[0]
        print(f"  baselines: one-file change {write_base * 1000:.2f} ms, listing the facts folders "
              f"{list_base * 1000:.2f} ms")

        counter = [0]

        def keep_one() -> None:
            counter[0] += 1
            subject = f"Person {rng.randrange(args.subjects):04d}"
            facts.keep(subject, rng.choice(ATTRIBUTES[:3]), f"{subject} moved on, step {counter[0]}.",
                       said="2026-01-01")

        _row("keep (one fact, its own change)", _timed(keep_one, args.samples), write_base)
        _row("current() - every fact that holds", _timed(lambda: facts.current(), args.samples), list_base)
        _row("current(subject)", _timed(lambda: facts.current(f"person {rng.randrange(args.subjects):04d}"),
                                        args.samples), list_base)

        def after_hand_edit() -> None:
            fact = held[rng.randrange(len(held))]
            path = root / fact.path
            if path.exists():
                path.write_text(path.read_text(encoding="utf-8").replace(" value ", " value  "), encoding="utf-8")
            facts.current()

        _row("current() after a hand edit of one file", _timed(after_hand_edit, max(10, args.samples // 5)),
             list_base)
        cache = root / ".fsmem" / "cache" / "facts.json"

        def fresh_without_cache() -> None:
            cache.unlink(missing_ok=True)
            Facts(memory.drive).current()

        _row("current() in a new process, no cache (parses all)", _timed(fresh_without_cache, 3), list_base)
        Facts(memory.drive).current()  # leaves the cache behind
        _row("current() in a new process, with the cache", _timed(lambda: Facts(memory.drive).current(), 5),
             list_base)

        search = getattr(memory, "search", None)
        if search is None:
            print("  search: not on this branch yet (the index is issue 3); rerun after it lands")
        else:
            queries = ["Person 0042 role", "what was the role of Person 0007 in March", "moved on"]
            _row("search (text, limit 10)", _timed(lambda: search(rng.choice(queries), limit=10), args.samples))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
