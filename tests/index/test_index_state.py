"""The index's files that need no tantivy: the manifest's count of paths held under each folder."""

from __future__ import annotations

import marshal
import shutil
import zlib

import pytest

import fsmem
from fsmem._core.search import Indexed, Stamp
from fsmem._index.state import DamagedManifest, Manifest, note_pending
from fsmem._index.generations import IndexWarning


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


def test_a_rewrite_leaves_a_base_that_a_new_process_loads_with_the_lines_after_it(tmp_path):
    manifest = Manifest(tmp_path / "files")
    manifest.rewrite({f"f/{n}.md": _entry() for n in range(3)})
    assert (tmp_path / "files").read_bytes().startswith(b"fsmem-manifest-base-")
    manifest.append({"g/new.md": _entry()}, ["f/0.md"])
    fresh = Manifest(tmp_path / "files")
    assert sorted(fresh.load()) == ["f/1.md", "f/2.md", "g/new.md"]
    assert fresh.load()["f/1.md"] == ((1, 2, 3, 4), "abc123abc123", 5)
    assert fresh.lines == 2  # the base is no journal line
    assert fresh.count_under("f") == 2 and fresh.holds_under("g")
    assert fresh.paths_since((fresh.key()[0], 0)) is None  # inside the base: no journal to read


def test_a_manifest_of_lines_alone_still_loads(tmp_path):
    (tmp_path / "files").write_text(
        "+\tabc123abc123\t1\t2\t3\t4\t5\ta.md\n+\tabc123abc123\t1\t2\t3\t4\t5\tb.md\n-\ta.md\n", encoding="utf-8"
    )
    assert sorted(Manifest(tmp_path / "files").load()) == ["b.md"]


def test_a_base_that_does_not_check_out_is_refused_whole(tmp_path):
    Manifest(tmp_path / "files").rewrite({"a.md": _entry(), "b.md": _entry()})
    Manifest(tmp_path / "files").append({"c.md": _entry()}, [])
    data = bytearray((tmp_path / "files").read_bytes())
    data[60] ^= 0xFF  # a flipped byte inside the marshalled entries
    (tmp_path / "files").write_bytes(bytes(data))
    with pytest.raises(DamagedManifest, match="checksum"):
        Manifest(tmp_path / "files").load()


@pytest.mark.parametrize(
    "payload",
    [
        {"seo/a.md": 1},  # an older layout, or anything else marshal reads
        (["a.md"], ["v1"], b"\0" * 32, b"\0" * 8, [None], b"\0" * 8),  # a folder that is no name
        (["a.md", "b.md"], ["v1"], b"\0" * 32, b"\0" * 8, [], b""),  # columns of different lengths
        ([7], ["v1"], b"\0" * 32, b"\0" * 8, [], b""),  # a path that is no text
        (["a.md"], ["v1"], b"\0" * 31, b"\0" * 8, [], b""),  # numbers cut short
    ],
)
def test_a_base_planted_with_a_valid_checksum_but_another_shape_is_refused(tmp_path, payload):
    data = marshal.dumps(payload)
    head = b"fsmem-manifest-base-1\n" + bytes(8) + zlib.crc32(data).to_bytes(4, "big") + len(data).to_bytes(8, "big")
    (tmp_path / "files").write_bytes(head + data + b"\n")
    with pytest.raises(DamagedManifest):
        Manifest(tmp_path / "files").load()
    with pytest.raises(DamagedManifest):  # what opening the index asks: refused there, so rebuilt
        Manifest(tmp_path / "files").check()


def test_a_manifest_replaced_by_one_that_took_its_inode_is_loaded_again(tmp_path):
    """ext4 hands a freed inode to the next file: a replacement is told by its first bytes too."""
    base = {f"f/{n}.md": _entry() for n in range(50)}
    Manifest(tmp_path / "files").rewrite(base)
    reader = Manifest(tmp_path / "files")
    reader.load()
    key = reader.key()
    Manifest(tmp_path / "next").rewrite({**base, "y/new.md": _entry(), "y/other.md": _entry()})
    with open(tmp_path / "files", "r+b") as handle:  # the same inode, as a reused one would be
        handle.write((tmp_path / "next").read_bytes())
    assert "y/new.md" in reader.load() and reader.count_under("y") == 2
    assert reader.paths_since(key) is None  # the walk's record of the old file says nothing of this one


def test_the_journal_is_compacted_into_a_base_once_its_lines_outgrow_the_entries(tmp_path):
    manifest = Manifest(tmp_path / "files")
    manifest.rewrite({f"{n}.md": _entry() for n in range(4000)})
    for _ in range(2000):
        manifest.append({"0.md": _entry()}, [])
    manifest.load()
    assert not manifest.needs_compaction()  # 2,000 lines: fewer than a quarter of the entries + 1,000
    manifest.append({f"{n}.md": _entry() for n in range(5)}, [])
    manifest.load()
    assert manifest.needs_compaction()


def test_a_damaged_base_rebuilds_the_index_from_the_files_with_a_warning(tmp_path):
    memory = fsmem.open(tmp_path, create=True)
    run = memory.run(thread_id="t-1")
    for path in ("a.md", "seo/b.md"):
        assert run.call({"command": "write", "path": path, "content": "# Note\nokapiword\n"})["ok"]
    memory.index.rebuild()  # the manifest is a base now
    memory.close()
    files = next((tmp_path / ".fsmem" / "index").glob("g-*/files"))
    assert files.read_bytes().startswith(b"fsmem-manifest-base-")
    data = bytearray(files.read_bytes())
    data[60] ^= 0xFF
    files.write_bytes(bytes(data))
    (tmp_path / "seo" / "b.md").unlink()  # gone since: the index still holds it, the manifest cannot say so
    fresh = fsmem.open(tmp_path)
    with pytest.warns(IndexWarning, match="manifest's base is damaged"):
        assert [hit.path for hit in fresh.search("okapiword")] == ["a.md"]
    assert fresh.index.status()["stale"] == 0
    fresh.close()


@pytest.mark.parametrize("based", [True, False])
def test_the_key_check_finds_is_the_one_a_load_finds_and_it_follows_the_file(tmp_path, based):
    """A search whose walk cache holds goes by ``check``'s key alone; it must be the key a load gives."""
    if based:
        Manifest(tmp_path / "files").rewrite({"a.md": _entry(), "b/c.md": _entry()})
    Manifest(tmp_path / "files").append({"d.md": _entry(), "f/g.md": _entry()}, ["a.md"])  # past the head's 64 bytes
    checked = Manifest(tmp_path / "files")
    checked.check()
    loaded = Manifest(tmp_path / "files")
    loaded.load()
    assert checked.key() == loaded.key() is not None
    assert checked.entries == {}  # nothing was built for it
    before = loaded.key()
    Manifest(tmp_path / "files").append({"e.md": _entry()}, [])  # another process indexed a file
    assert checked.key() == loaded.key() != before  # both follow the file
    assert checked.paths_since(before) == {"e.md"}
    assert (
        sorted(checked.load())
        == sorted(loaded.entries)
        == (["b/c.md", "d.md", "e.md", "f/g.md"] if based else ["d.md", "e.md", "f/g.md"])
    )


def test_check_refuses_a_damaged_base_without_building_anything(tmp_path):
    Manifest(tmp_path / "files").rewrite({"a.md": _entry()})
    data = bytearray((tmp_path / "files").read_bytes())
    data[-3] ^= 0xFF  # deep inside the payload: the head (and so the key) is as it was
    (tmp_path / "files").write_bytes(bytes(data))
    with pytest.raises(DamagedManifest, match="checksum"):
        Manifest(tmp_path / "files").check()
