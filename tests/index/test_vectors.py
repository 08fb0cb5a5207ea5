"""The folder's vector keep (SQLite beside the generations): vectors streamed by file and version, a
passage's text read alone, and nothing of a version that was replaced."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fsmem._index.vectors import FolderVectors


def _vector(*values: float) -> bytes:
    return np.asarray(values, dtype=np.float32).tobytes()


def test_vectors_are_those_of_the_versions_asked_for_by_path_and_in_order(tmp_path: Path) -> None:
    keep = FolderVectors(tmp_path / "vectors.sqlite3")
    keep.put("m", "b.md", "b1", [(1, "# B", _vector(1, 0)), (4, "more of b", _vector(0, 1))])
    keep.put("m", "a.md", "a1", [(1, "# A", _vector(0.6, 0.8))])
    keep.put("other", "a.md", "a1", [(1, "# A", _vector(1, 1, 1))])  # another model's space: never mixed in
    assert keep.count("m") == 3
    assert list(keep.vectors("m", {"a.md": "a1", "b.md": "b1"})) == [
        ("a.md", "a1", _vector(0.6, 0.8)),
        ("b.md", "b1", _vector(1, 0)),
        ("b.md", "b1", _vector(0, 1)),
    ]
    assert list(keep.vectors("m", {"a.md": "a2", "b.md": "b1"}))[0][0] == "b.md"  # a.md's kept version is not a2
    assert list(keep.vectors_of("m", {"b.md": "b1", "gone.md": "g1"})) == [
        ("b.md", "b1", _vector(1, 0)),
        ("b.md", "b1", _vector(0, 1)),
    ]
    assert list(keep.vectors_of("m", {"a.md": "a0"})) == []  # not the version kept
    assert keep.passage("m", "b.md", "b1", 1) == (4, "more of b")
    keep.put("m", "b.md", "b2", [(1, "# B again", _vector(1, 0))])
    assert keep.passage("m", "b.md", "b1", 1) is None  # that version's passages went with it
    assert keep.passage("m", "b.md", "b2", 0) == (1, "# B again") and keep.count("m") == 2
    keep.close()
