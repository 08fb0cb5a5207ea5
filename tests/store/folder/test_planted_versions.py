"""What lies in ``.fsmem/versions/`` that no change kept there (fsmem/_store/folder/history.py): a link,
a FIFO, a file a person dropped there, a name that is not UTF-8, a folder that is a link out of the
root. ``versions`` lists only the regular files named as a change names them, ``read_version`` never
follows a link or waits on a FIFO, and nothing planted is removed.

Before this, a link named like a kept version was listed and read through (``revert`` put a file from
outside the root into memory), a junk name was listed with its name cut into a version and a time, a
version folder that is a link listed the files it points at, and a name that is not UTF-8 came out
with surrogates (``fsmem versions`` then failed to print it).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import fsmem
from fsmem._env.config import Settings
from fsmem._errors import BadPath, NotFound
from fsmem._memory.levels import Scope
from tests.conftest import invoke, tree_snapshot

pytestmark = pytest.mark.timeout(60)  # a FIFO opened for reading without O_NONBLOCK would hang

STAMP = "20261201T170000000000Z"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A root whose MEMORY.md has three kept versions ("", "# A", "# B"), and things planted among them."""
    root = tmp_path / "root"
    with fsmem.open(root, create=True, settings=Settings(watch=False, durable=False)) as memory:
        run = memory.run(Scope.chat(), thread_id="t-1")
        assert all(run.call({"command": "write", "path": "MEMORY.md", "content": text})["ok"] for text in "ABC")
    secret = tmp_path / "outside.md"
    secret.write_text("outside the root\n")
    kept = root / ".fsmem" / "versions" / "MEMORY.md"
    os.symlink(secret, kept / f"{STAMP}-0123456789ab-write.md")  # a link named like a kept version
    os.mkfifo(kept / "20261201T170001000000Z-0123456789ac-write.md")  # a FIFO named like one
    (kept / "notes.md").write_text("a person's note\n")
    (kept / "20261399T000000000000Z-0123456789ad-write.md").write_text("no such month\n")
    os.close(os.open(os.fsencode(kept) + b"/" + STAMP.encode() + b"-0123456789ae-\xff.md", os.O_CREAT | os.O_WRONLY))
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / f"{STAMP}-0123456789af-write.md").write_text("outside, in a linked folder\n")
    os.symlink(tmp_path / "elsewhere", root / ".fsmem" / "versions" / "ghost.md")
    return root


def test_versions_lists_only_what_changes_kept(root: Path) -> None:
    memory = fsmem.open(root, settings=Settings(watch=False, durable=False))
    before = tree_snapshot(root)
    kept = memory.versions("MEMORY.md")
    assert [memory.drive.read_version(v) for v in kept] == [b"B", b"A", b""]  # b"": as init made it
    assert {(v.command, len(v.version)) for v in kept} == {("write", 12)}
    assert memory.versions("ghost.md") == []  # a linked folder is no folder fsmem made
    with pytest.raises(NotFound):
        memory.revert("ghost.md")
    assert tree_snapshot(root) == before  # nothing planted was removed or read through


def test_fsmem_versions_prints_them_and_exits_0(root: Path) -> None:
    result = invoke(root, "versions", "MEMORY.md")
    assert result.exit_code == 0, result.output
    assert len(result.output.splitlines()) == 3 and "outside" not in result.output
    ghost = invoke(root, "versions", "ghost.md")
    assert (ghost.exit_code, ghost.output) == (0, "No earlier versions of ghost.md.\n")


def test_reading_a_version_swapped_for_a_link_or_a_fifo_is_refused(root: Path, tmp_path: Path) -> None:
    memory = fsmem.open(root, settings=Settings(watch=False, durable=False))
    newest = memory.versions("MEMORY.md")[0]
    assert newest.file is not None
    os.replace(newest.file, tmp_path / "moved.md")
    os.symlink(tmp_path / "outside.md", newest.file)
    with pytest.raises(BadPath):
        memory.drive.read_version(newest)
    os.unlink(newest.file)
    os.mkfifo(newest.file)
    with pytest.raises(BadPath, match="FIFO"):
        memory.drive.read_version(newest)
    assert memory.read("MEMORY.md") == "C"


def test_a_change_never_trims_what_it_did_not_keep(root: Path) -> None:
    memory = fsmem.open(root, settings=Settings(watch=False, durable=False, versions_kept=1))
    run = memory.run(Scope.chat(), thread_id="t-2")
    run.call({"command": "read", "path": "MEMORY.md"})
    result = run.call({"command": "write", "path": "MEMORY.md", "content": "D"})
    assert result["ok"], result
    kept = root / ".fsmem" / "versions" / "MEMORY.md"
    assert (kept / "notes.md").read_text() == "a person's note\n"
    assert (kept / "20261399T000000000000Z-0123456789ad-write.md").exists()
    assert [memory.drive.read_version(v) for v in memory.versions("MEMORY.md")] == [b"C"]
