"""Words and meaning fused into one ranking. Pure: scores in, order out.

    order = fuse(word_scores, meaning_scores, weight=0.3)    # [(path, fused score), …], best first

Measured on the dev split of the recall benchmark (docs/search.md): reciprocal-rank fusion with equal
weights ranks below words alone (a small model's near misses push true word hits down), so the fusion
is a weighted sum of normalised scores in which meaning only reorders near ties and lifts what words
missed: a file's words score is its BM25 over the best one's (1 for the best, 0 for a file words did
not find); its meaning score is its best passage's cosine rescaled over the candidates (1 for the
nearest, 0 at the farthest kept and for files not among them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from fsmem._core.search import SearchHit
from fsmem._errors import BadRequest

__all__ = ["MODES", "Meaning", "SearchResults", "check_mode", "fuse", "holding_first"]

Meaning = Literal["off", "partial", "full"]
MODES = ("words", "meaning", "both")


class SearchResults(list[SearchHit]):
    """Ranked hits, and how much meaning took part: ``off`` (words alone: no model, a model down, or
    ``mode="words"``), ``partial`` (some files' passages are not embedded yet: those were found by words
    alone), ``full``."""

    meaning: Meaning

    def __init__(self, hits: list[SearchHit] | tuple[SearchHit, ...] = (), meaning: Meaning = "off") -> None:
        super().__init__(hits)
        self.meaning = meaning


def fuse(words: Mapping[str, float], meaning: Mapping[str, float], weight: float) -> list[tuple[str, float]]:
    """Paths ranked by ``words/max(words) + weight * rescaled(meaning)`` (ties: by words, then path)."""
    top = max(words.values(), default=0.0)
    high = max(meaning.values(), default=0.0)
    low = min(meaning.values(), default=0.0)
    spread = high - low

    def near(path: str) -> float:
        if path not in meaning:
            return 0.0
        return (meaning[path] - low) / spread if spread > 0 else 1.0

    fused = {
        path: (words.get(path, 0.0) / top if top > 0 else 0.0) + weight * near(path)
        for path in dict.fromkeys([*words, *meaning])
    }
    return sorted(fused.items(), key=lambda item: (-item[1], -words.get(item[0], 0.0), item[0]))


def holding_first(hits: list[SearchHit]) -> list[SearchHit]:
    """Facts that were replaced after everything else, each side in its own order (as words rank them)."""
    return [hit for hit in hits if hit.kind != "replaced_fact"] + [hit for hit in hits if hit.kind == "replaced_fact"]


def check_mode(mode: str) -> str:
    """``mode`` if it is one of ``MODES`` (``BadRequest`` otherwise)."""
    if mode not in MODES:
        raise BadRequest(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    return mode
