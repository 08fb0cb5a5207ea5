"""The review runs on its own (issue 22): started after the turn that makes a conversation due, in the
background, one per conversation at a time, within its budget; a person sees one line, the log one line."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading

import pytest
from click.testing import CliRunner

import fsmem
from fsmem import Scope
from fsmem._env.sample import SEO, TITLE_TUNING, copy_sample
from fsmem._errors import ModelError
from fsmem._llm.model import ScriptedModel, tool_call
from fsmem._memory.background import BackgroundReviews, review_lock
from fsmem._memory.review import review
from fsmem._memory.usage import read_calls, summarize
from fsmem.cli import main
from fsmem.harness import Session
from tests.chat_server import ChatServer, Reply
from tests.conftest import REPO

RULE = "- Page titles end with \"| Rye & Ember\".\n"


def write_call(path: str, content: str, call_id: str = "w1") -> dict:
    return {"role": "assistant", "content": None,
            "tool_calls": [tool_call("memory", {"command": "write", "path": path, "content": content}, call_id)]}


class GatedModel:
    """A scripted model that waits for ``gate`` before each answer: a review that is still running."""

    def __init__(self, *replies) -> None:
        self.scripted = ScriptedModel(*replies)
        self.gate = threading.Event()
        self.entered = threading.Event()

    def complete(self, messages, **options):
        self.entered.set()
        assert self.gate.wait(30), "the test never opened the gate"
        return self.scripted.complete(messages, **options)


@pytest.fixture
def memory(tmp_path):
    memory = fsmem.open(tmp_path / "bakery", create=True)
    (memory.root / "MEMORY.md").write_text("# Rules\n- Prices include VAT.\n")
    return memory


def chat(memory, turns: int, reviewer, **options) -> Session:
    session = Session(memory, Scope.chat(), ScriptedModel(*["ok"] * turns), review_model=reviewer, **options)
    for number in range(1, turns + 1):
        session.turn(f"message {number}")
    return session


def test_the_tenth_message_starts_a_review_in_the_background_without_delaying_the_answer(memory):
    reviewer = GatedModel(write_call("MEMORY.md", "# Rules\n- Prices include VAT.\n" + RULE), "Kept the rule.")
    session = Session(memory, Scope.chat(), ScriptedModel(*["ok"] * 10), review_model=reviewer)
    started = [session.turn(f"message {n}").review_started for n in range(1, 11)]
    assert started == [False] * 9 + [True]
    assert reviewer.entered.wait(10)  # the review is running; the 10th answer was already returned
    assert session.reviews.running() and session.review_notices() == []
    reviewer.gate.set()
    assert session.wait_for_reviews(30)
    assert session.review_notices() == ["Memory updated"]
    assert RULE in memory.read("MEMORY.md")
    assert all("Memory updated" not in json.dumps(m) for m in session.messages)  # never in the model's history
    review_input = reviewer.scripted.requests[0]
    assert [m["content"] for m in review_input if m["role"] == "user"][:10] == [f"message {n}" for n in range(1, 11)]


def test_a_review_that_changes_nothing_shows_nothing(memory):
    session = chat(memory, 10, ScriptedModel("Nothing to save."))
    assert session.wait_for_reviews(30)
    assert session.review_notices() == [] and len(session.reviews.results) == 1


def test_one_review_per_conversation_at_a_time(memory):
    reviewer = GatedModel("Nothing to save.", "Nothing to save.")
    session = chat(memory, 10, reviewer)
    assert reviewer.entered.wait(10)
    # the same conversation, resumed by another harness while the first review runs: none starts
    again = BackgroundReviews(memory, Scope.chat(), ScriptedModel("Nothing to save."), session.thread_id)
    assert again.after_turn(session.messages) is False
    other = BackgroundReviews(memory, Scope.chat(), ScriptedModel("Nothing to save."), "another-conversation")
    assert other.after_turn(session.messages) is True  # another conversation is not held back
    reviewer.gate.set()
    assert session.wait_for_reviews(30) and other.wait(30)
    assert again.after_turn(session.messages) is True  # the lock went with the first review
    assert again.wait(30)


def test_a_review_running_in_another_process_holds_the_conversation(memory):
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys; from pathlib import Path; from fsmem._memory.background import review_lock\n"
         "lock = review_lock(Path(sys.argv[1]), 'thread-x'); print('held' if lock else 'busy', flush=True)\n"
         "sys.stdin.read()",
         str(memory.drive.state)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert review_lock(memory.drive.state, "thread-x") is None
        reviews = BackgroundReviews(memory, Scope.chat(), ScriptedModel("Nothing to save."), "thread-x")
        assert reviews.after_turn([m for _ in range(10) for m in ({"role": "user", "content": "m"},
                                                                  {"role": "assistant", "content": "a"})]) is False
    finally:
        holder.communicate("", timeout=30)
    assert review_lock(memory.drive.state, "thread-x") is not None  # its end (or death) lets it go


def test_a_restart_forgets_nothing(memory):
    first = chat(memory, 9, ScriptedModel())
    stored = json.loads(json.dumps(first.messages))  # the thread as a harness keeps it
    reviewer = ScriptedModel("Nothing to save.")
    resumed = Session(memory, Scope.chat(), ScriptedModel("ok"), thread_id=first.thread_id, messages=stored,
                      review_model=reviewer)
    assert resumed.turn("message 10").review_started
    assert resumed.wait_for_reviews(30) and len(reviewer.requests) == 1


def test_no_review_after_a_routines_run_or_a_stopped_or_failed_turn(tmp_path):
    memory = fsmem.open(copy_sample(tmp_path / "root"), create=True)
    routine = Scope.routine(SEO.id, TITLE_TUNING.id, agent_name=SEO.name, routine_name=TITLE_TUNING.name)
    run = Session(memory, routine, ScriptedModel(*["ok"] * 10), review_model=ScriptedModel())
    assert not any(run.turn(f"m{n}").review_started for n in range(10))
    steps = [{"role": "assistant", "content": None,
              "tool_calls": [tool_call("memory", {"command": "read", "path": "/"}, f"r{n}")]} for n in range(2)]
    stopped = Session(memory, Scope.chat(), ScriptedModel(*["ok"] * 9, *steps), review_model=ScriptedModel(),
                      max_steps=2)
    for n in range(9):
        stopped.turn(f"m{n}")
    turn = stopped.turn("the 10th, stopped")
    assert turn.ended == "stopped" and not turn.review_started
    failed = Session(memory, Scope.chat(), ScriptedModel(*["ok"] * 9, ModelError("down")), review_model=ScriptedModel())
    for n in range(9):
        failed.turn(f"m{n}")
    with pytest.raises(ModelError):
        failed.turn("the 10th, failed")
    assert failed.reviews.last_due is None or not failed.reviews.last_due


def test_the_budget_of_model_calls_keeps_what_was_written(memory):
    reads = [{"role": "assistant", "content": None,
              "tool_calls": [tool_call("memory", {"command": "read", "path": "MEMORY.md"}, f"r{n}")]}
             for n in range(20)]
    model = ScriptedModel(write_call("MEMORY.md", "# Rules\n- Prices include VAT.\n" + RULE), *reads)
    result = review(memory, [{"role": "user", "content": "Titles end with | Rye & Ember"}], model, Scope.chat())
    assert result.ended == "budget" and result.model_calls == 16 and len(model.requests) == 16
    assert RULE in memory.read("MEMORY.md") and result.notice() == "Memory updated"


def test_the_budget_of_input_tokens_stops_before_a_call_would_pass_it(memory):
    reads = [{"role": "assistant", "content": None,
              "tool_calls": [tool_call("memory", {"command": "read", "path": "MEMORY.md"}, f"r{n}")]}
             for n in range(20)]
    conversation = [{"role": "user", "content": "Titles end with | Rye & Ember. " * 40}]
    sized = review(memory, conversation, ScriptedModel("Nothing to save."), Scope.chat())
    budget = sized.input_tokens * 3  # room for about two calls of this size, never three
    result = review(memory, conversation, ScriptedModel(*reads), Scope.chat(), max_input_tokens=budget)
    assert result.ended == "budget" and result.model_calls == 2 and result.input_tokens <= budget
    small_window = review(memory, conversation, ScriptedModel(*reads), Scope.chat(), window=budget * 4 // 3)
    assert small_window.model_calls == 2  # 3/4 of the window is the same budget


def test_one_log_line_per_review(memory, caplog):
    with caplog.at_level(logging.INFO, logger="fsmem.review"):
        review(memory, [{"role": "user", "content": "Titles end with | Rye"}],
               ScriptedModel(write_call("MEMORY.md", "# Rules\n- Prices include VAT.\n" + RULE), "Kept."),
               Scope.chat(), thread_id="review-one")
        with pytest.raises(ModelError):
            review(memory, [{"role": "user", "content": "x"}], ScriptedModel(ModelError("down")), Scope.chat(),
                   thread_id="review-two")
    lines = [r.getMessage() for r in caplog.records if r.name == "fsmem.review"]
    assert len(lines) == 2
    assert "thread=review-one" in lines[0] and "ended=answered model_calls=2" in lines[0]
    assert "did=MEMORY.md" in lines[0] and "proposals=none" in lines[0]
    assert "thread=review-two" in lines[1] and "ended=model_error model_calls=0" in lines[1]


def test_the_line_names_proposals_and_skills(memory):
    model = ScriptedModel(
        {"role": "assistant", "content": None, "tool_calls": [tool_call("memory", {
            "command": "write", "path": "MEMORY.md", "old_text": "- Prices include VAT.",
            "new_text": "- Prices: VAT included."}, "p1")]},
        "Proposed.")
    result = review(memory, [{"role": "user", "content": "VAT wording"}], model, Scope.chat())
    assert result.notice() == "Memory change proposed"


def test_usage_counts_calls_and_tokens_by_purpose_and_day(memory):
    session = chat(memory, 10, ScriptedModel("Nothing to save."))
    assert session.wait_for_reviews(30)
    rows = summarize(read_calls(memory.drive.state))
    assert [(row.purpose, row.calls) for row in rows] == [("chat", 10), ("review", 1)]
    assert all(row.input_tokens > 0 and row.estimated_calls == row.calls for row in rows)
    shown = CliRunner().invoke(main, ["usage", "--root", str(memory.root)])
    assert shown.exit_code == 0, shown.output
    day = rows[0].day
    assert shown.output.splitlines()[1].startswith(f"{day}  chat          10")
    assert "total review: 1 calls" in shown.output
    data = json.loads(CliRunner().invoke(main, ["usage", "--root", str(memory.root), "--json"]).output)
    assert [row["purpose"] for row in data["usage"]] == ["chat", "review"]


def test_fsmem_chat_reviews_after_the_tenth_message_even_across_restarts(memory, tmp_path):
    thread = tmp_path / "thread.json"
    with ChatServer(["ok"] * 9) as server:
        first = CliRunner().invoke(main, ["chat", "--root", str(memory.root), "--thread", str(thread),
                                          "--model-url", server.base_url, "--model", "m", "--api-key-env", "",
                                          *[arg for n in range(9) for arg in ("-m", f"message {n}")]])
    assert first.exit_code == 0, first.output
    assert "[review]" not in first.output
    with ChatServer([
        "Noted.",
        Reply(tool_calls=[tool_call("memory", {"command": "write", "path": "MEMORY.md",
                                               "content": "# Rules\n- Prices include VAT.\n" + RULE}, "w")]),
        "Kept the title rule.",
    ]) as server:
        second = CliRunner().invoke(main, ["chat", "--root", str(memory.root), "--thread", str(thread),
                                           "--model-url", server.base_url, "--model", "m", "--api-key-env", "",
                                           "-m", "Titles end with | Rye & Ember"])
    assert second.exit_code == 0, second.output
    assert second.output.splitlines()[-1] == "[review] Memory updated"
    assert RULE in memory.read("MEMORY.md")
    saved = json.loads(thread.read_text())["messages"]
    assert all("[review]" not in json.dumps(m) and "Kept the title rule" not in json.dumps(m) for m in saved)


def test_a_state_folder_that_cannot_be_written_costs_the_review_never_the_turn(memory, monkeypatch):
    import fsmem._memory.background as background
    import fsmem._memory.usage as usage

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(background, "review_lock", refuse)
    monkeypatch.setattr(usage, "USAGE_FILE", "no-such-folder/usage.jsonl")  # nor can the usage records
    session = chat(memory, 10, ScriptedModel("Nothing to save."))
    assert session.messages[-1]["content"] == "ok" and not session.reviews.running()
    assert session.reviews.results == []


def test_the_reviews_own_writes_do_not_start_the_count_again(memory):
    reviewer = ScriptedModel(write_call("MEMORY.md", "# Rules\n- Prices include VAT.\n" + RULE), "Kept.",
                             "Nothing to save.")
    session = Session(memory, Scope.chat(), ScriptedModel(*["ok"] * 20), review_model=reviewer)
    started = []
    for number in range(1, 21):
        started.append(session.turn(f"message {number}").review_started)
        assert session.wait_for_reviews(30)
    assert [n for n, s in enumerate(started, start=1) if s] == [10, 20]  # the write at the 10th restarted nothing
    assert RULE in memory.read("MEMORY.md") and len(reviewer.requests) == 3
