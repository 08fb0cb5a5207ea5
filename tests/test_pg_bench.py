"""bin/bench store keeps working against a real server: a tiny run prints every row and the target.

No timing is asserted; the numbers are for people, in bin/bench.
"""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO


def test_store_bench_runs_and_reports(postgres) -> None:
    done = subprocess.run([sys.executable, "-m", "bench", "store", "--url", postgres, "--rounds", "3",
                           "--seconds", "0.3", "--workers", "1,2"], check=False, cwd=REPO, capture_output=True, text=True,
                          timeout=300, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("== store\nPostgreSQL: the server given with --url; 3 timed calls a latency row")
    for row in ("folder drive conditional write", "PostgreSQL conditional write", "PostgreSQL read",
                "PostgreSQL newest_seq()", "PostgreSQL changes_since(newest)"):
        assert f"\n{row} " in out and " p50 " in out, row
    assert "\ntarget: newest_seq() p50 <= 0.5 ms: " in out
    assert "\nworkers    distinct files, writes/s" in out
    assert "\n1 " in out and "\n2 " in out and "%" in out
