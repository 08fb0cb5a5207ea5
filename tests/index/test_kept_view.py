"""The search's view kept beside the keep: loaded by a new process under the same key and answering
what the rebuilt view answers; stale, corrupt, planted or inconsistent files built again, never used."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fsmem
from fsmem._env.config import Settings
from fsmem._index.kept_view import load_kept, save_kept
from fsmem._index.nearest import load_view
from fsmem._index.vectors import FolderVectors
from tests.conftest import REPO

DIMS = 384


@pytest.fixture
def kept(tmp_path: Path):
    """A keep of 300 files of 1-4 passages, its view built and saved beside it."""
    rng = np.random.default_rng(9)
    keep = FolderVectors(tmp_path / "vectors.sqlite3")
    for i in range(300):
        rows = rng.standard_normal((1 + i % 4, DIMS)).astype(np.float32)
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        keep.put("m", f"f{i:03d}.md", f"v{i}", [(1, f"passage {n}", row.tobytes()) for n, row in enumerate(rows)])
    live = {f"f{i:03d}.md": f"v{i}" for i in range(300)}
    key = (keep.mark(), "manifest", "g1")
    view = load_view(keep, "m", live, key, waiting=0)
    file = keep.beside("view")
    assert file is not None
    save_kept(file, "m", view)
    yield keep, view, file, key, rng
    keep.close()


def _queries(rng: np.random.Generator) -> list[np.ndarray]:
    rows = rng.standard_normal((20, DIMS)).astype(np.float32)
    return list(rows / np.linalg.norm(rows, axis=1, keepdims=True))


def test_a_kept_view_answers_what_the_rebuilt_view_answers(kept):
    keep, view, file, key, rng = kept
    loaded = load_kept(file, keep, "m", key, waiting=0)
    assert loaded is not None and oct(os.stat(file).st_mode & 0o777) == "0o600"
    assert loaded.files == view.files and loaded.versions == view.versions
    assert np.array_equal(loaded.codes, view.codes) and np.array_equal(loaded.scales, view.scales)
    assert np.array_equal(loaded.starts, view.starts)
    for query in _queries(rng):
        assert loaded.nearest(query, 10) == view.nearest(query, 10)


def test_the_keeps_mark_lasts_across_processes_and_changes_with_a_put_or_a_remade_keep(kept, tmp_path):
    keep, view, file, key, rng = kept
    again = FolderVectors(keep.file)
    assert again.mark() == keep.mark()  # another process reads the same mark for the same rows
    again.put("m", "new.md", "v", [(1, "new", np.ones(DIMS, np.float32).tobytes())])
    assert keep.mark() != key[0]
    assert load_kept(file, keep, "m", (keep.mark(), "manifest", "g1"), waiting=0) is None  # stale
    again.close()
    other = FolderVectors(tmp_path / "other" / "vectors.sqlite3")
    assert other.mark()[0] != keep.mark()[0] and other.mark()[1] == 0  # a keep made anew has a name of its own
    other.close()


def test_another_key_or_model_is_not_believed(kept):
    keep, view, file, key, rng = kept
    assert load_kept(file, keep, "m", (key[0], "manifest", "g2"), waiting=0) is None
    assert load_kept(file, keep, "other model", key, waiting=0) is None


@pytest.mark.parametrize("harm", ["flipped", "truncated", "garbage", "link", "empty"])
def test_a_corrupt_or_planted_file_is_not_believed(kept, tmp_path, harm):
    keep, view, file, key, rng = kept
    data = bytearray(file.read_bytes())
    if harm == "flipped":  # inside the codes: the archive still opens, the checksum says no
        data[len(data) // 2] ^= 0xFF
        file.write_bytes(bytes(data))
    elif harm == "truncated":
        file.write_bytes(bytes(data[: len(data) // 3]))
    elif harm == "garbage":
        file.write_bytes(b"not an archive")
    elif harm == "empty":
        file.write_bytes(b"")
    else:
        planted = tmp_path / "planted.npz"
        planted.write_bytes(bytes(data))
        file.unlink()
        file.symlink_to(planted)
    assert load_kept(file, keep, "m", key, waiting=0) is None


def test_a_file_whose_shapes_disagree_is_not_believed(kept):
    keep, view, file, key, rng = kept
    save_kept(file, "m", dataclasses.replace(view, files=view.files[:-1]))  # its checksums are right
    assert load_kept(file, keep, "m", key, waiting=0) is None
    save_kept(file, "m", dataclasses.replace(view, scales=view.scales[:-1]))
    assert load_kept(file, keep, "m", key, waiting=0) is None
    save_kept(file, "m", dataclasses.replace(view, starts=view.starts[::-1].copy()))
    assert load_kept(file, keep, "m", key, waiting=0) is None


def _open(root: Path, model: Path) -> fsmem.Memory:
    return fsmem.open(root, create=True, settings=Settings(watch=False, durable=False, embed_model=str(model)))


SEARCH = """
import sys, fsmem
from fsmem._env.config import Settings
from fsmem._index import meaning
built = []
real = meaning.load_view
meaning.load_view = lambda *args: built.append(1) or real(*args)
memory = fsmem.open(sys.argv[1], settings=Settings(watch=False, durable=False, embed_model=sys.argv[2]))
found = memory.search("dog", mode="meaning")
print(len(built), ",".join(hit.path for hit in found))
"""


def test_a_new_process_loads_the_view_the_last_one_built_until_the_keep_changes(tmp_path, embedding_model):
    root = tmp_path / "root"
    memory = _open(root, embedding_model)
    run = memory.run()
    run.call({"command": "write", "path": "pets.md", "content": "# Pets\n\nWe adopted a golden retriever.\n"})
    run.call({"command": "write", "path": "taxes.md", "content": "# Taxes\n\nThe forms are due next week.\n"})
    memory.embed_pending()
    in_process = [hit.path for hit in memory.search("dog", mode="meaning")]  # builds the view and keeps it
    memory.close()

    def cold() -> tuple[str, str]:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        done = subprocess.run([sys.executable, "-c", SEARCH, str(root), str(embedding_model)],
                              capture_output=True, text=True, env=env, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        built, paths = done.stdout.split()
        return built, paths

    assert cold() == ("0", ",".join(in_process))  # loaded, not built: the same answer
    memory = _open(root, embedding_model)
    memory.run().call({"command": "write", "path": "more.md", "content": "# More\n\nA puppy came too.\n"})
    memory.embed_pending()
    memory.close()
    built, paths = cold()
    assert built == "1" and "more.md" in paths.split(",")  # the keep changed: built again
    assert cold()[0] == "0"



def test_a_keep_made_before_its_mark_lasted_keeps_its_rows_and_opening_one_takes_no_write_lock(tmp_path, monkeypatch):
    import sqlite3

    from fsmem._errors import Busy
    from fsmem._index import vectors

    file = tmp_path / "vectors.sqlite3"
    keep = FolderVectors(file)
    keep.put("m", "a.md", "v1", [(1, "a", np.ones(DIMS, np.float32).tobytes())])
    keep.close()
    old = sqlite3.connect(file, isolation_level=None)
    old.execute("DROP TABLE changes")  # as the keep was made before
    old.close()
    monkeypatch.setattr(vectors, "BUSY_TIMEOUT", 0.1)
    writer = sqlite3.connect(file, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # another process in the middle of a put
    try:
        with pytest.raises(Busy, match="could not be written"):
            FolderVectors(file).mark()  # its mark must be written: it waits, and is not taken for damage
    finally:
        writer.execute("ROLLBACK")
    again = FolderVectors(file)
    assert again.held("m") == {"a.md": "v1"} and again.mark()[1] == 0
    mark = again.mark()
    again.close()
    writer.execute("BEGIN IMMEDIATE")
    try:
        reader = FolderVectors(file)  # marked: opened without a write
        assert reader.mark() == mark and reader.held("m") == {"a.md": "v1"}
        reader.close()
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_a_search_beside_a_busy_keep_that_needs_its_mark_answers_by_words(tmp_path, embedding_model, monkeypatch):
    import sqlite3

    from fsmem._memory.hybrid import MeaningWarning
    from fsmem._index import vectors

    root = tmp_path / "root"
    memory = _open(root, embedding_model)
    memory.run().call({"command": "write", "path": "pets.md", "content": "# Pets\n\nWe adopted a golden dog.\n"})
    memory.embed_pending()
    memory.close()
    file = root / ".fsmem" / "index" / "vectors.sqlite3"
    old = sqlite3.connect(file, isolation_level=None)
    old.execute("DROP TABLE changes")
    old.close()
    monkeypatch.setattr(vectors, "BUSY_TIMEOUT", 0.1)
    writer = sqlite3.connect(file, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        memory = _open(root, embedding_model)
        with pytest.warns(MeaningWarning, match="could not be written"):
            found = memory.search("golden dog")
        assert [hit.path for hit in found] == ["pets.md"] and found.meaning == "off"
        memory.close()
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    (files,) = sqlite3.connect(file).execute("SELECT count(*) FROM files").fetchone()
    assert files == 2  # pets.md and MEMORY.md: the keep was not taken for damaged
    keep = FolderVectors(file)
    assert keep.mark()[1] == 0  # marked now that no one else writes
    keep.close()
