"""bin/bench keeps working: a tiny run of the drive part prints every row and the target line.

No timing is asserted (machines are noisy); the numbers themselves are for people, in bin/bench.
"""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bench", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})


def test_drive_bench_runs_and_reports(tmp_path) -> None:
    done = _bench("drive", "--files", "30", "--rounds", "3", "--dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("== drive\nroot of 30 files, 3 timed calls a row")
    for row in ("bare plain write", "bare durable write", "tool read ", "tool write (whole file)",
                "tool write (partial edit)", "tool write (same file, versions full)"):
        assert f"\n{row}" in out, row
    assert "target: a tool write within 3x the bare durable write: " in out
    assert list(tmp_path.iterdir()) == []  # the scratch root is cleaned up


def test_ui_bench_runs_and_reports() -> None:
    done = _bench("ui", "--files", "30", "--repeat", "2")
    assert done.returncode == 0, done.stderr
    assert "memory files; 2 requests a page; target p50 <= 100 ms" in done.stdout
    for row in ("tool read (baseline)", "levels /", "file ", "history (all)", "proposals (5)", "search "):
        assert f"\n{row}" in done.stdout, row


def test_missing_parts_are_skipped_and_unknown_parts_refused() -> None:
    help_text = _bench("--help")
    assert help_text.returncode == 0
    assert help_text.stdout.startswith("usage: bin/bench [drive|search|facts|context|faces|store|ui|all]")
    unknown = _bench("nonsense")
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("Error: no benchmark part 'nonsense'.")
