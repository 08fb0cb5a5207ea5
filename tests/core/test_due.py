"""When the background review is due (fsmem._core.due): counted from the stored conversation alone."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fsmem._core.due import SUMMARY_PREFIX, estimate_tokens, input_budget, input_tokens, review_due


def person(text: str = "a message") -> dict:
    return {"role": "user", "content": text}


def reply(text: str = "an answer") -> dict:
    return {"role": "assistant", "content": text}


def memory_call(command: str, path: str, call_id: str, ok: bool = True) -> list[dict]:
    arguments = {"command": command, "path": path, "content": "x"}
    return [
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "memory", "arguments": json.dumps(arguments)}}]},
        {"role": "tool", "tool_call_id": call_id, "content": "Wrote it" if ok else "Error [CONFLICT]: changed"},
    ]


def turns(count: int) -> list[dict]:
    return [m for _ in range(count) for m in (person(), reply())]


def test_the_memory_half_is_due_at_the_10th_20th_30th_message_of_the_person():
    due_at = [n for n in range(1, 32) if review_due(turns(n)).memory]
    assert due_at == [10, 20, 30]


def test_only_the_persons_messages_count():
    notices = [
        {"role": "user", "name": "notice", "content": "The delegation ended."},
        {"role": "user", "name": "seo-agent", "content": "Another agent speaks."},
        {"role": "user", "name": "model-switch", "content": "Now on another model."},
        {"role": "user", "content": '<memory path="MEMORY.md" version="abc">\n# M\n</memory>'},
        {"role": "user", "content": SUMMARY_PREFIX + "older things"},
        {"role": "system", "content": "system"},
    ]
    conversation = turns(9)
    for extra in notices:
        conversation += [extra, reply()]
    due = review_due(conversation)
    assert due.person_messages == 9 and not due.memory
    assert review_due([*conversation, person(), reply()]).memory


def test_a_turn_opened_by_a_notice_does_not_run_the_memory_half_again():
    tenth = turns(10)
    assert review_due(tenth).memory
    notice_turn = [*tenth, {"role": "user", "name": "notice", "content": "A command ended."}, reply()]
    assert review_due(notice_turn).person_messages == 10 and not review_due(notice_turn).memory


def test_the_agent_changing_memory_starts_the_count_again_but_reading_or_a_refusal_does_not():
    changed = [*turns(5), *memory_call("write", "MEMORY.md", "c1"), *turns(5)]
    assert review_due(changed).person_messages == 5 and not review_due(changed).memory
    assert review_due([*changed, *turns(5)]).memory  # 10 since the agent's own write
    read = [*turns(5), *memory_call("read", "MEMORY.md", "c2"), *turns(5)]
    refused = [*turns(5), *memory_call("write", "MEMORY.md", "c3", ok=False), *turns(5)]
    assert review_due(read).memory and review_due(refused).memory


def test_a_skill_change_starts_the_skill_count_again_not_the_memory_count():
    conversation = [*turns(5), *memory_call("write", "skills/weekly-report/SKILL.md", "c1"), *turns(5)]
    due = review_due(conversation)
    assert due.memory and due.person_messages == 10
    assert due.replies == 5 and not due.skills
    renamed = [*turns(5), *memory_call("rename", "agents/seo-1/skills/a/SKILL.md", "c2"), *turns(5)]
    assert review_due(renamed).replies == 5


def test_the_skill_half_is_due_when_a_turn_carries_the_replies_past_10():
    # 4 turns of one reply, then a turn of 7 replies (tool rounds): 4 -> 11 crosses 10
    conversation = turns(4) + [person()] + [reply()] * 7
    due = review_due(conversation)
    assert due.skills and not due.memory and due.halves == ("skills",)
    assert not review_due(conversation + [person()] + [reply()] * 3).skills  # 11 -> 14: no boundary
    assert review_due(conversation + [person()] + [reply()] * 9).skills  # 11 -> 20


def test_both_due_is_one_review_with_both_halves():
    assert review_due(turns(10)).halves == ("memory", "skills")


@pytest.mark.parametrize("ended", ["stopped", "failed"])
def test_none_after_a_stopped_or_failed_turn(ended):
    due = review_due(turns(10), ended=ended)
    assert not due and due.why_not == ended and due.person_messages == 10


def test_none_after_a_routines_run():
    due = review_due(turns(10), routine=True)
    assert not due and due.why_not == "routine"


@given(st.lists(st.sampled_from(["person", "notice", "reply", "write", "skill"]), max_size=60))
def test_the_decision_is_the_same_from_a_stored_copy(events):
    conversation: list[dict] = []
    for index, event in enumerate(events):
        if event == "person":
            conversation.append(person())
        elif event == "notice":
            conversation.append({"role": "user", "name": "notice", "content": "n"})
        elif event == "reply":
            conversation.append(reply())
        else:
            path = "MEMORY.md" if event == "write" else "skills/s/SKILL.md"
            conversation += memory_call("write", path, f"c{index}")
    stored = json.loads(json.dumps(conversation))  # a restart reads the thread back from its file
    assert review_due(stored) == review_due(conversation)


def test_the_budget_of_input_tokens():
    assert input_budget(None) == 120_000
    assert input_budget(100_000) == 75_000
    assert input_budget(10_000_000) == 600_000


def test_tokens_reported_by_the_server_else_estimated():
    messages = [{"role": "user", "content": "x" * 400}]
    assert input_tokens({"content": "hi", "usage": {"prompt_tokens": 57, "completion_tokens": 3}}, messages) == (
        57, 3, False)
    assert input_tokens({"content": "hi", "usage": {"prompt_tokens": 0}}, messages) == (
        estimate_tokens(messages), 1, True)  # "hi" and no tool calls: a few characters
    assert estimate_tokens(messages) > 100
