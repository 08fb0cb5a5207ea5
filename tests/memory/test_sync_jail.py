"""`fsmem sync DIR` reads and writes nothing through a link (issue 20): the sync folder has the root's
jail (fsmem/_store/folder/jail.py), following no link at all, for every extension — a folder link, a file
link, and a link made between a pass's look and its write. Against a real PostgreSQL server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fsmem._core.paths import TEXT_FILE_SUFFIXES
from fsmem._memory import sync_folder
from tests.memory.test_sync import once, put, store  # noqa: F401 - store is the fixture
from tests.procs.common import diff, snapshot


def swap_for_link(folder: Path, name: str, to: Path) -> Path:
    """A person (or a tool) moves a synced folder away and leaves a link to ``to`` in its place."""
    moved = folder.parent / f"{name}-moved"
    os.rename(folder / name, moved)
    os.symlink(to, folder / name)
    return moved


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the sync folder, holding a file of each name the project sends."""
    place = tmp_path / "outside"
    place.mkdir()
    for suffix in TEXT_FILE_SUFFIXES:
        (place / f"titles{suffix}").write_text("kept outside\n")
    return place


def test_a_folder_link_out_of_the_folder_is_neither_read_nor_written_through(tmp_path, store, outside) -> None:
    put(store, "MEMORY.md", "# Project\n")
    for suffix in TEXT_FILE_SUFFIXES:
        put(store, f"seo/titles{suffix}", f"# titles from the memory ({suffix})\n")
    folder = tmp_path / "mirror"
    folder.mkdir()
    os.symlink(outside, folder / "seo")
    before = snapshot(outside)
    report = once(folder, store)
    assert diff(before, snapshot(outside)) == []  # no pull, no note, no swap through the link
    assert report.pulled == ["MEMORY.md"] and report.pushed == [] and report.conflicts == []
    assert sorted(error.split(":")[0] for error in report.errors) == sorted(
        f"seo/titles{suffix}" for suffix in TEXT_FILE_SUFFIXES
    )
    assert all("leads outside the sync folder (through a link)" in error for error in report.errors), report.errors
    assert [store.read(f"seo/titles{suffix}") for suffix in TEXT_FILE_SUFFIXES] == [
        f"# titles from the memory ({suffix})\n".encode() for suffix in TEXT_FILE_SUFFIXES
    ]  # nothing read through the link was pushed


def test_a_synced_folder_replaced_by_a_link_gets_no_pull_and_no_note(tmp_path, store, outside) -> None:
    put(store, "seo/titles.md", "# Titles\n")
    put(store, "agents/a-1/MEMORY.md", "# Agent\n")
    folder = tmp_path / "mirror"
    assert once(folder, store).pulled == ["agents/a-1/MEMORY.md", "seo/titles.md"]
    for name in ("seo", "agents"):
        swap_for_link(folder, name, outside)
    put(store, "seo/titles.md", "# Titles, changed in the memory\n")
    before = snapshot(outside)
    report = once(folder, store)
    assert diff(before, snapshot(outside)) == []
    assert report.pulled == [] and report.pushed == [] and report.conflicts == []
    assert {error.split(":")[0] for error in report.errors} == {"seo/titles.md", "agents/a-1/MEMORY.md"}
    assert store.read("agents/a-1/MEMORY.md") == b"# Agent\n"  # not taken for a deletion


def test_a_file_link_is_neither_read_nor_written_through(tmp_path, store, outside) -> None:
    put(store, "notes.md", "# Notes from the memory\n")
    put(store, "plan.txt", "the plan\n")
    folder = tmp_path / "mirror"
    folder.mkdir()
    os.symlink(outside / "titles.md", folder / "notes.md")  # out of the folder
    os.symlink("notes.md", folder / "plan.txt")  # inside it: two of the project's paths would be one file
    before = snapshot(outside)
    report = once(folder, store)
    assert diff(before, snapshot(outside)) == []
    assert {error.split(":")[0] for error in report.errors} == {"notes.md", "plan.txt"}
    assert os.readlink(folder / "plan.txt") == "notes.md"
    assert store.read("notes.md") == b"# Notes from the memory\n" and store.read("plan.txt") == b"the plan\n"


def test_a_folder_link_inside_the_folder_is_not_followed_either(tmp_path, store) -> None:
    put(store, "seo/titles.md", "# Titles\n")
    put(store, "brand/titles.md", "# Brand titles\n")
    folder = tmp_path / "mirror"
    (folder / "seo").mkdir(parents=True)
    os.symlink("seo", folder / "brand")
    report = once(folder, store)
    assert report.pulled == ["seo/titles.md"] and [e.split(":")[0] for e in report.errors] == ["brand/titles.md"]
    assert (folder / "seo/titles.md").read_text() == "# Titles\n"  # not the brand's, through the link
    assert store.read("seo/titles.md") == b"# Titles\n" and store.read("brand/titles.md") == b"# Brand titles\n"


@pytest.fixture
def synced(tmp_path, store) -> Path:
    """A folder synced with ``seo/titles.md``, which the memory has changed since."""
    put(store, "seo/titles.md", "# Titles\n")
    folder = tmp_path / "mirror"
    assert once(folder, store).pulled == ["seo/titles.md"]
    put(store, "seo/titles.md", "# Titles, changed in the memory\n")
    return folder


def assert_refused_through_the_link(folder: Path, store, outside: Path) -> None:
    before = snapshot(outside)
    report = once(folder, store)
    assert diff(before, snapshot(outside)) == []
    assert [error.split(":")[0] for error in report.errors] == ["seo/titles.md"], report
    assert "link" in report.errors[0]
    assert (folder.parent / "seo-moved/titles.md").read_text() == "# Titles\n"


def test_a_link_made_between_the_look_and_the_write_is_refused(synced, store, outside, monkeypatch) -> None:
    folder = synced
    real_read = store.read

    def link_then_read(path: str):  # the pass has looked at the folder's file; the pull comes next
        if path == "seo/titles.md" and not os.path.islink(folder / "seo"):
            swap_for_link(folder, "seo", outside)
        return real_read(path)

    monkeypatch.setattr(store, "read", link_then_read)
    assert_refused_through_the_link(folder, store, outside)


def test_a_link_made_while_the_new_file_is_written_is_refused(synced, store, outside, monkeypatch) -> None:
    folder = synced
    real_write_temp = sync_folder.write_temp

    def write_then_link(target: Path, data: bytes, **options):
        temp = real_write_temp(target, data, **options)
        swap_for_link(folder, "seo", outside)  # just before the swap
        return temp

    monkeypatch.setattr(sync_folder, "write_temp", write_then_link)
    assert_refused_through_the_link(folder, store, outside)


def test_a_link_for_the_sync_state_folder_is_refused_at_start(tmp_path, store, outside) -> None:
    from fsmem._errors import SetupError

    folder = tmp_path / "mirror"
    folder.mkdir()
    os.symlink(outside, folder / ".fsmem-sync")
    before = snapshot(outside)
    with pytest.raises(SetupError, match="is a link"):
        once(folder, store)
    assert diff(before, snapshot(outside)) == []
