"""The review runner (docs/design.md §9): a model rereads a conversation and keeps what it taught.

A scripted model shows what the reviewer was given and drives what it does; the files on disk, the
proposals and the log say what happened. The CLI runs against a real local chat-completions server.
"""

from __future__ import annotations

import copy
import json

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import fsmem
from fsmem import Scope
from fsmem._memory import prompts as _prompts
from fsmem.cli import main
from fsmem._core.review import review_turns
from fsmem._core.versions import version_of
from fsmem._errors import BadRequest, ModelError
from fsmem.harness import memory_tool_spec
from fsmem._llm.model import ScriptedModel, tool_call
from fsmem._memory.review import Applied, Proposed, Refused, review
from tests.chat_server import ChatServer, Reply
from tests.conftest import run_fsmem

RULES = "# Rules\n- Prices include VAT.\n"
ADDED = "# Rules\n- Prices include VAT.\n- Page titles end with \"| Rye & Ember\".\n"

CONVERSATION = [
    {"role": "system", "content": "The harness's own system prompt."},
    {"role": "user", "content": "Retitle the /classes page."},
    {"role": "user", "content": '<memory path="MEMORY.md" version="000000000000">\n# Old copy\n</memory>'},
    {"role": "assistant", "content": None,
     "tool_calls": [tool_call("memory", {"command": "read", "path": "brand.md"}, "c1")]},
    {"role": "tool", "tool_call_id": "c1", "content": "TOOL OUTPUT THE REVIEW NEVER SEES"},
    {"role": "assistant", "content": "New title: Baking classes."},
    {"role": "user", "content": [{"type": "text", "text": "Good. Titles always end with \"| Rye & Ember\"."}]},
    {"role": "assistant", "content": "Understood: every title ends with \"| Rye & Ember\"."},
]


def write(arguments: dict, call_id: str | None = None) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": [tool_call("memory", arguments, call_id)]}


@pytest.fixture
def memory(tmp_path):
    memory = fsmem.open(tmp_path / "bakery", create=True)
    (memory.root / "MEMORY.md").write_text(RULES)
    return memory


def all_bytes(root) -> bytes:
    """Every file under the root, .fsmem/ included (versions, log, proposals, index)."""
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def state(memory) -> tuple:
    return memory.read("MEMORY.md"), [p.id for p in memory.proposals()], list(memory.drive.log())


# ---- what the model is given ------------------------------------------------------------------


def test_the_model_gets_the_conversation_copy_the_memory_copies_and_the_prompt(memory):
    model = ScriptedModel("Nothing to save.")
    review(memory, CONVERSATION, model, Scope.chat(), max_calls=5)
    [call] = model.calls
    assert call["tools"] == [memory_tool_spec()] and call["temperature"] is None  # the model's own setting
    assert call["messages"] == [
        {"role": "system", "content": _prompts.system_prompt("bakery")},
        {"role": "user", "content": "Retitle the /classes page."},
        {"role": "assistant", "content": "New title: Baking classes."},
        {"role": "user", "content": "Good. Titles always end with \"| Rye & Ember\"."},
        {"role": "assistant", "content": "Understood: every title ends with \"| Rye & Ember\"."},
        {"role": "user", "content": f'<memory path="MEMORY.md" version="{version_of(RULES.encode())}">\n'
                                    f"{RULES}</memory>"},
        {"role": "user", "content": _prompts.render(
            "review", max_calls="5",
            levels="- `MEMORY.md` (project): what every chat, agent and routine of the project needs.").rstrip()},
    ]
    instruction = call["messages"][-1]["content"]
    for rule in ("Secrets of any kind", "One person's taste", "The steps of the task", "only adds lines applies at once",
                 "becomes\n  a proposal", "Nothing to save."):
        assert rule in instruction


def test_an_agent_review_loads_the_agent_level_and_may_add_to_it_without_reading(memory):
    folder = memory.create_agent("3f9a1c2e-77aa-4bbb-8ccc-123456789abc", "SEO")
    agent_file = f"{folder}/MEMORY.md"
    (memory.root / agent_file).write_text("# SEO\n- Holds: none\n")
    model = ScriptedModel(write({"command": "write", "path": agent_file,
                                 "content": "# SEO\n- Holds: none\n- The /classes title is held until 2027-01-25.\n"}),
                          "Kept the hold.")
    result = review(memory, CONVERSATION, model, Scope.agent("3f9a1c2e-77aa-4bbb-8ccc-123456789abc"))
    given = model.calls[0]["messages"]
    headers = [m["content"].split("\n", 1)[0] for m in given if m["role"] == "user" and m["content"].startswith("<")]
    assert headers[0].startswith('<memory path="MEMORY.md"')
    assert headers[1].startswith('<agent id="3f9a1c2e-77aa-4bbb-8ccc-123456789abc"')
    assert headers[2].startswith(f'<memory path="{agent_file}"')
    assert f"`{agent_file}` (this agent)" in given[-1]["content"]
    # the copy counted as a read, so the add applied at once
    assert [a.path for a in result.applied] == [agent_file]
    assert memory.read(agent_file).endswith("held until 2027-01-25.\n")


# ---- what ends up on disk ----------------------------------------------------------------------


def test_an_add_applies_at_once_and_is_reported(memory):
    before = version_of(RULES.encode())
    model = ScriptedModel(write({"command": "write", "path": "MEMORY.md", "content": ADDED}, "w1"),
                          "Kept the title rule.")
    result = review(memory, CONVERSATION, model, Scope.chat())
    after = version_of(ADDED.encode())
    assert memory.read("MEMORY.md") == ADDED
    assert result.applied == (Applied("MEMORY.md", before, after),)
    assert result.proposals == () and memory.proposals() == []
    assert result.lines() == [f"Updated MEMORY.md (version {before} -> {after})"]
    assert (result.ended, result.model_calls, result.answer) == ("answered", 2, "Kept the title rule.")
    [entry] = list(memory.drive.log())
    assert (entry.command, entry.thread, entry.before, entry.after) == ("write", result.thread_id, before, after)
    tool_message = model.calls[1]["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "w1"
    assert tool_message["content"].startswith(f"Wrote MEMORY.md (version {after}")


def test_a_new_topic_file_and_its_pointer_are_one_line_each(memory):
    topic = "# Titles\n- End with \"| Rye & Ember\".\n"
    pointer = RULES + "- Titles: see seo/titles.md\n"
    model = ScriptedModel(
        {"role": "assistant", "content": None, "tool_calls": [
            tool_call("memory", {"command": "write", "path": "seo/titles.md", "content": topic}),
            tool_call("memory", {"command": "write", "path": "MEMORY.md", "content": pointer})]},
        {"role": "assistant", "content": None, "tool_calls": [
            tool_call("memory", {"command": "write", "path": "MEMORY.md",
                                 "content": pointer + "- Prices are shown per person.\n"})]},
        "Done.")
    result = review(memory, CONVERSATION, model, Scope.chat())
    final = version_of((pointer + "- Prices are shown per person.\n").encode())
    assert result.lines() == [
        f"Created seo/titles.md (version {version_of(topic.encode())})",
        f"Updated MEMORY.md (version {version_of(RULES.encode())} -> {final})",
    ]


def test_a_replacement_becomes_a_proposal_and_the_file_is_unchanged(memory):
    model = ScriptedModel(write({"command": "write", "path": "MEMORY.md", "old_text": "- Prices include VAT.",
                                 "new_text": "- Prices include VAT (21%)."}), "Proposed a correction.")
    result = review(memory, CONVERSATION, model, Scope.chat())
    assert memory.read("MEMORY.md") == RULES
    assert list(memory.drive.log()) == []
    [proposal] = memory.proposals()
    assert (proposal.thread, proposal.scope, proposal.summary) == (result.thread_id, "chat", "change MEMORY.md")
    assert "+- Prices include VAT (21%)." in proposal.diff
    assert result.applied == () and result.proposals == (Proposed(proposal.id, "change MEMORY.md"),)
    assert result.lines() == [f"Proposed {proposal.id}: change MEMORY.md (`fsmem proposals show {proposal.id}`)"]
    assert "waits for a person" in model.calls[1]["messages"][-1]["content"]
    memory.approve(proposal.id)
    assert memory.read("MEMORY.md") == "# Rules\n- Prices include VAT (21%).\n"


def test_rename_and_delete_are_proposed_too(memory):
    (memory.root / "old.md").write_text("x\n")
    model = ScriptedModel(
        write({"command": "read", "path": "old.md"}),
        {"role": "assistant", "content": None, "tool_calls": [
            tool_call("memory", {"command": "rename", "path": "old.md", "new_path": "new.md"}),
            tool_call("memory", {"command": "delete", "path": "old.md"})]},
        "Tidied.")
    result = review(memory, CONVERSATION, model, Scope.chat())
    assert (memory.root / "old.md").read_text() == "x\n" and not (memory.root / "new.md").exists()
    assert [p.summary for p in result.proposals] == ["rename old.md to new.md", "delete old.md"]
    assert result.applied == ()


@pytest.mark.parametrize("arguments", [
    {"command": "write", "path": "MEMORY.md", "content": RULES + "- Staging password: Pa55word-Rye-2026\n"},
    {"command": "write", "path": "MEMORY.md", "old_text": "- Prices include VAT.",
     "new_text": "- Prices include VAT. Stripe key sk-live-4242abcdEFGH5678ijkl"},
], ids=["add", "replacement"])
def test_a_secret_is_refused_and_not_proposed(memory, arguments):
    secret = "Pa55word-Rye-2026" if "content" in arguments else "sk-live-4242abcdEFGH5678ijkl"
    model = ScriptedModel(write(arguments), "Nothing else.")
    result = review(memory, CONVERSATION, model, Scope.chat())
    assert memory.read("MEMORY.md") == RULES
    assert memory.proposals() == [] and list(memory.drive.log()) == []
    assert result.refused == (Refused("write", "SENSITIVE"),) and result.lines() == []
    refusal = model.calls[1]["messages"][-1]["content"]
    assert refusal.startswith("Error [SENSITIVE]") and secret not in refusal
    assert secret.encode() not in all_bytes(memory.root)


def test_the_call_budget_stops_a_model_that_never_ends(memory):
    model = ScriptedModel(*[write({"command": "read", "path": "MEMORY.md"}) for _ in range(10)])
    result = review(memory, CONVERSATION, model, Scope.chat(), max_calls=3)
    assert len(model.calls) == 3 and model.pending == 7
    assert (result.ended, result.model_calls, result.lines()) == ("budget", 3, [])
    assert len(result.steps) == 3


def test_what_was_written_before_the_budget_ran_out_stays(memory):
    model = ScriptedModel(write({"command": "write", "path": "MEMORY.md", "content": ADDED}),
                          write({"command": "read", "path": "MEMORY.md"}))
    result = review(memory, CONVERSATION, model, Scope.chat(), max_calls=2)
    assert result.ended == "budget" and memory.read("MEMORY.md") == ADDED
    assert [a.path for a in result.applied] == ["MEMORY.md"]


def test_the_original_conversation_is_not_modified(memory):
    original = copy.deepcopy(CONVERSATION)
    conversation = copy.deepcopy(CONVERSATION)
    wrapped = {"title": "Titles", "messages": conversation}
    model = ScriptedModel(write({"command": "write", "path": "MEMORY.md", "content": ADDED}), "Kept.")
    review(memory, wrapped, model, Scope.chat())
    assert conversation == original and wrapped == {"title": "Titles", "messages": original}
    assert len(model.calls[1]["messages"]) > len(model.calls[0]["messages"])  # the review's thread grew, not this


def test_a_review_that_changes_nothing_reports_nothing(memory):
    before = all_bytes(memory.root)
    model = ScriptedModel(write({"command": "search", "query": "titles"}),
                          write({"command": "write", "path": "MEMORY.md", "content": RULES}),  # the same bytes
                          "Nothing to save.")
    result = review(memory, CONVERSATION, model, Scope.chat())
    assert (result.applied, result.proposals, result.changed, result.lines()) == ((), (), False, [])
    assert result.answer == "Nothing to save."
    assert state(memory) == (RULES, [], [])
    assert memory.read("MEMORY.md").encode() in before


def test_a_conversation_without_turns_makes_no_model_call(memory):
    model = ScriptedModel()
    result = review(memory, [{"role": "system", "content": "x"}, {"role": "tool", "content": "y"}], model)
    assert (result.ended, result.model_calls, model.calls) == ("empty", 0, [])


def test_a_conversation_of_the_wrong_shape_is_a_bad_request(memory):
    with pytest.raises(BadRequest, match="list of messages"):
        review(memory, {"nothing": 1}, ScriptedModel())


def test_a_model_error_before_any_change_raises_after_one_returns_what_was_done(memory):
    with pytest.raises(ModelError, match="down"):
        review(memory, CONVERSATION, ScriptedModel(ModelError("the server is down")))
    model = ScriptedModel(write({"command": "write", "path": "MEMORY.md", "content": ADDED}),
                          ModelError("the server is down"))
    result = review(memory, CONVERSATION, model, Scope.chat())
    assert result.ended == "model_error" and result.error == "the server is down"
    assert [a.path for a in result.applied] == ["MEMORY.md"]


def test_a_long_conversation_keeps_its_latest_turns(memory):
    turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " + "x" * 90} for i in range(40)]
    model = ScriptedModel("Nothing to save.")
    review(memory, turns, model, Scope.chat(), conversation_limit=1_000)
    given = model.calls[0]["messages"]
    assert given[1] == {"role": "user", "content": "(30 earlier turns of this conversation were left out to keep "
                                                   "the review short.)"}
    assert given[2]["content"].startswith("turn 30 ") and given[11]["content"].startswith("turn 39 ")


_TURN = st.fixed_dictionaries({
    "role": st.sampled_from(["user", "assistant", "system", "tool"]),
    "content": st.one_of(st.none(), st.text(max_size=40),
                         st.builds(lambda t: f'<memory path="a.md" version="x">\n{t}', st.text(max_size=10))),
})


@given(st.lists(_TURN, max_size=12), st.integers(min_value=1, max_value=120))
@settings(max_examples=150, deadline=None)
def test_review_turns_are_a_suffix_of_the_text_turns_within_the_limit(conversation, limit):
    original = copy.deepcopy(conversation)
    kept, dropped = review_turns(conversation, limit)
    assert conversation == original
    text_turns = [{"role": t["role"], "content": t["content"].strip()} for t in conversation
                  if t["role"] in ("user", "assistant") and (t["content"] or "").strip()
                  and not (t["role"] == "user" and t["content"].strip().startswith('<memory path="a.md" version="x">'))]
    assert dropped + len(kept) == len(text_turns)
    assert sum(len(t["content"]) for t in kept) <= limit
    suffix = text_turns[len(text_turns) - len(kept):]
    if kept != suffix:  # only a last turn longer than the limit is cut, keeping its end
        assert len(kept) == 1 and text_turns[-1]["content"].endswith(kept[0]["content"])
    assert all(t["role"] in ("user", "assistant") and t["content"] for t in kept)


def test_a_file_a_person_changed_during_the_review_is_refused_not_proposed(memory):
    class EditedMeanwhile(ScriptedModel):
        def complete(self, messages, **options):
            if not self.calls:  # the person saves the file while the model thinks
                (memory.root / "MEMORY.md").write_text(RULES + "- Closed on Mondays.\n")
            return super().complete(messages, **options)

    model = EditedMeanwhile(write({"command": "write", "path": "MEMORY.md", "content": ADDED}), "Stopped.")
    result = review(memory, CONVERSATION, model, Scope.chat())
    assert memory.read("MEMORY.md") == RULES + "- Closed on Mondays.\n"
    assert result.refused == (Refused("write", "CONFLICT"),) and result.lines() == [] and memory.proposals() == []
    assert "changed since you read it" in model.calls[1]["messages"][-1]["content"]


def test_another_tool_or_bad_arguments_are_refused_and_the_review_goes_on(memory):
    model = ScriptedModel(
        {"role": "assistant", "content": None, "tool_calls": [
            tool_call("shell", {"cmd": "rm -rf /"}), tool_call("memory", "{not json")]},
        write({"command": "write", "path": "MEMORY.md", "content": ADDED}), "Kept.")
    result = review(memory, CONVERSATION, model, Scope.chat())
    assert result.refused == (Refused("shell", "BAD_REQUEST"), Refused("memory", "BAD_REQUEST"))
    assert [a.path for a in result.applied] == ["MEMORY.md"]


def test_a_routine_review_names_every_level_it_may_write(tmp_path):
    from fsmem._env.sample import SEO, TITLE_TUNING, copy_sample

    root = copy_sample(tmp_path / "sample")
    memory = fsmem.open(root, create=True)
    model = ScriptedModel("Nothing to save.")
    result = review(memory, CONVERSATION, model, Scope.routine(SEO.id, TITLE_TUNING.id))
    given = model.calls[0]["messages"]
    tags = [m["content"].split(" ", 1)[0] for m in given if m["role"] == "user" and m["content"].startswith("<")]
    assert tags == ["<memory", "<agent", "<memory", "<routine", "<memory"]
    levels = given[-1]["content"]
    assert "`MEMORY.md` (project)" in levels and "`agents/seo-5c81d0e4/MEMORY.md` (this agent)" in levels
    assert "`agents/seo-5c81d0e4/routines/title-tuning-a27f3b90/NOTES.md` (this routine)" in levels
    assert result.lines() == []


def test_a_reviews_reads_never_count_in_the_reviewed_thread(memory):
    session_run = memory.run(Scope.chat(), thread_id="the-chat")
    review(memory, CONVERSATION, ScriptedModel(write({"command": "read", "path": "MEMORY.md"}), "Nothing to save."),
           Scope.chat(), thread_id="the-chat-review")
    assert session_run.seen == {}
    refused = session_run.call({"command": "write", "path": "MEMORY.md", "content": ADDED})
    assert refused["error"]["code"] == "NOT_READ"


# ---- the CLI ------------------------------------------------------------------------------------


@pytest.fixture
def conversation_file(tmp_path):
    path = tmp_path / "conversation.json"
    path.write_text(json.dumps({"title": "Titles", "messages": CONVERSATION}))
    return path


def _cli(memory, server, conversation_file, *extra):
    return CliRunner().invoke(main, ["review", "--from", str(conversation_file), "--model-url", server.base_url,
                                     "--model", "reviewer", "--api-key-env", "", "--root", str(memory.root),
                                     *extra])


def test_cli_reviews_over_http_and_prints_one_line_per_change_and_proposal(memory, conversation_file):
    with ChatServer([
        Reply(tool_calls=[tool_call("memory", {"command": "write", "path": "MEMORY.md", "content": ADDED}, "a")]),
        Reply(tool_calls=[tool_call("memory", {"command": "write", "path": "MEMORY.md",
                                               "old_text": "- Prices include VAT.", "new_text": "- Prices: VAT in."},
                                    "b")]),
        "Kept the title rule; proposed a shorter VAT line.",
    ]) as server:
        result = _cli(memory, server, conversation_file)
    assert result.exit_code == 0, result.output
    [proposal] = memory.proposals()
    before, after = version_of(RULES.encode()), version_of(ADDED.encode())
    assert result.output == (f"Updated MEMORY.md (version {before} -> {after})\n"
                             f"Proposed {proposal.id}: change MEMORY.md (`fsmem proposals show {proposal.id}`)\n")
    first = server.requests[0].body
    assert first["model"] == "reviewer" and first["tools"] == [memory_tool_spec()]
    assert first["messages"][1] == {"role": "user", "content": "Retitle the /classes page."}
    assert first["messages"][-1]["content"].startswith("Stop here and look back.")
    assert server.requests[2].messages[-1] == {"role": "tool", "tool_call_id": "b",
                                               "content": server.requests[2].messages[-1]["content"]}
    assert memory.read("MEMORY.md") == ADDED


def test_cli_json_and_a_review_that_changes_nothing(memory, conversation_file):
    with ChatServer(["Nothing to save.", "Nothing to save."]) as server:
        quiet = _cli(memory, server, conversation_file, "--scope", "chat")
        data = _cli(memory, server, conversation_file, "--json")
    assert (quiet.exit_code, quiet.output) == (
        0, "Nothing to save: the model found nothing in this conversation worth keeping.\n")
    payload = json.loads(data.output)
    assert payload == {"thread_id": payload["thread_id"], "applied": [], "proposals": [], "refused": [],
                       "model_calls": 1, "ended": "answered", "answer": "Nothing to save.", "error": None,
                       "outcome": "Nothing to save: the model found nothing in this conversation worth keeping.",
                       "input_tokens": payload["input_tokens"], "output_tokens": payload["output_tokens"],
                       "halves": ["memory"], "notice": None}
    assert payload["input_tokens"] > 0  # the server reported 0: fsmem's estimate stands in
    assert payload["thread_id"].startswith("review-")


def test_cli_stops_at_max_calls(memory, conversation_file):
    read = Reply(tool_calls=[tool_call("memory", {"command": "read", "path": "MEMORY.md"})])
    with ChatServer([read, read, read]) as server:
        result = _cli(memory, server, conversation_file, "--max-calls", "2", "--json")
    assert json.loads(result.stdout)["ended"] == "budget" and len(server.requests) == 2
    # two calls spent on reading, nothing changed: the answer could not be used, and the exit code says so
    assert result.exit_code == 2
    assert result.stderr == ("Error: [MODEL_ERROR] The model's answer could not be used: it made 2 model calls "
                             "without finishing, and changed nothing. Raise --max-calls or try another model.\n")


def test_cli_refusals(memory, conversation_file, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with ChatServer([]) as server:
        not_json = _cli(memory, server, bad)
        no_agent = _cli(memory, server, conversation_file, "--scope", "agent:ffffffff-0000")
        bad_scope = _cli(memory, server, conversation_file, "--scope", "team:x")
    assert not_json.exit_code == 1 and not_json.output.startswith(f"Error: [BAD_REQUEST] {bad} is not JSON (")
    assert no_agent.exit_code == 2 and no_agent.output.startswith("Error: [BAD_SCOPE]")
    assert bad_scope.output.startswith("Error: [BAD_SCOPE] scope 'team:x' is not one of: chat, agent:ID, "
                                       "routine:AGENT_ID/ROUTINE_ID")
    no_model = CliRunner().invoke(main, ["review", "--from", str(conversation_file), "--root", str(memory.root)])
    assert no_model.exit_code == 2 and no_model.output.startswith("Error: [MODEL_ERROR] no model:")
    assert state(memory) == (RULES, [], [])


def test_cli_reports_what_it_did_when_the_model_fails_midway(memory, conversation_file):
    with ChatServer([Reply(tool_calls=[tool_call("memory", {"command": "write", "path": "MEMORY.md",
                                                            "content": ADDED})]),
                     Reply(status=500, raw='{"error": {"message": "overloaded"}}')]) as server:
        result = _cli(memory, server, conversation_file)
    assert result.exit_code == 2
    assert result.stdout.startswith("Updated MEMORY.md (version ")
    assert "Error: [MODEL_ERROR] the review stopped early: " in result.stderr and "overloaded" in result.stderr


@pytest.mark.slow
def test_review_in_a_real_process_over_http(memory, conversation_file):
    with ChatServer([Reply(tool_calls=[tool_call("memory", {"command": "write", "path": "MEMORY.md",
                                                            "content": ADDED})]), "Kept."]) as server:
        result = run_fsmem("review", "--from", "-", "--root", str(memory.root), "--model-url", server.base_url,
                           "--model", "reviewer", input=conversation_file.read_text(),
                           env={"FSMEM_MODEL": "ignored-when-given"})
    assert result.returncode == 0, result.stderr
    assert result.stdout == (f"Updated MEMORY.md (version {version_of(RULES.encode())} -> "
                             f"{version_of(ADDED.encode())})\n")
    assert memory.read("MEMORY.md") == ADDED
