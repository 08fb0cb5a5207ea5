"""What a killed writer leaves is cleared on the next open (issue 10, item 9).

A process is killed with SIGKILL at a chosen point inside a change (the drive's write-window hook
kills it there): its temp file is removed by the next open, a facts change it cut short is finished by
the next open, so ``fsmem check`` is clean without ``--repair``; temp files of live writers stay.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import fsmem
from fsmem._store.atomic import pid_alive, temp_name, temp_owner
from tests.conftest import run_fsmem
from tests.procs.common import REPO

KILLED_IN_A_WRITE = textwrap.dedent("""
    import os, signal, sys
    import fsmem
    memory = fsmem.open(sys.argv[1])
    calls = {"n": 0}

    def die(path):
        calls["n"] += 1
        if calls["n"] == int(sys.argv[3]):
            os.kill(os.getpid(), signal.SIGKILL)  # the temp file is written, nothing swapped in yet

    memory.drive.in_write_window = die
    if sys.argv[2] == "write":
        run = memory.run(fsmem.Scope.chat(), thread_id="doomed")
        run.call({"command": "read", "path": "notes.md"})
        run.call({"command": "write", "path": "notes.md", "content": "# Notes\\n\\nnever lands\\n"})
    else:
        memory.facts.keep("Acme", "plan", "Acme moved to the platinum plan")
""")


def _killed(root: Path, what: str, at_call: int = 1) -> None:
    _killed_running(KILLED_IN_A_WRITE, str(root), what, str(at_call))


def _killed_running(script: str, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run([sys.executable, "-c", script, *args],
                          env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == -9, done.stderr


def _temps(root: Path) -> list[str]:
    return [name for _, _, names in os.walk(root) for name in names if temp_owner(name) is not None]


def test_a_writer_killed_holding_a_temp_file_leaves_nothing_after_the_next_open(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = fsmem.open(root, create=True)
    run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
    assert run.call({"command": "write", "path": "notes.md", "content": "# Notes\n\nkept\n"})["ok"]
    _killed(root, "write")
    assert len(_temps(root)) == 1  # what the kill left beside notes.md
    fsmem.open(root)
    assert _temps(root) == []
    assert (root / "notes.md").read_text() == "# Notes\n\nkept\n"
    assert not (root / ".fsmem" / "crashed").exists() and (root / ".fsmem" / "lock").read_bytes() == b""


def test_a_facts_keep_killed_half_way_is_finished_by_the_next_open(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = fsmem.open(root, create=True)
    memory.facts.keep("Acme", "plan", "Acme is on the gold plan")
    _killed(root, "facts", at_call=2)  # the new fact is written, the old one not yet moved to history
    checked = run_fsmem("check", "--root", str(root))
    assert checked.returncode == 0 and checked.stdout.startswith("No problems"), checked.stdout
    current = [fact.text for fact in fsmem.open(root).facts.current()]
    assert current == ["Acme moved to the platinum plan"]


def test_temp_files_of_live_writers_are_left_alone(tmp_path: Path) -> None:
    root = tmp_path / "root"
    fsmem.open(root, create=True)
    mine = temp_name(root / "notes.md")  # this process is alive
    mine.write_bytes(b"in progress")
    dead = root / ".notes_md.999999999.abcdef012345.tmp"
    dead.write_bytes(b"left by a dead writer")
    (root / ".fsmem" / "lock").write_text("999999999 elsewhere write 1.0\n")  # it died holding the lock
    fsmem.open(root)
    assert mine.exists() and not dead.exists()


def test_temp_files_a_dead_search_left_in_the_index_are_removed_on_open(tmp_path: Path) -> None:
    """A search writes the index's marks (CURRENT, a generation's ``applied``) outside the root's
    lock; killed there, it leaves a temp file no crash repair looks for. The next open removes it."""
    root = tmp_path / "root"
    memory = fsmem.open(root, create=True)
    memory.search("anything")
    generation = next(path for path in (root / ".fsmem" / "index").iterdir() if path.is_dir())
    dead_mark = generation / ".applied.999999999.abcdef012345.tmp"
    dead_current = root / ".fsmem" / "index" / ".CURRENT.999999999.abcdef012345.tmp"
    for dead in (dead_mark, dead_current):
        dead.write_bytes(b"{}")
    fsmem.open(root)
    assert not dead_mark.exists() and not dead_current.exists()


KILLED_SAVING_A_PROPOSAL = textwrap.dedent("""
    import os, signal, sys
    import fsmem
    from fsmem._store import atomic
    from fsmem._store.folder import proposals

    def die_before_the_rename(target, data, *, durable=True, mode=0o600):
        atomic.write_temp(target, data, durable=durable, mode=mode)
        os.kill(os.getpid(), signal.SIGKILL)  # the proposal's temp file is whole, nothing renamed yet

    proposals.write_atomic = die_before_the_rename
    review = fsmem.open(sys.argv[1]).run(fsmem.Scope.chat(), thread_id="doomed", review=True)
    review.call({"command": "read", "path": "plan.md"})
    review.call({"command": "write", "path": "plan.md", "content": "# Plan\\n\\nnever proposed\\n"})
""")


def test_a_proposal_writer_killed_before_its_rename_leaves_nothing_after_the_next_open(tmp_path: Path) -> None:
    """A proposal is saved outside the root's lock, so its kill leaves no crash mark: the next open
    still removes its temp file, and nothing else in proposals/ (a person's look-alike names, a live
    writer's temp file, a whole proposal)."""
    root = tmp_path / "root"
    memory = fsmem.open(root, create=True)
    run = memory.run(fsmem.Scope.chat(), thread_id="first")
    for path in ("kept.md", "plan.md"):
        assert run.call({"command": "write", "path": path, "content": f"# {path}\n\nwritten\n"})["ok"]
    review = memory.run(fsmem.Scope.chat(), thread_id="kept", review=True)
    review.call({"command": "read", "path": "kept.md"})
    assert review.call({"command": "write", "path": "kept.md", "content": "# Kept\n\nproposed\n"})["proposal"]
    folder = root / ".fsmem" / "proposals"
    whole = sorted(os.listdir(folder))
    _killed_running(KILLED_SAVING_A_PROPOSAL, str(root))
    left = [name for name in os.listdir(folder) if temp_owner(name) is not None]
    assert len(left) == 1 and not pid_alive(temp_owner(left[0]) or 0), left  # the killed writer's
    assert not (root / ".fsmem" / "crashed").exists()  # no lock was held: only the sweep can find it
    people = [".draft.json.tmp", ".notes.999999999.draft.tmp", ".x.999999999.abcdef.tmp",
              "p.json.999999999.abcdef012345.tmp", ".p.999999999.ABCDEF012345.tmp"]
    for name in people:
        (folder / name).write_text("a person's")
    live = temp_name(folder / "p-live.json")  # this process writes it, and is alive
    live.write_bytes(b"in progress")
    fsmem.open(root)
    assert sorted(os.listdir(folder)) == sorted([*whole, *people, live.name])
    assert [proposal.request["path"] for proposal in fsmem.open(root).proposals()] == ["kept.md"]


def test_the_open_does_not_sweep_through_a_proposals_folder_that_is_a_link(tmp_path: Path) -> None:
    root = tmp_path / "root"
    fsmem.open(root, create=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    dead_named = outside / ".p_json.999999999.abcdef012345.tmp"
    dead_named.write_bytes(b"not the root's")
    (root / ".fsmem" / "proposals").symlink_to(outside)
    fsmem.open(root)
    assert dead_named.read_bytes() == b"not the root's"
