"""Shared by the hard tests and the worker programs they start as real processes.

Nothing here imports fsmem: the workers import it themselves, so a broken package shows up as a
worker failure with its own traceback, not as an import error in every test module.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

Snapshot = dict[str, tuple[str, object]]

_FILLER = "the quick brown fox jumps over the lazy dog and keeps the notes short".split()


def snapshot(*folders: Path) -> Snapshot:
    """Every entry under ``folders`` (symlinks not followed): kind and bytes, link target or nothing.

    Two equal snapshots mean nothing was created, removed, changed, or replaced by a link.
    """
    from fsmem._index.committer import at_rest

    at_rest(30)  # the index's background commits of earlier changes are done first
    seen: Snapshot = {}
    for index, folder in enumerate(folders):
        folder = Path(folder)
        for here, dirs, files in os.walk(folder, followlinks=False):
            for name in dirs + files:
                full = Path(here, name)
                key = f"{index}:{full.relative_to(folder).as_posix()}"
                if full.is_symlink():
                    seen[key] = ("link", os.readlink(full))
                elif full.is_dir():
                    seen[key] = ("dir", None)
                else:
                    seen[key] = ("file", full.read_bytes())
    return seen


def diff(before: Snapshot, after: Snapshot) -> list[str]:
    """What changed between two snapshots, one readable line per entry (for assertion messages)."""
    lines = []
    for key in sorted(before.keys() | after.keys()):
        if key not in after:
            lines.append(f"removed {key}")
        elif key not in before:
            lines.append(f"created {key}")
        elif before[key] != after[key]:
            lines.append(f"changed {key}")
    return lines


# --- crash test contents: each (file, generation) has exactly one content, so a mix is detectable ---

CRASH_SIZE = 30_000  # large (most of the 32 KiB limit), so a write takes several write() calls


def crash_content(file_no: int, gen: int, size: int = CRASH_SIZE) -> str:
    """The one content file ``file_no`` holds after generation ``gen`` was written."""
    lines = [f"# crash file {file_no} generation {gen}"]
    k = 0
    total = len(lines[0]) + 1
    while total < size:
        words = " ".join(_FILLER[(k + j) % len(_FILLER)] for j in range(6))
        line = f"- {file_no} {gen} {k} {words}"
        lines.append(line)
        total += len(line) + 1
        k += 1
    return "\n".join(lines) + "\n"


def parse_crash_header(text: str) -> tuple[int, int] | None:
    first = text.split("\n", 1)[0]
    parts = first.split()
    if len(parts) == 6 and parts[:3] == ["#", "crash", "file"] and parts[4] == "generation":
        try:
            return int(parts[3]), int(parts[5])
        except ValueError:
            return None
    return None


# --- small process plumbing ---


def wait_for_file(path: Path, timeout: float = 60.0) -> None:
    """Block until ``path`` exists (a start signal from the test); poll, so no extra dependency."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up waiting for {path}")
        time.sleep(0.001)


def emit(**fields: object) -> None:
    """One JSON line on stdout, flushed at once (the test reads it while the worker runs)."""
    print(json.dumps(fields), flush=True)


REPO = Path(__file__).resolve().parents[2]


def spawn(script: str, *args: object):
    """Start ``tests/procs/<script>`` as a real process with this worktree importable; stdout piped."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.Popen(
        [sys.executable, str(REPO / "tests" / "procs" / script), *map(str, args)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO,
    )


def read_json_line(proc) -> dict:
    """The next JSON line a worker printed; a worker that died says why."""
    line = proc.stdout.readline()
    if not line:
        proc.wait(timeout=30)
        raise AssertionError(f"worker exited {proc.returncode} early:\n{proc.stderr.read()}")
    return json.loads(line)
