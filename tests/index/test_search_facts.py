"""Facts kept through the facts API are searchable at once, holding ones first, with their dates."""

from __future__ import annotations

from pathlib import Path

import fsmem


def test_kept_facts_rank_holding_before_replaced_through_the_tool(tmp_path: Path) -> None:
    memory = fsmem.open(tmp_path, create=True)
    memory.facts.keep("Ana", "role", "Ana leads the data team.", source="chat: Planning", said="2026-09-01")
    memory.facts.keep("Ana", "role", "Ana works in research.", source="chat: Planning", said="2026-10-12")
    result = memory.run(thread_id="t").call({"command": "search", "query": "ana"})
    assert result["ok"]
    kinds = [(hit["kind"], hit["title"], hit["snippet"]) for hit in result["hits"]]
    assert kinds == [
        ("fact", "Ana · role", "Ana works in research. (said 2026-10-12)"),
        ("replaced_fact", "Ana · role", "Ana leads the data team. (said 2026-09-01; held until 2026-10-12)"),
    ]
    assert result["text"].splitlines()[1] == "    Ana works in research. (said 2026-10-12)"
    # The source is searchable too, and "held until" finds only what no longer holds.
    assert len(memory.search("planning")) == 2
    assert [hit.kind for hit in memory.search('"held until"')] == ["replaced_fact"]
