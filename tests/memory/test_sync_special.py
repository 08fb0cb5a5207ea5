"""`fsmem sync` never blocks on what a swap takes out of the folder (fsmem/_memory/sync_folder.py): a FIFO
put at a path between the pass's look and its write (or its delete) is refused with BAD_PATH, left where
it was, and nothing else is changed. A real FIFO, put there at the step just before the swap."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from fsmem._errors import BadPath
from fsmem._memory.sync_folder import jail_of, place

pytestmark = pytest.mark.timeout(10)  # a FIFO opened for reading without O_NONBLOCK would wait forever

SEEN = b"# Notes\n\n- v1\n"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    place = tmp_path / "mirror"
    place.mkdir()
    (place / "notes.md").write_bytes(SEEN)
    return place


def fifo_at(target: Path) -> None:
    """A person (or a tool) puts a FIFO where the file was, just before the swap."""
    target.unlink()
    os.mkfifo(target)


def assert_only_the_fifo(folder: Path) -> None:
    assert sorted(p.name for p in folder.iterdir()) == ["notes.md"]  # no temp file left beside it
    assert stat.S_ISFIFO(os.lstat(folder / "notes.md").st_mode)


def test_a_fifo_swapped_out_by_a_write_is_refused_not_waited_on(folder) -> None:
    target = folder / "notes.md"
    with pytest.raises(BadPath, match="not a regular file"):
        place(jail_of(folder), "notes.md", b"# Notes\n\n- v2\n", SEEN, 0.05, lambda _temp: fifo_at(target))
    assert_only_the_fifo(folder)


def test_a_fifo_taken_out_by_a_delete_is_refused_not_waited_on(folder) -> None:
    target = folder / "notes.md"
    with pytest.raises(BadPath, match="not a regular file"):
        place(jail_of(folder), "notes.md", None, SEEN, 0.05, lambda _aside: fifo_at(target))
    assert_only_the_fifo(folder)


def test_a_save_swapped_out_is_still_handed_back(folder) -> None:
    """The same step with a person's save instead: it comes back to the caller to keep."""
    target = folder / "notes.md"
    mine = b"# Notes\n\n- mine\n"
    late = place(jail_of(folder), "notes.md", b"# Notes\n\n- v2\n", SEEN, 0.0, lambda _temp: target.write_bytes(mine))
    assert late == mine and target.read_bytes() == b"# Notes\n\n- v2\n"
