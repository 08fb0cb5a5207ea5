"""Every content fsmem acknowledges stays recoverable, however soon a person saves over it (issue 20).

A write keeps what it wrote as the file's live copy in ``.fsmem/versions/`` (a copy, never the live
file's inode), so an acknowledged content a person replaces before any watcher or search has read it
is still listed by ``versions`` and can be reverted to.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import fsmem
from fsmem._core.versions import version_of
from fsmem._env.config import Settings
from tests.procs.common import REPO, read_json_line
from tests.store.folder.test_hand_race import _save_by_rename, _save_in_place

ROUNDS = 9  # each round keeps two versions: all stay within the 20 kept


@pytest.mark.slow
@pytest.mark.parametrize("watch", [False, True], ids=["no watcher", "the writer's own watcher"])
def test_an_acknowledged_write_a_person_saves_over_at_once_stays_recoverable(tmp_path: Path, watch: bool) -> None:
    root = tmp_path / "root"
    fsmem.open(root, create=True).close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "tests/procs/ack_writer.py"), str(root), "notes.md", str(ROUNDS), "1" if watch else "0"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO,
    )
    acknowledged: list[tuple[str, bytes]] = []
    try:
        for number in range(ROUNDS):
            line = read_json_line(proc)
            content = line["content"].encode("utf-8")
            acknowledged.append((line["ack"], content))
            # The person's editor had the file open from before the write: it saves over it at once.
            save = _save_by_rename if number % 2 == 0 else _save_in_place
            save(root / "notes.md", content + f"- by hand {number}\n".encode())
            assert proc.stdin is not None
            proc.stdin.write("saved\n")
            proc.stdin.flush()
        assert read_json_line(proc) == {"done": True}
    finally:
        proc.kill() if proc.poll() is None else None
        proc.wait(timeout=30)
    memory = fsmem.open(root)
    kept = {info.version: memory.drive.read_version(info) for info in memory.versions("notes.md")}
    live = (root / "notes.md").read_bytes()
    kept[version_of(live)] = live
    lost = [version for version, content in acknowledged if kept.get(version) != content]
    assert lost == [], f"{len(lost)} of {ROUNDS} acknowledged contents are neither the file nor kept"
    for version, content in acknowledged:
        assert version_of(content) == version
    # Each is listed as replaced by hand (the log says so too: found by the next write, or by the
    # watcher when it read the content before the save), and any can be put back.
    by_hand = ("hand", "hand_edit")
    commands = {info.version: info.command for info in memory.versions("notes.md")}
    assert {commands[version] for version, _ in acknowledged} <= set(by_hand)
    hand_lines = [entry for entry in memory.log() if entry.command in by_hand]
    assert [entry.before for entry in hand_lines] == [version for version, _ in acknowledged[:-1]]
    first_version, first_content = acknowledged[0]
    assert memory.revert("notes.md", first_version)
    assert (root / "notes.md").read_bytes() == first_content
    memory.close()


@pytest.fixture
def memory(tmp_path: Path):
    memory = fsmem.open(tmp_path / "root", create=True, settings=Settings(durable=False, watch=False))
    yield memory
    memory.close()


def _write(memory: fsmem.Memory, path: str, content: str) -> str:
    run = memory.run()
    run.call({"command": "read", "path": path})
    result = run.call({"command": "write", "path": path, "content": content})
    assert result["ok"], result
    return result["version"]


def _listed(memory: fsmem.Memory, path: str) -> dict[str, tuple[str, bytes]]:
    return {info.version: (info.command, memory.drive.read_version(info)) for info in memory.versions(path)}


def test_the_live_copy_is_a_copy_and_no_version_while_the_file_holds_it(memory) -> None:
    version = _write(memory, "a.md", "# A\n\nfirst\n")
    live = [item for item in (memory.drive.state / "versions" / "a.md").iterdir() if item.name.endswith("-live.md")]
    assert [item.read_bytes() for item in live] == [b"# A\n\nfirst\n"] and version in live[0].name
    assert os.stat(live[0]).st_ino != os.stat(memory.root / "a.md").st_ino and os.stat(live[0]).st_nlink == 1
    assert memory.versions("a.md") == []  # the file holds it: nothing earlier
    second = _write(memory, "a.md", "# A\n\nsecond\n")
    assert _listed(memory, "a.md") == {version: ("write", b"# A\n\nfirst\n")}  # renamed to the write's kept version
    assert [entry.command for entry in memory.log()] == ["write", "write"]
    assert second not in _listed(memory, "a.md")


def test_a_content_saved_over_or_removed_by_hand_is_listed_as_replaced_by_hand(memory) -> None:
    first = _write(memory, "a.md", "# A\n\nfirst\n")
    (memory.root / "a.md").write_text("# A\n\nby hand\n")
    assert _listed(memory, "a.md") == {first: ("hand", b"# A\n\nfirst\n")}
    third = _write(memory, "a.md", "# A\n\nthird\n")  # the next change logs the hand edit it found
    assert [(e.command, e.before, e.after) for e in memory.log()] == [
        ("write", None, first),
        ("hand", first, version_of(b"# A\n\nby hand\n")),
        ("write", version_of(b"# A\n\nby hand\n"), third),
    ]
    assert {version: command for version, (command, _) in _listed(memory, "a.md").items()} == {
        first: "hand", version_of(b"# A\n\nby hand\n"): "write"}
    (memory.root / "a.md").unlink()
    assert _listed(memory, "a.md")[third] == ("hand", b"# A\n\nthird\n")
    assert memory.revert("a.md", third)
    assert (memory.root / "a.md").read_text() == "# A\n\nthird\n"


def test_a_renamed_file_takes_its_live_copy_along(memory) -> None:
    version = _write(memory, "a.md", "# A\n\nmoved\n")
    _write(memory, "seo/b.md", "# B\n\nin a folder\n")
    run = memory.run()
    assert run.call({"command": "read", "path": "a.md"})["ok"]
    assert run.call({"command": "rename", "path": "a.md", "new_path": "c.md"})["ok"]
    assert run.call({"command": "rename", "path": "seo", "new_path": "brand"})["ok"]
    (memory.root / "c.md").write_text("saved over by hand\n")
    (memory.root / "brand/b.md").write_text("saved over by hand\n")
    assert _listed(memory, "c.md") == {version: ("hand", b"# A\n\nmoved\n")}
    assert [command for command, _ in _listed(memory, "brand/b.md").values()] == ["hand"]
    assert memory.versions("a.md") == [] and memory.versions("seo/b.md") == []


def test_a_write_that_fails_keeping_its_live_copy_changes_nothing(memory, monkeypatch: pytest.MonkeyPatch) -> None:
    from fsmem._store.folder import change

    first = _write(memory, "a.md", "# A\n\nfirst\n")
    real = change.write_atomic

    def full(target: Path, data: bytes, **options: object) -> None:
        if target.name.endswith("-live.md"):
            raise OSError(28, "No space left on device", str(target))
        real(target, data, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(change, "write_atomic", full)
    run = memory.run()
    run.call({"command": "read", "path": "a.md"})
    result = run.call({"command": "write", "path": "a.md", "content": "# A\n\nsecond\n"})
    assert result["error"]["code"] == "STORAGE" and "nothing was changed" in result["error"]["message"], result
    monkeypatch.undo()
    assert (memory.root / "a.md").read_text() == "# A\n\nfirst\n"
    assert [entry.after for entry in memory.log()] == [first]
    assert memory.versions("a.md") == []
    (memory.root / "a.md").write_text("by hand\n")  # its live copy is back where it was: still kept
    assert _listed(memory, "a.md") == {first: ("hand", b"# A\n\nfirst\n")}


def test_a_copy_of_the_root_carries_a_content_saved_over_by_hand(memory, tmp_path: Path) -> None:
    from fsmem._memory.copy import copy

    first = _write(memory, "a.md", "# A\n\nfirst\n")
    _write(memory, "b.md", "# B\n\nstill there\n")
    (memory.root / "a.md").write_text("by hand\n")
    copy(str(memory.root), str(tmp_path / "backup"))
    backup = fsmem.open(tmp_path / "backup")
    assert _listed(backup, "a.md") == {first: ("hand", b"# A\n\nfirst\n")}
    assert backup.versions("b.md") == []
    backup.close()
