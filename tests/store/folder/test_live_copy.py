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
from tests.procs.common import REPO, read_json_line

ROUNDS = 12


def _save_by_rename(file: Path, data: bytes) -> None:
    """A person's editor saving: a new file beside it, renamed over it."""
    temp = file.with_name(f"{file.name}.swp")
    temp.write_bytes(data)
    os.rename(temp, file)


def _save_in_place(file: Path, data: bytes) -> None:
    with open(file, "r+b") as handle:
        handle.truncate(0)
        handle.write(data)


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
    # Each is listed as replaced by hand, and any can be put back.
    first_version, first_content = acknowledged[0]
    assert memory.revert("notes.md", first_version)
    assert (root / "notes.md").read_bytes() == first_content
    memory.close()
