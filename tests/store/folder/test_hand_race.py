"""A person's save landing inside a tool write is never lost (issue 10, item 1).

The drive calls ``in_write_window(path)`` between the version check (under the lock) and the moment
the new file is swapped in: the hook saves as a person would, at that exact moment — by rename (vim
with backupcopy=no, ``mv``), in place (truncate + write into the same inode), or through a handle an
editor opened before the call. Whatever they saved must come out kept as a version named by its own
hash, logged as a hand edit, reported by the call, and revertible.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

import fsmem
from fsmem._core.versions import version_of

PERSON = b"# Notes\n\nThe person's own words, saved from an editor.\n"


def _save_by_rename(file: Path, data: bytes) -> None:
    temp = file.with_name(file.name + ".swp~")
    temp.write_bytes(data)
    os.rename(temp, file)


def _save_in_place(file: Path, data: bytes) -> None:
    with open(file, "r+b") as handle:
        handle.truncate(0)
        handle.write(data)


def _every_kept_version_hashes_to_its_name(root: Path) -> int:
    """Checks every kept file, live copies (what fsmem last wrote, ``-live.md``) included; counts the
    kept versions, not the live copies."""
    count = 0
    for folder, _, names in os.walk(root / ".fsmem" / "versions"):
        for name in names:
            if name.startswith("."):
                continue
            version = name.split("-")[1]
            assert version_of(Path(folder, name).read_bytes()) == version, (folder, name)
            count += not name.endswith("-live.md")
    return count


def _hand_lines(root: Path, path: str) -> list[dict]:
    lines = [json.loads(line) for line in (root / ".fsmem" / "log.jsonl").read_text().splitlines()]
    return [line for line in lines if line["path"] == path and line.get("hand")]


def _assert_kept(memory: fsmem.Memory, result: dict, path: str, saved: bytes) -> None:
    assert result["ok"], result
    kept = result["hand_edit_kept"]
    assert kept["version"] == version_of(saved) and kept["path"] == path
    assert "A person saved" in result["text"] and kept["version"] in result["text"]
    versions = {info.version: info for info in memory.versions(path)}
    assert versions[version_of(saved)].file.read_bytes() == saved
    hand = _hand_lines(memory.root, path)
    assert hand and hand[-1]["after"] == version_of(saved) and hand[-1]["command"] == "hand"
    # the write's own line follows from what the person saved: the chain of versions holds
    lines = [json.loads(line) for line in (memory.root / ".fsmem" / "log.jsonl").read_text().splitlines()]
    assert lines[-1]["before"] == version_of(saved) and lines[-1]["after"] == result["version"]
    assert _every_kept_version_hashes_to_its_name(memory.root) >= 1
    memory.revert(path, version_of(saved))
    assert (memory.root / path).read_bytes() == saved


@pytest.mark.parametrize("save", [_save_by_rename, _save_in_place], ids=["rename", "in-place"])
def test_a_save_in_the_window_of_a_write_is_kept_reported_and_revertible(
        tmp_path: Path, save: Callable[[Path, bytes], None]) -> None:
    memory = fsmem.open(tmp_path / "root", create=True)
    run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
    assert run.call({"command": "write", "path": "notes.md", "content": "# Notes\n\nfirst\n"})["ok"]
    file = memory.root / "notes.md"
    memory.drive.in_write_window = lambda path: save(file, PERSON)

    result = run.call({"command": "write", "path": "notes.md", "content": "# Notes\n\nthe agent's\n"})

    memory.drive.in_write_window = None
    assert file.read_bytes() == b"# Notes\n\nthe agent's\n"
    _assert_kept(memory, result, "notes.md", PERSON)


def test_a_save_through_a_handle_held_open_is_kept_and_later_saves_never_rewrite_a_version(
        tmp_path: Path) -> None:
    memory = fsmem.open(tmp_path / "root", create=True)
    run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
    assert run.call({"command": "write", "path": "notes.md", "content": "# Notes\n\nfirst\n"})["ok"]
    file = memory.root / "notes.md"
    editor = open(file, "r+b")  # noqa: SIM115 - an editor that opened the file before the agent's call

    def save_through_the_handle(path: str) -> None:
        editor.seek(0)
        editor.truncate(0)
        editor.write(PERSON)
        editor.flush()

    memory.drive.in_write_window = save_through_the_handle
    result = run.call({"command": "write", "path": "notes.md", "content": "# Notes\n\nthe agent's\n"})
    memory.drive.in_write_window = None
    try:
        # The editor saves again through the same handle, later: no kept version may change with it.
        editor.seek(0)
        editor.truncate(0)
        editor.write(b"# Notes\n\nsaved again through the old handle\n")
        editor.flush()
    finally:
        editor.close()
    _assert_kept(memory, result, "notes.md", PERSON)


def test_a_file_a_person_creates_in_the_window_of_a_create_is_kept(tmp_path: Path) -> None:
    memory = fsmem.open(tmp_path / "root", create=True)
    run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
    file = memory.root / "new.md"
    memory.drive.in_write_window = lambda path: _save_by_rename(file, PERSON)

    result = run.call({"command": "write", "path": "new.md", "content": "# New\n"})

    memory.drive.in_write_window = None
    assert file.read_bytes() == b"# New\n"
    _assert_kept(memory, result, "new.md", PERSON)


def test_a_save_between_the_check_and_the_write_keeps_both_texts(tmp_path: Path) -> None:
    """Saved after the caller read the file under the lock, before ``tx.write`` reads it again."""
    memory = fsmem.open(tmp_path / "root", create=True)
    (memory.root / "a.md").write_bytes(b"checked\n")
    with memory.drive.change("write", thread="t-1") as tx:
        assert tx.read("a.md") == b"checked\n"
        _save_in_place(memory.root / "a.md", PERSON)
        tx.write("a.md", b"new\n")
    assert [edit.version for edit in tx.hand_edits] == [version_of(PERSON)]
    kept = {info.version: info.file.read_bytes() for info in memory.versions("a.md")}
    assert kept[version_of(PERSON)] == PERSON and kept[version_of(b"checked\n")] == b"checked\n"
    hand = _hand_lines(memory.root, "a.md")
    assert [(line["before"], line["after"]) for line in hand] == [
        (version_of(b"checked\n"), version_of(PERSON))]
    assert _every_kept_version_hashes_to_its_name(memory.root) == 2


def test_a_kept_version_is_a_copy_an_editor_holding_the_old_file_cannot_rewrite(tmp_path: Path) -> None:
    memory = fsmem.open(tmp_path / "root", create=True)
    run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
    assert run.call({"command": "write", "path": "a.md", "content": "# A\n\nzero\n"})["ok"]
    with open(memory.root / "a.md", "r+b") as editor:  # opened before the agent's write
        assert run.call({"command": "write", "path": "a.md", "content": "# A\n\none\n"})["ok"]
        editor.truncate(0)
        editor.write(PERSON)  # saved later, into the file the write replaced
    (kept,) = memory.versions("a.md")
    assert kept.file.read_bytes() == b"# A\n\nzero\n" and os.stat(kept.file).st_nlink == 1
    assert _every_kept_version_hashes_to_its_name(memory.root) == 1


def test_a_file_a_person_removes_in_the_window_is_written_and_its_content_kept(tmp_path: Path) -> None:
    memory = fsmem.open(tmp_path / "root", create=True)
    run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
    assert run.call({"command": "write", "path": "a.md", "content": "# A\n\nfirst\n"})["ok"]
    memory.drive.in_write_window = lambda path: os.unlink(memory.root / path)
    result = run.call({"command": "write", "path": "a.md", "content": "# A\n\nsecond\n"})
    memory.drive.in_write_window = None
    assert result["ok"] and "hand_edit_kept" not in result, result
    assert (memory.root / "a.md").read_text() == "# A\n\nsecond\n"
    assert [v.file.read_text() for v in memory.versions("a.md")] == ["# A\n\nfirst\n"]
    assert [(line["before"], line["after"]) for line in _hand_lines(memory.root, "a.md")] == [
        (version_of(b"# A\n\nfirst\n"), None)]


def test_an_in_place_save_that_straddles_the_swap_is_kept(tmp_path: Path) -> None:
    """The editor opened (and truncated) the file before the swap and writes just after it: its text
    lands in the file the write swapped out, which is read once more before it is removed."""
    memory = fsmem.open(tmp_path / "root", create=True)
    run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
    assert run.call({"command": "write", "path": "notes.md", "content": "# Notes\n\nfirst\n"})["ok"]
    editor = open(memory.root / "notes.md", "r+b")  # noqa: SIM115 - held across the write

    def write_after_the_swap(path: str) -> None:
        editor.truncate(0)
        editor.write(PERSON)
        editor.flush()

    memory.drive.after_swap = write_after_the_swap
    try:
        result = run.call({"command": "write", "path": "notes.md", "content": "# Notes\n\nthe agent's\n"})
    finally:
        memory.drive.after_swap = None
        editor.close()
    assert result["ok"] and result["hand_edit_kept"]["version"] == version_of(PERSON), result
    kept = {info.version: info.file.read_bytes() for info in memory.versions("notes.md")}
    assert kept[version_of(PERSON)] == PERSON
    assert _every_kept_version_hashes_to_its_name(memory.root) == 2
