"""The context benchmark runs and reports each case (speed is read by people, never asserted)."""

from __future__ import annotations

from bench.context import main


def test_the_benchmark_runs_on_a_small_thread_and_prints_every_case(capsys):
    assert main(["--turns", "20", "--repeat", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "bench.context: a 20-turn routine thread (86 messages, 3 top files), 3 repeats"
    assert [line.split("  median")[0].strip() for line in lines[1:]] == [
        "read 3 top files (baseline)", "json.dumps(thread) (baseline)", "plan_context only (pure)",
        "run.context, one file changed", "run.context, nothing changed"]


def test_bin_bench_runs_the_context_part_quickly():
    import subprocess
    import sys

    from tests.conftest import REPO

    done = subprocess.run([sys.executable, "-m", "bench", "context", "--quick", "--turns", "10"], cwd=REPO,
                          capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("== context\nbench.context: a 10-turn routine thread (46 messages, 3 top files), 30 repeats\n")
