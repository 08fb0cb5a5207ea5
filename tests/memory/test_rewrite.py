"""Recall's query rewriting with the scripted model: rewritten, kept as it is, and the fallbacks
(a model that takes too long, a model error, an empty answer) that never hold up or fail a turn."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

import fsmem
from fsmem import Scope
from fsmem._errors import ModelError
from fsmem._llm.model import ScriptedModel
from fsmem._memory.rewrite import rewrite_for_recall
from fsmem.harness import Session

THREAD = [
    {"role": "user", "content": "Ana wants the market stall to open at 7:30 from November."},
    {"role": "assistant", "content": "Noted."},
    {"role": "user", "content": "what did we decide about that?"},
]


class Stalled:
    """A model that answers only when released: a server that hangs."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.asked = 0

    def complete(self, messages, **options):
        self.asked += 1
        self.release.wait(10)
        return {"role": "assistant", "content": "too late"}


def test_a_referential_message_is_rewritten_from_the_last_turns() -> None:
    model = ScriptedModel("market stall opening time November")
    rewritten = rewrite_for_recall(model, "what did we decide about that?", THREAD)
    assert (rewritten.query, rewritten.outcome) == ("market stall opening time November", "rewritten")
    shown = model.requests[0][-1]["content"]
    assert "Ana wants the market stall to open at 7:30" in shown
    assert shown.endswith("Message: what did we decide about that?")
    assert model.calls[0]["temperature"] == 0.0


def test_a_message_rich_in_its_own_words_goes_as_it_is_without_a_model_call() -> None:
    model = ScriptedModel()
    message = "Which tone do the Saturday market posters use for their headlines?"
    assert rewrite_for_recall(model, message, [*THREAD, {"role": "user", "content": message}]).outcome == "as_is"
    assert model.requests == []


def test_a_model_that_takes_too_long_leaves_the_message_as_it_is() -> None:
    model = Stalled()
    try:
        rewritten = rewrite_for_recall(model, "what did we decide about that?", THREAD, timeout=0.05)
    finally:
        model.release.set()
    assert (rewritten.query, rewritten.outcome) == ("what did we decide about that?", "timeout")
    assert model.asked == 1


def test_a_model_error_or_an_empty_answer_leaves_the_message_as_it_is() -> None:
    failing = ScriptedModel(ModelError("the server is down"))
    assert rewrite_for_recall(failing, "and that?", THREAD).outcome == "model_error"
    empty = ScriptedModel("   ")
    assert rewrite_for_recall(empty, "and that?", THREAD).outcome == "empty"
    assert rewrite_for_recall(ScriptedModel(""), "and that?", THREAD).query == "and that?"


def test_a_bug_in_the_model_client_is_not_hidden() -> None:
    class Broken:
        def complete(self, messages, **options):
            raise KeyError("choices")

    with pytest.raises(KeyError):
        rewrite_for_recall(Broken(), "and that?", THREAD)


@pytest.fixture
def memory(tmp_path):
    memory = fsmem.open(tmp_path / "root", create=True)
    yield memory
    memory.close()


def _searched(memory) -> list[str]:
    queries: list[str] = []
    memory.search = lambda query, **options: queries.append(query) or [
        SimpleNamespace(path="stall.md", snippet="", title="", kind="topic", score=1.0)
    ]
    writer = memory.run(Scope.chat(), thread_id="w")
    writer.call({"command": "write", "path": "stall.md", "content": "# Stall\nOpens 7:30\n"})
    return queries


def test_recall_searches_the_rewritten_query_and_says_so(memory) -> None:
    queries = _searched(memory)
    model = ScriptedModel("market stall opening time")
    extra = memory.run(Scope.chat()).context(THREAD, recall="what did we decide about that?", rewriter=model)
    assert queries == ["market stall opening time"]
    assert extra[-1]["content"].startswith('<recall query="market stall opening time">')


def test_recall_with_a_stalled_model_searches_the_message_within_the_limit(memory) -> None:
    queries = _searched(memory)
    model = Stalled()
    try:
        memory.run(Scope.chat()).context(THREAD, recall="what did we decide about that?", rewriter=model,
                                         rewrite_timeout=0.05)
    finally:
        model.release.set()
    assert queries == ["decide"]  # the message's own words (stop words left out)


def test_the_session_rewrites_a_follow_up_with_its_own_model(memory) -> None:
    queries = _searched(memory)
    model = ScriptedModel("Noted, 7:30.", "market stall opening time", "We decided 7:30.")
    session = Session(memory, Scope.chat(), model, recall=True)
    session.turn("Ana wants the market stall to open at 7:30 from November.")
    session.turn("what did we decide about that?")
    # the first message has no turns before it: searched as it is
    assert queries == ["Ana wants market stall open November", "market stall opening time"]
    assert model.pending == 0
    assert session.messages[-1]["content"] == "We decided 7:30."
