"""Levels and facts on PostgreSQL, through ``fsmem.open(url, project=…)``: the same calls as on a folder.

What differs is only how the store holds them (fsmem/_store/postgres/drive.py, reads.py): a level folder's identity
is a hidden row, a ``deleting_*`` block is one transaction held across the block, a fact's stamp is
its row's version. Two Memories with their own cache folders stand for two workers.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import psycopg
import pytest
from conftest import REPO

import fsmem
from fsmem._memory import levels as _levels
from fsmem._errors import ScopeError
from fsmem._memory.levels import Scope


@pytest.fixture
def project() -> str:
    return f"lf-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def worker(postgres: str, project: str, tmp_path: Path):
    """Open another worker on the project: its own cache folder, as if on another machine."""
    opened = []

    def open_worker(name: str = "a") -> fsmem.Memory:
        memory = fsmem.open(postgres, project=project, create=True, cache=tmp_path / f"cache-{name}-{len(opened)}")
        opened.append(memory)
        return memory

    yield open_worker
    for memory in opened:
        memory.close()


@pytest.fixture
def memory(worker) -> fsmem.Memory:
    return worker()


def _rows(url: str, project: str, prefix: str) -> list[str]:
    """The paths of every row under ``prefix``, hidden ones included: what the database really holds."""
    with psycopg.connect(url) as conn:
        return [
            row[0]
            for row in conn.execute(
                "SELECT f.path FROM fsmem.files f JOIN fsmem.projects p ON p.id = f.project "
                "WHERE p.name = %s AND f.path LIKE %s ORDER BY f.path",
                (project, prefix + "%"),
            )
        ]


# ---- levels ---------------------------------------------------------------------------------------


def test_an_agent_and_its_routine_are_found_by_full_id_from_another_worker(worker, postgres, project) -> None:
    memory = worker()
    folder = memory.create_agent("3f9a1c2e-77", "SEO bot")
    routine = memory.create_routine("3f9a1c2e-77", "9b7d4e10", "Meta tags")
    assert folder == "agents/seo-bot-3f9a1c2e"
    assert routine == "agents/seo-bot-3f9a1c2e/routines/meta-tags-9b7d4e10"
    other = worker("b")
    assert _levels.find_agent(other, "3f9a1c2e-77") == folder
    assert _levels.find_routine(other, "9b7d4e10") == routine
    assert _levels.read_identity(other, folder) == {"kind": "agent", "id": "3f9a1c2e-77", "name": "SEO bot"}
    assert [(a.id, a.name, a.folder) for a in _levels.describe_agents(other)] == [("3f9a1c2e-77", "SEO bot", folder)]
    assert other.scope_files(Scope.routine("3f9a1c2e-77", "9b7d4e10")) == [
        "MEMORY.md",
        f"{folder}/MEMORY.md",
        f"{routine}/NOTES.md",
    ]
    # the identity is a row, hidden from every face: listings, the log, versions, the tool
    assert f"{folder}/.fsmem-level" in _rows(postgres, project, folder)
    run = other.run(Scope.agent("3f9a1c2e-77"))
    assert ".fsmem-level" not in run.call({"command": "read", "path": folder})["text"]
    refused = run.call({"command": "read", "path": f"{folder}/.fsmem-level"})
    assert not refused["ok"] and refused["error"]["code"] == "BAD_PATH"
    assert all(".fsmem-level" not in entry.path for entry in other.log())


def test_two_ids_sharing_their_first_8_characters_get_two_folders(memory) -> None:
    first = memory.create_agent("marketingbot-1", "Marketing bot")
    second = memory.create_agent("marketingbot-2", "Marketing bot")
    assert first == "agents/marketing-bot-marketin"
    assert second == "agents/marketing-bot-marketingbot"  # a longer piece of its own id
    assert _levels.find_agent(memory, "marketingbot-1") == first
    assert _levels.find_agent(memory, "marketingbot-2") == second
    memory.run(Scope.agent("marketingbot-2")).call(
        {"command": "write", "path": f"{second}/MEMORY.md", "content": "two\n"}
    )
    assert memory.read(f"{first}/MEMORY.md") == ""


def test_renaming_an_agent_folder_moves_its_identity(memory, postgres, project) -> None:
    folder = memory.create_agent("3f9a1c2e", "SEO")
    with memory.drive.change("hand") as tx:  # a person's rename (the tool keeps level folders where they are)
        tx.move(folder, "agents/search-3f9a1c2e")
    assert _levels.find_agent(memory, "3f9a1c2e") == "agents/search-3f9a1c2e"
    assert _rows(postgres, project, "agents/") == [
        "agents/search-3f9a1c2e/.fsmem-level",
        "agents/search-3f9a1c2e/MEMORY.md",
    ]
    assert [entry.path for entry in memory.log()][-1] == f"{folder}/MEMORY.md"  # the move, logged once


def test_first_use_from_several_workers_at_once_makes_one_folder(worker) -> None:
    memories = [worker(str(n)) for n in range(4)]
    barrier, got = threading.Barrier(len(memories)), []
    scope = Scope.routine("3f9a1c2e", "9b7d4e10", agent_name="SEO", routine_name="Meta")

    def first_use(memory: fsmem.Memory) -> None:
        barrier.wait()
        run = memory.run(scope)
        got.append((run.agent_folder, run.routine_folder))

    threads = [threading.Thread(target=first_use, args=(memory,)) for memory in memories]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(got) == 4 and len(set(got)) == 1, got
    assert [a.folder for a in _levels.describe_agents(memories[0])] == [got[0][0]]


def test_deleting_routine_commits_when_the_block_succeeds(worker, postgres, project) -> None:
    memory = worker()
    memory.create_agent("3f9a1c2e", "SEO")
    folder = memory.create_routine("3f9a1c2e", "9b7d4e10", "Meta")
    run = memory.run(Scope.routine("3f9a1c2e", "9b7d4e10"))
    assert run.call({"command": "write", "path": f"{folder}/NOTES.md", "content": "notes\n"})["ok"]
    other = worker("b")
    with memory.deleting_routine("9b7d4e10") as held:
        assert held == {f"{folder}/NOTES.md": "notes\n"}
        # until the block commits, another worker still sees the routine whole
        assert other.read(f"{folder}/NOTES.md") == "notes\n"
        # and this process does not make the id a new folder where the deleted one is
        with pytest.raises(ScopeError, match="being deleted"):
            _levels.create_routine(memory, "3f9a1c2e", "9b7d4e10", "Meta")
    assert _rows(postgres, project, folder) == []  # its identity row went with it
    assert _levels.find_routine(other, "9b7d4e10") is None
    assert [v.command for v in other.versions(f"{folder}/NOTES.md")] == ["delete_routine", "write"]
    assert [(e.command, e.path) for e in other.log()][-1] == ("delete_routine", f"{folder}/NOTES.md")
    assert _levels.create_routine(other, "3f9a1c2e", "9b7d4e10", "Meta") == folder  # anew, empty
    assert other.read(f"{folder}/NOTES.md") == ""


def test_deleting_routine_rolls_back_when_the_block_raises(memory, postgres, project) -> None:
    memory.create_agent("3f9a1c2e", "SEO")
    folder = memory.create_routine("3f9a1c2e", "9b7d4e10", "Meta")
    run = memory.run(Scope.routine("3f9a1c2e", "9b7d4e10"))
    assert run.call({"command": "write", "path": f"{folder}/NOTES.md", "content": "precious notes\n"})["ok"]
    rows, logged = _rows(postgres, project, folder), len(list(memory.log()))
    with pytest.raises(RuntimeError, match="harness's own"):
        with memory.deleting_routine("9b7d4e10"):
            raise RuntimeError("the harness's own delete failed")
    assert _rows(postgres, project, folder) == rows
    assert memory.read(f"{folder}/NOTES.md") == "precious notes\n"
    assert len(list(memory.log())) == logged and memory.versions(f"{folder}/NOTES.md")[0].command == "write"
    assert _levels.find_routine(memory, "9b7d4e10") == folder
    assert _levels.create_routine(memory, "3f9a1c2e", "9b7d4e10", "Meta", exist_ok=True) == folder


DIES_IN_BLOCK = r"""
import sys, time
import fsmem
memory = fsmem.open(sys.argv[1], project=sys.argv[2], cache=sys.argv[3])
with memory.deleting_agent("3f9a1c2e"):
    print("in the block", flush=True)
    time.sleep(120)
"""


def test_a_worker_killed_inside_a_deleting_block_deletes_nothing(memory, postgres, project, tmp_path) -> None:
    folder = memory.create_agent("3f9a1c2e", "SEO")
    run = memory.run(Scope.agent("3f9a1c2e"))
    assert run.call({"command": "write", "path": f"{folder}/MEMORY.md", "content": "agent notes\n"})["ok"]
    rows = _rows(postgres, project, folder)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen(
        [sys.executable, "-c", DIES_IN_BLOCK, postgres, project, str(tmp_path / "cache-dying")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "in the block\n", child.stderr
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    # the server rolled its transaction back: the folder is whole, and changes to it go through again
    assert _rows(postgres, project, folder) == rows
    assert run.call({"command": "write", "path": f"{folder}/MEMORY.md", "content": "more notes\n"})["ok"]
    assert _levels.find_agent(memory, "3f9a1c2e") == folder
    assert memory.drive.parked() == []  # nothing was moved aside to put back


def test_delete_agent_removes_all_its_rows_in_one_transaction(worker, postgres, project) -> None:
    memory = worker()
    folder = memory.create_agent("3f9a1c2e", "SEO")
    run = memory.run(Scope.agent("3f9a1c2e"))
    for n in range(3):
        routine = memory.create_routine("3f9a1c2e", f"9b7d4e1{n}", f"R{n}")
        assert run.call({"command": "write", "path": f"{routine}/NOTES.md", "content": f"notes {n}\n"})["ok"]
    for n in range(40):
        assert run.call({"command": "write", "path": f"{folder}/topic-{n:02d}.md", "content": f"t{n}\n"})["ok"]
    files = sorted(entry.path for entry in memory.drive.walk_files(folder))
    assert len(files) == 44
    other, seen, stop = worker("b"), set(), threading.Event()

    def watch() -> None:  # another worker listing the agent all the while: all of it, or none
        while not stop.is_set():
            seen.add(len(list(other.drive.walk_files(folder))))

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        held = memory.delete_agent("3f9a1c2e")
    finally:
        stop.set()
        watcher.join(timeout=30)
    assert sorted(held) == files
    assert seen <= {44, 0}, seen
    assert _rows(postgres, project, folder) == []
    deleted = [entry for entry in memory.log() if entry.command == "delete_agent"]
    assert sorted(entry.path for entry in deleted) == files
    seqs = _seqs(postgres, project, "delete_agent")
    assert seqs == list(range(seqs[0], seqs[0] + len(files)))  # one commit: consecutive sequence numbers


def _seqs(url: str, project: str, command: str) -> list[int]:
    with psycopg.connect(url) as conn:
        return [
            row[0]
            for row in conn.execute(
                "SELECT l.seq FROM fsmem.log l JOIN fsmem.projects p ON p.id = l.project "
                "WHERE p.name = %s AND l.command = %s ORDER BY l.seq",
                (project, command),
            )
        ]


# ---- facts ----------------------------------------------------------------------------------------


def test_keep_replace_edit_forget_and_current_on_rows(worker) -> None:
    memory, other = worker(), worker("b")
    facts = memory.facts
    september = facts.keep("Ana", "role", "Ana leads the data team.", said="2026-09-01")
    october = facts.keep("ana", "Role", "Ana works in research.", said="2026-10-12")
    assert october.outcome == "current" and october.replaced is not None
    assert october.replaced.id == september.fact.id
    assert memory.read(f"notes/memory/history/{september.fact.id}.md") is not None
    assert memory.drive.read(f"notes/memory/{september.fact.id}.md") is None
    # the other worker sees the change at once (stamps are the rows' versions)
    assert [f.id for f in other.facts.current("ANA")] == [october.fact.id]
    assert [f.id for f in other.facts.history(october.fact.id)] == [october.fact.id, september.fact.id]
    edited = other.facts.edit(october.fact.id, fact="Ana works in research, on search.")
    assert edited.text == "Ana works in research, on search."
    assert [f.text for f in facts.current("ana")] == ["Ana works in research, on search."]
    bruno = facts.keep("Bruno", "team", "Bruno is in ops.")
    assert [f.subject for f in other.facts.current()] == ["Ana", "Bruno"]
    forgotten = other.facts.forget(october.fact.id)
    assert [f.id for f in forgotten] == [october.fact.id, september.fact.id]
    assert [f.id for f in facts.current()] == [bruno.fact.id]
    assert facts.check() == [] and other.facts.check() == []
    commands = [entry.command for entry in memory.log() if entry.path.startswith("notes/memory/")]
    assert set(commands) == {"facts.keep", "facts.edit", "facts.forget"}


def test_a_new_worker_reads_the_kept_view_of_its_own_cache_folder(worker) -> None:
    memory = worker()
    kept = [memory.facts.keep(f"Person {n}", "role", f"Person {n} works here.") for n in range(3)]
    memory.facts.current()
    from fsmem._memory.facts.kept import VIEW_FILE, KeptView

    view = KeptView(memory.drive.state / VIEW_FILE).load()
    assert view is not None
    files, chains, _ = view
    assert {read.fact.id for read in files.values() if read.fact} == {k.fact.id for k in kept}
    assert {read.stamp for read in files.values()} == {memory.drive.stamp(k.fact.path) for k in kept}  # versions
    assert all(isinstance(read.stamp, str) for read in files.values())
    assert sorted(f.id for chain, _ in chains for f in chain) == sorted(k.fact.id for k in kept)
    other = worker()  # another worker's cache folder: it lists from its own view once it has one
    assert [f.id for f in other.facts.current("person 1")] == [kept[1].fact.id]
    moved = memory.facts.keep("Person 1", "role", "Person 1 moved on.")
    assert [f.id for f in worker().facts.current("person 1")] == [moved.fact.id]
    assert [f.id for f in other.facts.current("person 1")] == [moved.fact.id]


def test_a_hand_edit_of_a_fact_row_is_seen_and_a_broken_one_is_a_problem(memory) -> None:
    kept = memory.facts.keep("Ana", "role", "Ana works in research.")
    path = kept.fact.path
    text = memory.read(path)
    with memory.drive.change("hand") as tx:  # a person's edits (through `fsmem sync`, say)
        tx.write(path, text.replace("research", "search").encode())
    assert [f.text for f in memory.facts.current("Ana")] == ["Ana works in search."]
    with memory.drive.change("hand") as tx:
        tx.write("notes/memory/stray.txt", b"x\n")
        tx.write("notes/memory/odd/x.md", b"x\n")
    problems = {problem.path: problem.message for problem in memory.facts.check()}
    assert problems["notes/memory/stray.txt"].startswith("not a fact file")
    assert problems["notes/memory/odd"].startswith("a folder inside the facts folder")


def test_repair_finishes_a_change_left_half_done(memory) -> None:
    facts = memory.facts
    old = facts.keep("Ana", "role", "Ana leads the data team.", said="2026-09-01")
    facts.keep("Ana", "role", "Ana works in research.", said="2026-10-12")
    stale = old.fact.path  # the copy a crash between the write and the delete of a move leaves
    before_move = memory.versions(stale)[0]
    with memory.drive.change("hand") as tx:
        tx.write(stale, memory.drive.read_version(before_move))
    assert facts.repair() == [stale]
    assert memory.drive.read(stale) is None
    assert facts.repair() == []
    assert facts.check() == []


def test_workers_keeping_one_thing_at_once_leave_one_fact_holding(worker) -> None:
    memories = [worker(str(n)) for n in range(4)]
    barrier, errors = threading.Barrier(len(memories)), []

    def keep(number: int, memory: fsmem.Memory) -> None:
        barrier.wait()
        try:
            for step in range(5):
                memory.facts.keep(
                    "Ana", "role", f"Ana has role {number}-{step}.", said=f"2026-09-{1 + number * 5 + step:02d}"
                )
        except Exception as error:  # reported to the test, which fails on it
            errors.append(repr(error))

    threads = [threading.Thread(target=keep, args=(n, m)) for n, m in enumerate(memories)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    facts = worker("check").facts
    assert facts.check() == []
    everything = facts.all()
    assert len(everything) == 20
    latest = max(everything, key=lambda f: f.said)
    assert [f.id for f in facts.current()] == [latest.id]
    assert len(facts.history(latest.id)) == 20


def test_a_call_about_one_thing_looks_at_its_rows_only_while_nothing_changed(worker, monkeypatch) -> None:
    memory, other = worker(), worker("b")
    kept = [memory.facts.keep(f"Person {n}", "role", f"Person {n} works here.") for n in range(5)]
    facts = memory.facts
    facts.current()
    looks: list[object] = []
    real_scan = type(facts._view)._scan  # the view looks at the files for its Facts
    monkeypatch.setattr(type(facts._view), "_scan", lambda self: looks.append(self) or real_scan(self))
    assert [f.id for f in facts.current("Person 3")] == [kept[3].fact.id]
    assert looks == []  # the sequence number stood still: the rows of Person 3 only
    other.facts.keep("Person 3", "role", "Person 3 leads the team.")
    assert [f.text for f in facts.current("Person 3")] == ["Person 3 leads the team."]
    assert [view for view in looks if view is facts._view] == [facts._view]  # another worker's change moved it: a full look


def test_a_change_inside_the_block_waits_for_it_and_is_busy_not_hung(postgres, project, tmp_path) -> None:
    from fsmem._env.config import Settings

    memory = fsmem.open(
        postgres, project=project, create=True, cache=tmp_path / "cache", settings=Settings(lock_timeout=1.0)
    )
    try:
        folder = memory.create_agent("3f9a1c2e", "SEO")
        run = memory.run(Scope.chat())
        with memory.deleting_agent("3f9a1c2e"):
            busy = run.call({"command": "write", "path": "MEMORY.md", "content": "waits for the block\n"})
            assert not busy["ok"] and busy["error"]["code"] == "BUSY", busy
        assert memory.read("MEMORY.md") == "" and _levels.find_agent(memory, "3f9a1c2e") is None
        assert run.call({"command": "write", "path": "MEMORY.md", "content": "after the block\n"})["ok"]
        assert not memory.drive.is_dir(folder)
    finally:
        memory.close()


def test_a_facts_change_refused_at_its_commit_leaves_the_view_looking_again(worker, monkeypatch) -> None:
    """On PostgreSQL a facts change commits when its block ends; refused there (BUSY at the commit
    lock, a dropped connection), the view must not keep what was planned: the next keep about the same
    thing replaces the fact the rows hold, and one fact holds."""
    from fsmem._store.postgres import transaction as _pg_transaction
    from fsmem._errors import Busy

    memory = worker()
    memory.facts.keep("Ana", "role", "Ana is the baker.")
    real_flush = _pg_transaction.PgTransaction._flush_log

    def refuse(self) -> None:
        raise Busy("the commit lock was not granted")

    monkeypatch.setattr(_pg_transaction.PgTransaction, "_flush_log", refuse)
    with pytest.raises(Busy):
        memory.facts.keep("Ana", "role", "Ana is the manager.")
    monkeypatch.setattr(_pg_transaction.PgTransaction, "_flush_log", real_flush)
    assert [fact.text for fact in memory.facts.current("Ana")] == ["Ana is the baker."]
    memory.facts.keep("Ana", "role", "Ana is the owner.")
    other = worker()
    assert [fact.text for fact in other.facts.current("Ana")] == ["Ana is the owner."]
    assert other.facts.check() == []
