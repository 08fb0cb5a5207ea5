"""The harness over real HTTP: a local chat-completions server, the OpenAI-compatible client, `fsmem chat`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import fsmem
from fsmem import Scope
from fsmem.cli import main
from fsmem.harness import Session
from fsmem._llm.model import tool_call
from fsmem._llm.openai import OpenAICompatibleModel
from fsmem._env.sample import SEO, TITLE_TUNING, copy_sample
from tests.chat_server import ChatServer, Reply
from tests.conftest import run_fsmem

TITLE_NOTES = "agents/seo-5c81d0e4/routines/title-tuning-a27f3b90/NOTES.md"


@pytest.fixture
def root(tmp_path):
    root = copy_sample(tmp_path / "root")
    fsmem.open(root, create=True)
    return root


def test_a_session_over_http_sends_memory_tools_and_tool_results(root):
    write = {"command": "write", "path": "MEMORY.md", "old_text": "## Topics\n",
             "new_text": "- Recipes list allergens first.\n\n## Topics\n"}
    with ChatServer([Reply(tool_calls=[tool_call("memory", write, call_id="w1")]), "Saved."]) as server:
        model = OpenAICompatibleModel(server.base_url, "test-model", api_key_env="")
        session = Session(fsmem.open(root), Scope.chat(), model, project="Rye & Ember")
        turn = session.turn("From now on recipes list allergens first.")
    assert turn.answer == "Saved."
    assert turn.steps[0].ok
    first, second = server.requests
    assert first.body["model"] == "test-model"
    assert first.body["tools"][0]["function"]["name"] == "memory"
    assert first.messages[0]["role"] == "system"
    assert first.messages[2]["content"].startswith('<memory path="MEMORY.md" version="')
    assert second.messages[: len(first.messages)] == first.messages
    tool_message = second.messages[-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "w1"
    assert "Recipes list allergens first." in (root / "MEMORY.md").read_text()


def test_fsmem_chat_runs_a_routine_turn_and_keeps_the_thread_in_a_file(root, tmp_path):
    thread = tmp_path / "thread.json"
    args = ["chat", "--root", str(root), "--model", "m", "--agent", SEO.id, "--agent-name", "SEO",
            "--routine", TITLE_TUNING.id, "--routine-name", "Title tuning", "--thread", str(thread)]
    with ChatServer([Reply(tool_calls=[tool_call("memory", {"command": "read", "path": "brand.md"}, "r1")]),
                     "Nothing to change this week.", "Still nothing."]) as server:
        result = CliRunner().invoke(main, [*args, "--model-url", server.base_url, "--show-context",
                                           "-m", "Weekly run"])
        assert result.exit_code == 0, result.output
        assert result.output.splitlines() == [
            "[memory MEMORY.md " + server.requests[0].messages[2]["content"].split('version="')[1][:12] + "]",
            f"[agent {SEO.id} " + _version(server.requests[0].messages[3]) + "]",
            "[memory agents/seo-5c81d0e4/MEMORY.md " + _version(server.requests[0].messages[4]) + "]",
            f"[routine {TITLE_TUNING.id} " + _version(server.requests[0].messages[5]) + "]",
            f"[memory {TITLE_NOTES} " + _version(server.requests[0].messages[6]) + "]",
            "[memory read brand.md: ok]",
            "Nothing to change this week.",
        ]
        saved = json.loads(thread.read_text())
        assert saved["scope"] == f"routine:{SEO.id}:{TITLE_TUNING.id}"
        # the next invocation continues the thread: nothing new to load, the old turn is in the input
        again = CliRunner().invoke(main, [*args, "--model-url", server.base_url, "-m", "Next run"])
        assert again.exit_code == 0, again.output
        assert again.output == "Still nothing.\n"
        resumed = server.requests[-1].messages
        assert resumed[1:len(saved["messages"]) + 1] == saved["messages"]
        assert resumed[-1] == {"role": "user", "content": "Next run"}


def _version(message):
    return message["content"].split('version="', 1)[1][:12]


def test_fsmem_chat_refuses_a_thread_of_another_scope(root, tmp_path):
    thread = tmp_path / "thread.json"
    thread.write_text(json.dumps({"thread_id": "t", "scope": "chat", "messages": []}))
    result = CliRunner().invoke(main, ["chat", "--root", str(root), "--model-url", "http://127.0.0.1:9/v1",
                                       "--model", "m", "--agent", SEO.id, "--thread", str(thread), "-m", "hi"])
    assert result.exit_code == 2
    assert result.output == (
        f"Error: [BAD_SCOPE] {thread} holds a thread of chat, not agent:{SEO.id}; pass the same "
        "--agent/--routine as when it was started, or another --thread file\n"
    )


def test_fsmem_chat_needs_a_model_and_a_routine_needs_its_agent(root):
    result = CliRunner().invoke(main, ["chat", "--root", str(root), "-m", "hi"])
    assert result.exit_code == 2 and "pass --model-url URL and --model NAME" in result.output
    result = CliRunner().invoke(main, ["chat", "--root", str(root), "--model-url", "http://127.0.0.1:9/v1",
                                       "--model", "m", "--routine", TITLE_TUNING.id, "-m", "hi"])
    assert result.exit_code == 2
    assert "Error: [BAD_SCOPE] --routine needs --agent" in result.output


@pytest.mark.slow
def test_fsmem_chat_in_a_real_process_reads_stdin_lines(root):
    with ChatServer(["First answer.", "Second answer."]) as server:
        result = run_fsmem("chat", "--root", str(root), "--model-url", server.base_url, "--model", "m",
                           input="What is our title rule?\n\nAnd prices?\n")
        assert result.returncode == 0, result.stderr
        assert result.stdout == "First answer.\nSecond answer.\n"
        assert [m["content"] for m in server.requests[1].messages if m["role"] == "user"][-1] == "And prices?"


def test_fsmem_chat_compacts_on_request_and_reloads_memory_once(root):
    with ChatServer(["One.", "- asked one thing", "Two."]) as server:
        result = CliRunner().invoke(
            main, ["chat", "--root", str(root), "--model-url", server.base_url, "--model", "m", "--show-context"],
            input="first\n/compact\nsecond\n/quit\nnever sent\n")
        assert result.exit_code == 0, result.output
        lines = result.output.splitlines()
        assert lines[1:] == ["One.", "[compacted: - asked one thing]", lines[3], "Two."]
        assert lines[0].startswith("[memory MEMORY.md ") and lines[3] == lines[0]
        summary_request, last = server.requests[1], server.requests[2]
        assert "tools" not in summary_request.body
        assert [m["role"] for m in last.messages] == ["system", "user", "user", "user"]
        assert last.messages[1]["content"].endswith("- asked one thing")
        assert len(server.requests) == 3


def test_chat_and_demo_have_help():
    for command in ("chat", "demo"):
        result = CliRunner().invoke(main, [command, "--help"])
        assert result.exit_code == 0 and "--model-url" in result.output


def test_fsmem_chat_reports_a_failing_model_server_in_one_line(root):
    with ChatServer([]) as server:  # nothing scripted: the server answers HTTP 500
        result = CliRunner().invoke(main, ["chat", "--root", str(root), "--model-url", server.base_url,
                                           "--model", "m", "-m", "hi"])
    assert result.exit_code == 2
    assert result.output.startswith("Error: [MODEL_ERROR] ")
    assert len(result.output.splitlines()) == 1


def test_fsmem_chat_with_recall_shows_and_sends_the_matches(root):
    with ChatServer(["Saturdays, 14:00 to 17:00."]) as server:
        result = CliRunner().invoke(main, ["chat", "--root", str(root), "--model-url", server.base_url,
                                           "--model", "m", "--recall", "--show-context",
                                           "-m", "When is the sourdough class?"])
        assert result.exit_code == 0, result.output
        lines = result.output.splitlines()
        assert lines[1:] == ["[recall When is the sourdough class?]", "Saturdays, 14:00 to 17:00."]
        sent = server.requests[0].messages[-1]["content"]
        assert sent.startswith('<recall query="When is the sourdough class?">') and "classes.md" in sent
