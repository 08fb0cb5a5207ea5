"""Fast by default and fresh: a process's first search starts a watcher; hand edits keep what they
replaced; searches never wait behind writers; files that are not regular never hang a search."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

import fsmem
from fsmem._env.config import Settings
from fsmem._core.versions import version_of
from fsmem._index.freshness import Freshness
from fsmem._index.state import heartbeat_file
from tests.conftest import REPO, run_fsmem, write


def wait_until(condition, timeout: float = 15.0) -> None:
    """Poll until ``condition()`` holds (a watcher works asynchronously); fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.02)


def paths(hits) -> list[str]:
    return [hit.path for hit in hits]


@pytest.fixture
def memory(tmp_path: Path):
    """A memory as a long-lived process opens it: with the default settings (watching on)."""
    memory = fsmem.open(tmp_path / "root", create=True, settings=Settings(durable=False))
    write(memory.root, "MEMORY.md", "# Project\n\nWe deploy on Fridays.\n")
    yield memory
    memory.close()


def count_comparisons(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = Freshness.reconcile

    def counting(self):
        calls.append(1)
        return real(self)

    monkeypatch.setattr(Freshness, "reconcile", counting)
    return calls


def test_the_first_search_starts_a_watcher_and_later_ones_skip_the_comparison(memory, monkeypatch) -> None:
    assert paths(memory.search("fridays")) == ["MEMORY.md"]
    assert memory.index.status()["watcher"] is True
    compared = count_comparisons(monkeypatch)
    for _ in range(5):
        assert paths(memory.search("fridays")) == ["MEMORY.md"]
    assert compared == []
    write(memory.root, "notes/plan.md", "# Plan\n\nThe okapi launch.\n")  # a hand edit: the watcher finds it
    wait_until(lambda: paths(memory.search("okapi")) == ["notes/plan.md"])


def test_a_write_through_fsmem_is_found_at_once_without_a_comparison(memory, monkeypatch) -> None:
    memory.search("fridays")
    compared = count_comparisons(monkeypatch)
    run = memory.run()
    assert run.call({"command": "write", "path": "seo/a.md", "content": "# A\n\nquokka\n"})["ok"]
    assert paths(memory.search("quokka")) == ["seo/a.md"]
    assert compared == []


def test_a_folder_the_watcher_named_is_indexed_again_only_when_something_under_it_differs(memory) -> None:
    """A write into a new folder: the watcher names the folder until its batch runs; a search meanwhile
    must not re-index (and commit) the folder whole when the index holds every file in it already."""
    run = memory.run()
    assert run.call({"command": "write", "path": "seo/a.md", "content": "# A\n\nquokka\n"})["ok"]
    assert paths(memory.search("quokka")) == ["seo/a.md"]
    assert memory.index.refresh(["seo"]) == 0
    write(memory.root, "seo/b.md", "# B\n\nwombat\n")  # a file the index does not hold yet
    assert memory.index.refresh(["seo"]) == 2
    assert paths(memory.search("wombat")) == ["seo/b.md"]
    (memory.root / "seo" / "b.md").unlink()  # a file the index holds, gone
    assert memory.index.refresh(["seo"]) >= 1
    assert paths(memory.search("wombat")) == []


def test_a_hand_edit_in_a_folder_the_watcher_named_keeps_the_text_it_replaced(memory) -> None:
    """A folder moved out, edited and moved back is named by the watcher as the folder alone."""
    run = memory.run()
    before = "# A\n\nquokka\n"
    assert run.call({"command": "write", "path": "seo/a.md", "content": before})["ok"]
    assert paths(memory.search("quokka")) == ["seo/a.md"]
    write(memory.root, "seo/a.md", "# A\n\nthe numbat, by hand\n")
    assert memory.index.refresh(["seo"]) >= 1
    assert versions_of(memory, "seo/a.md").get(version_of(before.encode())) == before.encode()
    assert [entry.path for entry in memory.log() if entry.command == "hand_edit"] == ["seo/a.md"]


def test_closing_a_memory_stops_its_watcher(memory) -> None:
    memory.search("fridays")
    assert heartbeat_file(memory.drive.state).exists()
    memory.close()
    assert not heartbeat_file(memory.drive.state).exists()
    assert memory.index.status()["watcher"] is False
    write(memory.root, "late.md", "# Late\n\nwombat\n")
    assert paths(memory.search("wombat")) == ["late.md"]  # compared: no watcher vouches any more


def test_where_watching_cannot_start_the_comparison_stays_with_one_warning(memory, monkeypatch) -> None:
    from watchdog.observers import Observer

    def refuse(*args, **kwargs):
        raise OSError(28, "inotify watch limit reached")

    monkeypatch.setattr(Observer, "schedule", refuse)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert paths(memory.search("fridays")) == ["MEMORY.md"]
        write(memory.root, "b.md", "# B\n\nbilby\n")
        assert paths(memory.search("bilby")) == ["b.md"]  # compared: found without a watcher
    told = [str(w.message) for w in caught]
    assert len(told) == 1 and "every search asks what changed" in told[0], told


def versions_of(memory, path: str) -> dict[str, bytes]:
    return {info.version: info.file.read_bytes() for info in memory.versions(path)}


@pytest.mark.parametrize("watching", [True, False], ids=["by the watcher", "by the pre-search check"])
def test_a_hand_edit_keeps_the_text_it_replaced(tmp_path: Path, watching: bool) -> None:
    memory = fsmem.open(tmp_path, create=True, settings=Settings(durable=False, watch=watching))
    try:
        run = memory.run()
        before = "---\nsummary: plans\n---\n# Plan\n\nThe okapi launch is on Friday.\n"
        assert run.call({"command": "write", "path": "plan.md", "content": before})["ok"]
        write(tmp_path, "hand.md", "# Hand\n\nmade by a person, bilby\n")
        assert paths(memory.search("okapi")) == ["plan.md"]
        assert paths(memory.search("bilby")) == ["hand.md"]
        write(tmp_path, "plan.md", "# Plan\n\nThe launch moved to Monday.\n")  # a person's editor
        write(tmp_path, "hand.md", "# Hand\n\nrewritten\n")
        wait_until(lambda: paths(memory.search("monday")) == ["plan.md"]
                   and paths(memory.search("rewritten")) == ["hand.md"])
        kept = versions_of(memory, "plan.md")
        assert kept.get(version_of(before.encode())) == before.encode()  # named by its real hash
        assert versions_of(memory, "hand.md") == {
            version_of(b"# Hand\n\nmade by a person, bilby\n"): b"# Hand\n\nmade by a person, bilby\n"}
        edits = [entry for entry in memory.log() if entry.command == "hand_edit"]
        assert sorted(entry.path for entry in edits) == ["hand.md", "plan.md"]
        assert memory.revert("plan.md", version_of(before.encode()))
        assert (tmp_path / "plan.md").read_text() == before
    finally:
        memory.close()


def test_a_write_through_fsmem_is_not_taken_for_a_hand_edit(tmp_path: Path) -> None:
    memory = fsmem.open(tmp_path, create=True, settings=Settings(durable=False, watch=False))
    run = memory.run()
    assert run.call({"command": "write", "path": "a.md", "content": "# A\n\nfirst\n"})["ok"]
    memory.search("first")
    other = fsmem.open(tmp_path, settings=Settings(durable=False, watch=False))  # another writer
    other_run = other.run()
    assert other_run.call({"command": "read", "path": "a.md"})["ok"]
    assert other_run.call({"command": "write", "path": "a.md", "content": "# A\n\nsecond\n"})["ok"]
    memory.index.reconcile()  # a comparison that sees the change before the pending list is applied
    assert paths(memory.search("second")) == ["a.md"]
    assert [entry.command for entry in memory.log() if entry.path == "a.md"] == ["write", "write"]


def test_fifos_and_devices_in_the_root_are_never_opened(tmp_path: Path) -> None:
    memory = fsmem.open(tmp_path, create=True, settings=Settings(durable=False, watch=False))
    write(tmp_path, "MEMORY.md", "# Project\n\nThe okapi plan.\n")
    os.mkfifo(tmp_path / "fifo.md")
    os.mkfifo(tmp_path / "notes-fifo.md")
    if os.geteuid() == 0:  # a /dev/zero twin: reading it never ends
        os.mknod(tmp_path / "zero.md", stat.S_IFCHR | 0o666, os.makedev(1, 5))
    assert paths(memory.search("okapi")) == ["MEMORY.md"]
    # In other processes, bounded: a search that opened a FIFO would hang, one that read a device
    # would never end.
    for args in (["search", "okapi"], ["search", "--regex", "okapi"], ["index", "rebuild", "--json"]):
        done = run_fsmem(*args, "--root", str(tmp_path), timeout=60)
        assert done.returncode == 0, done.stderr
    assert json.loads(run_fsmem("index", "status", "--json", "--root", str(tmp_path)).stdout)["files"] == 1
    with memory.watch(debounce=0.05):  # a watcher told of a FIFO created skips it too
        os.mkfifo(tmp_path / "later.md")
        write(tmp_path, "after.md", "# After\n\nbilby\n")
        wait_until(lambda: paths(memory.index.search("bilby", fresh=False)) == ["after.md"])
    memory.close()


HOLDER = """
import sys, fsmem
memory = fsmem.open(sys.argv[1])
with memory.drive.locked():
    print("held", flush=True)
    sys.stdin.read()
"""


def test_a_search_never_waits_behind_a_writer_and_still_finds_every_returned_write(tmp_path: Path) -> None:
    memory = fsmem.open(tmp_path, create=True, settings=Settings(durable=False, watch=False))
    memory.search("anything")  # the index exists
    (tmp_path / ".fsmem" / "config.toml").write_text("lock_timeout = 1.0\n", encoding="utf-8")
    run = memory.run()
    assert run.call({"command": "write", "path": "seo/plan.md", "content": "# Plan\n\nzephyrine\n"})["ok"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    env["PYTHONPATH"] = str(REPO)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        # Another process searches while a writer holds the root lock: it does not wait for the lock
        # (it would get BUSY after lock_timeout), and it finds the write that returned before.
        found = run_fsmem("search", "zephyrine", "--json", "--root", str(tmp_path))
        assert found.returncode == 0, found.stderr
        assert [hit["path"] for hit in json.loads(found.stdout)] == ["seo/plan.md"]
        assert paths(memory.search("zephyrine")) == ["seo/plan.md"]
    finally:
        holder.communicate("", timeout=30)
    assert holder.returncode == 0


def test_fsmem_watch_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    fsmem.open(tmp_path, create=True).search("anything")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    env["PYTHONPATH"] = str(REPO)
    watcher = subprocess.Popen([sys.executable, "-m", "fsmem", "watch", "--root", str(tmp_path)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        wait_until(lambda: heartbeat_file(tmp_path / ".fsmem").exists(), timeout=30)
        watcher.send_signal(signal.SIGTERM)
        watcher.communicate(timeout=30)
    finally:
        if watcher.poll() is None:
            watcher.kill()
            watcher.communicate()
    assert watcher.returncode == 0
    assert not heartbeat_file(tmp_path / ".fsmem").exists()


@pytest.mark.parametrize("watching", [True, False], ids=["by the watcher", "by the pre-search check"])
def test_a_second_hand_edit_keeps_the_text_the_first_one_wrote(tmp_path: Path, watching: bool) -> None:
    """The first hand edit's keeping noted the file for the index as a change through fsmem, so the next
    search re-read it blindly and the second hand edit's replaced text (the first one's) was lost."""
    memory = fsmem.open(tmp_path, create=True, settings=Settings(durable=False, watch=watching))
    try:
        assert memory.run().call({"command": "write", "path": "p.md", "content": "# P\n\nalpha okapi\n"})["ok"]
        assert paths(memory.search("okapi")) == ["p.md"]
        texts = ["# P\n\nbeta bilby\n", "# P\n\ngamma quokka\n", "# P\n\ndelta numbat\n"]
        for text in texts:
            write(tmp_path, "p.md", text)
            word = text.split()[-1]
            wait_until(lambda word=word: paths(memory.search(word)) == ["p.md"])
        kept = versions_of(memory, "p.md")
        for text in ["# P\n\nalpha okapi\n", *texts[:-1]]:
            assert kept.get(version_of(text.encode())) == text.encode(), text
        edits = [(entry.before, entry.after) for entry in memory.log() if entry.command == "hand_edit"]
        chain = [version_of(text.encode()) for text in ["# P\n\nalpha okapi\n", *texts]]
        assert edits == list(zip(chain, chain[1:]))
    finally:
        memory.close()
