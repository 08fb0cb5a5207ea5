"""Only regular files are memory (DESIGN §2): FIFOs, devices and sockets in the root are skipped by
listings and search and refused by every command, never opened for blocking I/O; a hand-placed file
too big to show whole is refused with its size and how to read part of it.

Before this was fixed, a write to ``fifo.md`` opened the FIFO for reading under the root's lock and
waited forever (every writer and search in every process got BUSY), and ``zero.md`` made with
``mknod c 1 5`` made ``read`` and regex search read without end. Each test here is guarded by a
timeout (a hang fails it) and the device tests run in a child process with a memory limit, so a
regression fails with MemoryError instead of taking the machine's memory.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import fsmem
from tests.conftest import REPO, invoke, tree_snapshot

pytestmark = pytest.mark.timeout(60)  # a hang is a failure, not a stuck suite


@pytest.fixture
def fifo_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    memory = fsmem.open(root, create=True)
    run = memory.run(fsmem.Scope.chat(), thread_id="setup")
    assert run.call({"command": "write", "path": "MEMORY.md", "content": "# Project\n- fifo test\n"})["ok"]
    assert run.call({"command": "write", "path": "docs/a.md", "content": "# A\nneedle here\n"})["ok"]
    os.mkfifo(root / "fifo.md")
    os.mkfifo(root / "docs" / "pipe.md")
    return root


def fresh(root: Path):
    return fsmem.open(root).run(fsmem.Scope.chat(), thread_id="t")


REQUESTS = {
    "read": {"command": "read", "path": "fifo.md"},
    "read-range": {"command": "read", "path": "fifo.md", "start_line": 1, "end_line": 2},
    "write": {"command": "write", "path": "fifo.md", "content": "# over the pipe\n"},
    "replace": {"command": "write", "path": "fifo.md", "old_text": "a", "new_text": "b"},
    "rename-from": {"command": "rename", "path": "fifo.md", "new_path": "moved.md"},
    "delete": {"command": "delete", "path": "fifo.md"},
    "write-inner": {"command": "write", "path": "docs/pipe.md", "content": "x\n"},
}


@pytest.mark.parametrize("name", list(REQUESTS))
def test_every_command_on_a_fifo_is_refused_at_once_and_changes_nothing(fifo_root: Path, name: str) -> None:
    run = fresh(fifo_root)
    before = tree_snapshot(fifo_root)
    result = run.call(REQUESTS[name])
    assert result["ok"] is False, result
    assert result["error"]["code"] == "BAD_PATH", result
    assert "not a regular file" in result["text"] and "FIFO" in result["text"]
    assert tree_snapshot(fifo_root) == before


def test_a_rename_onto_a_fifo_is_refused_as_existing(fifo_root: Path) -> None:
    run = fresh(fifo_root)
    assert run.call({"command": "read", "path": "docs/a.md"})["ok"]
    before = tree_snapshot(fifo_root)
    result = run.call({"command": "rename", "path": "docs/a.md", "new_path": "fifo.md"})
    assert result["error"]["code"] == "EXISTS", result
    assert tree_snapshot(fifo_root) == before


def test_the_lock_is_free_after_a_refused_write_to_a_fifo(fifo_root: Path) -> None:
    # The old hang held the root's lock: a second process's write then waited and got BUSY.
    assert fresh(fifo_root).call(REQUESTS["write"])["error"]["code"] == "BAD_PATH"
    code = (f"import fsmem, json; r = fsmem.open({str(fifo_root)!r}).run(fsmem.Scope.chat(), thread_id='o');"
            "print(json.dumps(r.call({'command': 'write', 'path': 'new.md', 'content': '# new'})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO,
                         check=False)
    assert json.loads(out.stdout)["ok"] is True, out.stderr


def test_listings_skip_fifos_and_sockets(fifo_root: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(fifo_root / "sock.md"))
    try:
        run = fresh(fifo_root)
        tree = run.call({"command": "read", "path": "/"})["text"]
        assert "fifo.md" not in tree and "sock.md" not in tree and "pipe.md" not in tree
        assert "MEMORY.md" in tree and "a.md" in tree
        folder = run.call({"command": "read", "path": "docs"})["text"]
        assert "pipe.md" not in folder and "a.md" in folder
        result = invoke(fifo_root, "read", "/")
        assert result.exit_code == 0 and "fifo.md" not in result.output
        assert fresh(fifo_root).call({"command": "read", "path": "sock.md"})["error"]["code"] == "BAD_PATH"
    finally:
        server.close()


def test_regex_search_skips_fifos_in_the_tool_and_the_api(fifo_root: Path) -> None:
    run = fresh(fifo_root)
    result = run.call({"command": "search", "query": "needle", "regex": True})
    assert result["ok"], result
    assert [hit["path"] for hit in result["hits"]] == ["docs/a.md"]
    hits = fsmem.open(fifo_root).search("needle", regex=True)
    assert [hit.path for hit in hits] == ["docs/a.md"]


def test_text_search_is_not_hung_or_broken_by_a_fifo(fifo_root: Path) -> None:
    # The index's walk lists every file of the root; a FIFO there must be skipped, not opened.
    memory = fsmem.open(fifo_root)
    hits = memory.search("needle")
    assert [hit.path for hit in hits] == ["docs/a.md"]
    result = fresh(fifo_root).call({"command": "search", "query": "needle"})
    assert result["ok"], result


def test_versions_and_revert_refuse_a_fifo(fifo_root: Path) -> None:
    memory = fsmem.open(fifo_root)
    with pytest.raises(fsmem.BadPath, match="not a regular file"):
        memory.versions("fifo.md")
    with pytest.raises(fsmem.FsmemError):
        memory.revert("fifo.md")
    result = invoke(fifo_root, "versions", "fifo.md")
    assert result.exit_code != 0 and "not a regular file" in result.output


def test_python_api_read_refuses_a_fifo(fifo_root: Path) -> None:
    with pytest.raises(fsmem.BadPath, match="FIFO"):
        fsmem.open(fifo_root).read("fifo.md")


def test_a_folder_delete_keeps_its_files_and_drops_a_fifo_that_held_nothing(fifo_root: Path) -> None:
    # A FIFO holds no bytes, so removing it with its folder loses nothing; the regular files are kept.
    run = fresh(fifo_root)
    assert run.call({"command": "read", "path": "docs/a.md"})["ok"]
    result = run.call({"command": "delete", "path": "docs"})
    assert result["ok"], result
    assert list(result["held"]) == ["docs/a.md"]
    assert not (fifo_root / "docs").exists()
    assert [v.command for v in fsmem.open(fifo_root).versions("docs/a.md")] == ["delete"]


# ---- devices: in a child process with a memory cap, so a regression cannot eat the machine ----

DEVICE_SCRIPT = r"""
import json, sys, fsmem
root = sys.argv[1]
memory = fsmem.open(root)
run = memory.run(fsmem.Scope.chat(), thread_id="t")
out = {}
for name, request in [
    ("read", {"command": "read", "path": "zero.md"}),
    ("write", {"command": "write", "path": "zero.md", "content": "# x\n"}),
    ("delete", {"command": "delete", "path": "zero.md"}),
    ("regex", {"command": "search", "query": "needle", "regex": True}),
    ("text", {"command": "search", "query": "needle"}),
    ("tree", {"command": "read", "path": "/"}),
]:
    result = run.call(request)
    out[name] = {"ok": result["ok"], "code": result.get("error", {}).get("code"),
                 "text": result["text"][:2000]}
print(json.dumps(out))
"""


def _capped() -> None:
    limit = 1 << 30  # 1 GiB of address space: a read of /dev/zero fails fast with MemoryError
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


@pytest.fixture
def device_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    memory = fsmem.open(root, create=True)
    run = memory.run(fsmem.Scope.chat(), thread_id="setup")
    assert run.call({"command": "write", "path": "notes.md", "content": "# Notes\nneedle\n"})["ok"]
    memory.search("needle")  # the index is built before the device appears and the snapshot is taken
    os.mknod(root / "zero.md", stat.S_IFCHR | 0o644, os.makedev(1, 5))  # /dev/zero's numbers
    memory.search("needle")  # the index's walk cache has seen the folder with the device in it
    memory.close()
    return root


def test_a_character_device_is_refused_and_skipped_without_reading_it(device_root: Path) -> None:
    before = tree_snapshot(device_root)
    out = subprocess.run([sys.executable, "-c", DEVICE_SCRIPT, str(device_root)], capture_output=True,
                         text=True, timeout=60, cwd=REPO, preexec_fn=_capped, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    results = json.loads(out.stdout)
    for name in ("read", "write", "delete"):
        assert results[name]["code"] == "BAD_PATH", results[name]
        assert "character device" in results[name]["text"]
    assert results["regex"]["ok"] and "notes.md:2: needle" in results["regex"]["text"]
    assert results["text"]["ok"], results["text"]
    assert "zero.md" not in results["tree"]["text"]
    assert tree_snapshot(device_root) == before


# ---- hand-placed files too big to show whole ----


def test_a_huge_hand_placed_file_is_refused_whole_and_readable_by_lines(tmp_path: Path) -> None:
    root = tmp_path / "root"
    fsmem.open(root, create=True)
    line = "- a line a person pasted into the notes by hand, again and again\n"
    (root / "dump.md").write_text("# Dump\n" + line * 1_100_000, encoding="utf-8")  # about 70 MB
    size = (root / "dump.md").stat().st_size
    run = fresh(root)
    result = run.call({"command": "read", "path": "dump.md"})
    assert result["error"]["code"] == "TOO_LARGE", result["text"][:300]
    assert f"{size:,} bytes" in result["text"] and "start_line" in result["text"]
    assert len(result["text"]) < 1000
    part = run.call({"command": "read", "path": "dump.md", "start_line": 1, "end_line": 3})
    assert part["ok"] and "showing lines 1-3" in part["text"]
    assert len(part["text"]) < 1000
    too_many = run.call({"command": "read", "path": "dump.md", "start_line": 1, "end_line": 500_000})
    assert too_many["error"]["code"] == "TOO_LARGE" and "fewer lines" in too_many["text"]


def test_a_file_a_little_over_the_write_limit_is_still_shown_whole(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = fsmem.open(root, create=True)
    text = "# Big\n" + "- a longer note written by hand\n" * 2000  # ~64 KiB: over 32 KiB, under the cap
    (root / "big.md").write_text(text, encoding="utf-8")
    assert len(text.encode()) > memory.settings.max_file_bytes
    result = fresh(root).call({"command": "read", "path": "big.md"})
    assert result["ok"] and "2001" in result["text"]
