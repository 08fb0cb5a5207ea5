"""The extractor end to end: a scripted model, a real HTTP model server, the CLI and a real process."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from click.testing import CliRunner

import fsmem
from fsmem.cli import main
from fsmem._errors import ModelError
from fsmem._memory.facts.facts import Facts
from fsmem._llm.model import ScriptedModel
from tests.chat_server import ChatServer, Reply
from tests.conftest import run_fsmem

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=timezone.utc)

CONVERSATION = {
    "title": "Planning",
    "messages": [
        {"role": "system", "content": "You are a planning assistant."},
        {"role": "user", "content": "Quick update: Ana moved from research to lead the platform team."},
        {"role": "assistant", "content": "Thanks, noted. Anything else?"},
        {"role": "user", "content": "Bruno joined ops this week. His password is in the vault."},
        {"role": "tool", "content": "TOOL RESULT THAT MUST NOT BE READ"},
    ],
}

ANSWER = {"facts": [
    {"subject": "Ana", "attribute": "role", "fact": "Ana leads the platform team."},
    {"subject": "Bruno", "attribute": "team", "fact": "Bruno works in ops."},
    {"subject": "Bruno", "attribute": "password", "fact": "Bruno's password is in the vault."},
    {"subject": "Ana", "attribute": "employer", "fact": "Ana works at Acme."},
]}


@pytest.fixture
def memory(tmp_path):
    memory = fsmem.open(tmp_path / "root", create=True)
    facts = Facts(memory.drive, clock=lambda: NOW)
    facts.keep("Ana", "role", "Ana works in research.", said="2026-10-12")
    facts.keep("Ana", "employer", "Ana works at Acme.", said="2026-01-01")
    return memory


def _facts(memory) -> Facts:
    return Facts(memory.drive, clock=lambda: NOW)


def test_propose_marks_each_and_keeps_nothing(memory) -> None:
    model = ScriptedModel(json.dumps(ANSWER))
    facts = _facts(memory)
    before = sorted(p.name for p in (memory.root / "notes/memory").iterdir())
    extraction = facts.propose(CONVERSATION, model)
    research = facts.current("ana")[1]
    acme = facts.current("ana")[0]
    assert [(p.number, p.status, p.other.id if p.other else None) for p in extraction.proposals] == [
        (1, "replaces", research.id), (2, "new", None), (3, "known", acme.id)]
    assert extraction.notes == [
        'a fact about Bruno was dropped: it looked like a secret, a credential word ("password")']
    assert extraction.proposals[0].draft.source == "chat: Planning"
    assert sorted(p.name for p in (memory.root / "notes/memory").iterdir()) == before

    request = model.calls[0]
    assert request["response_format"] == {"type": "json_object"}  # JSON mode, where the server has it
    system, user = request["messages"][0]["content"], request["messages"][1]["content"]
    assert "Today is 2026-11-30 (Monday)." in system
    assert "- Ana / employer\n- Ana / role" in system
    assert "- Ana / role: Ana works in research. (said 2026-10-12)" in system
    assert "Person: Quick update: Ana moved" in user and "Assistant: Thanks, noted." in user
    assert "TOOL RESULT" not in user and "planning assistant" not in user

    kept = facts.keep_drafts([p.draft for p in extraction.proposals[:2]])
    assert [(k.outcome, k.replaced.id if k.replaced else None) for k in kept] == [
        ("current", research.id), ("current", None)]
    assert [f.text for f in facts.current()] == [
        "Ana works at Acme.", "Ana leads the platform team.", "Bruno works in ops."]


@pytest.mark.parametrize("answer", ["Sure! Ana leads the platform team.", '{"facts": [{"subject": "Ana"', '{"facts": 3}'])
def test_a_malformed_answer_is_one_error_and_nothing_is_kept(memory, answer) -> None:
    facts = _facts(memory)
    before = [f.id for f in facts.all()]
    with pytest.raises(ModelError, match="Nothing was kept"):
        facts.propose(CONVERSATION, ScriptedModel(answer))
    assert [f.id for f in facts.all()] == before


def test_an_empty_conversation_is_not_sent(memory) -> None:
    model = ScriptedModel()
    extraction = _facts(memory).propose([{"role": "system", "content": "x"}], model)
    assert extraction.proposals == [] and model.requests == []
    assert extraction.notes == ["the conversation has no turns by the person or the model; nothing was sent to the model"]


def _conversation_file(tmp_path) -> str:
    path = tmp_path / "conversation.json"
    path.write_text(json.dumps(CONVERSATION))
    return str(path)


def _remember(memory, server, tmp_path, *args, input=None):
    return CliRunner().invoke(main, ["remember", "--from", _conversation_file(tmp_path), "--model-url",
                                     server.base_url, "--model", "tiny", "--root", str(memory.root), *args],
                              input=input)


def test_remember_over_http_keeps_the_chosen(memory, tmp_path) -> None:
    research = _facts(memory).current("ana")[1]
    acme = _facts(memory).current("ana")[0]
    with ChatServer([json.dumps(ANSWER)]) as server:
        result = _remember(memory, server, tmp_path, "--keep", "2,3")
    assert result.exit_code == 0, result.output
    bruno = _facts(memory).current("bruno")[0]
    assert result.output == (
        "3 facts proposed from conversation.json:\n"
        "  1. Ana / role: Ana leads the platform team.\n"
        f"     would replace {research.id}: Ana works in research.\n"
        "  2. Bruno / team: Bruno works in ops.\n"
        "     new\n"
        "  3. Ana / employer: Ana works at Acme.\n"
        f"     already known: {acme.id}\n"
        'Note: a fact about Bruno was dropped: it looked like a secret, a credential word ("password")\n'
        f"Kept {bruno.id}: Bruno / team: Bruno works in ops.\n")
    body = server.requests[0].body
    assert body["model"] == "tiny" and body["temperature"] == 0.0 and body["max_tokens"] == 1024
    assert body["response_format"] == {"type": "json_object"}
    assert [f.text for f in _facts(memory).current("ana")] == ["Ana works at Acme.", "Ana works in research."]


def test_remember_without_a_choice_keeps_nothing_and_says_how(memory, tmp_path) -> None:
    with ChatServer([json.dumps(ANSWER)]) as server:
        result = _remember(memory, server, tmp_path)
    assert result.exit_code == 0, result.output
    assert result.output.endswith("Nothing was kept. Choose with --keep 1,3 or --keep all.\n")
    assert len(_facts(memory).all()) == 2


def test_remember_asks_one_by_one(memory, tmp_path) -> None:
    with ChatServer([json.dumps(ANSWER)]) as server:
        result = _remember(memory, server, tmp_path, "--ask", input="y\nn\n")
    assert result.exit_code == 0, result.output
    assert "Keep 1. Ana / role: Ana leads the platform team. [y/N]: y\n" in result.output
    assert "Keep 2. Bruno / team: Bruno works in ops. [y/N]: n\n" in result.output
    assert "Keep 3." not in result.output  # already known: nothing to ask
    assert [f.text for f in _facts(memory).current("ana")] == ["Ana works at Acme.", "Ana leads the platform team."]
    assert _facts(memory).current("bruno") == []


def test_remember_json_and_a_bad_choice(memory, tmp_path) -> None:
    with ChatServer([json.dumps(ANSWER), json.dumps(ANSWER)]) as server:
        bad = _remember(memory, server, tmp_path, "--keep", "7")
        assert bad.exit_code == 1
        assert bad.output == ("Error: [BAD_FACT] --keep '7': give proposal numbers between 1 and 3 "
                              "(like 1,3 or 2-4), `all`, or `none`\n")
        result = _remember(memory, server, tmp_path, "--keep", "all", "--json")
    data = json.loads(result.output)
    assert [p["status"] for p in data["proposals"]] == ["replaces", "new", "known"]
    assert [k["outcome"] for k in data["kept"]] == ["current", "current"]
    assert len(data["notes"]) == 1


def test_remember_with_a_malformed_model_answer_keeps_nothing(memory, tmp_path) -> None:
    with ChatServer([Reply(content="Here you go: Ana leads the platform team.")]) as server:
        result = _remember(memory, server, tmp_path, "--keep", "all")
    assert result.exit_code == 2
    assert result.output.startswith("Error: [MODEL_ERROR] the model's answer is not valid JSON")
    assert len(_facts(memory).all()) == 2


def test_remember_needs_a_model(memory, tmp_path) -> None:
    result = CliRunner().invoke(main, ["remember", "--from", _conversation_file(tmp_path), "--root",
                                       str(memory.root)])
    assert result.exit_code == 2
    assert result.output.startswith("Error: [MODEL_ERROR] no model: pass --model-url URL and --model NAME")


def test_remember_in_a_real_process_over_http(memory, tmp_path) -> None:
    with ChatServer([json.dumps(ANSWER)]) as server:
        result = run_fsmem("remember", "--from", _conversation_file(tmp_path), "--model-url", server.base_url,
                           "--model", "tiny", "--keep", "all", "--api-key-env", "TEST_KEY",
                           "--root", str(memory.root), env={"TEST_KEY": "k-1"}, timeout=60)
        sent = server.requests[0]
    assert result.returncode == 0, result.stderr
    assert "Kept " in result.stdout
    assert sent.headers["Authorization"] == "Bearer k-1"  # the key from the variable named
    assert [f.text for f in _facts(memory).current("bruno")] == ["Bruno works in ops."]


def test_a_dated_conversation_is_said_on_its_date(memory) -> None:
    dated = {**CONVERSATION, "date": "2026-10-01"}
    answer = {"facts": [{"subject": "Ana", "attribute": "role", "fact": "Ana leads the data team."},
                        {"subject": "Ana", "attribute": "city", "fact": "Ana lives in Porto.", "said": "2026-09-15"}]}
    facts = _facts(memory)
    extraction = facts.propose(dated, ScriptedModel(json.dumps(answer)), source="call notes")
    research = facts.current("ana")[1]
    assert [(p.status, p.other.id if p.other else None) for p in extraction.proposals] == [
        ("history", research.id), ("new", None)]
    assert [p.to_dict()["said"] for p in extraction.proposals] == ["2026-10-01", "2026-09-15"]
    kept = facts.keep_drafts([p.draft for p in extraction.proposals])
    assert [k.outcome for k in kept] == ["history", "current"]
    assert kept[0].fact.until == research.said and kept[0].fact.source == "call notes"


def test_remember_said_sets_the_date(memory, tmp_path) -> None:
    answer = {"facts": [{"subject": "Ana", "attribute": "role", "fact": "Ana leads the data team."}]}
    with ChatServer([json.dumps(answer)]) as server:
        result = _remember(memory, server, tmp_path, "--said", "2026-09-01", "--keep", "1", "--json",
                           "--no-thinking")
    assert result.exit_code == 0, result.output
    assert server.requests[0].body["chat_template_kwargs"] == {"enable_thinking": False}
    data = json.loads(result.output)
    assert data["proposals"][0]["said"] == "2026-09-01" and data["proposals"][0]["status"] == "history"
    assert data["kept"][0]["outcome"] == "history"


def test_remember_reads_the_conversation_from_stdin(memory) -> None:
    with ChatServer([json.dumps({"facts": []})]) as server:
        result = CliRunner().invoke(main, ["remember", "--from", "-", "--model-url", server.base_url, "--model",
                                           "tiny", "--root", str(memory.root)], input=json.dumps(CONVERSATION))
    assert result.exit_code == 0, result.output
    assert result.output == "No facts proposed from stdin.\nNothing was kept.\n"
    assert "Person: Quick update" in server.requests[0].messages[1]["content"]


def test_remember_refuses_a_file_that_is_not_json(memory, tmp_path) -> None:
    (tmp_path / "c.json").write_text("Person: hi")
    result = CliRunner().invoke(main, ["remember", "--from", str(tmp_path / "c.json"), "--model-url",
                                       "http://127.0.0.1:9/v1", "--model", "tiny", "--root", str(memory.root)])
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: [BAD_FACT] {tmp_path / 'c.json'} is not JSON (")
