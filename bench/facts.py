"""How facts scale: keep 50,000 facts about 5,000 subjects, then time keep, current() and search.

    python -m bench.facts                 # the full run (50,000 facts)
    python -m bench.facts --quick         # 2,000 facts (bin/bench facts --quick)

Each figure is printed with its median and 95th percentile, and as a ratio against a baseline measured
in the same run on the same disk (a plain one-file change through the drive; a bare listing of the
facts folders), so noisy machines still compare like with like. The targets time the user's whole
call: ``facts.keep`` and ``facts.current(subject)`` in a process that has looked once (<= 5 ms), and
``fsmem facts list`` / ``fsmem facts list SUBJECT`` in a new process, interpreter start included
(<= 0.3 s / <= 50 ms), beside ``rg`` finding the same in a new process in the same run. Every fact is
kept through ``keep_many``, as a user keeps them (in batches, without fsync while building: the files
are the same).
"""

from __future__ import annotations

import argparse
import compileall
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import fsmem
from bench.installed import installed_env, installed_fsmem
from bench.timing import measure, median_p95
from fsmem._env.config import Settings
from fsmem._memory.facts.facts import Facts
from fsmem._memory.facts.recheck import ASKED_FILE, settled

REPO = Path(__file__).resolve().parent.parent

ATTRIBUTES = ["role", "team", "employer", "city", "manager", "project", "deadline", "preferred language",
              "decision", "status"]
TARGETS = {"keep (one fact, its own change)": 0.005, "current(subject)": 0.005,
           "cold `fsmem facts list` (a new process)": 0.3, "cold `fsmem facts list SUBJECT`": 0.05,
           "cold `fsmem facts list`, `fsmem watch` serving": 0.3,
           "cold `fsmem facts list SUBJECT`, `fsmem watch` serving": 0.05}


def _row(name: str, times: list[float], baseline: float | None = None, unit: str = "ms") -> None:
    p50, p95 = median_p95(times)
    ratio = f"  x{p50 / baseline:6.1f} baseline" if baseline else ""
    target = TARGETS.get(name)
    verdict = ""
    if target is not None:
        verdict = f"  target <= {target * 1000:g} ms: {'met' if p50 <= target else 'MISSED'}"
    print(f"  {name:<44} p50 {p50 * 1000:8.2f} {unit}   p95 {p95 * 1000:8.2f} {unit}{ratio}{verdict}")


CPU: dict[str, list[float]] = {}  # the new processes' user + system seconds, by row
# The cold rows' `fsmem`: "installed", a wheel of this checkout in a venv of its own (bench.installed), as a
# user's shell has it; "editable", the checkout's .venv/bin/fsmem, whose editable finder every start imports.
SHELL: dict[str, tuple[str, ...]] = {}


def _fsmem(*args: str, row: str = "", command: tuple[str, ...] | None = None,
           env: dict[str, str] | None = None) -> None:
    """One shell command, as a person runs it: a new process, output read and dropped (by default the
    ``fsmem`` a user installs: ``SHELL``). Its CPU seconds are kept under ``row``: on a loaded machine
    they say more than the wall clock."""
    command = command or SHELL["installed"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([*command, *args], capture_output=True, check=False, env=env or installed_env())
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1) or not done.stdout:
        raise SystemExit(f"{' '.join(command + args)} failed: {done.stderr.decode(errors='replace')}")
    CPU.setdefault(row, []).append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)


def _cold_row(name: str, *args: str, baseline: float | None = None, rg: bool = False,
              settle: Path | None = None, shell: str = "installed", env: dict[str, str] | None = None,
              resident: int | None = None) -> float:
    """Five new processes, timed. With ``settle`` (a root), each after the checks the one before it
    started are done, as when a person types one command after another. With ``resident`` (the pid of
    the ``fsmem watch`` that answers them), its CPU seconds per answer too."""
    command = ("rg",) if rg else SHELL[shell]
    times = []
    served = 0.0
    for _ in range(5):
        if settle is not None:
            _settle(settle / ".fsmem")
        before = _cpu_of(resident)
        times += measure(lambda: _fsmem(*args, row=name, command=command, env=env), 1, warm=False)
        served += _cpu_of(resident) - before
    _row(name, times, baseline)
    print(f"  {'':<44} CPU {median_p95(CPU[name])[0] * 1000:8.2f} ms (user + system of the new process)")
    if resident is not None and os.path.exists(f"/proc/{resident}/stat"):
        print(f"  {'':<44} CPU {served / 5 * 1000:8.2f} ms (user + system of the resident, a mean an answer)")
    return median_p95(times)[0]


def _cpu_of(pid: int | None) -> float:
    """The user + system seconds a running process has used so far (Linux's /proc; 0 elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _served_rows(root: Path, subject: str) -> None:
    """The cold rows again, with ``fsmem watch`` (the installed console script) serving the root: the
    shell sends it the command line, it runs the command on its open memory and sends back the bytes.
    Started here, waited until it answers, stopped after. It and the shells search by words
    (``FSMEM_MEANING=off``): a resident with the embedding model would embed 50,000 facts meanwhile."""
    env = {**installed_env(), "FSMEM_MEANING": "off"}
    _settle(root / ".fsmem")  # the checks the rows before started: done before these rows run
    watch = subprocess.Popen([*SHELL["installed"], "watch", "--root", str(root)], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        started = time.perf_counter()
        for argv in (["facts", "list", "--root", str(root)], ["facts", "list", subject, "--root", str(root)]):
            _until_served(watch, argv, env)  # its first answers load the commands and look at every fact once
        print(f"  `fsmem watch` answers ({time.perf_counter() - started:.1f} s after its start)")
        folders = [str(root / "notes" / "memory")]
        rg_all = _cold_row("cold rg, every fact's sentence (again)", "--no-filename", "-N", "-v", "-e",
                           "^[a-z_]*:|^---|^$", *folders, rg=True)
        _cold_row("cold `fsmem facts list`, `fsmem watch` serving", "facts", "list", "--root", str(root),
                  baseline=rg_all, env=env, resident=watch.pid)
        rg_one = _cold_row("cold rg, the files about SUBJECT (again)", "-l", "-i", f"^subject: {subject}$", *folders,
                           rg=True)
        _cold_row("cold `fsmem facts list SUBJECT`, `fsmem watch` serving", "facts", "list", subject.lower(),
                  "--root", str(root), baseline=rg_one, env=env, resident=watch.pid)
        _until_served(watch, ["facts", "list", subject, "--root", str(root)], env)  # it still answered them
    finally:
        watch.terminate()
        watch.wait(timeout=60)


def _until_served(watch: subprocess.Popen[bytes], argv: list[str], env: dict[str, str]) -> None:
    """Wait until the resident runs ``fsmem ARGV`` for a shell: asked by the shell's own client
    (``fsmem._index.resident.served``) in a process of the installed fsmem with the shells' variables."""
    python = Path(SHELL["installed"][0]).with_name("python")
    ask = f"import sys; from fsmem._index.resident import served; sys.exit(served({argv!r}, 'fsmem') is None)"
    deadline = time.monotonic() + 600
    while subprocess.run([str(python), "-c", ask], capture_output=True, env=env, check=False).returncode != 0:
        if watch.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"fsmem watch did not answer `fsmem {' '.join(argv)}`")
        time.sleep(0.2)


def recheck_process(root: Path) -> None:
    """The check a cold answer starts, run in the foreground: every file's stamp against the view."""
    subprocess.run([sys.executable, "-m", "fsmem._memory.facts.recheck", str(root)], check=False,
                   env=_child_env())


def _touch(path: Path) -> None:
    path.touch()


def _settle(state: Path) -> None:
    """Wait for the checks the cold rows started, so they do not run beside the next rows."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not settled(state.parent):
        time.sleep(0.05)


def _sentence(file: Path) -> str:
    text = file.read_text(encoding="utf-8")
    return " ".join(text.rsplit("---\n", 1)[-1].split())  # spaces as a fact's sentence has them


def _child_env() -> dict[str, str]:
    """The new processes' environment: a user's defaults (no FSMEM_* of this shell), this checkout first."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.facts", description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=50_000, help="facts to keep (default 50,000)")
    parser.add_argument("--subjects", type=int, default=5_000, help="subjects they are about (default 5,000)")
    parser.add_argument("--batch", type=int, default=500, help="facts per change while building")
    parser.add_argument("--samples", type=int, default=100, help="timed calls per figure")
    parser.add_argument("--root", type=Path, help="build here instead of a temporary folder")
    parser.add_argument("--quick", action="store_true", help="2,000 facts about 200 subjects, fewer samples")
    args = parser.parse_args(argv)
    if shutil.which("rg") is None:  # the baselines of the cold rows
        raise SystemExit("bench facts: needs rg (ripgrep) for its baselines")
    if args.quick:
        args.facts, args.subjects, args.samples = min(args.facts, 2_000), min(args.subjects, 200), 20
    # A cold start is a new process, not new code: an installed fsmem has its bytecode compiled, so this
    # checkout's is too (PYTHONDONTWRITEBYTECODE would add ~50 ms of compiling to every cold row).
    compileall.compile_dir(str(REPO / "fsmem"), quiet=1)

    rng = random.Random(7)
    run = time.strftime("%Y%m%dT%H%M%S")  # a reused root has this run's keeps as new facts, not known ones
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
        # The first batch is kept as a user keeps it, fsync and all (and timed); the rest through
        # keep_many too, in batches, without the fsyncs: the files are the same, the build minutes shorter.
        # A --root that already holds facts (an earlier run's) is used as it is: the build takes minutes.
        reused = args.root is not None and (root / "notes" / "memory").is_dir()
        start = time.perf_counter()
        if not reused:
            facts.keep_many(items[:args.batch])
        build = time.perf_counter() - start
        builder = fsmem.open(root, settings=Settings(durable=False))
        for first in range(args.batch, len(items), args.batch):
            if not reused:
                builder.facts.keep_many(items[first:first + args.batch])
        builder.close()
        start = time.perf_counter()
        held = facts.current()
        first_look = time.perf_counter() - start
        if reused:
            print(f"  reused the facts of an earlier run in {root} (delete it to build anew): {len(held):,} hold; "
                  f"this view's first look {first_look:.1f} s")
        else:
            print(f"  built: kept {args.batch} in one change ({args.batch / max(build, 1e-9):,.0f} facts/s), then the "
                  f"other {len(items) - args.batch:,} through keep_many; {len(held):,} hold, "
                  f"{len(facts.all()) - len(held):,} replaced; this view's first look after another's changes "
                  f"{first_look:.1f} s")

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
            facts.keep(subject, rng.choice(ATTRIBUTES[:3]), f"{subject} moved on, step {counter[0]} of run {run}.",
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
        view = root / ".fsmem" / "cache" / "facts.sqlite"

        def fresh_without_view() -> None:
            view.unlink(missing_ok=True)
            Facts(memory.drive).all()

        _row("a new view, no kept view (parses all)", measure(fresh_without_view, 3, warm=False), list_base)
        Facts(memory.drive).all()  # leaves the kept view behind
        _row("a new view's first look, from the kept view", measure(lambda: Facts(memory.drive).all(), 5, warm=False),
             list_base)

        # The steady state a person's shell meets: the files above written more than the racy window
        # (2 s) ago, and the view brought up to the hand edits above by the check after a cold answer.
        started = time.perf_counter()
        SHELL["installed"] = (str(installed_fsmem(Path(scratch) / "installed")),)
        print(f"  installed a wheel of this checkout in a venv of its own for the cold rows "
              f"({time.perf_counter() - started:.0f} s)")
        editable = Path(sys.executable).with_name("fsmem")  # the checkout's console script, if this is its venv
        if editable.is_file():
            SHELL["editable"] = (str(editable),)
        time.sleep(max(0.0, 2.1 - (time.perf_counter() - started)))  # the install counts: nothing written since
        _fsmem("facts", "list", "--root", str(root))
        _settle(root / ".fsmem")
        _cold_row("cold `fsmem --help` (start-up alone)", "--help")
        folders = [str(root / "notes" / "memory")]
        rg_all = _cold_row("cold rg, every fact's sentence", "--no-filename", "-N", "-v", "-e", "^[a-z_]*:|^---|^$",
                           *folders, rg=True)
        _cold_row("cold `fsmem facts list` (a new process)", "facts", "list", "--root", str(root), baseline=rg_all,
                  settle=root)
        subject = f"Person {rng.randrange(args.subjects):04d}"
        rg_one = _cold_row("cold rg, the files about SUBJECT", "-l", "-i", f"^subject: {subject}$", *folders, rg=True)
        _cold_row("cold `fsmem facts list SUBJECT`", "facts", "list", subject.lower(), "--root", str(root),
                  baseline=rg_one, settle=root)
        if "editable" in SHELL:
            _cold_row("  the same, the checkout's editable install", "facts", "list", subject.lower(), "--root",
                      str(root), baseline=rg_one, settle=root, shell="editable")
        _served_rows(root, subject)
        print("  (the cold rows' ratios are against the rg row above them, run in the same way)")
        state = root / ".fsmem"
        _settle(state)
        _row("the check after a cold answer (a new process)",
             measure(lambda: (_touch(state / ASKED_FILE), recheck_process(root)), 3, warm=False), rg_all)

        # A process whose watcher runs (`fsmem watch`, a harness that called memory.watch(), a resident
        # running the shell's command itself): its listings follow the watcher's word, no stat of every file.
        watching = fsmem.open(root)
        watching.watch()
        watching.facts.current()
        watching.facts.current()  # listening from this full look on
        _row("watching process: facts.listing() (every subject)", measure(lambda: watching.facts.listing(),
                                                                           args.samples // 5 or 1), rg_all)
        _row("watching process: facts.listing(SUBJECT)",
             measure(lambda: watching.facts.listing(f"person {rng.randrange(args.subjects):04d}"), args.samples),
             rg_one)
        edited = held[rng.randrange(len(held))]
        edited_file = root / edited.path

        def hand_edit_then_listing() -> None:
            if edited_file.exists():
                text = edited_file.read_text(encoding="utf-8")
                with open(edited_file, "r+", encoding="utf-8") as handle:  # in place, as an editor saving
                    handle.write(text.replace(" value ", " worth ") if " value " in text
                                 else text.replace(" worth ", " value "))
                    handle.truncate()
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:  # the watcher's word arrives within milliseconds
                if any(" ".join(f.text.split()) == _sentence(edited_file)
                       for f in watching.facts.listing(edited.subject).facts):
                    return
                time.sleep(0.001)

        _row("watching process: a save in place, then listing(SUBJECT)", measure(hand_edit_then_listing, 10,
                                                                                  warm=False), rg_one)
        watching.close()

        queries = ["Person 0042 role", "what was the role of Person 0007 in March", "moved on"]
        _row("search (text, limit 10)", measure(lambda: memory.search(rng.choice(queries), limit=10), args.samples,
                                                 warm=False), list_base)
        memory.close()  # its first search started a watcher: stop it before the folder goes
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
