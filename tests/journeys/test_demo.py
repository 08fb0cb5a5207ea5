"""`fsmem demo`: the README's main command, on a copy of the sample project, with the scripted model."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import fsmem
from fsmem.cli import main
from fsmem.cli.demo import COMPACTED, RUNS, run_demo
from fsmem.harness import SUMMARY_PREFIX
from fsmem._env.sample import SAMPLE_DIR, copy_sample
from tests.chat_server import ChatServer
from tests.conftest import run_fsmem


def test_the_demo_proves_each_story_from_the_model_input(tmp_path):
    lines: list[str] = []
    records = run_demo(copy_sample(tmp_path / "root"), echo=lines.append)
    assert [r["title"] for r in records] == [run.title for run in RUNS]
    for record in records:
        assert record["checks"] and all(record["checks"].values()), record["checks"]
        assert all(step["result"]["ok"] for step in record["steps"]), record["steps"]
    output = "\n".join(lines)
    assert "✗" not in output
    assert output.count("✓ the system prompt is byte-identical to the first run's") == len(RUNS)
    assert "✓ chat B's input holds the rule saved in chat A" in output
    assert "✓ after compaction, its input holds the positions it kept in the last run" in output
    assert "\n  [review] Skill 'recipe-pages' created" in lines  # the one line a person sees after the review


def test_the_demo_writes_what_it_says(tmp_path):
    root = copy_sample(tmp_path / "root")
    run_demo(root, echo=lambda line: None)
    agent = (root / "agents/seo-5c81d0e4/MEMORY.md").read_text()
    notes = (root / "agents/seo-5c81d0e4/routines/rank-check-e04c6d15/NOTES.md").read_text()
    assert "/recipes/country-sourdough: title changed 2026-11-30 by Title tuning" in agent
    assert '## Last positions seen (2026-12-14)\n- "sourdough recipe" → /recipes/country-sourdough: 13\n' in notes
    assert "listing its allergens" in (root / "MEMORY.md").read_text()
    assert "origin: review" in (root / "skills/recipe-pages/SKILL.md").read_text()


def test_fsmem_demo_prints_each_run_and_leaves_the_sample_untouched():
    before = {p: p.read_bytes() for p in SAMPLE_DIR.rglob("*") if p.is_file()}
    result = CliRunner().invoke(main, ["demo"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[1] == "Answers come from the scripted model (answers written in advance; its input is real)."
    assert [line for line in lines if line.startswith("━━ ")] == [
        *(f"━━ {n}/5 · {run.title}" for n, run in enumerate(RUNS, start=1)), "━━ After chat A: the background review"]
    assert "  [review] Skill 'recipe-pages' created" in lines
    assert "What the model was given this run (appended to the thread):" in lines
    assert "  memory copy of MEMORY.md (version 93248bbaa3d7): the same as shown in an earlier run" not in lines
    assert lines[-1] == "(The copy was temporary and is now removed; pass --keep DIR to keep it.)"
    assert {p: p.read_bytes() for p in SAMPLE_DIR.rglob("*") if p.is_file()} == before
    assert not (SAMPLE_DIR / ".fsmem").exists()


def test_fsmem_demo_keep_and_json(tmp_path):
    kept = tmp_path / "kept"
    result = CliRunner().invoke(main, ["demo", "--keep", str(kept), "--json"])
    assert result.exit_code == 0, result.output
    records = json.loads(result.output)
    assert len(records) == 5 and all(all(r["checks"].values()) for r in records)
    assert fsmem.open(kept).read("agents/seo-5c81d0e4/MEMORY.md").count("2027-01-25") == 1
    again = CliRunner().invoke(main, ["demo", "--keep", str(kept)])
    assert again.exit_code == 2 and "already exists" in again.output


def test_fsmem_demo_with_a_real_model_url_sends_the_same_runs(tmp_path):
    answers = ["Saved.", "Contains: rye.", "NEW TITLE: X | Rye & Ember", "REWRITE: none", "Quiet.", "Nothing to save."]
    with ChatServer(answers) as server:
        url = server.base_url
        result = CliRunner().invoke(main, ["demo", "--model-url", url, "--model", "m",
                                           "--keep", str(tmp_path / "live")])
    # the live model saved nothing in chat A: a failed check, so the demo exits 1 and says how many
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines()[-1] == ("Error: 3 of 10 demo checks failed (marked ✗ above): memory did not "
                                              "reach the model as the runs expect")
    assert f"Answers come from the model at {url}." in result.output
    # each run's thread starts with its message; the compacted one with the summary, then its message
    assert [r.messages[1]["content"] for r in server.requests[:5]] == [
        *(run.message for run in RUNS[:4]), SUMMARY_PREFIX + COMPACTED]
    assert server.requests[5].messages[-1]["content"].startswith("Stop here and look back.")  # the review
    assert "(the review changed nothing: no line)" in result.output
    assert RUNS[4].message in [m["content"] for m in server.requests[4].messages]
    # the live model saved nothing in chat A, and the demo says so instead of pretending
    assert "✗ chat B's input holds the rule saved in chat A" in result.output


@pytest.mark.slow
def test_fsmem_demo_in_a_real_process():
    result = run_fsmem("demo")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("✓") == 10 and "✗" not in result.stdout


def test_fsmem_demo_on_a_folder_without_a_memory_root_says_what_to_pass(tmp_path):
    result = CliRunner().invoke(main, ["demo", "--project", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output == (f"Error: [NO_ROOT] no memory root to copy at {tmp_path} (it has no MEMORY.md): "
                             "run from fsmem's source tree, or pass a memory root with --project\n")
