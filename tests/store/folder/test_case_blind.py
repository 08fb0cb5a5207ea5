"""A file system that ignores case (macOS, Windows by default): ``memory.md`` is MEMORY.md there.

Every rule that guards a top file, a level folder or the facts must see the name as it is on disk, so
each protected call of tests/memory/test_protection.py is made again with its names in other cases. This
machine's file system counts case, so the drive is told it does not; it then looks every name up in
its folder, as it does on such a file system.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import fsmem
from fsmem._store.folder import jail as jail_module
from fsmem._store.folder.ondisk import is_case_blind, spelled
from tests.procs.common import diff, snapshot
from tests.memory import test_protection
from tests.memory.test_protection import AGENT, PROTECTED_CALLS, seen_run

root = test_protection.root  # the fixture: a root with an agent, a routine, top files and facts


@pytest.fixture
def case_blind(monkeypatch) -> None:
    monkeypatch.setattr(jail_module, "is_case_blind", lambda folder: True)


def other_case(path: str) -> str:
    """Every letter of the path in the other case, but the ``.md`` that the path rules read."""
    stem, dot_md = (path[:-3], ".md") if path.endswith(".md") else (path, "")
    return stem.swapcase() + dot_md


def in_other_case(request: dict) -> dict:
    return {key: other_case(value) if key in ("path", "new_path") else value for key, value in request.items()}


@pytest.mark.parametrize("request_", list(PROTECTED_CALLS.values()), ids=list(PROTECTED_CALLS))
def test_protected_calls_in_other_cases_are_refused_and_change_nothing(root: Path, case_blind,
                                                                       request_: dict) -> None:
    run = seen_run(root)
    before = snapshot(root)
    result = run.call(in_other_case(request_))
    assert result["ok"] is False and result["error"]["code"] == "PROTECTED", result
    assert snapshot(root) == before, diff(before, snapshot(root))


def test_a_top_file_named_in_another_case_is_the_top_file(root: Path, case_blind) -> None:
    run = seen_run(root)
    read = run.call({"command": "read", "path": "memory.md"})
    assert read["ok"] and read["path"] == "MEMORY.md" and "Field Notes" in read["text"]
    deleted = run.call({"command": "delete", "path": "Memory.md"})  # a top file is emptied, not removed
    assert deleted["ok"], deleted
    assert (root / "MEMORY.md").read_text(encoding="utf-8") == ""
    agent_top = run.call({"command": "read", "path": other_case(f"{AGENT}/MEMORY.md")})
    assert agent_top["ok"] and agent_top["path"] == f"{AGENT}/MEMORY.md"


def test_a_new_file_is_made_beside_its_folder_as_spelled_on_disk(root: Path, case_blind) -> None:
    run = seen_run(root)
    written = run.call({"command": "write", "path": "SEO/Ideas.md", "content": "# Ideas\n"})
    assert written["ok"] and written["path"] == "seo/Ideas.md", written
    assert (root / "seo" / "Ideas.md").is_file() and not (root / "SEO").exists()


def test_where_case_counts_other_cases_are_other_files(root: Path) -> None:
    assert fsmem.open(root).drive._jail.real("memory.md") == root.resolve() / "memory.md"
    assert is_case_blind(root) is False  # this machine's file system counts case
    run = seen_run(root)
    assert run.call({"command": "write", "path": "memory.md", "content": "# a topic\n"})["ok"]
    assert (root / "MEMORY.md").read_text(encoding="utf-8").startswith("# Project")


def test_spelled_finds_the_entry_a_name_stands_for(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text("x", encoding="utf-8")
    (tmp_path / "Caf\u0065\u0301.md").write_text("x", encoding="utf-8")  # decomposed, as macOS writes it
    folder = str(tmp_path)
    assert spelled(folder, "memory.md") == "MEMORY.md"
    assert spelled(folder, "MEMORY.md") == "MEMORY.md"
    assert spelled(folder, "CAFÉ.md") == "Caf\u0065\u0301.md"
    assert spelled(folder, "new.md") == "new.md"
    assert spelled(str(tmp_path / "missing"), "x.md") == "x.md"


def test_case_blindness_is_found_out_only_when_something_can_tell(tmp_path: Path) -> None:
    bare = tmp_path / "1234"
    bare.mkdir()
    assert is_case_blind(bare) is None  # no .fsmem yet, no letter in its name
    (bare / ".fsmem").mkdir()
    assert is_case_blind(bare) is False
    named = tmp_path / "Notes"
    named.mkdir()
    assert is_case_blind(named) is False


def test_a_path_through_a_link_is_spelled_as_on_disk_too(root: Path, case_blind) -> None:
    (root / "alias").symlink_to(root / AGENT)  # a link made by hand, to an agent's folder
    assert fsmem.open(root).drive.canonical("alias/memory.md") == f"{AGENT}/MEMORY.md"
    run = seen_run(root, f"{AGENT}/MEMORY.md")
    renamed = run.call({"command": "rename", "path": "alias/Memory.md", "new_path": "old.md"})
    assert renamed["error"]["code"] == "PROTECTED", renamed
    deleted = run.call({"command": "delete", "path": "alias/memory.md"})  # a top file is emptied, not removed
    assert deleted["ok"], deleted
    assert (root / AGENT / "MEMORY.md").read_text(encoding="utf-8") == "" and not (root / "old.md").exists()


def test_of_two_entries_alike_but_for_case_the_one_the_file_system_opens_wins(tmp_path: Path,
                                                                           monkeypatch) -> None:
    (tmp_path / "Notes.md").write_text("a", encoding="utf-8")
    (tmp_path / "NOTES.md").write_text("b", encoding="utf-8")  # possible in a folder copied from elsewhere
    real_lstat = os.lstat

    def case_blind_lstat(path, *args, **kwargs):  # this file system opens NOTES.md for "nOtEs.md"
        if str(path).endswith("/nOtEs.md"):
            return real_lstat(tmp_path / "NOTES.md")
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", case_blind_lstat)
    assert spelled(str(tmp_path), "nOtEs.md") == "NOTES.md"
    assert spelled(str(tmp_path), "Notes.md") == "Notes.md"  # an exact name is always itself
    assert spelled(str(tmp_path), "NoTeS.md") in ("Notes.md", "NOTES.md")  # nothing opens it: one alike
