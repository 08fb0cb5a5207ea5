"""Skills kept like memory (issue 22): the listing each scope carries, their use recorded, and the review's
skill half with the scripted model (guards, first fit, the line a person sees)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fsmem
from fsmem import Scope
from fsmem._core.context import message_text, parse_header
from fsmem._core.skills import MAX_LISTED
from fsmem._llm.model import ScriptedModel, tool_call
from fsmem._memory.review import review
from fsmem._memory.skills import read_uses

SKILL = "skills/weekly-report/SKILL.md"


def skill(name: str, description: str, origin: str | None = None, body: str = "# Steps\n1. Sales first.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{f'origin: {origin}' + chr(10) if origin else ''}---\n{body}"


def calls(*requests: dict) -> dict:
    return {"role": "assistant", "content": None,
            "tool_calls": [tool_call("memory", request, f"c{i}-{abs(hash(json.dumps(request))) % 10**6}")
                           for i, request in enumerate(requests)]}


@pytest.fixture
def memory(tmp_path):
    memory = fsmem.open(tmp_path / "shop", create=True)
    writer = memory.run(Scope.chat(), thread_id="person")
    writer.call({"command": "write", "path": SKILL, "content": skill("weekly-report", "Writing the weekly report.")})
    return memory


def listing(memory, scope=None) -> str:
    messages = memory.run(scope or Scope.chat(), thread_id="t").context([])
    found = [message_text(m) for m in messages if parse_header(message_text(m))[0] == "skills"]
    return found[0] if found else ""


def test_the_listing_is_capped_and_leaves_out_a_broken_skill(memory):
    writer = memory.run(Scope.chat(), thread_id="w")
    for number in range(MAX_LISTED + 5):
        writer.call({"command": "write", "path": f"skills/task-{number:02d}/SKILL.md",
                     "content": skill(f"task-{number:02d}", "x" * 400)})
    (memory.root / "skills" / "broken").mkdir()
    (memory.root / "skills" / "broken" / "SKILL.md").write_text("no front matter, saved by hand\n")
    text = listing(memory)
    assert text.count("\n- ") == MAX_LISTED + 1 and "… and 6 more" in text  # 46 skills, 40 shown
    assert "broken" not in text and "x" * 240 not in text  # a description is cut in the listing


def test_a_turn_parses_only_the_skills_that_changed_and_a_hand_edit_shows(memory, monkeypatch):
    import fsmem._index.front_matter as front_matter

    listing(memory)  # the first turn parses each skill once
    parsed: list[str] = []
    split = front_matter.split
    monkeypatch.setattr(front_matter, "split", lambda text: parsed.append(text) or split(text))
    assert "Writing the weekly report." in listing(memory)
    assert parsed == []  # unchanged: nothing parsed again
    (memory.root / SKILL).write_text(skill("weekly-report", "Writing the monthly report, by hand."))
    assert "Writing the monthly report, by hand." in listing(memory)
    assert len(parsed) == 1  # the one file that changed


def test_no_skills_no_listing(tmp_path):
    memory = fsmem.open(tmp_path / "empty", create=True)
    assert listing(memory) == ""


def test_reading_a_skill_is_recorded_as_its_use(memory):
    assert read_uses(memory.drive.state) == {}
    memory.run(Scope.chat(), thread_id="t").call({"command": "read", "path": "skills/weekly-report/SKILL.md"})
    memory.run(Scope.chat(), thread_id="t").call({"command": "read", "path": "MEMORY.md"})
    assert list(read_uses(memory.drive.state)) == ["skills/weekly-report"]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["add", "describe", "talk", "memory"]), min_size=1, max_size=6))
def test_the_cached_prefix_never_changes_as_skills_come_and_change(tmp_path_factory, events):
    memory = fsmem.open(tmp_path_factory.mktemp("p") / "root", create=True)
    run = memory.run(Scope.chat(), thread_id="t")
    thread: list[dict] = []
    for number, event in enumerate(events):
        if event == "add":
            run.call({"command": "write", "path": f"skills/s-{number}/SKILL.md", "content": skill(f"s-{number}", "d")})
        elif event == "describe" and (memory.root / "skills").is_dir():
            first = sorted((memory.root / "skills").iterdir())[0].name
            path = f"skills/{first}/SKILL.md"
            run.call({"command": "read", "path": path})
            run.call({"command": "write", "path": path, "content": skill(first, f"changed {number}")})
        elif event == "memory":
            run.call({"command": "read", "path": "MEMORY.md"})
            run.call({"command": "write", "path": "MEMORY.md", "content": f"# M\n- {number}\n"})
        before = json.dumps(thread)
        thread += run.context(thread)
        assert json.dumps(thread).startswith(before[:-1])  # only appended to
        assert run.context(thread) == []
        thread.append({"role": "assistant", "content": "ok"})


# ---- the review's skill half --------------------------------------------------------------------

CONVERSATION = [
    {"role": "user", "content": "Write this week's report."},
    calls({"command": "read", "path": SKILL}),
    {"role": "tool", "tool_call_id": "x", "content": "the skill as it was"},
    {"role": "assistant", "content": "Here it is: costs, then sales."},
    {"role": "user", "content": "No: sales always come first, and use a table."},
    {"role": "assistant", "content": "Redone with sales first, in a table."},
]


def test_a_correction_patches_the_skill_the_conversation_read(memory):
    model = ScriptedModel(
        calls({"command": "read", "path": SKILL}),
        calls({"command": "write", "path": SKILL, "old_text": "1. Sales first.",
               "new_text": "1. Sales first, always, in a table."}),
        "Patched weekly-report: sales first, in a table.")
    result = review(memory, CONVERSATION, model, Scope.chat(), halves=("skills",))
    assert result.notice() == "Skill 'weekly-report' updated"
    assert "in a table" in memory.read(SKILL) and memory.proposals() == []
    assert [p.path for p in memory.versions(SKILL)] == [SKILL]  # what it held before stays
    instruction = model.requests[0][-1]["content"]
    assert f"Skills the conversation read: `{SKILL}`." in instruction  # first fit starts there
    order = [instruction.index(step) for step in ("patch a skill that was read", "patch an existing skill",
                                                  "add a support file", "only then create a new skill")]
    assert order == sorted(order)
    listed = [m for m in model.requests[0] if m["role"] == "user" and parse_header(m["content"] or "")
              and parse_header(m["content"])[0] == "skills"]
    assert listed and "weekly-report" in listed[0]["content"]


def test_what_the_conversation_showed_does_not_count_as_read_in_the_review(memory):
    before = memory.read(SKILL)
    model = ScriptedModel(
        calls({"command": "write", "path": SKILL, "old_text": "1. Sales first.", "new_text": "1. Costs."}),
        "Done.")
    result = review(memory, CONVERSATION, model, Scope.chat(), halves=("skills",))
    assert [r.code for r in result.refused] == ["NOT_READ"] and memory.read(SKILL) == before
    assert result.notice() is None


def test_a_new_skill_is_named_for_the_class_of_task_and_marked_origin_review(memory):
    new = "skills/pricing-pages/SKILL.md"
    model = ScriptedModel(
        calls({"command": "write", "path": new, "content": skill("pricing-pages", "Updating pricing pages.")}),
        calls({"command": "write", "path": new,
               "content": skill("pricing-pages", "Updating pricing pages.", origin="review")}),
        "Created pricing-pages.")
    result = review(memory, CONVERSATION, model, Scope.chat(), halves=("skills",))
    assert [r.code for r in result.refused] == ["BAD_SKILL"]
    assert result.notice() == "Skill 'pricing-pages' created"
    assert "origin: review" in memory.read(new)


def test_an_agents_review_puts_a_new_skill_in_the_agents_folder(memory):
    memory.create_agent("5c81d0e4-7f2a", "SEO")
    model = ScriptedModel("Nothing to save.")
    review(memory, CONVERSATION, model, Scope.agent("5c81d0e4-7f2a"), halves=("skills",))
    assert "in `agents/seo-5c81d0e4/skills/<name>/SKILL.md`" in model.requests[0][-1]["content"]


def test_a_review_due_for_skills_only_changes_no_other_memory(memory):
    model = ScriptedModel(calls({"command": "write", "path": "MEMORY.md", "content": "# M\n- sales first\n"}),
                          "Done.")
    result = review(memory, CONVERSATION, model, Scope.chat(), halves=("skills",))
    assert [r.code for r in result.refused] == ["PROTECTED"] and memory.read("MEMORY.md") == ""


def test_both_halves_are_one_review_with_one_prompt(memory):
    model = ScriptedModel("Nothing to save.")
    result = review(memory, CONVERSATION, model, Scope.chat(), halves=("memory", "skills"))
    [request] = model.requests
    instruction = request[-1]["content"]
    assert instruction.startswith("Stop here and look back.") and "## Skills: how to do a kind of task" in instruction
    assert sum(1 for m in request if m["role"] == "user" and m["content"] == instruction) == 1
    assert result.halves == ("memory", "skills") and result.model_calls == 1


def test_the_review_never_deletes_a_skill_even_when_asked(memory):
    model = ScriptedModel(calls({"command": "read", "path": SKILL}),
                          calls({"command": "delete", "path": "skills/weekly-report"}), "Done.")
    result = review(memory, CONVERSATION, model, Scope.chat(), halves=("skills",))
    assert [r.code for r in result.refused] == ["PROTECTED"] and memory.read(SKILL).startswith("---")
    assert memory.proposals() == [] and result.notice() is None
