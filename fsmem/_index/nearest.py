"""The files nearest a query's vector, among a memory's kept passages: what a search by meaning holds
in memory, and how it ranks.

    view = load_view(keep, model, live, key, waiting)   # live: path → the version the index holds
    view.nearest(vector, k=20)                          # {path: Near(cosine, version, n)}, the k nearest files

Held: each passage's vector as int8 codes with one float32 scale a row (a quarter of float32's
memory: 397,000 passages at 100,000 files take 153 MB instead of 610 MB), and each file's path,
version and first row; the passages' texts stay in the keep. A search scores every row from its codes,
which is within a known bound of the float32 cosine (half a step of the row's scale times the query's
L1 norm), keeps every file whose best passage could be among the ``k`` nearest given that bound, and
scores those files' passages again from their float32 vectors in the keep. So the answer is the one
the float32 vectors give: the same files, the same cosines, the same nearest passage.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from fsmem._errors import ModelError
from fsmem._index.vectors import VectorKeep, VectorRow

__all__ = ["Near", "View", "load_view"]

BLOCK = 1024  # rows turned to float32 at a time, into one buffer (1.5 MB at 384 dimensions: in cache)
LEVELS = 127  # an int8 code's steps either side of zero
ROUNDING = 1e-5  # float32's own rounding in a score, added to the bound


class Near(NamedTuple):
    cosine: float
    version: str  # the file's version the passage is of
    n: int  # which of its passages, from 0


@dataclass(frozen=True)
class View:
    key: object
    files: list[str]  # the files whose passages are kept, in the rows' order
    versions: list[str]  # each file's version the passages are of
    starts: np.ndarray  # the row where each file's passages start
    codes: np.ndarray  # int8, one row per passage, each file's in order
    scales: np.ndarray  # float32, one per row: a row's vector is about codes * scale
    exact: Callable[[Mapping[str, str]], Iterator[VectorRow]]  # the keep's float32 vectors of a few files
    waiting: int  # files of the index whose passages are not (all) kept yet

    @property
    def passages(self) -> int:
        return len(self.codes)

    def nearest(self, vector: np.ndarray, k: int) -> dict[str, Near]:
        """The ``k`` files whose best passage is nearest ``vector``: path → its cosine, version and number.
        A file embedded again since the view was made is left out (its new passages are the next view's)."""
        if not self.files:
            return {}
        query = vector.astype(np.float32)
        scores = np.empty(len(self.codes), np.float32)
        rows = np.empty((BLOCK, self.codes.shape[1]), np.float32)
        for start in range(0, len(self.codes), BLOCK):
            codes = self.codes[start : start + BLOCK]
            block = rows[: len(codes)]
            block[...] = codes
            # einsum's own loop, not BLAS: OpenBLAS's threads spin against a loaded machine
            scores[start : start + len(codes)] = np.einsum("ij,j->i", block, query)
        scores *= self.scales
        bound = self.scales * (float(np.abs(query).sum()) / 2) + ROUNDING
        best = np.maximum.reduceat(scores, self.starts)
        slack = np.maximum.reduceat(bound, self.starts)
        if len(best) > k:  # a file whose best could reach the k-th surest one is looked at again
            floor = -np.partition(-(best - slack), k - 1)[k - 1]
            groups = np.flatnonzero(best + slack >= floor)
        else:
            groups = np.arange(len(best))
        return _exact_nearest(self.exact({self.files[g]: self.versions[g] for g in groups}), query, k)


def _exact_nearest(rows: Iterator[VectorRow], query: np.ndarray, k: int) -> dict[str, Near]:
    """The ``k`` files of ``rows`` whose best passage is nearest ``query``, by their float32 vectors."""
    paths: list[str] = []
    versions: list[str] = []
    vectors: list[bytes] = []
    for path, version, vector in rows:
        paths.append(path)
        versions.append(version)
        vectors.append(vector)
    if not vectors:
        return {}
    scores = np.einsum("ij,j->i", np.frombuffer(b"".join(vectors), np.float32).reshape(len(vectors), -1), query)
    best: dict[str, Near] = {}
    n = 0
    for i, path in enumerate(paths):
        n = n + 1 if i and paths[i - 1] == path else 0
        if path not in best or scores[i] > best[path].cosine:
            best[path] = Near(float(scores[i]), versions[i], n)
    return dict(sorted(best.items(), key=lambda item: -item[1].cosine)[:k])


def load_view(keep: VectorKeep, model: str, live: Mapping[str, str], key: object, waiting: int) -> View:
    """The view of what ``keep`` holds under ``model`` for the versions of ``live``: each vector is read
    once, a block at a time, into its codes and scale (the float32 rows are never all in memory)."""
    count = keep.count(model)
    files: list[str] = []
    versions: list[str] = []
    starts: list[int] = []
    codes = np.zeros((0, 0), np.int8)
    scales = np.zeros(0, np.float32)
    block = np.zeros((0, 0), np.float32)
    width = used = filled = 0
    for path, version, vector in keep.vectors(model, live):
        if not width:
            width = len(vector)
            codes, scales = np.empty((count, width // 4), np.int8), np.empty(count, np.float32)
            block = np.empty((BLOCK, width // 4), np.float32)
        if len(vector) != width:
            raise ModelError(f"the passages kept for {path} are not of the model's {width // 4} dimensions")
        if used == len(codes):  # another process put passages since they were counted
            codes = np.concatenate([codes, np.empty((max(len(codes), BLOCK), width // 4), np.int8)])
            scales = np.concatenate([scales, np.empty(len(codes) - len(scales), np.float32)])
        if not files or files[-1] != path:
            files.append(path)
            versions.append(version)
            starts.append(used)
        block[used - filled] = np.frombuffer(vector, np.float32)
        used += 1
        if used - filled == BLOCK:
            _quantize(block, codes[filled:used], scales[filled:used])
            filled = used
    if used > filled:
        _quantize(block[: used - filled], codes[filled:used], scales[filled:used])
    if used < len(codes) // 2:
        codes, scales = codes[:used].copy(), scales[:used].copy()  # rows of files gone or changed
    else:
        codes, scales = codes[:used], scales[:used]
    return View(
        key,
        files,
        versions,
        np.array(starts, dtype=np.intp),
        codes,
        scales,
        lambda wanted: keep.vectors_of(model, wanted),
        waiting,
    )


def _quantize(rows: np.ndarray, codes: np.ndarray, scales: np.ndarray) -> None:
    """Each row as int8 codes times its own scale (its largest magnitude over 127)."""
    scales[:] = np.abs(rows).max(axis=1) / LEVELS
    scales[scales == 0] = 1.0  # a zero vector: any scale, its codes are zeros
    codes[:] = np.rint(rows / scales[:, None])
