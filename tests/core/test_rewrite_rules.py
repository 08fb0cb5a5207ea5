"""When a message is rewritten for recall, and what of the model's answer is kept (no model here)."""

from __future__ import annotations

import pytest

from fsmem._core.rewrite import needs_rewrite, parse_rewrite, recent_turns, rewrite_messages


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("what did we decide about that?", True),  # referential, one content word
        ("and the budget?", True),  # short
        ("why?", True),
        ("Can you remind me what she said about it last week?", True),  # referential, few content words
        ("Which tone do the Saturday market posters use for their headlines?", False),  # its own words
        ("How long can a title be for the bakery's product pages and category pages?", False),
    ],
)
def test_short_or_referential_messages_need_a_rewrite(message: str, expected: bool) -> None:
    assert needs_rewrite(message, has_history=True) is expected


def test_nothing_is_rewritten_without_earlier_turns() -> None:
    assert needs_rewrite("what about that?", has_history=False) is False


def test_recent_turns_leave_out_memory_copies_recall_and_the_message_itself() -> None:
    thread = [
        {"role": "user", "content": '<memory path="MEMORY.md" version="ab12cd34ef56">\n# P\n</memory>'},
        {"role": "user", "content": "Ana wants the market stall open at 7:30."},
        {"role": "assistant", "content": "Noted: 7:30 from November."},
        {"role": "tool", "content": "{}"},
        {"role": "assistant", "content": None},
        {"role": "user", "content": "what did we decide about that?"},
    ]
    assert recent_turns(thread, 3, "what did we decide about that?") == [
        ("user", "Ana wants the market stall open at 7:30."),
        ("assistant", "Noted: 7:30 from November."),
    ]
    assert recent_turns(thread, 1, "what did we decide about that?") == [("assistant", "Noted: 7:30 from November.")]


def test_the_model_is_shown_the_turns_and_the_message() -> None:
    asked = rewrite_messages("and that?", [("user", "The  market\nstall")])
    assert asked[0]["role"] == "system" and "query only" in asked[0]["content"]
    assert asked[1]["content"] == "Conversation:\nuser: The market stall\n\nMessage: and that?"


@pytest.mark.parametrize(
    ("answer", "query"),
    [
        ("market stall opening time", "market stall opening time"),
        ('Query: "market stall opening time"\nBecause the user asked…', "market stall opening time"),
        ("\n\n  search query: stall hours  \n", "stall hours"),
        ("", None),
        ("  \n ", None),
        (None, None),
    ],
)
def test_the_query_is_the_first_line_of_the_answer(answer: str | None, query: str | None) -> None:
    assert parse_rewrite(answer) == query


def test_a_rambling_answer_is_cut() -> None:
    assert len(parse_rewrite("word " * 200) or "") == 300
