"""The watcher keeps the index current for long-lived processes (real inotify, real files)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from watchdog.events import FileCreatedEvent, FileMovedEvent

import fsmem
from fsmem._index.freshness import Freshness
from fsmem._index.state import heartbeat_file, watcher_health
from fsmem._index.watch import Watcher
from tests.conftest import REPO, index_of, run_fsmem, write


def wait_until(condition, timeout: float = 15.0) -> None:
    """Poll until ``condition()`` holds (events arrive asynchronously); fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.02)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / ".fsmem").mkdir()
    write(tmp_path, "MEMORY.md", "# Project\n\nWe deploy on Fridays.\n")
    write(tmp_path, "seo/titles.md", "# Titles\n\nUnder 60 characters.\n")
    return tmp_path


def found(index, query: str) -> list[str]:
    return [hit.path for hit in index.search(query, fresh=False)]  # only what the watcher indexed


@pytest.fixture
def watched(root: Path):
    index = index_of(root)
    with Watcher(index, debounce=0.05, heartbeat=0.2) as watcher:
        yield index, watcher


@pytest.mark.slow
def test_an_atomic_rename_save_is_indexed(root: Path, watched) -> None:
    index, _ = watched
    temp = root / "seo/.titles.md.tmp123"
    temp.write_text("# Titles\n\nShort and punchy.\n")
    os.replace(temp, root / "seo/titles.md")
    wait_until(lambda: found(index, "punchy") == ["seo/titles.md"])
    assert found(index, "characters") == []


@pytest.mark.slow
def test_an_in_place_save_is_indexed(root: Path, watched) -> None:
    index, _ = watched
    with open(root / "MEMORY.md", "r+", encoding="utf-8") as handle:
        handle.seek(0)
        handle.write("# Project\n\nWe deploy on Mondays.\n")
        handle.truncate()
    wait_until(lambda: found(index, "mondays") == ["MEMORY.md"])
    assert found(index, "fridays") == []


@pytest.mark.slow
def test_a_folder_moved_out_and_back_in(root: Path, watched, tmp_path_factory) -> None:
    index, _ = watched
    outside = tmp_path_factory.mktemp("outside")
    shutil.move(str(root / "seo"), str(outside / "seo"))
    wait_until(lambda: found(index, "characters") == [])
    shutil.move(str(outside / "seo"), str(root / "moved"))
    wait_until(lambda: found(index, "characters") == ["moved/titles.md"])


@pytest.mark.slow
def test_a_burst_of_changes_is_applied_in_few_batches(root: Path, watched) -> None:
    index, watcher = watched
    before = watcher.batches
    for i in range(30):
        write(root, f"burst/file{i}.md", f"# File {i}\n\nburstword{i}\n")
    wait_until(lambda: len(found(index, "burst")) == 10 and found(index, "burstword29") == ["burst/file29.md"])
    assert watcher.batches - before < 30


@pytest.mark.slow
def test_lost_events_are_recovered_by_a_reconcile(root: Path, watched) -> None:
    index, watcher = watched
    watcher._observer.unschedule_all()  # from here on, no event arrives: as if the queue overflowed
    write(root, "MEMORY.md", "# Project\n\nlost update: kiwis\n")
    time.sleep(0.2)
    assert found(index, "kiwis") == []
    logging.getLogger("watchdog.observers.inotify_c").warning(
        "Inotify queue overflowed; filesystem events were lost")
    wait_until(lambda: found(index, "kiwis") == ["MEMORY.md"])
    wait_until(lambda: watcher.reconciles >= 1)


@pytest.mark.slow
def test_searches_skip_their_comparison_while_a_healthy_watcher_beats(root: Path, watched, monkeypatch) -> None:
    index, _ = watched
    wait_until(lambda: watcher_health(root / ".fsmem")[0])
    searcher = index_of(root)
    monkeypatch.setattr(Freshness, "reconcile", lambda self: pytest.fail("compared despite a healthy watcher"))
    assert [hit.path for hit in searcher.search("fridays")] == ["MEMORY.md"]


def test_temp_swap_and_hidden_files_are_ignored(root: Path) -> None:
    watcher = Watcher(index_of(root))
    for name in ("seo/.titles.md.swp", "seo/titles.md~", "seo/#titles.md#", ".fsmem/index/x.md",
                 "seo/4913", ".git/a.md", "photo.png"):
        watcher.on_any_event(FileCreatedEvent(str(root / name)))
    assert watcher._pending == set()
    watcher.on_any_event(FileMovedEvent(str(root / "seo/.titles.md.swp"), str(root / "seo/titles.md")))
    assert watcher._pending == {"seo/titles.md"}


def test_a_stopped_watcher_no_longer_vouches_for_the_index(root: Path) -> None:
    watcher = Watcher(index_of(root), heartbeat=0.1).start()
    wait_until(lambda: watcher_health(root / ".fsmem")[0])
    watcher.stop()
    assert not heartbeat_file(root / ".fsmem").exists()
    assert watcher_health(root / ".fsmem") == (False, None)


def test_memory_watch_runs_inside_the_harness_process(tmp_path: Path) -> None:
    memory = fsmem.open(tmp_path, create=True)
    with memory.watch(debounce=0.05) as watcher:
        assert isinstance(watcher, Watcher)
        write(tmp_path, "notes.md", "# Notes\n\nharness-side edit\n")
        wait_until(lambda: [h.path for h in memory.index.search("harness", fresh=False)] == ["notes.md"])


@pytest.mark.slow
def test_fsmem_watch_process(root: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.Popen([sys.executable, "-m", "fsmem", "watch", "--root", str(root), "--debounce", "0.05"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: watcher_health(root / ".fsmem")[0], timeout=20)
        result = run_fsmem("index", "status", "--json", "--root", str(root))
        assert result.returncode == 0, result.stderr
        status = json.loads(result.stdout)
        assert status["watcher"] is True and status["watcher_pid"] == proc.pid
        write(root, "brand.md", "# Brand\n\nteal and coral\n")
        wait_until(lambda: found(index_of(root), "coral") == ["brand.md"])
        result = run_fsmem("search", "coral", "--json", "--root", str(root))
        assert [hit["path"] for hit in json.loads(result.stdout)] == ["brand.md"]
    finally:
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=20)
    assert proc.returncode == 0, stderr
    assert stderr.startswith(f"Watching {root.resolve()}, serving searches (Ctrl-C to stop).")
    assert not heartbeat_file(root / ".fsmem").exists()
    assert not (root / ".fsmem" / "resident.sock").exists()  # its socket went with it


@pytest.mark.slow
def test_a_new_top_folder_is_watched_from_its_first_file(root: Path, watched) -> None:
    index, watcher = watched
    write(root, "fresh/deep/first.md", "# First\n\nearliest words\n")  # folder and file at once
    wait_until(lambda: found(index, "earliest") == ["fresh/deep/first.md"])
    write(root, "fresh/deep/second.md", "# Second\n\nlater words\n")  # through the new folder's watch
    wait_until(lambda: found(index, "later") == ["fresh/deep/second.md"])
    assert "fresh" in watcher._tops


def test_the_watcher_ignores_its_own_state_folder(root: Path) -> None:
    watcher = Watcher(index_of(root))
    watcher.on_any_event(FileCreatedEvent(str(root / ".fsmem/index/g-1/abc.md")))
    assert watcher._pending == set()


def test_a_watch_limit_degrades_to_periodic_comparisons(root: Path, monkeypatch) -> None:
    import errno

    from watchdog.observers import Observer

    def refuse(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "inotify watch limit reached")

    monkeypatch.setattr(Observer, "schedule", refuse)
    index = index_of(root)
    with Watcher(index, heartbeat=0.1) as watcher:
        assert watcher.reconcile_every == 5.0
        wait_until(lambda: (watcher_health(root / ".fsmem")[1] or {}).get("state") == "degraded")
        assert watcher_health(root / ".fsmem")[0] is False  # searches keep comparing for themselves
        write(root, "MEMORY.md", "# Project\n\nplums\n")
        assert [hit.path for hit in index_of(root).search("plums")] == ["MEMORY.md"]
