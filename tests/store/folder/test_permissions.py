"""A root's state is its owner's alone, whatever the umask (issue 10, item 5).

Folders fsmem makes are 0700 and files it makes 0600, as for an SSH or GnuPG home; a file a person
made keeps its mode through every rewrite. The index store is written by tantivy with the umask's
modes: ``.fsmem/`` is 0700, so nothing inside it can be reached by another user, index included.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

import fsmem
from fsmem._store.atomic import write_temp


@pytest.fixture(params=[0o022, 0o000, 0o077], ids=["umask022", "umask000", "umask077"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _busy_root(root: Path) -> fsmem.Memory:
    memory = fsmem.open(root, create=True)
    run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
    assert run.call({"command": "write", "path": "topic/deep/notes.md", "content": "# Notes\n\nneedle\n"})["ok"]
    assert run.call({"command": "write", "path": "topic/deep/notes.md", "content": "# Notes\n\nneedle 2\n"})["ok"]
    assert run.call({"command": "delete", "path": "topic/deep/notes.md"})["ok"]
    memory.facts.keep("Acme", "plan", "Acme is on the gold plan")
    memory.search("needle")
    return memory


def test_everything_fsmem_makes_is_the_owners_alone(tmp_path: Path, umask: int) -> None:
    root = tmp_path / "root"
    _busy_root(root)

    assert _mode(root) == 0o700  # fsmem made the root itself
    assert _mode(root / ".fsmem") == 0o700  # nothing inside is reachable by anyone else, index included
    assert _mode(root / "MEMORY.md") == 0o600
    for name in ("log.jsonl", "lock", ".gitignore"):
        assert _mode(root / ".fsmem" / name) == 0o600, name
    for folder in ("topic", "topic/deep", "notes", "notes/memory"):
        assert _mode(root / folder) == 0o700, folder
    versions = root / ".fsmem" / "versions"
    for folder, dirs, files in os.walk(versions):
        assert _mode(Path(folder)) == 0o700, folder
        for name in files:
            assert _mode(Path(folder, name)) == 0o600, name
    for folder, dirs, files in os.walk(root):
        if ".fsmem" in Path(folder).parts:
            continue
        for name in files:
            assert _mode(Path(folder, name)) & 0o077 == 0, Path(folder, name)


def test_a_file_a_person_made_keeps_its_mode_through_rewrites(tmp_path: Path, umask: int) -> None:
    memory = fsmem.open(tmp_path / "root", create=True)
    mine = memory.root / "shared.md"
    mine.write_text("# Shared\n")
    os.chmod(mine, 0o644)
    run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
    assert run.call({"command": "read", "path": "shared.md"})["ok"]
    assert run.call({"command": "write", "path": "shared.md", "content": "# Shared\n\nmore\n"})["ok"]
    assert _mode(mine) == 0o644
    assert _mode(memory.root / ".fsmem" / "versions" / "shared.md") == 0o700


def test_a_temp_file_is_private_even_for_a_new_file(tmp_path: Path, umask: int) -> None:
    temp = write_temp(tmp_path / "new.md", b"x", durable=False)
    assert _mode(temp) == 0o600


def test_an_existing_roots_loose_state_folder_is_made_private_on_open(tmp_path: Path) -> None:
    memory = _busy_root(tmp_path / "root")
    os.chmod(memory.drive.state, 0o755)
    fsmem.open(tmp_path / "root")
    assert _mode(memory.drive.state) == 0o700
