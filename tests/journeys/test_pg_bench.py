"""bin/bench store keeps working against a real server: a tiny run prints every row and the target.

No timing is asserted; the numbers are for people, in bin/bench.
"""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import REPO


def test_store_bench_runs_and_reports(postgres) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "store",
            "--url",
            postgres,
            "--rounds",
            "3",
            "--seconds",
            "0.1",
            "--workers",
            "1,2",
            "--files",
            "200",
        ],
        check=False,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("== store\nPostgreSQL: the server given with --url; 3 timed calls a latency row")
    assert "each store holds 200 files of realistic size first" in out
    for row in (
        "folder drive conditional write",
        "PostgreSQL conditional write",
        "PostgreSQL read",
        "PostgreSQL newest_seq()",
        "PostgreSQL changes_since(newest)",
    ):
        assert f"\n{row} " in out and " p50 " in out, row
    assert "\ntarget: newest_seq() p50 <= 0.5 ms: " in out
    assert "\nworkers    distinct files, writes/s" in out
    assert "\n1 " in out and "\n2 " in out and "%" in out
    tool = out[out.index("\nThrough Memory and the tool (run.call), PostgreSQL beside the folder store:\n") :]
    for row in ("folder store tool write", "folder store tool read", "PostgreSQL tool write", "PostgreSQL tool read"):
        assert f"\n{row} " in tool and " p50 " in tool, row
    assert "\ntarget: PostgreSQL tool write p50 <= 2x the folder store's: " in tool
    assert re.search(
        r"\nstore +workers +distinct files, tool writes/s +one shared file, tool writes/s +conflicts\n", tool
    )
    for store in ("folder store", "PostgreSQL"):
        for workers in (1, 2):
            assert re.search(rf"\n{store} +{workers} +\d+ +\d+ +[\d.]+%\n", tool), (store, workers)
