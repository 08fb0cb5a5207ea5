"""End to end with the scripted model: assert on what the model was given, not only on the files."""

from __future__ import annotations

import json

import pytest

import fsmem
from fsmem import Scope
from fsmem._core.context import message_text, parse_header
from fsmem.harness import SUMMARY_PREFIX, Session, memory_tool_spec
from fsmem._llm.model import ScriptedModel
from fsmem._env.sample import RANK_CHECK, SEO, TITLE_TUNING, copy_sample
from tests.conftest import REPO

AGENT_FILE = "agents/seo-5c81d0e4/MEMORY.md"
TITLE_NOTES = "agents/seo-5c81d0e4/routines/title-tuning-a27f3b90/NOTES.md"
RANK_NOTES = "agents/seo-5c81d0e4/routines/rank-check-e04c6d15/NOTES.md"


def call(**arguments):
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"c{abs(hash(json.dumps(arguments))) % 10**6}", "type": "function",
         "function": {"name": "memory", "arguments": json.dumps(arguments)}}]}


@pytest.fixture
def memory(tmp_path):
    return fsmem.open(copy_sample(tmp_path / "root"), create=True)


def session(memory, scope, *replies, **options):
    model = ScriptedModel(*replies)
    return Session(memory, scope, model, project="Rye & Ember", **options), model


def routine_scope(routine, **names):
    return Scope.routine(SEO.id, routine.id, agent_name=SEO.name, routine_name=routine.name, **names)


def copies(messages):
    """(tag, path or id) of every memory copy or block in a model input."""
    out = []
    for message in messages:
        header = parse_header(message_text(message)) if message.get("role") == "user" else None
        if header and header[0] != "recall":
            out.append((header[0], header[1].get("path") or header[1].get("id")))
    return out


def test_each_kind_of_run_sees_exactly_its_levels_and_a_plain_chat_none_of_the_agents(memory):
    chat, chat_model = session(memory, Scope.chat(), "ok")
    agent, agent_model = session(memory, Scope.agent(SEO.id, name=SEO.name), "ok")
    run, run_model = session(memory, routine_scope(TITLE_TUNING), "ok")
    for s in (chat, agent, run):
        s.turn("Hello")
    assert copies(chat_model.requests[0]) == [("memory", "MEMORY.md")]
    assert copies(agent_model.requests[0]) == [("memory", "MEMORY.md"), ("agent", SEO.id), ("memory", AGENT_FILE)]
    assert copies(run_model.requests[0]) == [
        ("memory", "MEMORY.md"), ("agent", SEO.id), ("memory", AGENT_FILE),
        ("routine", TITLE_TUNING.id), ("memory", TITLE_NOTES)]
    chat_input = json.dumps(chat_model.requests[0])
    assert "agents/seo" not in chat_input and "hold ended" not in chat_input
    assert "Last positions seen" not in json.dumps(run_model.requests[0])  # a sibling's notes are not loaded


def test_a_rule_saved_in_chat_a_is_in_chat_b_input(memory):
    a, _ = session(memory, Scope.chat(),
                   call(command="write", path="MEMORY.md", old_text="## Topics\n",
                        new_text="- Recipes list allergens first.\n\n## Topics\n"),
                   "Saved.")
    turn = a.turn("From now on, recipes list allergens first.")
    assert turn.steps[0].ok, turn.steps[0].text
    b, b_model = session(memory, Scope.chat(), "Contains: rye.")
    b.turn("Draft the rye crackers intro.")
    memory_copy = [m for m in b_model.requests[0] if parse_header(message_text(m))][0]
    assert "- Recipes list allergens first." in memory_copy["content"]


def test_the_system_prompt_tools_and_thread_prefix_stay_byte_identical_across_turns(memory):
    s, model = session(
        memory, Scope.agent(SEO.id, name=SEO.name),
        call(command="read", path="brand.md"), "one",
        call(command="write", path=AGENT_FILE, old_text="## How we work\n",
             new_text="## How we work\n- Titles change on Mondays only.\n"), "two",
        "three")
    for text in ("first", "second", "third"):
        s.turn(text)
    requests = [json.dumps(r, ensure_ascii=False) for r in model.requests]
    for earlier, later in zip(model.requests, model.requests[1:]):
        assert later[: len(earlier)] == earlier  # every input starts with the whole previous one
    assert len({json.dumps(c["tools"]) for c in model.calls}) == 1
    assert len({r[0]["content"] for r in model.requests}) == 1
    assert requests[0].startswith('[{"role": "system"')


def test_a_file_changed_elsewhere_is_appended_once_and_the_old_copy_stays(memory):
    s, model = session(memory, Scope.agent(SEO.id, name=SEO.name), "one", "two", "three")
    s.turn("first")
    other, _ = session(memory, routine_scope(RANK_CHECK),
                       call(command="write", path=AGENT_FILE, old_text="## How we work\n",
                            new_text="## How we work\n- New rule from Rank check.\n"), "done")
    assert other.turn("run").steps[0].ok
    s.turn("second")
    s.turn("third")
    second, third = model.requests[1], model.requests[2]
    agent_copies = [m["content"] for m in second if m.get("role") == "user"
                    and message_text(m).startswith(f'<memory path="{AGENT_FILE}"')]
    assert len(agent_copies) == 2
    assert "New rule from Rank check" not in agent_copies[0] and "New rule from Rank check" in agent_copies[1]
    assert len(copies(third)) == len(copies(second))  # nothing more once the thread is current


def test_after_compaction_each_file_comes_back_once(memory):
    s, model = session(memory, routine_scope(RANK_CHECK), "run 1", "run 2", "run 3")
    s.turn("Run 1")
    s.compact("Run 1 was quiet.")
    s.turn("Run 2")
    s.turn("Run 3")
    after = model.requests[1]
    assert after[1] == {"role": "user", "content": SUMMARY_PREFIX + "Run 1 was quiet."}
    assert copies(after) == copies(model.requests[0])
    assert copies(model.requests[2]) == copies(after)


def test_compaction_without_a_summary_asks_the_model_for_one(memory):
    s, model = session(memory, Scope.chat(), "answer", "- asked about titles", "again")
    s.turn("titles?")
    s.compact()
    assert model.calls[1]["tools"] is None
    assert s.messages == [{"role": "user", "content": SUMMARY_PREFIX + "- asked about titles"}]


def test_an_empty_file_is_never_loaded(tmp_path):
    memory = fsmem.open(tmp_path / "blank", create=True)
    memory.create_agent(SEO.id, SEO.name)
    s, model = session(memory, Scope.agent(SEO.id, name=SEO.name), "hi")
    s.turn("Hello")
    assert copies(model.requests[0]) == [("agent", SEO.id)]
    assert "<memory" not in json.dumps(model.requests[0][1:])  # the system prompt only explains them


def test_a_routines_notes_survive_a_rename_of_the_routine(memory):
    renamed = Scope.routine(SEO.id, RANK_CHECK.id, agent_name=SEO.name, routine_name="Ranking watch")
    s, model = session(memory, renamed, "ok")
    s.turn("run")
    text = json.dumps(model.requests[0], ensure_ascii=False)
    assert "Last positions seen (2026-11-23)" in text
    assert 'routine \\"Ranking watch\\"' in text


def test_deleting_a_routine_returns_its_notes_and_a_new_one_with_its_name_starts_empty(memory):
    with memory.deleting_routine(RANK_CHECK.id) as held:
        assert "Last positions seen (2026-11-23)" in held[RANK_NOTES]
    new_id = "0f1e2d3c-0000-4000-8000-000000000000"
    s, model = session(memory, Scope.routine(SEO.id, new_id, agent_name=SEO.name, routine_name="Rank check"), "ok")
    s.turn("first run")
    text = json.dumps(model.requests[0], ensure_ascii=False)
    assert "Last positions seen" not in text
    assert ("memory", "agents/seo-5c81d0e4/routines/rank-check-0f1e2d3c/NOTES.md") not in copies(model.requests[0])


def test_a_routine_records_a_change_that_its_sibling_then_sees(memory):
    tuning, _ = session(memory, routine_scope(TITLE_TUNING),
                        call(command="write", path=AGENT_FILE, old_text="## How we work\n",
                             new_text="- /recipes/country-sourdough: hold until 2027-01-25.\n\n## How we work\n"),
                        "NEW TITLE: Country Sourdough Recipe | Rye & Ember")
    tuning.turn("Retitle /recipes/country-sourdough")
    rank, model = session(memory, routine_scope(RANK_CHECK), "REWRITE: none")
    rank.turn("Positions dropped")
    assert "/recipes/country-sourdough: hold until 2027-01-25." in json.dumps(model.requests[0])


def test_tool_calls_reach_the_run_and_refusals_go_back_to_the_model(memory):
    s, model = session(
        memory, Scope.chat(),
        call(command="write", path="brand.md", content="# Brand\n"),         # never read: refused
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "x1", "type": "function", "function": {"name": "memory", "arguments": "{not json"}},
            {"id": "x2", "type": "function", "function": {"name": "files", "arguments": "{}"}}]},
        "done")
    turn = s.turn("Rewrite brand.md")
    codes = [step.result["error"]["code"] for step in turn.steps]
    assert codes == ["NOT_READ", "BAD_REQUEST", "BAD_REQUEST"]
    tool_messages = [m for m in model.requests[2] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages][-2:] == ["x1", "x2"]
    assert tool_messages[0]["content"].startswith("Error [NOT_READ]: brand.md has content this run has not read")
    assert "not valid JSON" in tool_messages[1]["content"]
    assert "no tool named 'files'" in tool_messages[2]["content"]
    assert (memory.root / "brand.md").read_text().startswith("# Brand\n\n## Voice")  # unchanged


def test_a_turn_stops_after_max_steps(memory):
    s, _ = session(memory, Scope.chat(), *[call(command="read", path="MEMORY.md")] * 3, max_steps=3)
    turn = s.turn("loop")
    assert turn.model_calls == 3
    assert turn.answer == "(stopped after 3 model calls without a final answer)"


def test_recall_is_the_last_message_of_the_turn_and_what_it_showed_whole_may_be_changed(memory):
    s, model = session(memory, Scope.chat(),
                       call(command="write", path="classes.md", old_text="Saturdays 14:00–17:00",
                            new_text="Saturdays 13:00–16:00"),
                       "Moved to 13:00.", recall=True)
    turn = s.turn("When is the sourdough class?")
    last = model.requests[0][-1]
    assert last["content"].startswith('<recall query="When is the sourdough class?">')
    assert "Saturdays 14:00–17:00" in last["content"]
    assert turn.steps[0].ok, turn.steps[0].text  # shown whole by recall: no read needed first


def test_the_tool_given_to_the_model_is_the_checked_in_grammar_safe_form():
    spec = memory_tool_spec()
    assert spec == json.loads((REPO / "tool_schema" / "openai_function_grammar_safe.json").read_text())
    assert spec["function"]["description"].startswith("Read and change the project's shared memory")
    parameters = spec["function"]["parameters"]
    assert parameters["required"] == ["command"] and "allOf" not in parameters


def test_a_model_failure_before_any_tool_call_leaves_the_thread_as_it_was(memory):
    from fsmem._errors import ModelError

    s, model = session(memory, Scope.chat(), ModelError("the server is down"), "Back.")
    with pytest.raises(ModelError):
        s.turn("hello")
    assert s.messages == []
    assert s.turn("hello").answer == "Back."
    assert [m["content"] for m in model.requests[1] if m["role"] == "user"][0] == "hello"


def test_a_model_failure_after_a_tool_call_keeps_what_happened(memory):
    from fsmem._errors import ModelError

    s, _ = session(memory, Scope.chat(), call(command="read", path="brand.md"), ModelError("down"))
    with pytest.raises(ModelError):
        s.turn("read brand")
    assert [m["role"] for m in s.messages] == ["user", "user", "assistant", "tool"]
