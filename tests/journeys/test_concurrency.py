"""Concurrency: read versions, CONFLICT, NOT_READ, expected_version, BUSY — in one process and across many.

The rule (docs/design.md §4): a write, rename or delete of an existing file succeeds only if the file still
has the version this run last saw; otherwise nothing changes and the error names who changed it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import fsmem
from fsmem._core.versions import version_of
from tests.conftest import run_fsmem
from tests.procs.common import diff, read_json_line, snapshot, spawn


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    fsmem.open(folder, create=True)
    return folder


@pytest.fixture
def launch():
    """Start a worker process; any still running when the test ends (a failure) is killed."""
    started = []

    def _start(script: str, *args: object):
        proc = spawn(script, *args)
        started.append(proc)
        return proc

    yield _start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


def seed(root: Path, path: str, text: str) -> str:
    """Write a file through fsmem (as a separate thread) and return its version."""
    run = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="seeder")
    result = run.call({"command": "write", "path": path, "content": text})
    assert result["ok"], result
    return result["version"]


def log_lines(root: Path) -> list[dict]:
    log = root / ".fsmem" / "log.jsonl"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]


def code(result: dict) -> str | None:
    return None if result["ok"] else result["error"]["code"]


# --- two runs, one file ------------------------------------------------------------------------


def test_two_runs_racing_one_wins_the_other_gets_conflict_naming_the_winner(root: Path) -> None:
    seed(root, "brand.md", "# Brand\n- titles end with | Field Notes\n")
    # Two Memory objects, as two processes would have.
    alice = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="thread-alice")
    bob = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="thread-bob")
    assert alice.call({"command": "read", "path": "brand.md"})["ok"]
    assert bob.call({"command": "read", "path": "brand.md"})["ok"]

    won = alice.call({"command": "write", "path": "brand.md",
                      "content": "# Brand\n- titles end with | Field Notes\n- from alice\n"})
    assert won["ok"], won
    before = snapshot(root)
    lost = bob.call({"command": "write", "path": "brand.md",
                     "content": "# Brand\n- titles end with | Field Notes\n- from bob\n"})

    assert code(lost) == "CONFLICT"
    message = lost["error"]["message"]
    assert "thread-alice" in message  # who changed it
    assert "read" in message.lower()  # what to do next: read it again
    assert lost["text"].startswith("Error")
    assert snapshot(root) == before, diff(before, snapshot(root))  # nothing changed, log included

    # The loser does what the message says: reads again, writes its line onto the fresh content.
    fresh = bob.call({"command": "read", "path": "brand.md"})
    assert fresh["ok"] and fresh["version"] == won["version"]
    text = (root / "brand.md").read_text(encoding="utf-8")
    assert bob.call({"command": "write", "path": "brand.md", "content": text + "- from bob\n"})["ok"]
    final = (root / "brand.md").read_text(encoding="utf-8")
    assert final == "# Brand\n- titles end with | Field Notes\n- from alice\n- from bob\n"


@pytest.mark.parametrize("late_call", [
    {"command": "write", "path": "brand.md", "old_text": "- one", "new_text": "- uno"},
    {"command": "write", "path": "brand.md", "content": "<!-- ... -->\n- two\n- three\n"},
    {"command": "rename", "path": "brand.md", "new_path": "brand-old.md"},
    {"command": "delete", "path": "brand.md"},
], ids=["replace", "markers", "rename", "delete"])
def test_every_changing_command_checks_the_version_it_read(root: Path, late_call: dict) -> None:
    seed(root, "brand.md", "# Brand\n- one\n- two\n")
    slow = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="slow")
    fast = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="fast")
    assert slow.call({"command": "read", "path": "brand.md"})["ok"]
    assert fast.call({"command": "read", "path": "brand.md"})["ok"]
    assert fast.call({"command": "write", "path": "brand.md", "old_text": "- two", "new_text": "- 2"})["ok"]

    before = snapshot(root)
    result = slow.call(late_call)
    assert code(result) == "CONFLICT", result
    assert "fast" in result["error"]["message"]
    assert snapshot(root) == before, diff(before, snapshot(root))


def test_a_hand_edit_between_read_and_write_is_never_overwritten(root: Path) -> None:
    seed(root, "brand.md", "# Brand\n")
    run = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="t-1")
    assert run.call({"command": "read", "path": "brand.md"})["ok"]
    (root / "brand.md").write_text("# Brand\n- typed in an editor\n", encoding="utf-8")

    result = run.call({"command": "write", "path": "brand.md", "content": "# Brand\n- from the model\n"})
    assert code(result) == "CONFLICT"
    assert (root / "brand.md").read_text(encoding="utf-8") == "# Brand\n- typed in an editor\n"


def test_a_run_remembers_its_own_write_and_partial_reads(root: Path) -> None:
    seed(root, "brand.md", "# Brand\n" + "".join(f"- line {n}\n" for n in range(1, 40)))
    run = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="t-1")
    part = run.call({"command": "read", "path": "brand.md", "start_line": 10, "end_line": 12})
    assert part["ok"] and part["version"] == version_of((root / "brand.md").read_bytes())
    assert run.seen["brand.md"] == part["version"]
    first = run.call({"command": "write", "path": "brand.md", "old_text": "- line 11\n", "new_text": "- eleven\n"})
    assert first["ok"], first
    # Its own write counts as seen: a second edit needs no new read.
    second = run.call({"command": "write", "path": "brand.md", "old_text": "- line 12\n", "new_text": "- twelve\n"})
    assert second["ok"], second
    assert run.seen["brand.md"] == second["version"] == version_of((root / "brand.md").read_bytes())


def test_context_injection_counts_as_a_read(root: Path) -> None:
    version = seed(root, "MEMORY.md", "# Project\n- rule one\n")
    run = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="t-1")
    run.mark_seen("MEMORY.md", version)
    result = run.call({"command": "write", "path": "MEMORY.md", "content": "# Project\n- rule one\n- rule two\n"})
    assert result["ok"], result


def test_two_runs_creating_one_new_file_the_second_is_not_read(root: Path) -> None:
    first = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="first")
    second = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="second")
    assert code(first.call({"command": "read", "path": "new.md"})) == "NOT_FOUND"
    assert code(second.call({"command": "read", "path": "new.md"})) == "NOT_FOUND"
    assert first.call({"command": "write", "path": "new.md", "content": "# From first\n"})["ok"]
    late = second.call({"command": "write", "path": "new.md", "content": "# From second\n"})
    assert code(late) in {"NOT_READ", "CONFLICT"}, late
    assert (root / "new.md").read_text(encoding="utf-8") == "# From first\n"


def test_a_write_after_another_thread_deleted_the_file_conflicts_then_recreates(root: Path) -> None:
    seed(root, "brand.md", "# Brand\n- keep me\n")
    writer = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="writer")
    deleter = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="deleter")
    assert writer.call({"command": "read", "path": "brand.md"})["ok"]
    assert deleter.call({"command": "read", "path": "brand.md"})["ok"]
    assert deleter.call({"command": "delete", "path": "brand.md"})["ok"]

    late = writer.call({"command": "write", "path": "brand.md", "content": "# Brand\n- keep me\n- more\n"})
    assert code(late) == "CONFLICT", late
    assert "deleter" in late["error"]["message"]
    assert not (root / "brand.md").exists()
    # The writer reads again, learns the file is gone, and may then make it anew.
    assert code(writer.call({"command": "read", "path": "brand.md"})) == "NOT_FOUND"
    again = writer.call({"command": "write", "path": "brand.md", "content": "# Brand\n- made again\n"})
    assert again["ok"], again
    # Nothing was lost: the deleted content is kept.
    memory = fsmem.open(root)
    assert version_of(b"# Brand\n- keep me\n") in [v.version for v in memory.versions("brand.md")]


def test_a_write_into_a_folder_another_thread_renamed_conflicts(root: Path) -> None:
    seed(root, "drafts/a.md", "# A\n")
    slow = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="slow")
    mover = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="mover")
    assert slow.call({"command": "read", "path": "drafts/a.md"})["ok"]
    assert mover.call({"command": "rename", "path": "drafts", "new_path": "old-drafts"})["ok"]
    late = slow.call({"command": "write", "path": "drafts/a.md", "content": "# A\n- more\n"})
    assert code(late) == "CONFLICT", late
    assert "mover" in late["error"]["message"]
    assert not (root / "drafts").exists() and (root / "old-drafts/a.md").read_text(encoding="utf-8") == "# A\n"


def test_a_folder_delete_checks_every_file_the_run_saw(root: Path) -> None:
    seed(root, "drafts/a.md", "# A\n")
    seed(root, "drafts/b.md", "# B\n")
    slow = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="slow")
    fast = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="fast")
    assert slow.call({"command": "read", "path": "drafts/b.md"})["ok"]
    assert fast.call({"command": "read", "path": "drafts/b.md"})["ok"]
    assert fast.call({"command": "write", "path": "drafts/b.md", "content": "# B\n- new\n"})["ok"]
    before = snapshot(root)
    for late in ({"command": "delete", "path": "drafts"},
                 {"command": "rename", "path": "drafts", "new_path": "gone"}):
        result = slow.call(late)
        assert code(result) == "CONFLICT", (late, result)
        assert "fast" in result["error"]["message"]
        assert snapshot(root) == before, diff(before, snapshot(root))


def test_threads_sharing_one_memory_never_lose_a_write(root: Path) -> None:
    """Memory is shared by the threads of one process; each thread has its own run."""
    import threading

    path, threads, per_thread = "shared/threads.md", 4, 40
    seed(root, path, "# Threads\n")
    memory = fsmem.open(root)
    errors: list[object] = []
    barrier = threading.Barrier(threads)

    def work(t: int) -> None:
        run = memory.run(fsmem.Scope.chat(), thread_id=f"th-{t}")
        barrier.wait()
        done = 0
        while done < per_thread:
            seen = run.call({"command": "read", "path": path})
            data = (root / path).read_bytes()
            if version_of(data) != seen["version"]:
                continue
            result = run.call({"command": "write", "path": path, "content": data.decode() + f"t{t}-{done:03d}\n"})
            if result["ok"]:
                done += 1
            elif result["error"]["code"] != "CONFLICT":
                errors.append(result)
                return

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert not errors, errors
    lines = (root / path).read_text(encoding="utf-8").splitlines()[1:]
    for t in range(threads):
        assert [line for line in lines if line.startswith(f"t{t}-")] == [f"t{t}-{k:03d}" for k in range(per_thread)]
    entries = [e for e in log_lines(root) if e["path"] == path]
    assert len(entries) == 1 + threads * per_thread
    assert all(b["before"] == a["after"] for a, b in zip(entries, entries[1:]))


# --- NOT_READ and expected_version -------------------------------------------------------------


@pytest.mark.parametrize("call", [
    {"command": "write", "path": "brand.md", "content": "# Replaced blind\n"},
    {"command": "write", "path": "brand.md", "old_text": "- keep", "new_text": "- lost"},
    {"command": "write", "path": "brand.md", "content": "<!-- ... -->\n- keep\n- added\n"},
], ids=["whole", "replace", "markers"])
def test_a_write_to_a_non_empty_file_the_run_never_saw_is_not_read(root: Path, call: dict) -> None:
    seed(root, "brand.md", "# Brand\n- keep\n")
    run = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="blind")
    before = snapshot(root)
    result = run.call(call)
    assert code(result) == "NOT_READ", result
    assert "read" in result["error"]["message"].lower()
    assert snapshot(root) == before, diff(before, snapshot(root))


def test_an_empty_existing_file_and_a_new_file_need_no_read(root: Path) -> None:
    run = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="t-1")
    assert (root / "MEMORY.md").read_bytes() == b""  # made empty by create
    assert run.call({"command": "write", "path": "MEMORY.md", "content": "# Project\n"})["ok"]
    assert run.call({"command": "write", "path": "new/topic.md", "content": "# New\n"})["ok"]


def test_expected_version_for_stateless_callers(root: Path) -> None:
    v1 = seed(root, "brand.md", "# Brand\n")
    # A stateless caller: a fresh run for every call, as the CLI and `fsmem tool` are.
    def call(request: dict) -> dict:
        return fsmem.open(root).run(fsmem.Scope.chat(), thread_id="stateless").call(request)

    ok = call({"command": "write", "path": "brand.md", "content": "# Brand v2\n", "expected_version": v1})
    assert ok["ok"], ok
    before = snapshot(root)
    stale = call({"command": "write", "path": "brand.md", "content": "# Brand v3\n", "expected_version": v1})
    assert code(stale) == "CONFLICT"
    assert "stateless" in stale["error"]["message"]  # the thread that changed it since v1
    assert snapshot(root) == before
    for late in ({"command": "rename", "path": "brand.md", "new_path": "b.md", "expected_version": v1},
                 {"command": "delete", "path": "brand.md", "expected_version": v1}):
        assert code(call(late)) == "CONFLICT", late
        assert snapshot(root) == before
    assert call({"command": "delete", "path": "brand.md", "expected_version": ok["version"]})["ok"]
    assert not (root / "brand.md").exists()


def test_expected_version_through_the_cli_in_real_processes(root: Path) -> None:
    v1 = seed(root, "brand.md", "# Brand\n")
    first = run_fsmem("write", "--root", str(root), "brand.md", "--expect", v1, input="# Brand v2\n")
    assert first.returncode == 0, first.stderr
    second = run_fsmem("write", "--root", str(root), "brand.md", "--expect", v1, input="# Brand v3\n")
    assert second.returncode == 3, second  # CONFLICT's exit code
    assert second.stderr.startswith("Error: [CONFLICT]")
    assert (root / "brand.md").read_text(encoding="utf-8") == "# Brand v2\n"
    tool = run_fsmem("tool", "--root", str(root), input=json.dumps(
        {"command": "write", "path": "brand.md", "content": "# Brand v4\n", "expected_version": v1}))
    result = json.loads(tool.stdout)
    assert result["ok"] is False and result["error"]["code"] == "CONFLICT"
    assert (root / "brand.md").read_text(encoding="utf-8") == "# Brand v2\n"


# --- real processes ----------------------------------------------------------------------------


@pytest.mark.slow
def test_two_processes_racing_exactly_one_wins_and_nothing_is_lost(root: Path, tmp_path: Path, launch) -> None:
    for round_no in range(4):
        path = f"race/r{round_no}.md"
        start = f"# Race {round_no}\n"
        seed(root, path, start)
        go = tmp_path / f"go-{round_no}"
        procs = {name: launch("race_worker.py", root, path, name, go) for name in ("racer-a", "racer-b")}
        for proc in procs.values():
            assert "read" in read_json_line(proc)
        go.touch()
        firsts = {name: read_json_line(proc)["first"] for name, proc in procs.items()}
        winners = [name for name, result in firsts.items() if result["ok"]]
        assert len(winners) == 1, firsts
        winner = winners[0]
        loser = next(name for name in procs if name != winner)
        assert firsts[loser]["error"]["code"] == "CONFLICT"
        assert winner in firsts[loser]["error"]["message"]
        second = read_json_line(procs[loser])["second"]
        assert second["ok"], second
        for proc in procs.values():
            assert proc.wait(timeout=30) == 0, proc.stderr.read()
        final = (root / path).read_text(encoding="utf-8")
        assert final == start + f"from {winner}\n" + f"from {loser}\n"
        # The log tells the same story: seed, winner, loser, each on the version before it.
        entries = [e for e in log_lines(root) if e["path"] == path]
        assert [e["thread"] for e in entries] == ["seeder", winner, loser]
        assert entries[1]["before"] == entries[0]["after"] and entries[2]["before"] == entries[1]["after"]


@pytest.mark.slow
def test_four_processes_100_read_modify_writes_each_all_accounted_for(
    root: Path, tmp_path: Path, launch
) -> None:
    workers, per_worker, path = 4, 100, "shared/counter.md"  # 400 contended changes; 200 each proved no more
    start = "# Shared\n"
    v0 = seed(root, path, start)
    go = tmp_path / "go"
    procs = [launch("rmw_worker.py", root, path, w, per_worker, go) for w in range(workers)]
    for proc in procs:
        assert "ready" in read_json_line(proc)
    go.touch()
    summaries = {}
    for w, proc in enumerate(procs):
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"worker {w}: {out[-2000:]}\n{err[-4000:]}"
        summaries[w] = json.loads(out.strip().splitlines()[-1])
        assert len(summaries[w]["versions"]) == per_worker

    # The file: every worker's 200 lines, each worker's in its own order, nothing else.
    lines = (root / path).read_text(encoding="utf-8").splitlines()
    assert lines[0] == "# Shared"
    body = lines[1:]
    assert len(body) == workers * per_worker
    for w in range(workers):
        mine = [line for line in body if line.startswith(f"w{w}-")]
        assert mine == [f"w{w}-{k:04d}" for k in range(per_worker)]

    # The log: one line per successful write, chained version to version, in the order they landed.
    entries = [e for e in log_lines(root) if e["path"] == path]
    assert len(entries) == 1 + workers * per_worker
    assert entries[0]["after"] == v0
    for previous, entry in zip(entries, entries[1:]):
        assert entry["command"] == "write"
        assert entry["before"] == previous["after"], (previous, entry)
    assert entries[-1]["after"] == version_of((root / path).read_bytes())
    for w in range(workers):
        logged = [e["after"] for e in entries if e["thread"] == f"rmw-{w}"]
        assert logged == summaries[w]["versions"]
    # The races were real: some writes had to be retried.
    assert sum(s["conflicts"] for s in summaries.values()) > 0


# --- the lock ----------------------------------------------------------------------------------


def test_a_held_lock_ends_in_busy_and_changes_nothing(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(root, "brand.md", "# Brand\n")
    monkeypatch.setenv("FSMEM_LOCK_TIMEOUT", "0.3")
    release = tmp_path / "release"
    holder = spawn("lock_holder.py", root / ".fsmem" / "lock", release)
    try:
        assert read_json_line(holder) == {"holding": True}
        before = snapshot(root)
        run = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="t-1")
        assert run.call({"command": "read", "path": "brand.md"})["ok"]  # reads take no lock
        result = run.call({"command": "write", "path": "brand.md", "content": "# Brand v2\n"})
        assert code(result) == "BUSY", result
        assert "try again" in result["error"]["message"]
        cli = run_fsmem("write", "brand.md", "--root", str(root), "--expect", version_of(b"# Brand\n"),
                        input="# Brand v2\n", env={"FSMEM_LOCK_TIMEOUT": "0.3"})
        assert cli.returncode == 1 and cli.stderr.startswith("Error: [BUSY]"), cli
        assert snapshot(root) == before, diff(before, snapshot(root))
    finally:
        release.touch()
        holder.wait(timeout=30)
    again = run.call({"command": "write", "path": "brand.md", "content": "# Brand v2\n"})
    assert again["ok"], again
