"""Consolidation (issue 22): one level's files reread, merges of duplicated or outdated notes proposed,
nothing applied until a person approves."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import fsmem
from fsmem import Scope
from fsmem._llm.model import ScriptedModel, tool_call
from fsmem._memory.review import consolidate, level_files
from fsmem.cli import main
from tests.chat_server import ChatServer, Reply

AGENT = "5c81d0e4-7f2a"
PROJECT = "# Rules\n- Prices include VAT.\n- Titles end with | Rye & Ember.\n"
TOPIC = "# Brand\n- Titles end with | Rye & Ember.\n- Tone: warm.\n"


def calls(*requests: dict) -> dict:
    return {"role": "assistant", "content": None,
            "tool_calls": [tool_call("memory", r, f"c{i}") for i, r in enumerate(requests)]}


@pytest.fixture
def memory(tmp_path):
    memory = fsmem.open(tmp_path / "bakery", create=True)
    (memory.root / "MEMORY.md").write_text(PROJECT)
    (memory.root / "brand.md").write_text(TOPIC)
    memory.create_agent(AGENT, "SEO")
    (memory.root / "agents/seo-5c81d0e4/MEMORY.md").write_text("# SEO\n- agent note\n")
    (memory.root / "skills/weekly-report").mkdir(parents=True)
    (memory.root / "skills/weekly-report/SKILL.md").write_text("---\nname: weekly-report\ndescription: d\n---\n")
    return memory


def test_a_level_is_its_own_files_only(memory):
    assert level_files(memory, memory.run(Scope.chat())) == ["MEMORY.md", "brand.md"]
    assert level_files(memory, memory.run(Scope.agent(AGENT))) == ["agents/seo-5c81d0e4/MEMORY.md"]


def test_every_change_is_a_proposal_additions_and_new_files_too(memory):
    model = ScriptedModel(
        calls({"command": "write", "path": "brand.md", "old_text": "- Titles end with | Rye & Ember.\n",
               "new_text": ""}),
        calls({"command": "write", "path": "MEMORY.md", "content": PROJECT + "- See brand.md for tone.\n"}),
        calls({"command": "write", "path": "style.md", "content": "# Style\n- warm\n"}),
        "Proposed removing the duplicate title rule from brand.md.")
    before = {p: memory.read(p) for p in ("MEMORY.md", "brand.md")}
    result = consolidate(memory, model, Scope.chat())
    assert {p: memory.read(p) for p in ("MEMORY.md", "brand.md")} == before
    assert not memory.drive.exists("style.md") and result.applied == ()
    assert [p.summary for p in result.proposals] == ["change brand.md", "change MEMORY.md", "create style.md"]
    assert result.notice() == "Memory change proposed"
    first = model.requests[0]
    shown = [m["content"] for m in first if m["role"] == "user"]
    assert shown[0].startswith('<memory path="MEMORY.md"') and shown[1].startswith('<memory path="brand.md"')
    assert "The same note in two places" in shown[-1] and "agent note" not in json.dumps(first)
    memory.approve(result.proposals[0].id)  # a person decides
    assert memory.read("brand.md") == "# Brand\n- Tone: warm.\n"


def test_a_rename_or_delete_waits_too(memory):
    model = ScriptedModel(calls({"command": "delete", "path": "brand.md"}), "Proposed.")
    result = consolidate(memory, model, Scope.chat())
    assert memory.read("brand.md") == TOPIC and [p.summary for p in result.proposals] == ["delete brand.md"]


def test_the_cli_consolidates_one_level(memory):
    with ChatServer([
        Reply(tool_calls=[tool_call("memory", {"command": "write", "path": "agents/seo-5c81d0e4/MEMORY.md",
                                               "old_text": "- agent note", "new_text": "- merged note"}, "a")]),
        "Proposed one merge.",
    ]) as server:
        result = CliRunner().invoke(main, ["review", "--consolidate", f"agent:{AGENT}", "--root", str(memory.root),
                                           "--model-url", server.base_url, "--model", "m", "--api-key-env", ""])
    assert result.exit_code == 0, result.output
    [proposal] = memory.proposals()
    assert result.output == (f"Proposed {proposal.id}: change agents/seo-5c81d0e4/MEMORY.md "
                             f"(`fsmem proposals show {proposal.id}`)\n")
    assert memory.read("agents/seo-5c81d0e4/MEMORY.md") == "# SEO\n- agent note\n"
    neither = CliRunner().invoke(main, ["review", "--root", str(memory.root)])
    assert neither.exit_code == 2 and "--consolidate LEVEL" in neither.output


def test_nothing_to_consolidate(memory):
    result = consolidate(memory, ScriptedModel("Nothing to consolidate."), Scope.chat())
    assert result.outcome() == "Nothing to consolidate: the model found no duplicated or outdated notes."
