"""A search by meaning holds int8 codes and answers what the float32 vectors answer: the same files,
cosines and nearest passages, on vectors crowded enough that the codes alone would get some wrong."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fsmem._index.nearest import load_view
from fsmem._index.vectors import FolderVectors

DIMS = 384


@pytest.fixture
def crowded(tmp_path: Path):
    """600 files of 1-5 passages each, all near one of a few directions: many near ties."""
    rng = np.random.default_rng(5)
    centres = rng.standard_normal((4, DIMS)).astype(np.float32)
    keep = FolderVectors(tmp_path / "vectors.sqlite3")
    vectors = {}
    for i in range(600):
        rows = centres[i % 4] + 0.15 * rng.standard_normal((1 + i % 5, DIMS)).astype(np.float32)
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        vectors[f"f{i:03d}.md"] = rows
        keep.put("m", f"f{i:03d}.md", f"v{i}", [(1, f"passage {n}", row.tobytes()) for n, row in enumerate(rows)])
    live = {path: f"v{int(path[1:4])}" for path in vectors}
    yield keep, live, vectors, centres, rng
    keep.close()


def _by_float32(vectors: dict[str, np.ndarray], query: np.ndarray, k: int) -> dict[str, tuple[float, int]]:
    best = {}
    for path, rows in vectors.items():
        scores = np.einsum("ij,j->i", rows, query)
        best[path] = (float(scores.max()), int(scores.argmax()))
    return dict(sorted(best.items(), key=lambda item: -item[1][0])[:k])


def test_the_nearest_files_are_those_of_the_float32_vectors(crowded):
    keep, live, vectors, centres, rng = crowded
    view = load_view(keep, "m", live, key=None, waiting=0)
    assert view.codes.dtype == np.int8 and view.passages == sum(len(rows) for rows in vectors.values())
    codes_alone_differ = 0
    for trial in range(40):
        query = centres[trial % 4] + 0.3 * rng.standard_normal(DIMS).astype(np.float32)
        query /= np.linalg.norm(query)
        expected = _by_float32(vectors, query, 20)
        found = view.nearest(query, 20)
        assert {path: (near.cosine, near.n) for path, near in found.items()} == expected
        assert [near.version for near in found.values()] == [live[path] for path in expected]
        rough = np.einsum("ij,j->i", view.codes.astype(np.float32), query) * view.scales
        top = np.argsort(-np.maximum.reduceat(rough, view.starts))[:20]
        codes_alone_differ += {view.files[g] for g in top} != set(expected)
    assert codes_alone_differ  # the test is crowded enough to need the second look


def test_a_file_embedded_again_since_the_view_is_left_out(crowded):
    keep, live, vectors, centres, _ = crowded
    view = load_view(keep, "m", live, key=None, waiting=0)
    nearest = next(iter(view.nearest(centres[0] / np.linalg.norm(centres[0]), 1)))
    keep.put("m", nearest, "newer", [(1, "changed", np.zeros(DIMS, np.float32).tobytes())])
    assert nearest not in view.nearest(centres[0] / np.linalg.norm(centres[0]), 5)
