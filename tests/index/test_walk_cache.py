"""The walk cache: a comparison that lists only changed folders must never miss a change."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Callable

import pytest

import fsmem
from fsmem._env.config import Settings

import fsmem._store.folder.walk as index_module
from fsmem._index.state import index_dir, read_current
from fsmem._store.folder.walk import WALK_CACHE, load_walk_cache, save_walk_cache, unchanged_since, walk_tree
from tests.conftest import index_of, run_fsmem, write

FAR_FUTURE = 1 << 62  # "recorded long after every stamp": no folder is too recent to trust
TICK = 0.03  # longer than one file-system timestamp tick, so a change gets a new stamp


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    write(tmp_path, "MEMORY.md", "# Project\n\nWe deploy on Friday.\n")
    write(tmp_path, "seo/titles.md", "# Titles\n\nUnder 60 characters.\n")
    write(tmp_path, "seo/deep/a.md", "# A\n\nalpha\n")
    write(tmp_path, "notes/b.md", "# B\n\nbeta\n")
    write(tmp_path, "notes/photo.png", "not text\n")
    (tmp_path / ".fsmem").mkdir()
    return tmp_path


def same_size_edit(root: Path) -> None:
    target = root / "seo/titles.md"
    info = target.stat()
    target.write_text(target.read_text().replace("Under", "Below"))
    os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))  # size and mtime as before: ctime differs


def atomic_save(root: Path) -> None:
    (root / "notes/.b.md.tmp").write_text("# B\n\nbeta gamma\n")
    os.replace(root / "notes/.b.md.tmp", root / "notes/b.md")


def symlink_in(root: Path) -> None:
    os.symlink(root / "notes/b.md", root / "seo/link.md")


CHANGES: dict[str, Callable[[Path], None]] = {
    "edit in place": lambda root: write(root, "notes/b.md", "# B\n\nbeta and more\n"),
    "same size and mtime": same_size_edit,
    "save by rename": atomic_save,
    "file added": lambda root: write(root, "seo/deep/new.md", "# New\n"),
    "file removed": lambda root: (root / "seo/deep/a.md").unlink(),
    "file renamed": lambda root: os.rename(root / "notes/b.md", root / "notes/c.md"),
    "folder added": lambda root: write(root, "seo/deep/deeper/x.md", "# X\n"),
    "folder removed": lambda root: shutil.rmtree(root / "seo/deep"),
    "folder moved": lambda root: os.rename(root / "seo/deep", root / "notes/deep"),
    "file became a folder": lambda root: ((root / "notes/b.md").unlink(), (root / "notes/b.md").mkdir()),
    "symlinked file added": symlink_in,
}


@pytest.mark.parametrize("change", CHANGES, ids=list(CHANGES))
def test_every_kind_of_change_is_caught(tree: Path, change: str) -> None:
    _, folders = walk_tree(tree, record=True)
    assert folders is not None
    assert unchanged_since(tree, FAR_FUTURE, folders, 0) == folders  # nothing changed yet
    time.sleep(TICK)
    CHANGES[change](tree)
    assert unchanged_since(tree, FAR_FUTURE, folders, 0) is None


def test_a_folder_changed_within_the_window_is_listed_again(tree: Path) -> None:
    _, folders = walk_tree(tree, record=True)
    assert folders is not None
    now = time.time_ns()
    # No pause: the folder may keep its stamp (same tick). Being recent, it is listed, not trusted.
    write(tree, "seo/deep/new.md", "# New\n")
    assert unchanged_since(tree, now, folders, 2_000_000_000) is None


def test_a_folder_whose_files_are_the_same_is_kept_with_its_new_stamp(tree: Path) -> None:
    _, folders = walk_tree(tree, record=True)
    assert folders is not None
    time.sleep(TICK)
    (tree / "notes/.b.md.swp").write_text("swap")  # an editor's swap file: not indexable
    (tree / "notes/other.png").write_text("image")
    now = unchanged_since(tree, FAR_FUTURE, folders, 0)
    assert now is not None and now != folders
    moved = [
        prefix
        for n, prefix in enumerate(now.prefixes)
        if now.folder_stamps[24 * n : 24 * n + 24] != folders.folder_stamps[24 * n : 24 * n + 24]
    ]
    assert moved == ["notes/"]
    assert now._replace(folder_stamps=folders.folder_stamps) == folders  # same files, new stamp


def test_a_vanished_folder_makes_the_walk_unrecordable_not_wrong(tree: Path, monkeypatch) -> None:
    import fsmem._store.folder.walk as state

    real = state._scan

    def flaky(folder: str, root_real: str):
        return None if folder.endswith("deep") else real(folder, root_real)

    monkeypatch.setattr(state, "_scan", flaky)
    found, folders = walk_tree(tree, record=True)
    assert folders is None and "seo/deep/a.md" not in found


def cache_file(root: Path) -> Path:
    current = read_current(root / ".fsmem")
    assert current is not None
    return index_dir(root / ".fsmem") / current["generation"] / WALK_CACHE


@pytest.mark.slow
def test_searches_use_the_cache_and_still_see_hand_edits(tree: Path, monkeypatch) -> None:
    index_of(tree).search("friday")  # builds the index
    time.sleep(2.2)  # past the racy window: files and folders are now old enough to be trusted
    assert index_of(tree).search("friday")  # a full comparison: files hashed once, settled; the walk saved
    assert index_of(tree).search("friday")  # the settling re-recorded them: the cache follows it
    key, _, count, folders, racy = load_walk_cache(cache_file(tree))
    assert racy == {}
    assert count == 4 and set(folders.prefixes) == {"", "seo/", "seo/deep/", "notes/"}
    assert folders.files() == 4 and folders.names[folders.prefixes.index("notes/")] == "b.md"

    walks = []
    real_walk = index_module.walk_tree
    monkeypatch.setattr(index_module, "walk_tree", lambda *a, **k: walks.append(1) or real_walk(*a, **k))
    index = index_of(tree)
    assert [hit.path for hit in index.search("alpha")] == ["seo/deep/a.md"]
    assert walks == [] and index.status()["files"] == 4 and index.status()["stale"] == 0

    write(tree, "seo/deep/a.md", "# A\n\nomega\n")  # by hand; then a new process searches
    result = run_fsmem("search", "omega", "--root", str(tree))
    assert (result.returncode, result.stdout) == (0, "seo/deep/a.md:1  A  [topic]\n    # A omega\n"), result
    assert run_fsmem("search", "alpha", "--root", str(tree)).stdout == "No matches for 'alpha'.\n"
    # The other process re-read that file: its manifest says so, and this process's cached walk
    # follows by listing that one folder again, not the whole root.
    assert [hit.path for hit in index.search("omega")] == ["seo/deep/a.md"]
    assert walks == []


def test_a_damaged_or_foreign_cache_is_ignored(tree: Path) -> None:
    index = index_of(tree)
    index.search("friday")
    target = cache_file(tree)
    for junk in (b"", b"fsmem-walk-2\n\x00\x00\x00\x00garbage", b"not a cache at all" * 100):
        target.write_bytes(junk)
        assert load_walk_cache(target) is None
        write(tree, "notes/b.md", f"# B\n\nbeta {len(junk)}\n")
        assert [hit.path for hit in index_of(tree).search(f"beta {len(junk)}")] == ["notes/b.md"]


@pytest.mark.parametrize(
    "racy, folders",
    [
        ({"notes/b.md": 1}, None),  # a racy entry that is no (version, tick)
        ({"notes/b.md": ("v1",)}, None),
        ({3: ("v1", 1)}, None),  # a path that is no text
        ({}, (1,)),  # no six columns
        ({}, ([""], [5], [""], bytes(24), b"", [])),  # names that are no text
        ({}, ([""], [""], [""], "x" * 24, b"", [])),  # stamps that are no bytes
        ({}, ([""], [""], [""], bytes(24), b"", [7])),  # a link that is no name
        ({}, (["", "seo/"], [""], [""], bytes(48), b"", [])),  # columns of different lengths
        ({}, ([], [], [], b"", b"", [])),  # no folder at all, not even the root
    ],
)
def test_a_cache_of_another_shape_is_ignored_even_with_a_valid_checksum(tree: Path, racy, folders) -> None:
    """A damaged or planted cache must send the search to the walk, never raise in it."""
    index = index_of(tree)
    index.search("friday")
    target = cache_file(tree)
    key, taken_ns, count, real_folders, _ = load_walk_cache(target)
    save_walk_cache(target, key, taken_ns, count, real_folders if folders is None else folders, racy)
    # its checksum holds: only using it (or its emptiness) can tell
    assert [hit.path for hit in index_of(tree).search("friday")] == ["MEMORY.md"]
    write(tree, "notes/b.md", "# B\n\nbeta planted\n")
    assert [hit.path for hit in index_of(tree).search("beta planted")][0] == "notes/b.md"
    write(tree, "seo/deep/a.md", "# A\n\nalpha planted again\n")
    assert [hit.path for hit in index_of(tree).search("alpha planted again")][0] == "seo/deep/a.md"


def test_changes_through_fsmem_never_make_anyone_walk_the_whole_root(tree: Path, monkeypatch) -> None:
    index = index_of(tree)
    index.search("friday")
    time.sleep(2.2)  # past the racy window
    index.search("friday")
    assert cache_file(tree).exists()
    walks = []
    real_walk = index_module.walk_tree
    monkeypatch.setattr(index_module, "walk_tree", lambda *a, **k: walks.append(1) or real_walk(*a, **k))
    memory = fsmem.open(tree, settings=Settings(watch=False, durable=False))  # another writer
    run = memory.run()
    for path, text in (("seo/deep/new.md", "# New\n\nquokka\n"), ("fresh/folder/x.md", "# X\n\nbilby\n")):
        assert run.call({"command": "write", "path": path, "content": text})["ok"]
    assert run.call({"command": "read", "path": "notes/b.md"})["ok"]
    assert run.call({"command": "delete", "path": "notes/b.md"})["ok"]
    assert [hit.path for hit in index.search("quokka")] == ["seo/deep/new.md"]  # applied, then compared
    assert [hit.path for hit in index.search("bilby")] == ["fresh/folder/x.md"]
    assert index.search("beta") == []
    assert walks == []  # the folders those paths live in were listed again; the root was not walked
    # A hand edit right after, keeping size and mtime, is still found (its folder is listed again).
    target = tree / "seo/deep/new.md"
    info = target.stat()
    target.write_text("# New\n\nwombat\n")  # same size
    os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert [hit.path for hit in index.search("wombat")] == ["seo/deep/new.md"]


def test_a_new_process_whose_walk_cache_holds_builds_no_manifest_and_still_sees_a_same_size_edit(tree: Path) -> None:
    """What a cold ``fsmem search`` with no watcher does: the manifest's entries are built only when
    the cached walk does not hold; an edit in place that keeps the size and the mtime is still found."""
    index_of(tree).search("friday")  # builds the index
    time.sleep(2.2)  # past the racy window
    for _ in range(2):  # a comparison that settles the files, then one that saves the walk as settled
        index_of(tree).search("friday")
    fresh = index_of(tree)
    assert [hit.path for hit in fresh.search("friday")] == ["MEMORY.md"]
    assert fresh.store.manifest is not None and fresh.store.manifest.entries == {}  # the cache held

    same_size_edit(tree)  # "Under" -> "Below": size and mtime as they were
    again = index_of(tree)
    assert [hit.path for hit in again.search("below")] == ["seo/titles.md"]
    assert again.store.manifest is not None and "seo/titles.md" in again.store.manifest.entries


def test_a_symlinked_file_is_compared_by_its_target_and_must_stay_inside(tree: Path, tmp_path_factory) -> None:
    symlink_in(tree)  # seo/link.md -> notes/b.md, inside the root
    found, folders = walk_tree(tree, record=True)
    assert folders is not None and folders.links == ["seo/link.md"] and "seo/link.md" in found
    assert unchanged_since(tree, FAR_FUTURE, folders, 0) == folders
    time.sleep(TICK)
    write(tree, "notes/b.md", "# B\n\nbeta, edited through the link's target\n")
    assert unchanged_since(tree, FAR_FUTURE, folders, 0) is None
    found, folders = walk_tree(tree, record=True)
    assert folders is not None and unchanged_since(tree, FAR_FUTURE, folders, 0) == folders
    outside = tmp_path_factory.mktemp("outside") / "b.md"
    outside.write_bytes((tree / "notes/b.md").read_bytes())
    (tree / "seo/link.md").unlink()
    os.symlink(outside, tree / "seo/link.md")  # the same bytes, now outside the root
    assert unchanged_since(tree, FAR_FUTURE, folders, 0) is None
