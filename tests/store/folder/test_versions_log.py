"""Versions and the change log: the last 20 contents of every file (deletes included), revert, log.jsonl.

docs/design.md §2, §5, §9: every change keeps the previous content in .fsmem/versions/ (the last 20 a file),
and appends one line to .fsmem/log.jsonl with time, command, path, versions before/after and thread.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

import pytest

import fsmem
from fsmem._core.versions import version_of
from fsmem._errors import NotFound
from tests.conftest import run_fsmem

KEPT_NAME = re.compile(r"^[0-9TZ]+-([0-9a-f]{12})(?:-[a-z_]+)?\.md$")




def log_lines(root: Path) -> list[dict]:
    log = root / ".fsmem" / "log.jsonl"
    text = log.read_text(encoding="utf-8") if log.exists() else ""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def kept_on_disk(root: Path, path: str) -> dict[str, bytes]:
    """version -> bytes of each kept file of ``path`` (versions/<path>/<time>-<version>-<command>.md),
    less its live copy (``-live.md``: what fsmem last wrote, which the file itself still holds)."""
    folder = root / ".fsmem" / "versions" / path
    kept = {}
    for full in folder.iterdir():
        named = KEPT_NAME.match(full.name)
        assert named, f"unexpected file {full.name} among the kept versions"
        if full.name.endswith("-live.md"):
            assert full.read_bytes() == (root / path).read_bytes(), f"{full.name} is not what {path} holds"
            continue
        kept[named.group(1)] = full.read_bytes()
    return kept


def test_the_last_20_versions_of_a_file_are_kept_and_whole(root: Path) -> None:
    memory = fsmem.open(root)
    run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
    contents = [f"# Topic\n- version {n}\n" for n in range(25)]
    for text in contents:
        assert run.call({"command": "write", "path": "topic.md", "content": text})["ok"]
    # 24 earlier contents existed (the first write created the file); the newest 20 are kept.
    expected = {version_of(text.encode()): text.encode() for text in contents[4:24]}
    assert kept_on_disk(root, "topic.md") == expected
    listed = [v.version for v in memory.versions("topic.md")]
    assert set(expected) <= set(listed)
    assert not {version_of(text.encode()) for text in contents[:4]} & set(listed)
    assert len(set(listed) - {version_of(contents[-1].encode())}) == 20


def test_each_file_keeps_its_own_20(root: Path) -> None:
    memory = fsmem.open(root)
    run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
    for n in range(3):
        assert run.call({"command": "write", "path": "quiet.md", "content": f"# Quiet {n}\n"})["ok"]
    for n in range(30):
        assert run.call({"command": "write", "path": "busy.md", "content": f"# Busy {n}\n"})["ok"]
    assert len(kept_on_disk(root, "quiet.md")) == 2
    assert len(kept_on_disk(root, "busy.md")) == 20


def test_a_delete_keeps_the_content_and_revert_brings_it_back(root: Path) -> None:
    memory = fsmem.open(root)
    run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
    assert run.call({"command": "write", "path": "seo/titles.md", "content": "# Titles\n- a\n"})["ok"]
    assert run.call({"command": "write", "path": "seo/titles.md", "content": "# Titles\n- a\n- b\n"})["ok"]
    deleted = run.call({"command": "delete", "path": "seo/titles.md"})
    assert deleted["ok"] and deleted["held"] == {"seo/titles.md": "# Titles\n- a\n- b\n"}
    assert not (root / "seo/titles.md").exists()
    assert version_of(b"# Titles\n- a\n- b\n") in [v.version for v in memory.versions("seo/titles.md")]

    memory.revert("seo/titles.md")
    assert (root / "seo/titles.md").read_text(encoding="utf-8") == "# Titles\n- a\n- b\n"
    assert log_lines(root)[-1]["command"] == "revert"


def test_a_folder_delete_keeps_every_file(root: Path) -> None:
    memory = fsmem.open(root)
    run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
    files = {"drafts/a.md": "# A\n", "drafts/deep/b.md": "# B\n"}
    for path, text in files.items():
        assert run.call({"command": "write", "path": path, "content": text})["ok"]
    deleted = run.call({"command": "delete", "path": "drafts"})
    assert deleted["ok"] and deleted["held"] == files
    assert not (root / "drafts").exists()
    for path, text in files.items():
        assert version_of(text.encode()) in [v.version for v in memory.versions(path)], path
        memory.revert(path)
        assert (root / path).read_text(encoding="utf-8") == text
    deletes = [line for line in log_lines(root) if line["command"] == "delete"]
    assert {line["path"] for line in deletes} == set(files)
    assert all(line["after"] is None for line in deletes)


def test_revert_round_trip(root: Path) -> None:
    memory = fsmem.open(root)
    run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
    texts = ["# T\n- one\n", "# T\n- one\n- two\n", "# T\n- three\n"]
    versions = []
    for text in texts:
        result = run.call({"command": "write", "path": "t.md", "content": text})
        versions.append(result["version"])

    memory.revert("t.md")  # as it was before its last change
    assert (root / "t.md").read_text(encoding="utf-8") == texts[1]
    # A run that saw t.md before the revert gets a conflict, not a silent overwrite.
    stale = run.call({"command": "write", "path": "t.md", "content": "# stale\n"})
    assert stale["ok"] is False and stale["error"]["code"] == "CONFLICT", stale
    # The revert is a change like any other: the content it replaced is kept too.
    assert versions[2] in [v.version for v in memory.versions("t.md")]
    memory.revert("t.md", version=versions[0])
    assert (root / "t.md").read_text(encoding="utf-8") == texts[0]
    memory.revert("t.md", version=versions[2])
    assert (root / "t.md").read_text(encoding="utf-8") == texts[2]

    reverts = [line for line in log_lines(root) if line["command"] == "revert"]
    assert [(line["before"], line["after"]) for line in reverts] == [
        (versions[2], versions[1]), (versions[1], versions[0]), (versions[0], versions[2])]


def test_revert_to_a_version_never_kept_is_not_found(root: Path) -> None:
    memory = fsmem.open(root)
    run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
    assert run.call({"command": "write", "path": "t.md", "content": "# T\n"})["ok"]
    log_before = log_lines(root)
    with pytest.raises(NotFound):
        memory.revert("t.md", version="0123456789ab")
    with pytest.raises(NotFound):
        memory.revert("never.md")
    assert (root / "t.md").read_text(encoding="utf-8") == "# T\n"
    assert log_lines(root) == log_before


def test_the_log_has_one_line_per_change_with_who_and_when(root: Path) -> None:
    memory = fsmem.open(root)
    run = memory.run(fsmem.Scope.chat(), thread_id="thread-42")
    start = len(log_lines(root))
    w1 = run.call({"command": "write", "path": "seo/a.md", "content": "# A\n- one\n"})
    w2 = run.call({"command": "write", "path": "seo/a.md", "old_text": "- one", "new_text": "- uno"})
    mv = run.call({"command": "rename", "path": "seo/a.md", "new_path": "seo/b.md"})
    rm = run.call({"command": "delete", "path": "seo/b.md"})
    refused = run.call({"command": "delete", "path": "seo/b.md"})
    assert all(r["ok"] for r in (w1, w2, mv, rm)) and not refused["ok"]

    lines = log_lines(root)[start:]
    assert [line["command"] for line in lines] == ["write", "write", "rename", "delete"]
    for line in lines:
        assert {"time", "command", "path", "before", "after", "thread"} <= set(line)
        assert line["thread"] == "thread-42"
        assert datetime.fromisoformat(line["time"]).tzinfo is not None
    assert (lines[0]["path"], lines[0]["before"], lines[0]["after"]) == ("seo/a.md", None, w1["version"])
    assert (lines[1]["before"], lines[1]["after"]) == (w1["version"], w2["version"])
    assert "seo/a.md" in json.dumps(lines[2]) and "seo/b.md" in json.dumps(lines[2])
    assert (lines[3]["path"], lines[3]["before"], lines[3]["after"]) == ("seo/b.md", w2["version"], None)


def test_versions_revert_and_log_from_the_shell(root: Path) -> None:
    run = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="t-1")
    first = run.call({"command": "write", "path": "t.md", "content": "# First\n"})
    assert run.call({"command": "write", "path": "t.md", "content": "# Second\n"})["ok"]

    listed = run_fsmem("versions", "--root", str(root), "t.md", "--json")
    assert listed.returncode == 0, listed.stderr
    assert first["version"] in listed.stdout
    reverted = run_fsmem("revert", "--root", str(root), "t.md")
    assert reverted.returncode == 0, reverted.stderr
    assert (root / "t.md").read_text(encoding="utf-8") == "# First\n"
    log = run_fsmem("log", "--root", str(root), "--json")
    assert log.returncode == 0, log.stderr
    assert "revert" in log.stdout and "t-1" in log.stdout


def test_a_folder_has_no_versions_and_cannot_be_reverted(root: Path) -> None:
    memory = fsmem.open(root)
    run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
    for text in ("# A\n", "# A2\n"):
        assert run.call({"command": "write", "path": "drafts/a.md", "content": text})["ok"]
    assert memory.versions("drafts") == []  # drafts/a.md has one; the folder itself has none
    log_before = log_lines(root)
    with pytest.raises(NotFound):
        memory.revert("drafts")
    assert log_lines(root) == log_before
    assert [v.version for v in memory.versions("drafts/a.md")] == [version_of(b"# A\n")]


def test_the_last_change_of_a_path_is_found_from_the_end_of_a_long_log(root: Path, monkeypatch) -> None:
    memory = fsmem.open(root)
    drive = memory.drive
    names = ["a.md", "café.md", "x/b.md"]
    for turn in range(400):
        name = names[turn % 3]
        run = memory.run(fsmem.Scope.chat(), thread_id=f"t-{turn}")
        run.call({"command": "read", "path": name})
        assert run.call({"command": "write", "path": name, "content": f"turn {turn}\n"})["ok"]
    run = memory.run(fsmem.Scope.chat(), thread_id="mover")
    run.call({"command": "read", "path": "x/b.md"})
    assert run.call({"command": "rename", "path": "x/b.md", "new_path": "x/c.md"})["ok"]
    with open(root / ".fsmem" / "log.jsonl", "a", encoding="utf-8") as log:
        log.write('{"time": "2026-11-30T00:00:00+00:00", "command": "write", "path": "a.m')  # torn by a crash

    from fsmem._store.folder import history

    expected = {}
    for entry in drive.log():  # the whole log read forwards: the newest entry naming each path
        for path in (entry.path, entry.new_path):
            expected[path] = entry
    for block in (37, 1000, 1 << 16):  # lines cut across blocks in every way
        monkeypatch.setattr(history, "LOG_TAIL_BLOCK", block)
        for path in ("a.md", "café.md", "x/b.md", "x/c.md"):
            assert drive.last_change(path) == expected[path], (block, path)
        assert drive.last_change("never.md") is None
    assert drive.last_change("x/b.md").thread == "mover" and drive.last_change("a.md").thread == "t-399"
