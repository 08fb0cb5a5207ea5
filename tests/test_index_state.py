"""The index's files that need no tantivy: the manifest's count of paths held under each folder."""

from __future__ import annotations

import shutil

import fsmem
from fsmem._core.search import Indexed, Stamp
from fsmem._index_state import Manifest, note_pending


def _entry() -> Indexed:
    return Indexed(Stamp(1, 2, 3, 4), "abc123abc123", 5)


def test_holds_under_follows_appends_removals_and_a_rewrite(tmp_path):
    manifest = Manifest(tmp_path / "files")
    assert not manifest.holds_under("a")
    manifest.append({"a/b/c.md": _entry(), "a/d.md": _entry()}, [])
    assert manifest.holds_under("a") and manifest.holds_under("a/b")
    assert not manifest.holds_under("a/b/c.md") and not manifest.holds_under("b")
    manifest.append({"a/b/c.md": _entry()}, [])  # indexed again: still one path under a/b
    manifest.append({}, ["a/b/c.md"])
    assert not manifest.holds_under("a/b") and manifest.holds_under("a")
    manifest.append({"x/y.md": _entry()}, ["a/d.md", "not/held.md"])
    assert not manifest.holds_under("a") and manifest.holds_under("x")
    manifest.rewrite({"z/w.md": _entry()})  # replaced whole (a rebuild, a compaction)
    assert manifest.holds_under("z") and not manifest.holds_under("x")


def test_another_manifest_on_the_same_journal_sees_the_same_folders(tmp_path):
    writer, reader = Manifest(tmp_path / "files"), Manifest(tmp_path / "files")
    writer.append({"a/b.md": _entry()}, [])
    assert reader.holds_under("a")
    writer.append({}, ["a/b.md"])
    assert not reader.holds_under("a")


def test_a_folder_noted_as_gone_drops_every_file_held_under_it(tmp_path):
    memory = fsmem.open(tmp_path, create=True)
    run = memory.run(thread_id="t-1")
    for path in ("seo/plan.md", "seo/deep/notes.md", "seo.md", "seoul/trip.md"):
        assert run.call({"command": "write", "path": path, "content": "# Note\nquetzalword\n"})["ok"]
    index = fsmem.open(tmp_path).index  # no watcher, no comparison: only what changes through fsmem noted
    assert len(index.search("quetzalword", fresh=False)) == 4
    shutil.rmtree(tmp_path / "seo")
    note_pending(tmp_path / ".fsmem", {"seo"})  # a folder's change is noted as the folder, not its files
    assert sorted(hit.path for hit in index.search("quetzalword", fresh=False)) == ["seo.md", "seoul/trip.md"]
