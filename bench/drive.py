"""The drive's speed: tool read and write on a root of 1,000 files, beside a bare durable write.

    bin/bench drive [--quick] [--rounds N] [--files N] [--dir DIR] [--profile]

A tool write does everything a change does (schema check, path rules, the root's lock, the version
check, the secret check, the previous content kept in versions/, an atomic write with fsync of the
file and its folder, a log line). The baseline is the least a durable write can do: a temp file,
write, fsync, ``os.replace``, fsync of the folder. Both run in the same process, interleaved, on
the same file system, so their ratio holds on any machine. Target: a tool write within 3x.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import fsmem
from fsmem import Scope

TARGET_RATIO = 3.0
FOLDERS = ("seo", "brand", "people", "projects", "decisions", "research", "ops", "sales", "support", "notes-2026")
WORDS = ("title", "keyword", "launch", "tone", "review", "client", "budget", "deadline", "draft", "page",
         "meta", "owner", "weekly", "report", "style", "guide", "ticket", "release", "blog", "price")


def main(argv: list[str]) -> None:
    options = _options(argv)
    rounds = options.rounds or (40 if options.quick else 300)
    with tempfile.TemporaryDirectory(prefix="fsmem-bench-", dir=options.dir) as scratch:
        results, where = _measure(Path(scratch), options.files, rounds, options.profile)
        big = _measure_32k(Path(scratch), max(3, rounds // 5))
        live = _measure_live_copy(Path(scratch), rounds)
    _report(results, options.files, rounds, where)
    _report_32k(big)
    _report_live_copy(live)


def _options(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bin/bench drive", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 rounds instead of 300")
    parser.add_argument("--rounds", type=int, default=0, help="timed calls per measurement")
    parser.add_argument("--files", type=int, default=1000, help="files in the root (default 1000)")
    parser.add_argument("--dir", default=None, help="where to make the scratch root (default: the temp dir)")
    parser.add_argument("--profile", action="store_true", help="print where a tool write spends its time")
    return parser.parse_args(argv)


# ---- the root -------------------------------------------------------------------------------


def _page(rng: random.Random, number: int) -> str:
    lines = [f"# Notes {number}: {rng.choice(WORDS)} {rng.choice(WORDS)}", ""]
    for section in range(rng.randint(2, 4)):
        lines += [f"## {rng.choice(WORDS).title()} {section}", ""]
        lines += [f"- {' '.join(rng.choice(WORDS) for _ in range(rng.randint(4, 12)))} ({number}.{section}.{i})"
                  for i in range(rng.randint(3, 10))]
        lines.append("")
    return "\n".join(lines)


def _populate(root: Path, files: int, rng: random.Random) -> list[str]:
    """``files`` markdown pages of 0.5-3 KB in ten folders, written plainly (setup, not measured)."""
    paths = []
    for number in range(files):
        path = f"{FOLDERS[number % len(FOLDERS)]}/page-{number:04d}.md"
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_page(rng, number), encoding="utf-8")
        paths.append(path)
    return paths


# ---- the measurements -----------------------------------------------------------------------


def bare_durable_write(target: Path, data: bytes) -> None:
    """The baseline: temp file in the same folder, write, fsync, os.replace, fsync the folder."""
    temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, target)
    folder = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def bare_plain_write(target: Path, data: bytes) -> None:
    """For reference: what a write costs with no durability at all."""
    with open(target, "wb") as handle:
        handle.write(data)


def _ok(result: dict) -> dict:
    if not result.get("ok"):
        raise RuntimeError(f"benchmark call refused: {result.get('text')}")
    return result


def _measure(scratch: Path, files: int, rounds: int, profile: bool) -> tuple[dict[str, list[float]], str]:
    rng = random.Random(20260801)
    root = scratch / "root"
    memory = fsmem.open(root, create=True)
    paths = _populate(root, files, rng)
    baseline = scratch / "baseline"
    _populate(baseline, files, random.Random(20260801))
    run = memory.run(Scope.chat(), thread_id="bench")
    times: dict[str, list[float]] = {name: [] for name in (
        "bare plain write", "bare durable write", "tool read", "tool read (lines 5-15)",
        "tool write (whole file)", "tool write (partial edit)", "tool write (same file, versions full)")}

    for _ in range(5):  # warm up: imports, the schema validator, caches
        _ok(run.call({"command": "read", "path": rng.choice(paths)}))
    hot = paths[0]
    _ok(run.call({"command": "read", "path": hot}))
    for number in range(memory.settings.versions_kept + 1):  # from now on each write drops the oldest
        _ok(run.call({"command": "write", "path": hot, "content": f"# Hot file\n\n- warm-up {number}\n"}))

    # Every row is measured in every round, in a random order, so drift and neighbours' load hit
    # all rows alike; the ratio is also taken round by round (paired).
    for number in range(rounds):
        path, other = rng.sample(paths[1:], 2)  # never the hot file
        text = (root / path).read_text(encoding="utf-8")
        new_text = text + f"- bench note {number}: {rng.choice(WORDS)} {rng.choice(WORDS)}\n"
        data = new_text.encode("utf-8")
        other_text = (root / other).read_text(encoding="utf-8")
        last = other_text.rstrip("\n").rsplit("\n", 1)[-1]
        edit = f"<!-- ... -->\n{last}\n- partial note {number}\n"
        _ok(run.call({"command": "read", "path": path}))   # the run must have seen what it changes
        _ok(run.call({"command": "read", "path": other}))
        order = [
            ("tool read", lambda: run.call({"command": "read", "path": path})),
            ("tool read (lines 5-15)",
             lambda: run.call({"command": "read", "path": other, "start_line": 5, "end_line": 15})),
            ("tool write (whole file)", lambda: run.call({"command": "write", "path": path, "content": new_text})),
            ("tool write (partial edit)", lambda: run.call({"command": "write", "path": other, "content": edit})),
            ("tool write (same file, versions full)",
             lambda: run.call({"command": "write", "path": hot, "content": f"# Hot file\n\n- change {number}\n"})),
            ("bare durable write", lambda: bare_durable_write(baseline / path, data)),
            ("bare plain write", lambda: bare_plain_write(baseline / other, data)),
        ]
        rng.shuffle(order)
        for name, action in order:
            start = time.perf_counter()
            result = action()
            times[name].append(time.perf_counter() - start)
            if isinstance(result, dict):
                _ok(result)

    if profile:
        _profile(run, root, paths, rng, rounds)
    return times, _filesystem(root)


def _file_32k(rng: random.Random, number: int) -> str:
    """A markdown file of at most 32 KiB (the largest write allowed) whose lines no earlier file had."""
    pages, size = [], 0
    while True:
        page = _page(rng, number * 1000 + len(pages)) + "\n"
        if size + len(page.encode("utf-8")) > 32 * 1024:
            return "".join(pages)
        pages.append(page)
        size += len(page.encode("utf-8"))


def _measure_32k(scratch: Path, rounds: int) -> dict[str, list[float]]:
    """The secret guard's share of a 32 KiB write: the guard alone, a tool write, a bare durable write.

    "new text": a new file, every line checked once (detect-secrets' plugins run on each); "one line
    changed": the file as before with its last line replaced, the usual rewrite (a write checks each
    change with five unchanged lines either side, ``fsmem._core.changes``).
    """
    from fsmem._core.changes import find_brought_secret
    from fsmem._core.secrets import find_secret

    rng = random.Random(32)
    root = scratch / "root-32k"
    run = fsmem.open(root, create=True).run(Scope.chat(), thread_id="bench-32k")
    baseline = scratch / "baseline-32k"
    baseline.mkdir()
    times: dict[str, list[float]] = {name: [] for name in (
        "bare durable write (32 KiB)", "secret guard (32 KiB, new text)", "secret guard (32 KiB, one line changed)",
        "tool write (32 KiB, new text)", "tool write (32 KiB, one line changed)")}
    find_secret(_file_32k(rng, 0))  # loads detect-secrets (~150 ms once a process), not measured
    for number in range(rounds):
        guard_new, tool_new, edited = (_file_32k(rng, 1 + 4 * number + k) for k in range(3))
        run.call({"command": "write", "path": f"big-{number}.md", "content": edited})
        grown = edited.rsplit("\n", 2)[0] + f"\n- one line changed {number}\n"
        data = tool_new.encode("utf-8")
        order = [
            ("bare durable write (32 KiB)", lambda: bare_durable_write(baseline / f"big-{number}.md", data)),
            ("secret guard (32 KiB, new text)", lambda: find_secret(guard_new)),
            ("secret guard (32 KiB, one line changed)", lambda: find_brought_secret(edited, grown)),
            ("tool write (32 KiB, new text)",
             lambda: _ok(run.call({"command": "write", "path": f"new-{number}.md", "content": tool_new}))),
            ("tool write (32 KiB, one line changed)",
             lambda: _ok(run.call({"command": "write", "path": f"big-{number}.md", "content": grown}))),
        ]
        rng.shuffle(order)
        for name, action in order:
            start = time.perf_counter()
            action()
            times[name].append(time.perf_counter() - start)
    return times


def _measure_live_copy(scratch: Path, rounds: int) -> dict[str, list[float]]:
    """What keeping a write's live copy costs: the same tool writes with it and, for the baseline
    only, without it (``Change._keep_live`` made a no-op in this process), interleaved round by round.

    An edit renames the previous live copy to the kept version it would have copied anyway and copies
    the new content: about what it cost before. A new file had nothing to keep: there it is one copy more.
    Measured without fsync (``durable=False``), so the copy's own cost shows above a busy disk's noise;
    the durable rows above are what a user waits for.
    """
    from fsmem._env.config import Settings
    from fsmem._store.folder.change import Change

    root = scratch / "root-live"
    run = fsmem.open(root, create=True, settings=Settings(durable=False)).run(Scope.chat(), thread_id="bench-live")
    page = _page(random.Random(7), 1)
    real = Change._keep_live
    times: dict[str, list[float]] = {
        name: [] for name in ("edit, with", "edit, without", "new file, with", "new file, without")
    }
    for side in ("with", "without"):
        _ok(run.call({"command": "write", "path": f"{side}.md", "content": page}))
    for number in range(rounds):
        for side in random.sample(("with", "without"), 2):
            if side == "without":
                Change._keep_live = lambda self, path, data, version: self.drive.state / "none"  # type: ignore[method-assign]
            try:
                for name, path, content in (
                    ("edit", f"{side}.md", page + f"- line {number}\n"),
                    ("new file", f"{side}-{number}.md", page),
                ):
                    start = time.perf_counter()
                    _ok(run.call({"command": "write", "path": path, "content": content}))
                    times[f"{name}, {side}"].append(time.perf_counter() - start)
            finally:
                Change._keep_live = real  # type: ignore[method-assign]
    return times


def _profile(run, root: Path, paths: list[str], rng: random.Random, rounds: int) -> None:
    calls = []
    for number in range(rounds):
        path = rng.choice(paths)
        _ok(run.call({"command": "read", "path": path}))
        calls.append((path, (root / path).read_text(encoding="utf-8") + f"- profiled {number}\n"))
    profiler = cProfile.Profile()
    profiler.enable()
    for path, content in calls:
        _ok(run.call({"command": "write", "path": path, "content": content}))
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(28)
    print(f"-- cProfile of {rounds} tool writes (cumulative time) --")
    print("\n".join(out.getvalue().splitlines()[:48]))


def _filesystem(path: Path) -> str:
    best, kind = "", "?"
    try:
        with open("/proc/mounts", encoding="utf-8") as mounts:
            for line in mounts:
                fields = line.split()
                if len(fields) > 2 and str(path).startswith(fields[1]) and len(fields[1]) > len(best):
                    best, kind = fields[1], fields[2]
    except OSError:
        pass
    return f"{path.parent} ({kind})"


# ---- the report -----------------------------------------------------------------------------


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _report(times: dict[str, list[float]], files: int, rounds: int, where: str) -> None:
    base_median = statistics.median(times["bare durable write"])
    base_p95 = _p95(times["bare durable write"])
    print(f"root of {files:,} files, {rounds} timed calls a row, scratch on {where}")
    print(f"{'':40} {'median':>9} {'p95':>9}   x bare durable write (median, p95)")
    for name, values in times.items():
        median, p95 = statistics.median(values), _p95(values)
        ratio = f"{median / base_median:6.2f}x {p95 / base_p95:6.2f}x"
        print(f"{name:40} {median * 1000:7.3f}ms {p95 * 1000:7.3f}ms   {ratio}")
    ratio = statistics.median(times["tool write (whole file)"]) / base_median
    paired = statistics.median(t / b for t, b in zip(times["tool write (whole file)"], times["bare durable write"]))
    own = statistics.median(t - b for t, b in zip(times["tool write (whole file)"], times["bare durable write"]))
    print(f"fsmem's own cost a write (median of per-round tool - bare durable): {own * 1000:.3f}ms")
    verdict = "met" if ratio <= TARGET_RATIO else "MISSED"
    print(f"target: a tool write within {TARGET_RATIO:g}x the bare durable write: {verdict} "
          f"({ratio:.2f}x of medians; {paired:.2f}x median of the per-round ratios)")
    sys.stdout.flush()


def _report_live_copy(times: dict[str, list[float]]) -> None:
    rounds = len(times["edit, with"])
    print(f"-- a write's live copy (what it wrote, kept in versions/; {rounds} rounds, no fsync) --")
    for kind in ("edit", "new file"):
        with_copy, without = (statistics.median(times[f"{kind}, {side}"]) for side in ("with", "without"))
        print(f"tool write, {kind:9} with the live copy {with_copy * 1000:7.3f}ms, without {without * 1000:7.3f}ms"
              f"   {with_copy / without:5.2f}x  (+{(with_copy - without) * 1000:.3f}ms)")
    sys.stdout.flush()


def _report_32k(times: dict[str, list[float]]) -> None:
    base = statistics.median(times["bare durable write (32 KiB)"])
    print(f"-- 32 KiB writes ({len(times['bare durable write (32 KiB)'])} rounds) --")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:40} {median * 1000:7.3f}ms {_p95(values) * 1000:7.3f}ms   {median / base:6.2f}x")
    sys.stdout.flush()
