"""Without a PostgreSQL server the PostgreSQL tests skip on a laptop and fail under CI=true.

A pytest run in a subprocess, where bin/pg-throwaway finds no PostgreSQL (FSMEM_PG_BIN names an empty
folder) and no FSMEM_TEST_PG_URL is given.
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO


def _pytest_without_postgres(tmp_path, ci: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_") and k != "CI"}
    env.update(FSMEM_PG_BIN=str(tmp_path), PYTHONPATH=str(REPO))
    if ci:
        env["CI"] = "true"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
                           "tests/store/postgres/test_pg_store.py::test_proposals"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300, check=False)


def test_without_a_server_postgres_tests_skip_and_say_why(tmp_path) -> None:
    done = _pytest_without_postgres(tmp_path, ci=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 skipped" in done.stdout
    assert "no PostgreSQL server: bin/pg-throwaway could not start one: Error: PostgreSQL is not installed" \
        in done.stdout


def test_under_ci_a_missing_server_fails_the_tests(tmp_path) -> None:
    done = _pytest_without_postgres(tmp_path, ci=True)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 error" in done.stdout and "PostgreSQL is needed under CI but" in done.stdout
