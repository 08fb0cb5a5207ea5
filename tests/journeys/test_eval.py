"""The memory eval: its cases load, right answers pass, wrong answers fail, and a model URL works."""

from __future__ import annotations

import subprocess
import sys

import pytest

from evals.runner import CASES_DIR, Check, Case, TurnSpec, load_cases, main, run_cases, score, scripted_model
from tests.chat_server import ChatServer
from tests.conftest import REPO

CASES = load_cases()


def test_there_are_at_least_twelve_cases_each_with_right_and_wrong_answers():
    assert len(CASES) >= 12
    for case in CASES:
        assert case.about and case.turns and case.checks, case.name
        assert case.script and case.bad_script, case.name


def test_the_cases_cover_the_kinds_of_run_and_the_seeded_behaviours():
    scopes = {case.scope.split(":")[0] for case in CASES}
    assert scopes == {"chat", "agent", "routine"}
    names = " ".join(case.name for case in CASES)
    for topic in ("rule", "correct_in_place", "remove", "one_off", "personal_taste", "baseline",
                  "compares_with_last_run", "hold", "secret", "form_text"):
        assert topic in names, topic


def test_at_least_eight_cases_for_the_review_and_skills():
    reviews = [case for case in CASES if case.review]
    assert len(reviews) >= 8
    names = " ".join(case.name for case in reviews)
    for topic in ("correction_patches_skill", "environment_failure", "never_deletes", "quiet_conversation",
                  "named_for_the_class", "support_file", "one_off", "memory_not_a_skill"):
        assert topic in names, topic
    assert {half for case in reviews for half in case.review} == {"memory", "skills"}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_right_answers_pass_without_a_refused_call(case):
    [trial] = run_cases([case], lambda c: scripted_model(c))
    assert trial.passed, trial.failures
    assert trial.refused == [] and trial.error is None


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_wrong_answers_fail(case):
    [trial] = run_cases([case], lambda c: scripted_model(c, bad=True))
    assert not trial.passed
    assert trial.error is None, trial.error  # it failed on a check, not by crashing


def _case(*checks):
    return Case(name="t", about="t", scope="chat", turns=[TurnSpec("x")], checks=list(checks))


def test_score_says_plainly_which_check_failed():
    before = {"MEMORY.md": b"# Rules\n", "agents/a-1/MEMORY.md": b""}
    after = {"MEMORY.md": b"# Rules\n- grams only\n", "agents/a-1/MEMORY.md": b"- grams\n"}
    failures = score(_case(
        Check("saved", ("*.md",), ("agents/*",), "(?i)cups"),
        Check("not_saved", ("agents/*",), (), "grams"),
        Check("unchanged", ("MEMORY.md",)),
        Check("nothing_changed"),
        Check("answer", pattern="^Saved"),
        Check("answer_not", pattern="grams"),
    ), before, after, "I kept grams.")
    assert failures == [
        "nothing in *.md (not agents/*) matches /(?i)cups/",
        "agents/a-1/MEMORY.md should not match /grams/",
        "MEMORY.md changed",
        "memory changed: MEMORY.md, agents/a-1/MEMORY.md",
        "the answer does not match /^Saved/",
        "the answer should not match /grams/",
    ]
    assert score(_case(Check("saved", ("*.md",), (), "grams")), before, after, "") == []


def test_a_model_url_runs_each_case_n_times_and_scores_what_the_model_saved(capsys):
    with ChatServer(["At 7:30.", "At 7:30.", "At 7:30."]) as server:
        url = server.base_url
        code = main(["--model-url", url, "--model", "m", "--api-key-env", "",
                     "--case", "04_*", "--trials", "3"])
    output = capsys.readouterr().out.splitlines()
    assert code == 0
    assert output == [
        f"memory eval: 1 cases × 3 trials, m at {url}",
        "pass  04_one_off_question", "pass  04_one_off_question", "pass  04_one_off_question",
        "score: 3/3 trials; 1/1 cases passed every trial",
    ]
    assert len(server.requests) == 3


def test_a_model_that_fails_to_answer_could_not_run_and_exits_2(capsys):
    with ChatServer([]) as server:  # no reply scripted: the server answers HTTP 500
        code = main(["--model-url", server.base_url, "--model", "m", "--api-key-env", "",
                     "--case", "05_*", "--trials", "1"])
    captured = capsys.readouterr()
    assert code == 2  # "could not run", not "scored low" (1)
    assert "ERROR  05_personal_taste\n      the run failed: ModelError:" in captured.out
    assert captured.err == ("1 of 1 trials could not run (marked ERROR): the score does not measure the model\n")


def test_a_model_that_answers_wrong_scored_low_and_exits_1(capsys):
    with ChatServer(["Noted, I will remember that."]) as server:  # answers, saves nothing
        code = main(["--model-url", server.base_url, "--model", "m", "--api-key-env", "",
                     "--case", "01_*", "--trials", "1", "--timeout", "30", "--max-tokens", "64"])
    captured = capsys.readouterr()
    assert code == 1
    assert "FAIL  01_rule_told_in_chat" in captured.out and captured.err == ""
    assert server.requests[0].body["max_tokens"] == 64


def test_unknown_cases_and_a_url_without_a_model_are_refused(capsys):
    assert main(["--case", "nope*"]) == 2
    assert main(["--model-url", "http://127.0.0.1:9/v1"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"Error: no case matches 'nope*' in {CASES_DIR}",
        "Error: [MODEL_ERROR] no model: pass --model-url URL and --model NAME (or set $FSMEM_MODEL_URL and "
        "$FSMEM_MODEL) for an OpenAI-compatible chat-completions server",
    ]


@pytest.mark.slow
def test_bin_eval_scores_the_scripted_answers_in_a_real_process():
    env = {"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"}
    result = subprocess.run([str(REPO / "bin" / "eval")], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == f"score: {len(CASES)}/{len(CASES)} trials; {len(CASES)}/{len(CASES)} cases passed every trial"
    bad = subprocess.run([str(REPO / "bin" / "eval"), "--bad"], capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 0 and f"score: 0/{len(CASES)} trials" in bad.stdout
