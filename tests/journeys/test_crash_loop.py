"""The crash loop: SIGKILLs across every kind of change (issue 10, item 9 and "what must be shown").

In the suite, 18 rounds (36 kills, each kind of change killed six times or more); ``bin/soak --crash``
runs the full 52 rounds (104 kills), or ``FSMEM_CRASH_ROUNDS=N``.

Each round starts two real worker processes (``tests/procs/chaos_worker.py``), each looping over one
kind of change — write, rename, delete, facts keep, index rebuild, approve — and kills both with SIGKILL
at a random moment. After every round: every file is whole (exactly one content a worker wrote), every
kept version hashes to its name; and after the next open: no temp file of a dead writer is left
anywhere in the root (``.fsmem/`` included), and the facts need no repair (``fsmem check`` is clean).
"""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

import pytest

import fsmem
from fsmem._store.atomic import temp_owner
from tests.conftest import run_fsmem
from tests.procs.common import crash_content, parse_crash_header, read_json_line, spawn
from tests.journeys.test_crash import assert_versions_whole

OPS = ("write", "rename", "delete", "facts", "rebuild", "approve")
FULL_ROUNDS = 52  # two kills a round: 104 (bin/soak --crash)
SUITE_ROUNDS = 18  # 36 kills: every op pair of the rotation below comes round, each op six times or more
# Read at import: the autouse fixture clears FSMEM_* from each test's environment.
ROUNDS = int(os.environ.get("FSMEM_CRASH_ROUNDS") or SUITE_ROUNDS)


def _assert_every_file_whole(root: Path) -> int:
    count = 0
    for folder, _, names in os.walk(root / "crash"):
        for name in names:
            if name.startswith("."):
                continue
            text = Path(folder, name).read_bytes().decode("utf-8")
            header = parse_crash_header(text)
            assert header is not None, (name, text[:80])
            assert text == crash_content(*header, size=len(text) and _size(name)), f"{name} is torn"
            count += 1
    return count


def _size(name: str) -> int:
    return 8_000 if name == "p.md" else 12_000


def _debris(root: Path) -> list[str]:
    return [os.path.join(folder, name) for folder, _, names in os.walk(root) for name in names
            if temp_owner(name) is not None]


@pytest.mark.slow
def test_sigkills_at_random_moments_leave_every_file_whole_no_debris_and_check_clean(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = fsmem.open(root, create=True)
    memory.facts.keep("Acme", "plan", "Acme is on plan zero")
    rng = random.Random(20261201)
    kills = 0
    seen_debris = 0
    for round_no in range(ROUNDS):
        ops = (OPS[round_no % len(OPS)], OPS[(round_no * 5 + 1) % len(OPS)])
        workers = [spawn("chaos_worker.py", root, op) for op in ops]
        try:
            for worker in workers:
                assert read_json_line(worker) == {"started": True}
            time.sleep(rng.uniform(0.02, 0.35))  # a random moment inside the loops
        finally:
            for worker in workers:
                worker.send_signal(signal.SIGKILL)
            for worker in workers:
                worker.wait(timeout=30)
        for worker, op in zip(workers, ops):
            assert worker.returncode == -signal.SIGKILL, (op, worker.stderr.read() if worker.stderr else "")
            kills += 1

        _assert_every_file_whole(root)
        assert_versions_whole(root)
        seen_debris += len(_debris(root))
        reopened = fsmem.open(root)  # the next open: cleans up and repairs
        assert _debris(root) == [], f"round {round_no} ({ops}): temp files of dead writers left"
        assert reopened.facts.check() == [], f"round {round_no} ({ops})"

    assert kills == 2 * ROUNDS
    checked = run_fsmem("check", "--root", str(root))
    assert checked.returncode == 0 and checked.stdout.startswith("No problems"), checked
    # The memory still works: a write, a search, the facts.
    run = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="after")
    assert run.call({"command": "write", "path": "after.md", "content": "# After\n\nstill-works\n"})["ok"]
    assert [hit.path for hit in fsmem.open(root).search("still-works")] == ["after.md"]
    print(f"{kills} kills; {seen_debris} temp files found before reopening, none after")
