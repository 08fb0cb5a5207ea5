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
import sys
import tempfile
import time
from pathlib import Path
from bench.timing import measure, median_p95

ATTRIBUTES = ["role", "team", "employer", "city", "manager", "project", "deadline", "preferred language",
              "decision", "status"]






def _row(name: str, times: list[float], baseline: float | None = None, unit: str = "ms") -> None:
    p50, p95 = median_p95(times)
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

        queries = ["Person 0042 role", "what was the role of Person 0007 in March", "moved on"]
        _row("search (text, limit 10)", measure(lambda: memory.search(rng.choice(queries), limit=10), args.samples,
                                                 warm=False), list_base)
        memory.close()  # its first search started a watcher: stop it before the folder goes
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
