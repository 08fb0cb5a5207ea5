"""Fusing words and meaning: normalised scores, meaning at a low weight."""

from __future__ import annotations

from datetime import UTC, datetime

from fsmem._core.fusion import SearchResults, fuse, holding_first
from fsmem._core.search import SearchHit


def test_meaning_breaks_near_ties_and_lifts_what_words_missed_but_cannot_bury_a_clear_word_hit():
    words = {"a.md": 10.0, "b.md": 9.5, "c.md": 2.0}
    meaning = {"b.md": 0.62, "d.md": 0.60, "a.md": 0.20}
    order = fuse(words, meaning, weight=0.2)
    assert [path for path, _ in order] == ["b.md", "a.md", "c.md", "d.md"]
    assert dict(order)["a.md"] == 1.0 and round(dict(order)["b.md"], 4) == 1.15
    assert [path for path, _ in fuse(words, {}, 0.2)] == ["a.md", "b.md", "c.md"]  # no meaning: words' order
    assert [path for path, _ in fuse({}, meaning, 1.0)] == ["b.md", "d.md", "a.md"]


def _hit(path: str, kind: str) -> SearchHit:
    return SearchHit(path, path, kind, "project", 1.0, "", datetime(2026, 1, 1, tzinfo=UTC))


def test_replaced_facts_come_after_the_rest_and_results_say_how_much_meaning_took_part():
    hits = [_hit("old.md", "replaced_fact"), _hit("now.md", "fact"), _hit("t.md", "topic")]
    assert [hit.path for hit in holding_first(hits)] == ["now.md", "t.md", "old.md"]
    results = SearchResults(hits, "partial")
    assert results == hits and results.meaning == "partial" and SearchResults().meaning == "off"
