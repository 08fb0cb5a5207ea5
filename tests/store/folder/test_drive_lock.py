"""The root's write lock: one holder at a time across threads and processes, BUSY after the timeout."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

import pytest
from filelock import FileLock

import fsmem
from fsmem._env.config import Settings
from fsmem._errors import Busy


def _memory(tmp_path, timeout: float = 10.0):
    fsmem.open(tmp_path / "root", create=True)
    return fsmem.open(tmp_path / "root", settings=Settings(lock_timeout=timeout, durable=False))


def test_busy_when_another_process_holds_the_lock_and_nothing_changes(tmp_path) -> None:
    memory = _memory(tmp_path, timeout=0.2)
    lock_file = memory.drive.state / "lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            from filelock import FileLock
            with FileLock({str(lock_file)!r}):
                print("held", flush=True)
                sys.stdin.readline()
        """)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline() == "held\n"
        run = memory.run()
        result = run.call({"command": "write", "path": "new.md", "content": "x\n"})
        assert result["ok"] is False and result["error"]["code"] == "BUSY"
        assert "nothing was changed, try again" in result["error"]["message"]
        assert not (memory.root / "new.md").exists()
    finally:
        holder.communicate("done\n", timeout=30)
    assert memory.run().call({"command": "write", "path": "new.md", "content": "x\n"})["ok"]


def test_filelock_waits_for_the_drive_lock(tmp_path) -> None:
    memory = _memory(tmp_path)
    with memory.drive.locked():
        with pytest.raises(Exception) as caught:
            FileLock(str(memory.drive.state / "lock"), timeout=0.1).acquire()
        assert type(caught.value).__name__ == "Timeout"
    with FileLock(str(memory.drive.state / "lock"), timeout=1):
        pass


def test_the_lock_is_reentrant_within_a_thread(tmp_path) -> None:
    memory = _memory(tmp_path, timeout=0.2)
    with memory.drive.locked():
        with memory.drive.locked():
            with memory.drive.change("write") as tx:
                tx.write("a.md", b"a\n")
    assert (memory.root / "a.md").read_bytes() == b"a\n"
    with memory.drive.locked():  # released fully: can be taken again
        pass


def test_another_thread_waits_then_gets_busy(tmp_path) -> None:
    memory = _memory(tmp_path, timeout=0.1)
    outcome: list[str] = []

    def other() -> None:
        try:
            with memory.drive.locked():
                outcome.append("got it")
        except Busy:
            outcome.append("busy")

    with memory.drive.locked():
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    assert outcome == ["busy"]
    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert outcome == ["busy", "got it"]


def test_threads_never_hold_the_lock_together(tmp_path) -> None:
    memory = _memory(tmp_path)
    inside = 0
    most = 0
    guard = threading.Lock()

    def worker() -> None:
        nonlocal inside, most
        for _ in range(30):
            with memory.drive.locked():
                with guard:
                    inside += 1
                    most = max(most, inside)
                time.sleep(0.0005)
                with guard:
                    inside -= 1

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most == 1


def test_an_error_inside_releases_the_lock(tmp_path) -> None:
    memory = _memory(tmp_path, timeout=0.2)
    with pytest.raises(RuntimeError):
        with memory.drive.locked():
            raise RuntimeError("boom")
    with FileLock(str(memory.drive.state / "lock"), timeout=0.5):
        pass


WORKER = textwrap.dedent("""
    import sys
    import fsmem
    memory = fsmem.open(sys.argv[1])
    name, count = sys.argv[2], int(sys.argv[3])
    run = memory.run(thread_id=name)
    done = 0
    while done < count:
        read = run.call({"command": "read", "path": "MEMORY.md"})
        current = memory.read("MEMORY.md") if read["ok"] else ""
        if run.seen.get("MEMORY.md") != read.get("version"):
            continue
        result = run.call({"command": "write", "path": "MEMORY.md", "content": current + f"{name} {done}\\n",
                           "expected_version": read["version"]})
        if result["ok"]:
            done += 1
        elif result["error"]["code"] != "CONFLICT":
            raise SystemExit(result["text"])
""")


@pytest.mark.slow
def test_processes_doing_read_modify_writes_lose_nothing(tmp_path) -> None:
    from tests.conftest import REPO

    memory = fsmem.open(tmp_path / "root", create=True)
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, str(memory.root), f"p{i}", "60"], env=env)
               for i in range(4)]
    assert [worker.wait(timeout=120) for worker in workers] == [0, 0, 0, 0]
    lines = memory.read("MEMORY.md").splitlines()
    assert sorted(lines) == sorted(f"p{i} {n}" for i in range(4) for n in range(60))
    for i in range(4):  # each process's lines are in its own order
        own = [line for line in lines if line.startswith(f"p{i} ")]
        assert own == [f"p{i} {n}" for n in range(60)]
    writes = [entry for entry in memory.log() if entry.command == "write"]
    assert len(writes) == 240
    for earlier, later in zip(writes, writes[1:]):  # one chain: each write starts from the one before
        assert later.before == earlier.after


def test_the_lock_makes_the_state_folder_again_if_it_was_removed(tmp_path) -> None:
    import shutil

    memory = _memory(tmp_path)
    shutil.rmtree(memory.drive.state)
    with memory.drive.change("write") as tx:
        tx.write("a.md", b"a\n")
    assert (memory.drive.state / "lock").exists()
    assert (memory.root / "a.md").read_bytes() == b"a\n"
