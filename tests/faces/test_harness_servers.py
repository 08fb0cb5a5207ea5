"""fsmem against model servers as people run them: each finding of issue 14, reproduced on the test suite's
local chat server in the mode that behaves like the real server (llama-cpp-python, llama.cpp), through the
faces people use (`fsmem demo`, `chat`, `remember`, `review`, `bin/eval`, the harness)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import fsmem
from evals.runner import main as eval_main
from fsmem import Scope
from fsmem.cli import main
from fsmem.harness import BAD_ARGUMENTS_NOTE, Session
from fsmem._llm.model import ModelSettings, tool_call
from fsmem._llm.openai import build_model
from fsmem._memory.review import review
from fsmem._env.sample import copy_sample
from tests.chat_server import ChatServer, Reply

CONVERSATION = [
    {"role": "user", "content": "Ana moved from research to lead the platform team."},
    {"role": "assistant", "content": "Noted."},
]
FACTS = {"facts": [{"subject": "Ana", "attribute": "role", "fact": "Ana leads the platform team."}]}
READ = {"command": "read", "path": "MEMORY.md"}
UNTERMINATED = '{"command": "read", "path": "MEMORY.md'  # a small model's answer cut short


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = copy_sample(tmp_path / "root")
    fsmem.open(root, create=True)
    return root


@pytest.fixture
def conversation(tmp_path: Path) -> Path:
    path = tmp_path / "conversation.json"
    path.write_text(json.dumps(CONVERSATION))
    return path


def _model(server: ChatServer, **settings: object) -> object:
    return build_model(ModelSettings(url=server.base_url, model="m", **settings))  # type: ignore[arg-type]


def _face(name: str, root: Path, conversation: Path, url: str, *extra: str) -> list[str]:
    """The argument list of one model-facing command against ``url``."""
    model = ["--model-url", url, "--model", "m", "--api-key-env", "", *extra]
    return {
        "demo": ["demo", *model],
        "chat": ["chat", "--root", str(root), *model, "-m", "hello"],
        "remember": ["remember", "--from", str(conversation), "--root", str(root), *model],
        "review": ["review", "--from", str(conversation), "--root", str(root), *model],
    }[name]


FACES = ("demo", "chat", "remember", "review")


# ---- 1. no output cap: max_tokens is sent, and a slow server ends in a clean timeout -----------------


@pytest.mark.parametrize("face", FACES)
def test_every_face_sends_max_tokens_to_a_server_that_would_generate_forever(face, root, conversation):
    answer = json.dumps(FACTS) if face == "remember" else "Nothing to save."
    with ChatServer([answer] * 5, modes={"uncapped"}) as server:
        result = CliRunner().invoke(main, _face(face, root, conversation, server.base_url, "--timeout", "10",
                                                "--max-tokens", "300"))
    assert "Traceback" not in result.output and "did not answer" not in result.output, result.output
    assert {r.body["max_tokens"] for r in server.requests} == {300}
    assert result.exit_code == (1 if face == "demo" else 0), result.output  # the demo's checks fail: ✗


@pytest.mark.parametrize("face", FACES)
def test_every_face_takes_a_timeout_and_ends_cleanly(face, root, conversation):
    with ChatServer([Reply(content="late", delay=3)] * 2) as server:
        result = CliRunner().invoke(main, _face(face, root, conversation, server.base_url, "--timeout", "0.3"))
    assert result.exit_code == 2, result.output
    assert "did not answer within 0.3 seconds; raise --timeout, lower --max-tokens" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.parametrize("face", FACES)
def test_every_face_honours_the_model_settings_from_the_environment(face, root, conversation):
    with ChatServer([Reply(content="late", delay=3)] * 2) as server:
        args = [a for a in _face(face, root, conversation, "-", "--timeout", "1") if a not in ("--model-url", "-",
                                                                                             "--model", "m")]
        args.remove("--timeout")
        args.remove("1")
        env = {"FSMEM_MODEL_URL": server.base_url, "FSMEM_MODEL": "m", "FSMEM_TIMEOUT": "0.3"}
        result = CliRunner().invoke(main, args, env=env)
    assert result.exit_code == 2, result.output
    assert "did not answer within 0.3 seconds" in result.output
    assert server.requests[0].body["model"] == "m"


def test_bin_eval_takes_the_model_options_and_a_timeout_is_could_not_run(capsys):
    with ChatServer([Reply(content="late", delay=3)]) as server:
        code = eval_main(["--model-url", server.base_url, "--model", "m", "--api-key-env", "", "--case", "04_*",
                          "--trials", "1", "--timeout", "0.3", "--max-tokens", "200", "--temperature", "0.5"])
    output = capsys.readouterr()
    assert code == 2
    assert "did not answer within 0.3 seconds" in output.out
    assert (server.requests[0].body["max_tokens"], server.requests[0].body["temperature"]) == (200, 0.5)


# ---- 2. "content": null beside tool calls ---------------------------------------------------------


def test_a_turn_with_a_tool_call_works_on_a_server_that_refuses_null_content(root):
    with ChatServer([Reply(tool_calls=[tool_call("memory", READ, "r1")]), "Read it."],
                    modes={"strict_content"}) as server:
        turn = Session(fsmem.open(root), Scope.chat(), _model(server)).turn("What is in memory?")
    assert turn.answer == "Read it." and turn.steps[0].ok
    assistant = [m for m in server.requests[1].messages if m["role"] == "assistant"]
    assert assistant[0]["content"] == "" and assistant[0]["tool_calls"][0]["id"] == "r1"


def test_fsmem_chat_continues_a_thread_saved_with_null_content(root, tmp_path):
    # a thread file an older fsmem wrote holds null content beside its tool call
    thread = tmp_path / "thread.json"
    thread.write_text(json.dumps({"thread_id": "t-1", "scope": "chat", "messages": [
        {"role": "user", "content": "Read memory."},
        {"role": "assistant", "content": None, "tool_calls": [tool_call("memory", READ, "r0")]},
        {"role": "tool", "tool_call_id": "r0", "content": "…"},
        {"role": "assistant", "content": "Done."}]}))
    with ChatServer(["Still here."], modes={"strict_content"}) as server:
        result = CliRunner().invoke(main, ["chat", "--root", str(root), "--model-url", server.base_url,
                                           "--model", "m", "--thread", str(thread), "-m", "And now?"])
    assert result.exit_code == 0, result.output
    assert result.output == "Still here.\n"


# ---- 3. tools ignored without tool_choice; length limits break grammars; unterminated arguments ------


def test_tools_are_used_on_a_server_that_needs_tool_choice_and_builds_grammars(root):
    with ChatServer([Reply(tool_calls=[tool_call("memory", READ, "r1")]), "Read it."],
                    modes={"needs_tool_choice", "grammar_limits"}) as server:
        turn = Session(fsmem.open(root), Scope.chat(), _model(server)).turn("What is in memory?")
    assert turn.steps and turn.steps[0].ok, turn.answer
    first = server.requests[0].body
    assert first["tool_choice"] == "auto"
    assert not {"maxLength", "minLength", "maxItems", "pattern"} & set(json.dumps(first["tools"]).replace('"', " ")
                                                                         .split())


def test_the_limits_the_grammar_safe_form_leaves_out_are_still_enforced(root):
    long_path = "x" * 1100 + ".md"
    write = {"command": "write", "path": long_path, "content": "hi"}
    with ChatServer([Reply(tool_calls=[tool_call("memory", write, "w1")]), "Tried."],
                    modes={"grammar_limits"}) as server:
        turn = Session(fsmem.open(root), Scope.chat(), _model(server)).turn("Save hi.")
    assert not turn.steps[0].ok and turn.steps[0].result["error"]["code"] in ("BAD_REQUEST", "BAD_PATH")
    assert not (root / long_path[:200]).exists()


def test_unterminated_arguments_get_one_corrective_reply_then_the_turn_ends(root):
    bad = Reply(tool_calls=[tool_call("memory", UNTERMINATED, "b")])
    with ChatServer([bad, bad, bad, bad]) as server:
        turn = Session(fsmem.open(root), Scope.chat(), _model(server)).turn("What is in memory?")
    assert turn.model_calls == 2 and len(server.requests) == 2  # not max_steps (12)
    assert turn.answer == BAD_ARGUMENTS_NOTE
    corrective = server.requests[1].messages[-1]
    assert corrective["role"] == "tool" and corrective["content"] == (
        "Error [BAD_REQUEST]: the arguments are not valid JSON (Unterminated string starting at: line 1, "
        'column 29); send them again as one complete JSON object such as {"command": "read", "path": '
        '"MEMORY.md"}')


def test_a_model_that_corrects_its_arguments_goes_on(root):
    bad = Reply(tool_calls=[tool_call("memory", UNTERMINATED, "b")])
    with ChatServer([bad, Reply(tool_calls=[tool_call("memory", READ, "g")]), "Read it."]) as server:
        turn = Session(fsmem.open(root), Scope.chat(), _model(server)).turn("What is in memory?")
    assert turn.answer == "Read it." and [s.ok for s in turn.steps] == [False, True]


def test_fsmem_chat_prints_the_note_when_arguments_stay_broken(root):
    bad = Reply(tool_calls=[tool_call("memory", UNTERMINATED, "b")])
    with ChatServer([bad, bad, bad]) as server:
        result = CliRunner().invoke(main, ["chat", "--root", str(root), "--model-url", server.base_url,
                                           "--model", "m", "-m", "What is in memory?"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == BAD_ARGUMENTS_NOTE
    assert "at at" not in result.output and len(server.requests) == 2


def test_a_review_whose_arguments_stay_broken_says_its_answer_could_not_be_used(root, conversation):
    bad = Reply(tool_calls=[tool_call("memory", UNTERMINATED, "b")])
    with ChatServer([bad] * 5) as server:
        result = CliRunner().invoke(main, ["review", "--from", str(conversation), "--root", str(root),
                                           "--model-url", server.base_url, "--model", "m"])
        assert review(fsmem.open(root), CONVERSATION, _model(server)).ended == "bad_arguments"
    assert result.exit_code == 2
    assert result.output == ("Error: [MODEL_ERROR] The model's answer could not be used: it twice sent "
                             "memory-tool arguments that are not valid JSON. Nothing changed. 2 memory calls "
                             "were refused.\n")


# ---- 4. honest exit codes --------------------------------------------------------------------------


def test_a_review_that_answered_without_changing_anything_says_so(root, conversation):
    with ChatServer(["The conversation was about Ana's new team."]) as server:
        result = CliRunner().invoke(main, ["review", "--from", str(conversation), "--root", str(root),
                                           "--model-url", server.base_url, "--model", "m"])
    assert result.exit_code == 0
    assert result.output == ("The model answered without proposing or changing anything. Its answer: The "
                             "conversation was about Ana's new team.\n")


def test_the_demo_exits_1_when_a_check_fails_and_0_when_all_hold():
    with ChatServer(["Noted."] * 5) as server:
        failed = CliRunner().invoke(main, ["demo", "--model-url", server.base_url, "--model", "m"])
    assert failed.exit_code == 1 and "✗" in failed.stdout
    assert failed.stderr.startswith("Error: 3 of 10 demo checks failed")
    scripted = CliRunner().invoke(main, ["demo"])
    assert scripted.exit_code == 0 and "✗" not in scripted.output


# ---- 5. JSON tasks ask for JSON mode --------------------------------------------------------------


def test_remember_gets_json_from_a_server_that_answers_json_only_in_json_mode(root, conversation):
    with ChatServer([json.dumps(FACTS)], modes={"json_needs_format"}) as server:
        result = CliRunner().invoke(main, ["remember", "--from", str(conversation), "--root", str(root),
                                           "--model-url", server.base_url, "--model", "m", "--keep", "all"])
    assert result.exit_code == 0, result.output
    assert server.requests[0].body["response_format"] == {"type": "json_object"}
    assert "Ana / role: Ana leads the platform team." in result.output


def test_remember_falls_back_when_the_server_has_no_json_mode(root, conversation):
    with ChatServer([json.dumps(FACTS)], modes={"no_response_format"}) as server:
        result = CliRunner().invoke(main, ["remember", "--from", str(conversation), "--root", str(root),
                                           "--model-url", server.base_url, "--model", "m", "--keep", "all"])
    assert result.exit_code == 0, result.output
    assert [("response_format" in r.body) for r in server.requests] == [True, False]
    assert "Ana / role: Ana leads the platform team." in result.output


def test_remember_says_what_a_non_json_answer_was(root, conversation):
    with ChatServer(['{"facts": [{"subject": "Ana"']) as server:
        result = CliRunner().invoke(main, ["remember", "--from", str(conversation), "--root", str(root),
                                           "--model-url", server.base_url, "--model", "m"])
    assert result.exit_code == 2
    assert result.output.startswith("Error: [MODEL_ERROR] the model's answer is not valid JSON (Expecting ',' "
                                    "delimiter: line 1, column 29)")
