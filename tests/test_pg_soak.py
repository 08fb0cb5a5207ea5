"""Many machines, simulated, short (``bin/soak --postgres 60`` runs the long one): 8 worker processes,
each with its own cache folder, on one PostgreSQL project; two killed with SIGKILL and the server
restarted mid-run; then the audit of tests/procs/pg_soak.py — every acknowledged change accounted
for, every search fresh as of its start (no stale miss, no phantom hit)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.procs.pg_soak import soak

pytestmark = pytest.mark.slow


def test_eight_workers_killed_and_a_restart_lose_nothing_and_search_fresh(postgres, pg_server, tmp_path: Path) -> None:
    report = soak(
        8.0,
        postgres,
        project=f"soak-{uuid.uuid4().hex[:8]}",
        restart=lambda: pg_server.control("restart"),
        scratch=tmp_path,
    )
    print(report)
    assert report["problems"] == []
    assert report["server_restarted"] and report["killed"] == [0, 1]
    acknowledged = report["acknowledged"]
    assert all(acknowledged.get(op, 0) > 0 for op in ("line", "write", "rename", "delete", "fact"))
    assert report["search_hits_that_had_to_be_found"] > 0 and report["fact_attributes_checked"] > 0
