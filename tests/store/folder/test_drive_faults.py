"""The drive's delete and rename under disk faults, and the versions a failed write must not lose.

Real faults: the permission faults come from running the call as an unprivileged user (``setpriv`` to
``nobody``) on a root made world-accessible under /tmp, with a folder made 0500; the part-way folder
delete comes from an immutable file (``chattr +i``); the race is a real file made between the free check
and the rename. Only the ENOSPC of the failed write is injected (at the temp file, after the versions are
kept: filling a disk between those two steps cannot be timed).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import fsmem
import fsmem._store.folder.change
from fsmem._env.config import Settings

# Made in the child as ``nobody``: the memory with its files, a folder made 0500, then one call; the
# call's result is printed as JSON (a traceback instead fails the test).
_AS_NOBODY = """
import json, os, sys
import fsmem
root, folder, request = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
memory = fsmem.open(root, create=True)
run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
for path in ("notes/a.md", "notes/sub/b.md"):
    assert run.call({"command": "write", "path": path, "content": "# " + path + "\\n"})["ok"]
os.chmod(os.path.join(root, folder), 0o500)
print(json.dumps(run.call(request)))
"""


@pytest.fixture
def open_tmp() -> Iterator[Path]:
    """A folder under /tmp that ``nobody`` may enter and write in (pytest's own tmp is root's alone)."""
    if os.geteuid() != 0:
        pytest.skip("running a call as another user needs root")
    folder = Path(tempfile.mkdtemp(dir="/tmp", prefix="fsmem-nobody-"))
    os.chmod(folder, 0o777)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _call_as_nobody(top: Path, folder: str, request: dict[str, Any]) -> tuple[Path, dict[str, Any]]:
    root = top / "root"
    done = subprocess.run(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable, "-c", _AS_NOBODY]
        + [str(root), folder, json.dumps(request)],
        capture_output=True,
        text=True,
        check=False,
        cwd=top,
    )
    assert done.returncode == 0, done.stderr
    return root, json.loads(done.stdout)


def _log(root: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (root / ".fsmem" / "log.jsonl").read_text().splitlines() if line.strip()]


def _changes(root: Path, command: str) -> list[dict[str, Any]]:
    return [entry for entry in _log(root) if entry["command"] == command]


def _kept(root: Path, path: str) -> list[str]:
    """The kept versions of ``path`` on disk, less its live copy (what fsmem last wrote there)."""
    folder = root / ".fsmem" / "versions" / path
    if not folder.is_dir():
        return []
    return sorted(item.name for item in folder.iterdir() if item.is_file() and not item.name.endswith("-live.md"))


def test_a_folder_delete_with_a_subfolder_it_may_not_change_is_refused_and_changes_nothing(open_tmp: Path) -> None:
    root, result = _call_as_nobody(open_tmp, "notes/sub", {"command": "delete", "path": "notes"})
    assert result["error"]["code"] == "STORAGE", result
    assert "nothing was changed" in result["error"]["message"]
    assert (root / "notes/a.md").read_text() == "# notes/a.md\n"
    assert (root / "notes/sub/b.md").read_text() == "# notes/sub/b.md\n"
    assert _changes(root, "delete") == []
    assert _kept(root, "notes/a.md") == [] and _kept(root, "notes/sub/b.md") == []


def test_deleting_a_file_in_a_folder_it_may_not_change_is_refused_and_changes_nothing(open_tmp: Path) -> None:
    root, result = _call_as_nobody(open_tmp, "notes/sub", {"command": "delete", "path": "notes/sub/b.md"})
    assert result["error"]["code"] == "STORAGE", result
    assert "nothing was changed" in result["error"]["message"]
    assert (root / "notes/sub/b.md").read_text() == "# notes/sub/b.md\n"
    assert _changes(root, "delete") == []
    assert _kept(root, "notes/sub/b.md") == []


def test_renaming_a_file_out_of_a_folder_it_may_not_change_is_refused_and_changes_nothing(open_tmp: Path) -> None:
    request = {"command": "rename", "path": "notes/sub/b.md", "new_path": "moved.md"}
    root, result = _call_as_nobody(open_tmp, "notes/sub", request)
    assert result["error"]["code"] == "STORAGE", result
    assert "nothing was changed" in result["error"]["message"]
    assert (root / "notes/sub/b.md").read_text() == "# notes/sub/b.md\n"
    assert os.stat(root / "notes/sub/b.md").st_nlink == 1
    assert not os.path.lexists(root / "moved.md")
    assert _changes(root, "rename") == []


def test_a_folder_delete_stopped_part_way_logs_only_what_it_removed(root: Path) -> None:
    memory = fsmem.open(root)
    run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
    for path in ("notes/a.md", "notes/sub/b.md", "notes/sub/c.md"):
        assert run.call({"command": "write", "path": path, "content": f"# {path}\n"})["ok"]
    stuck = root / "notes/sub/b.md"
    made = subprocess.run(["chattr", "+i", str(stuck)], capture_output=True, text=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"this file system cannot make a file immutable ({made.stderr.strip()})")
    try:
        result = run.call({"command": "delete", "path": "notes"})
    finally:
        subprocess.run(["chattr", "-i", str(stuck)], check=True)
    memory.close()
    assert result["error"]["code"] == "STORAGE", result
    deleted = {entry["path"] for entry in _changes(root, "delete")}
    for path in ("notes/a.md", "notes/sub/b.md", "notes/sub/c.md"):
        gone = not (root / path).exists()
        assert (path in deleted) == gone, path  # the log and the disk agree
        assert bool(_kept(root, path)) == gone, path  # a version is kept of what was removed only
    assert stuck.read_text() == "# notes/sub/b.md\n"


def test_a_destination_made_by_a_person_after_the_free_check_is_exists_and_changes_nothing(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = fsmem.open(root)
    run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
    assert run.call({"command": "write", "path": "notes/a.md", "content": "# A\n"})["ok"]
    real_check = memory.drive.check_free

    def then_a_person_saves(destination: str, label: str = "the new path") -> None:
        real_check(destination, label)
        if label == "the new path":  # the drive's own check, the last before the rename
            (root / destination).write_text("# a person's note\n")

    monkeypatch.setattr(memory.drive, "check_free", then_a_person_saves)
    result = run.call({"command": "rename", "path": "notes/a.md", "new_path": "b.md"})
    memory.close()
    assert result["error"]["code"] == "EXISTS", result
    assert (root / "b.md").read_text() == "# a person's note\n"
    assert (root / "notes/a.md").read_text() == "# A\n"
    assert os.stat(root / "notes/a.md").st_nlink == 1
    assert _changes(root, "rename") == []


def test_a_write_that_fails_after_keeping_loses_none_of_the_kept_versions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "root"
    memory = fsmem.open(root, create=True, settings=Settings(durable=False, versions_kept=3))
    run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
    for number in range(4):  # the first makes the file; the next three keep 3 versions
        assert run.call({"command": "write", "path": "notes.md", "content": f"# Notes {number}\n"})["ok"]
    kept = {name: (root / ".fsmem/versions/notes.md" / name).read_bytes() for name in _kept(root, "notes.md")}
    assert len(kept) == 3

    def full(target: Path, data: bytes, **options: Any) -> Path:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(target))

    with monkeypatch.context() as patch:
        patch.setattr(fsmem._store.folder.change, "write_temp", full)
        result = run.call({"command": "write", "path": "notes.md", "content": "# Notes 4\n"})
    assert result["error"]["code"] == "STORAGE" and "nothing was changed" in result["error"]["message"]
    assert {name: (root / ".fsmem/versions/notes.md" / name).read_bytes() for name in _kept(root, "notes.md")} == kept
    assert (root / "notes.md").read_text() == "# Notes 3\n"
    assert run.call({"command": "write", "path": "notes.md", "content": "# Notes 4\n"})["ok"]
    assert len(_kept(root, "notes.md")) == 3  # a write that succeeds still trims to versions_kept
    memory.close()
