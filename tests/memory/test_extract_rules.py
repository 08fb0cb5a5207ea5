"""The extractor's pure half: conversation reading, the request, answer parsing, classification."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from fsmem._core import extract as X
from fsmem._core import chains as C
from fsmem._core import facts as F
from fsmem._errors import BadFact, ModelError

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=timezone.utc)
TEMPLATE = (Path(__file__).resolve().parents[2] / "prompts" / "extract_facts.md").read_text()


def _fact(fid: str, subject: str, attribute: str, text: str, said: str, **links) -> F.Fact:
    when = F.parse_moment(said)
    return F.Fact(id=fid, subject=subject, attribute=attribute, text=text, source="added by hand",
                  said=when, kept=when, **links)


def _state(*facts: F.Fact) -> C.Resolution:
    return C.resolve([(fact.location, fact) for fact in facts])


def test_only_the_persons_and_the_models_turns_are_read() -> None:
    conversation = [
        {"role": "system", "content": "You are helpful. SYSTEM SECRET"},
        {"role": "user", "content": "Ana moved to research."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "1", "type": "function",
                                                                "function": {"name": "x", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "1", "content": "TOOL OUTPUT"},
        {"role": "assistant", "content": [{"type": "text", "text": "Noted."},
                                          {"type": "tool_use", "name": "x", "input": {}}]},
    ]
    assert X.conversation_text(conversation) == "Person: Ana moved to research.\n\nAssistant: Noted."
    assert X.conversation_text({"messages": conversation}) == X.conversation_text(conversation)


def test_the_last_24000_characters_are_read_starting_at_a_turn() -> None:
    conversation = [{"role": "user", "content": f"turn {i} " + "x" * 990} for i in range(40)]
    text = X.conversation_text(conversation)
    assert len(text) <= X.CONVERSATION_LIMIT
    assert text.startswith("Person: turn ")
    assert text.endswith("x" * 10) and "turn 39 " in text and "turn 10 " not in text


def test_a_conversation_that_is_not_one_is_refused() -> None:
    with pytest.raises(BadFact, match="a conversation is a JSON list of messages"):
        X.conversation_text("hello")
    with pytest.raises(BadFact, match="has no list of messages"):
        X.conversation_text({"title": "x"})


def test_meta_reads_title_and_date() -> None:
    assert X.conversation_meta({"title": "Planning", "created_at": "2026-10-12", "messages": []}) == {
        "title": "Planning", "date": "2026-10-12"}
    assert X.conversation_meta([]) == {}


def test_the_request_carries_today_current_facts_and_known_things() -> None:
    facts = [_fact(f"f{i:03d}", f"Person {i}", "role", f"Person {i} works.", f"2026-01-{1 + i % 28:02d}")
             for i in range(100)]
    messages = X.extraction_messages(TEMPLATE, "Person: hi", today=NOW, current=facts,
                                     known=[("Ana", "role"), ("Ana", "employer")])
    system, user = messages[0]["content"], messages[1]["content"]
    assert "Today is 2026-11-30 (Monday)." in system
    assert "- Ana / role\n- Ana / employer" in system
    assert system.count(" works. (said ") == X.CURRENT_FACTS_SHOWN
    assert "{{" not in system
    assert user.endswith("<conversation>\nPerson: hi\n</conversation>")


@pytest.mark.parametrize("reply, expected", [
    ('{"facts": [{"subject": "Ana", "attribute": "role", "fact": "Ana works."}]}',
     [{"subject": "Ana", "attribute": "role", "fact": "Ana works."}]),
    ('[{"subject": "Ana"}]', [{"subject": "Ana"}]),
    ('<think>hmm</think>\n```json\n{"facts": []}\n```', []),
    ('{"facts": [3]}', [{"_not_an_object": 3}]),
])
def test_answers_are_read(reply: str, expected: list) -> None:
    assert X.parse_proposals(reply) == expected


@pytest.mark.parametrize("reply, message", [
    ("Sure! Here are the facts: Ana works in research.", "the model's answer is not valid JSON (Expecting value: line 1, column 1)"),
    ('{"facts": [', "the model's answer is not valid JSON"),
    ('{"facts": "Ana"}', 'the model\'s JSON has no "facts" list'),
    ("", "the model answered nothing"),
    (None, "the model answered nothing"),
])
def test_malformed_answers_are_one_model_error(reply, message) -> None:
    with pytest.raises(ModelError) as caught:
        X.parse_proposals(reply)
    assert message in caught.value.message and "Nothing was kept" in caught.value.message


def test_each_proposal_says_what_keeping_it_would_do() -> None:
    research = _fact("a1", "Ana", "role", "Ana works in research.", "2026-10-12")
    launch = _fact("b1", "Launch", "date", "The launch is on 3 March.", "2026-12-01T00:00:00Z")
    state = _state(research, launch)
    found = json.loads(json.dumps([
        {"subject": "Bruno", "attribute": "team", "fact": "Bruno is in ops."},
        {"subject": "ana", "attribute": "ROLE", "fact": "Ana leads the platform team."},
        {"subject": "Ana", "attribute": "role", "fact": "ana works in research."},
        {"subject": "Ana", "attribute": "position", "fact": "Ana works in research."},
        {"subject": "Launch", "attribute": "date", "fact": "The launch is on 1 March.", "said": "2026-11-01"},
        {"subject": "Bruno", "attribute": "password", "fact": "Bruno's is hunter2."},
        {"subject": "Caio", "attribute": "note", "fact": "Caio uses ghp_abcdefghijklmnopqrstu"},
        {"subject": "Dora", "attribute": "role"},
        {"subject": "ghp_abcdefghijklmnopqrstu", "attribute": "x", "fact": "y"},
        "just text",
    ]))
    found = [item if isinstance(item, dict) else {"_not_an_object": item} for item in found]
    proposals, notes = X.classify(state, found, said=NOW, source="chat: Planning", now=NOW)
    assert [(p.number, p.status, p.other.id if p.other else None) for p in proposals] == [
        (1, "new", None), (2, "replaces", "a1"), (3, "known", "a1"), (4, "known", "a1"), (5, "history", "b1")]
    assert [p.describe() for p in proposals] == [
        "new",
        "would replace a1: Ana works in research.",
        "already known: a1",
        "already known: a1",
        "would go to the history: b1 holds, said later: The launch is on 3 March.",
    ]
    assert notes == [
        "a fact about Bruno was dropped: it looked like a secret, a credential word (\"password\")",
        "a fact about Caio was dropped: it looked like a secret, an access key",
        "a fact about Dora was dropped: it has no fact",
        "proposal 9 was dropped: it looked like a secret, an access key",
        "proposal 10 was dropped: it is not an object with subject, attribute and fact",
    ]
    assert proposals[0].to_dict() == {"number": 1, "subject": "Bruno", "attribute": "team",
                                      "fact": "Bruno is in ops.", "said": "2026-11-30T10:00:00Z",
                                      "source": "chat: Planning", "status": "new", "other": None}
