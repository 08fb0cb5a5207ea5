"""Many machines, simulated, short (``bin/soak --postgres 60`` runs the long one): 8 worker processes,
each with its own cache folder, on one PostgreSQL project; two killed with SIGKILL and the server
restarted mid-run; then the audit of tests/procs/pg_soak.py — every acknowledged change accounted
for, every search fresh as of its start (no stale miss, no phantom hit)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.procs.pg_soak import ALL_OPS, soak

pytestmark = pytest.mark.slow

FILE_OPS = ("line", "write", "rename", "delete")


def _soak(postgres, pg_server, scratch: Path, ops: tuple[str, ...]) -> dict:
    report = soak(
        8.0,
        postgres,
        project=f"soak-{uuid.uuid4().hex[:8]}",
        ops=ops,
        scratch=scratch,
        restart=lambda: pg_server.control("restart"),
    )
    print(report)
    assert report["problems"] == []
    assert report["server_restarted"] and report["killed"] == [0, 1]
    assert all(report["acknowledged"].get(op, 0) > 0 for op in ops if op != "search")
    return report


def test_eight_workers_killed_and_a_restart_lose_no_file_change(postgres, pg_server, tmp_path: Path) -> None:
    _soak(postgres, pg_server, tmp_path, FILE_OPS)


def test_with_facts_and_searches_every_search_is_fresh(postgres, pg_server, tmp_path: Path) -> None:
    report = _soak(postgres, pg_server, tmp_path, ALL_OPS)
    assert report["search_hits_that_had_to_be_found"] > 0 and report["fact_attributes_checked"] > 0
