"""Faults under the index's commits: stray files a cut-short commit leaves, kills mid-commit, a full
disk. Each ends in a clean generation or a coded refusal, never an index that stays broken."""

from __future__ import annotations

import json
import os
import random
import signal
import time
import warnings
from pathlib import Path

import pytest

import fsmem
from fsmem._index import faults
from fsmem._index.index import IndexWarning
from fsmem._index.state import index_dir, read_current
from tests.conftest import run_fsmem
from tests.procs.common import read_json_line, spawn


def _generation(root: Path) -> Path:
    return index_dir(root / ".fsmem") / read_current(root / ".fsmem")["generation"]


def _plant_future_deletes(generation: Path, ahead: int = 40) -> list[Path]:
    """What a commit cut short leaves: ``<segment>.<opstamp>.del`` files for segments ``meta.json``
    names, at the opstamps the next commits will take."""
    meta = json.loads((generation / "meta.json").read_text())
    planted = []
    for segment in meta["segments"]:
        uuid = segment["segment_id"].replace("-", "")
        for stamp in range(meta["opstamp"] + 1, meta["opstamp"] + 1 + ahead):
            planted.append(generation / f"{uuid}.{stamp}.del")
            planted[-1].write_bytes(b"half a tombstone")
    return planted


def _tombstones(generation: Path) -> set[str]:
    return {name for name in os.listdir(generation) if name.endswith(".del")}


def _named_tombstones(generation: Path) -> set[str]:
    meta = json.loads((generation / "meta.json").read_text())
    return {f"{segment['segment_id'].replace('-', '')}.{segment['deletes']['opstamp']}.del"
            for segment in meta["segments"] if segment.get("deletes")}


@pytest.fixture
def memory(tmp_path: Path) -> fsmem.Memory:
    root = tmp_path / "root"
    memory = fsmem.open(root, create=True)
    run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
    for name in ("a", "b", "c"):
        assert run.call({"command": "write", "path": f"{name}.md", "content": f"# {name}\n\nneedle {name}\n"})["ok"]
    assert len(memory.search("needle")) == 3
    return memory


def test_stray_delete_files_past_meta_json_s_opstamp_do_not_wedge_search(memory: fsmem.Memory) -> None:
    root = memory.root
    _plant_future_deletes(_generation(root))
    (root / "a.md").write_text("# a\n\nneedle apricot\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # swept under the writer's lock: no rebuild, no warning
        assert [hit.path for hit in memory.search("apricot")] == ["a.md"]
    assert _tombstones(_generation(root)) == _named_tombstones(_generation(root))  # the strays are gone
    (root / "b.md").write_text("# b\n\nneedle banana\n")
    assert [hit.path for hit in fsmem.open(root).search("banana")] == ["b.md"]


def test_stray_delete_files_do_not_wedge_the_shell_or_a_watcher(memory: fsmem.Memory) -> None:
    root = memory.root
    _plant_future_deletes(_generation(root))
    (root / "a.md").write_text("# a\n\nneedle apricot\n")
    shell = run_fsmem("search", "apricot", "--root", str(root))
    assert shell.returncode == 0 and "a.md" in shell.stdout, shell
    _plant_future_deletes(_generation(root))
    (root / "b.md").write_text("# b\n\nneedle banana\n")
    watcher = fsmem.open(root).watch()  # its start reconciles: a commit
    watcher.stop()
    assert [hit.path for hit in memory.search("banana")] == ["b.md"]


def test_a_commit_that_fails_anyway_ends_in_a_rebuilt_generation(memory: fsmem.Memory,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever else makes a commit fail, the batch ends in a new generation built from the files."""
    root = memory.root
    monkeypatch.setattr(faults, "sweep_strays", lambda folder: 0, raising=False)  # the sweep misses them
    before = _generation(root)
    _plant_future_deletes(before)
    (root / "a.md").write_text("# a\n\nneedle apricot\n")
    with pytest.warns(IndexWarning, match=r"could not commit .*FileAlreadyExists.*rebuilt it from the \d+ files"):
        assert [hit.path for hit in memory.search("apricot")] == ["a.md"]
    assert _generation(root) != before and not before.exists()
    (root / "b.md").write_text("# b\n\nneedle banana\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [hit.path for hit in memory.search("banana")] == ["b.md"]
    shell = run_fsmem("search", "needle", "--root", str(root))
    assert shell.returncode == 0 and shell.stdout.count(".md") >= 3, shell


@pytest.mark.slow
def test_commits_killed_at_random_points_never_leave_the_index_broken(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = fsmem.open(root, create=True)
    (root / "k").mkdir()
    for no in range(40):
        (root / "k" / f"f{no}.md").write_text(f"# File {no}\n\nround r0 of file {no}\n")
    memory.search("r0")
    rng = random.Random(20261207)
    strays = 0
    for round_no in range(20):
        worker = spawn("../index/commit_worker.py", root)  # spawn runs tests/procs/<script>
        try:
            assert read_json_line(worker) == {"started": True}
            time.sleep(rng.uniform(0.05, 0.6))  # inside some commit, or between two
        finally:
            worker.send_signal(signal.SIGKILL)
            worker.wait(timeout=30)
        assert worker.returncode == -signal.SIGKILL, worker.stderr.read() if worker.stderr else ""
        generation = _generation(root)
        opstamp = json.loads((generation / "meta.json").read_text())["opstamp"]
        strays += sum(1 for name in os.listdir(generation)
                      if name.endswith(".del") and int(name.split(".")[1]) > opstamp)
        word = f"after{round_no}"
        (root / "k" / "f3.md").write_text(f"# File 3\n\n{word}\n")
        if round_no % 4 == 0:
            shell = run_fsmem("search", word, "--root", str(root))
            assert shell.returncode == 0 and "k/f3.md" in shell.stdout, (round_no, shell)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", IndexWarning)
                assert [hit.path for hit in fsmem.open(root).search(word)] == ["k/f3.md"], round_no
    print(f"20 kills; {strays} delete files past meta.json's opstamp found after them")
