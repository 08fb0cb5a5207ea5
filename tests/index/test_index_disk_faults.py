"""A search on a full disk: it answers from the index's last commit, with a warning, or refuses with
STORAGE; never a raw OSError. A real full disk where the machine allows it (a small tmpfs filled to its
last page; mounting needs root, so without it those tests are skipped with that reason), and the same
fault injected at the lowest layer (``os.write`` failing with ENOSPC), which runs everywhere."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

import fsmem
from fsmem._index.index import IndexWarning
from tests.conftest import fill_disk, run_fsmem




def _memory(root: Path, search: bool = True) -> fsmem.Memory:
    memory = fsmem.open(root, create=True)
    run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
    assert run.call({"command": "write", "path": "notes.md", "content": "# Notes\n\nneedle one\n"})["ok"]
    if search:
        assert [hit.path for hit in memory.search("needle")] == ["notes.md"]  # the index is committed
    return memory


def _search(memory: fsmem.Memory, query: str) -> dict:
    return memory.run(fsmem.Scope.chat(), thread_id="t-2").call({"command": "search", "query": query})


def test_a_search_on_a_full_disk_answers_from_the_last_commit_with_a_warning(small_fs: Path) -> None:
    root = small_fs / "root"
    _memory(root).close()
    filler = fill_disk(small_fs)
    (root / "notes.md").write_text("# Notes\n\nneedle two\n")  # a hand edit: its old text must be kept
    memory = fsmem.open(root)
    with pytest.warns(IndexWarning, match="could not be brought up to date .*no space is left on the device"):
        found = _search(memory, "needle")
    assert found["ok"] and [hit["path"] for hit in found["hits"]] == ["notes.md"], found
    assert "needle one" in found["hits"][0]["snippet"]  # what the last commit holds
    shell = run_fsmem("search", "needle", "--root", str(root))
    assert shell.returncode == 0 and "notes.md" in shell.stdout, shell
    assert "no space is left" in shell.stderr

    filler.unlink()  # space again: the edit is taken in, and what it replaced is kept
    assert [hit.path for hit in memory.search("two")] == ["notes.md"]
    assert memory.search("one") == []
    versions = memory.drive.versions("notes.md")
    assert len(versions) >= 1


def test_a_first_search_on_a_full_disk_is_refused_with_storage(small_fs: Path) -> None:
    root = small_fs / "root"
    _memory(root, search=False).close()
    filler = fill_disk(small_fs)
    memory = fsmem.open(root)
    found = _search(memory, "needle")  # no index yet, and no room to build one
    assert not found["ok"] and found["error"]["code"] == "STORAGE", found
    assert "no space is left on the device" in found["error"]["message"]
    shell = run_fsmem("search", "needle", "--root", str(root))
    assert shell.returncode not in (0, 2) and "STORAGE" in shell.stdout + shell.stderr, shell
    filler.unlink()
    assert [hit.path for hit in memory.search("needle")] == ["notes.md"]


def test_an_injected_enospc_under_a_search_answers_from_the_last_commit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    memory = fsmem.open(root, create=True)
    # Made by hand, so fsmem holds no copy of it: keeping what the edit below replaced takes room.
    (root / "notes.md").write_text("# Notes\n\nneedle one " + "x" * 200)
    assert [hit.path for hit in memory.search("needle")] == ["notes.md"]
    (root / "notes.md").write_text("# Notes\n\nneedle two " + "y" * 200 + "\n")
    real_write = os.write

    def full(fd: int, data: bytes) -> int:
        if len(data) > 100:  # the lock's short signature still fits; the kept version (220 bytes) does not
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    with monkeypatch.context() as patch:
        patch.setattr(os, "write", full)
        with pytest.warns(IndexWarning, match="no space is left on the device"):
            found = _search(memory, "needle")
        assert found["ok"] and [hit["path"] for hit in found["hits"]] == ["notes.md"], found
        assert "needle one" in found["hits"][0]["snippet"]
    assert [hit.path for hit in memory.search("two")] == ["notes.md"]


def test_a_commit_on_a_full_disk_keeps_the_last_one_and_rebuilds_nothing(small_fs: Path) -> None:
    root = small_fs / "root"
    _memory(root).close()
    generation = (root / ".fsmem" / "index" / "CURRENT").read_text()
    (root / "fresh.md").write_text("# Fresh\n\nneedle " + "word " * 3000 + "\n")  # new by hand: no version to keep
    filler = fill_disk(small_fs)
    memory = fsmem.open(root)
    with pytest.warns(IndexWarning, match="could not be brought up to date .*no space is left"):
        found = _search(memory, "needle")
    assert found["ok"] and [hit["path"] for hit in found["hits"]] == ["notes.md"], found
    assert (root / ".fsmem" / "index" / "CURRENT").read_text() == generation  # no rebuild on a full disk
    filler.unlink()
    assert sorted(hit.path for hit in memory.search("needle")) == ["fresh.md", "notes.md"]
