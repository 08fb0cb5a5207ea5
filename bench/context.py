"""Benchmark: ``run.context`` on a 200-turn thread of a routine's run (three top files).

    bin/bench context [--quick] [--turns 200] [--repeat 300]      (or: python -m bench.context)

Prints median and p95 per case, and ratios against two baselines measured in the same run: reading the
three top files from disk (the I/O floor of any injection) and ``json.dumps`` of the thread (what a
harness pays every turn just to send it). No timing is asserted anywhere; read the ratios.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Sequence
from bench.timing import measure, median_p95

AGENT = "5c81d0e4-7f2a-4b6e-9d13-2a8c4e6f0b71"
ROUTINE = "e04c6d15-8b3f-4a27-9c61-f5d2a8e4b093"






def _lines(title: str, count: int) -> str:
    body = "\n".join(f"- {title} note {i}: keep titles under 60 characters, dated 2026-11-{i % 28 + 1:02d}"
                     for i in range(count))
    return f"# {title}\n\n{body}\n"


def build(root: Path, turns: int):
    """A memory root with three top files and a routine thread of ``turns`` turns, built through context."""
    import fsmem
    from fsmem import Scope

    memory = fsmem.open(root, create=True)
    memory.create_agent(AGENT, "SEO")
    memory.create_routine(AGENT, ROUTINE, "Rank check")
    scope = Scope.routine(AGENT, ROUTINE, agent_name="SEO", routine_name="Rank check")
    run = memory.run(scope, thread_id="bench")
    files = memory.scope_files(scope)
    for path, count in zip(files, (60, 40, 30)):
        run.call({"command": "write", "path": path, "content": _lines(path, count)})
    thread: list[dict] = []
    for turn in range(turns):
        thread.append({"role": "user", "content": f"Run {turn}: positions 12, 9, 2. Compare and report."})
        thread += run.context(thread)
        thread.append({"role": "assistant", "content": None, "tool_calls": [{
            "id": f"c{turn}", "type": "function",
            "function": {"name": "memory", "arguments": json.dumps({"command": "read", "path": files[2]})}}]})
        thread.append({"role": "tool", "tool_call_id": f"c{turn}", "content": "x" * 800})
        thread.append({"role": "assistant", "content": f"Quiet run {turn}: nothing dropped by 3 or more."})
        if turn % 50 == 49:  # now and then a file changes, so the thread holds several copies
            run.call({"command": "write", "path": files[2], "content": _lines(files[2], 30 + turn // 50)})
    thread += run.context(thread)
    return memory, scope, run, files, thread


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.context", description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=None, help="timed calls a row (default 300)")
    parser.add_argument("--quick", action="store_true", help="30 timed calls a row unless --repeat")
    args = parser.parse_args(argv)
    args.repeat = args.repeat or (30 if args.quick else 300)

    from fsmem._memory.context import documents
    from fsmem._core.context import plan_context

    with tempfile.TemporaryDirectory(prefix="fsmem-bench-") as folder:
        memory, scope, run, files, thread = build(Path(folder) / "root", args.turns)
        assert run.context(thread) == [], "the built thread should be current"
        docs = documents(run)
        stale = thread  # the next write makes its latest copy of the notes stale
        run.call({"command": "write", "path": files[2], "content": _lines(files[2], 31)})
        current = stale + run.context(stale)
        assert len(current) == len(stale) + 1

        cases = {
            "read 3 top files (baseline)": lambda: [memory.drive.read(p) for p in files],
            "json.dumps(thread) (baseline)": lambda: json.dumps(thread),
            "plan_context only (pure)": lambda: plan_context(stale, docs),
            "run.context, one file changed": lambda: run.context(stale),
            "run.context, nothing changed": lambda: run.context(current),
        }
        results = {name: median_p95(measure(fn, args.repeat)) for name, fn in cases.items()}
    read_median = results["read 3 top files (baseline)"][0]
    dumps_median = results["json.dumps(thread) (baseline)"][0]
    messages = len(current)
    print(f"bench.context: a {args.turns}-turn routine thread ({messages} messages, 3 top files), "
          f"{args.repeat} repeats")
    for name, (median, p95) in results.items():
        print(f"  {name:32} median {median * 1e3:7.3f} ms   p95 {p95 * 1e3:7.3f} ms   "
              f"×{median / read_median:5.1f} read   ×{median / dumps_median:5.2f} dumps")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
