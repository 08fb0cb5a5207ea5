"""Facts in search: what holds comes first, a replaced fact is still found and says until when."""

from __future__ import annotations

import pytest

import fsmem


@pytest.fixture
def memory(tmp_path):
    memory = fsmem.open(tmp_path / "root", create=True)
    memory.facts.keep("Ana", "role", "Ana leads the data team.", said="2026-09-01", source="chat: Planning")
    memory.facts.keep("Ana", "role", "Ana works in research.", said="2026-10-12")
    return memory


def test_what_holds_comes_first_and_what_held_is_still_found(memory) -> None:
    now = memory.facts.current("ana")[0]
    old = memory.facts.history(now.id)[1]
    hits = memory.search("What was Ana's role in September?")
    paths = [hit.path for hit in hits]
    assert paths.index(now.path) < paths.index(old.path)
    replaced = hits[paths.index(old.path)]
    assert replaced.kind == "replaced_fact"
    assert "held until 2026-10-12" in replaced.snippet
    assert [hit.path for hit in memory.search("What does Ana work on?")][:2] == [now.path, old.path]


def test_keep_and_forget_are_searchable_when_they_return(memory) -> None:
    kept = memory.facts.keep("Ana", "role", "Ana leads the platform team.", said="2026-11-01")
    assert memory.search("platform")[0].path == kept.fact.path
    previous = kept.replaced
    assert any(hit.path == previous.path and hit.kind == "replaced_fact" for hit in memory.search("research"))
    memory.facts.forget(kept.fact.id)
    assert memory.search("platform") == [] and memory.search("research") == []


def test_month_names_find_facts_by_when_they_were_said_and_held(memory) -> None:
    now = memory.facts.current("ana")[0]
    old = memory.facts.history(now.id)[1]
    assert [hit.path for hit in memory.search("september")] == [old.path]  # said 1 September
    assert [hit.path for hit in memory.search("october")] == [now.path, old.path]  # said / held until
    assert [hit.path for hit in memory.search('"held until" october')] == [old.path]
