"""Disk and root faults are coded refusals that change nothing (issue 10, item 4).

Real faults where the machine allows it: a small tmpfs filled to the last page (ENOSPC) and the same
tmpfs remounted read-only (EROFS). Mounting needs root; without it those tests are skipped with that
reason, and the injected-fault tests below (``os.write`` failing with ENOSPC at the lowest layer) still
cover the same paths.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import fsmem
from tests.conftest import fill_disk
from fsmem._errors import Storage


def _snapshot(root: Path) -> dict[str, bytes]:
    """Every file under the root, ``.fsmem/`` included (the lock file's signature aside)."""
    from fsmem._index.committer import at_rest

    at_rest(30)  # the index's background commits of earlier changes are done first
    found = {}
    for folder, _, names in os.walk(root):
        for name in names:
            file = Path(folder, name)
            if file.relative_to(root).as_posix() in (".fsmem/lock", ".fsmem/crashed"):
                continue
            found[file.relative_to(root).as_posix()] = file.read_bytes()
    return found




def _memory_with_content(root: Path) -> fsmem.Memory:
    memory = fsmem.open(root, create=True)
    run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
    assert run.call({"command": "write", "path": "notes.md", "content": "# Notes\n\nneedle one\n"})["ok"]
    memory.facts.keep("Acme", "plan", "Acme is on the gold plan")
    memory.search("needle")  # the index exists
    return memory


def test_a_full_disk_refuses_write_edit_and_facts_keep_with_storage_and_changes_nothing(small_fs: Path) -> None:
    root = small_fs / "root"
    memory = _memory_with_content(root)
    run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
    assert run.call({"command": "read", "path": "notes.md"})["ok"]
    filler = fill_disk(small_fs)
    before = _snapshot(root)

    big = "# Notes\n\n" + "a line of text that needs space on the disk\n" * 600
    for request in ({"command": "write", "path": "notes.md", "content": big},
                    {"command": "write", "path": "notes.md", "old_text": "needle one", "new_text": big[9:]},
                    {"command": "write", "path": "new/file.md", "content": big}):
        result = run.call(request)
        assert not result["ok"] and result["error"]["code"] == "STORAGE", result
        assert "no space is left" in result["error"]["message"]
        assert "nothing was changed" in result["error"]["message"]
        assert _snapshot(root) == before
    with pytest.raises(Storage) as caught:
        memory.facts.keep("Acme", "plan", "Acme moved to the platinum plan " + "x" * 300)
    assert "nothing was changed" in caught.value.message or "steps before it" in caught.value.message

    filler.unlink()  # space again: the same calls go through
    assert run.call({"command": "write", "path": "notes.md", "content": big})["ok"]
    fsmem.open(root)  # opening repairs whatever a refused facts change began
    assert memory.facts.check() == []
    lines = [json.loads(line) for line in (root / ".fsmem" / "log.jsonl").read_text().splitlines()]
    assert lines[-1]["path"] == "notes.md"


def test_a_read_only_root_is_read_and_searched_and_changes_are_refused(small_fs: Path) -> None:
    root = small_fs / "root"
    _memory_with_content(root)
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True)
    before = _snapshot(root)

    memory = fsmem.open(root)
    run = memory.run(fsmem.Scope.chat(), thread_id="t-2")
    assert run.call({"command": "read", "path": "notes.md"})["ok"]
    found = run.call({"command": "search", "query": "needle"})
    assert found["ok"] and [hit["path"] for hit in found["hits"]] == ["notes.md"], found
    assert run.call({"command": "search", "query": "need.e", "regex": True})["hits"]
    refused = run.call({"command": "write", "path": "notes.md", "content": "# x\n"})
    assert refused["error"]["code"] == "STORAGE" and "read-only" in refused["error"]["message"]
    assert "nothing was changed" in refused["error"]["message"].lower()
    shell = subprocess.run([str(Path(os.sys.executable).parent / "fsmem"), "search", "needle", "--root",
                            str(root)], capture_output=True, text=True, check=False)
    assert shell.returncode == 0 and "notes.md" in shell.stdout, shell
    assert _snapshot(root) == before


def test_a_root_deleted_under_a_live_memory_is_refused_not_made_again(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = _memory_with_content(root)
    run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
    shutil.rmtree(root)
    result = run.call({"command": "write", "path": "notes.md", "content": "# Notes\n"})
    assert result["error"]["code"] == "STORAGE" and "is gone" in result["error"]["message"], result
    assert not root.exists()
    root.mkdir()  # an empty folder put where the root was is not the memory either
    result = run.call({"command": "write", "path": "notes.md", "content": "# Notes\n"})
    assert result["error"]["code"] == "STORAGE", result
    assert os.listdir(root) == []


def test_a_removed_state_folder_alone_is_made_again_private(tmp_path: Path) -> None:
    memory = _memory_with_content(tmp_path / "root")
    shutil.rmtree(memory.drive.state)
    with memory.drive.change("write") as tx:
        tx.write("a.md", b"a\n")
    assert os.stat(memory.drive.state).st_mode & 0o777 == 0o700


# --- injected at the lowest layer: runs everywhere ----------------------------------------------------


def test_an_injected_enospc_in_os_write_is_a_storage_refusal_that_changes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    memory = _memory_with_content(root)
    run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
    assert run.call({"command": "read", "path": "notes.md"})["ok"]
    before = _snapshot(root)

    real_write = os.write

    def full(fd: int, data: bytes) -> int:
        if len(data) > 100:  # the lock's short signature still fits; file contents do not
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    with monkeypatch.context() as patch:
        patch.setattr(os, "write", full)
        result = run.call({"command": "write", "path": "notes.md", "content": "# Notes\n\n" + "x" * 200 + "\n"})
        assert result["error"]["code"] == "STORAGE" and "nothing was changed" in result["error"]["message"]
        with pytest.raises(Storage):
            memory.facts.keep("Acme", "plan", "Acme moved to the platinum plan " + "y" * 200)
    assert _snapshot(root) == before
    assert run.call({"command": "write", "path": "notes.md", "content": "# Notes\n\n" + "x" * 200 + "\n"})["ok"]
