"""Real processes: a keep killed part-way, and several processes keeping facts about one thing at once."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime, timezone

import pytest

import fsmem
from tests.conftest import REPO

KILLER = r"""
import os, signal, sys
import fsmem
from fsmem._store.folder import change

root, allowed = sys.argv[1], int(sys.argv[2])
done = 0

def counted(operation):
    def wrapper(self, *args, **kwargs):
        global done
        if done >= allowed:
            os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no finally: like a power cut
        done += 1
        return operation(self, *args, **kwargs)
    return wrapper

change.Change.write = counted(change.Change.write)
change.Change.delete = counted(change.Change.delete)
said = sys.argv[3]
fsmem.open(root).facts.keep("Ana", "role", sys.argv[4], said=said)
"""


def _python(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=60)


def _fact_files(root) -> list[str]:
    base = root / "notes" / "memory"
    return sorted(p.relative_to(root).as_posix() for p in base.rglob("*.md"))


@pytest.mark.slow
@pytest.mark.parametrize("case", ["later", "earlier"])
def test_a_keep_killed_at_any_step_leaves_the_old_state_or_the_new(tmp_path, case) -> None:
    if case == "later":  # the new fact replaces the one that holds: 3 file operations
        setup = [("Ana leads the data team.", "2026-09-01")]
        new_text, new_said = "Ana works in research.", "2026-10-12"
    else:  # the new fact goes between two: 3 file operations
        setup = [("Ana is an intern.", "2026-08-01"), ("Ana works in research.", "2026-10-12")]
        new_text, new_said = "Ana leads the data team.", "2026-09-01"
    for allowed in range(4):
        root = tmp_path / f"{case}-{allowed}"
        memory = fsmem.open(root, create=True)
        for text, said in setup:
            memory.facts.keep("Ana", "role", text, said=said)
        old_files = _fact_files(root)
        old_current = [f.text for f in memory.facts.current()]

        result = _python("-c", KILLER, str(root), str(allowed), new_said, new_text)
        assert result.returncode == (0 if allowed == 3 else -9), result.stderr

        reader = fsmem.open(root).facts  # a fresh process's view, before any repair
        chain = reader.history(reader.current()[0].id)
        if allowed == 0:
            assert [f.text for f in reader.current()] == old_current
            assert _fact_files(root) == old_files
            assert new_text not in [f.text for f in chain]
        else:
            assert [f.text for f in reader.current()] == ["Ana works in research."]
            assert sorted(f.said for f in chain) == [f.said for f in reversed(chain)]
            assert new_text in [f.text for f in chain] and len(chain) == len(setup) + 1
        # the next change finishes what the killed one left, and the files agree with the reads
        reader.keep("Bruno", "team", "Bruno is in ops.")
        assert reader.check() == []
        fresh = fsmem.open(root).facts
        assert [(f.id, f.holds, f.replaced_by) for f in fresh.all()] == \
               [(f.id, f.holds, f.replaced_by) for f in reader.all()]
        for fact in fresh.all():  # each fact in one place only, the one its links say
            assert (root / fact.path).is_file()
            elsewhere = f"notes/memory/history/{fact.id}.md" if fact.holds else f"notes/memory/{fact.id}.md"
            assert not (root / elsewhere).exists()


WORKER = r"""
import sys
import fsmem
root, worker = sys.argv[1], int(sys.argv[2])
facts = fsmem.open(root).facts
for step in range(8):
    day = 1 + (worker * 7 + step * 3) % 28
    facts.keep("Ana", "role", f"Ana has role {worker}-{step}.", said=f"2026-09-{day:02d}T{worker:02d}:{step:02d}:00Z")
"""


@pytest.mark.slow
def test_processes_keeping_one_thing_at_once_leave_one_fact_holding(tmp_path) -> None:
    root = tmp_path / "root"
    fsmem.open(root, create=True)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, str(root), str(n)], env=env,
                                stderr=subprocess.PIPE, text=True) for n in range(4)]
    for worker in workers:
        _, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
    facts = fsmem.open(root).facts
    assert facts.check() == []
    everything = facts.all()
    assert len(everything) == 32
    latest = max(everything, key=lambda f: f.said)
    assert [f.id for f in facts.current()] == [latest.id]
    chain = facts.history(latest.id)
    assert len(chain) == 32
    assert [f.said for f in chain] == sorted((f.said for f in chain), reverse=True)
    for newer, older in zip(chain, chain[1:]):
        assert older.replaced_by == newer.id and older.until == newer.said
    assert datetime(2026, 9, 1, tzinfo=timezone.utc) <= latest.said
