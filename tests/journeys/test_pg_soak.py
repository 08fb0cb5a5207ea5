"""Many machines, simulated, short (``bin/soak --postgres 60`` runs the long one): 8 worker processes,
each with its own cache folder, on one PostgreSQL project, plus a real ``fsmem sync DIR`` process and a
person editing DIR by hand; two workers killed with SIGKILL and the server restarted mid-run; then the
audit of tests/procs/pg_soak.py — every acknowledged change and every hand save accounted for, every
search fresh as of its start (no stale miss, no phantom hit), sync alive through it all."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.procs.pg_soak import ALL_OPS, HAND_OWN, audit, soak

pytestmark = pytest.mark.slow


def test_eight_workers_killed_and_a_restart_lose_no_change_and_every_search_is_fresh(
    postgres, pg_server, tmp_path: Path
) -> None:
    """Every op at once (lines, writes, renames, deletes, facts, searches): what a soak of file
    changes alone would check, each of its ops acknowledged, and the facts and searches besides."""
    report = soak(
        8.0,
        postgres,
        project=f"soak-{uuid.uuid4().hex[:8]}",
        ops=ALL_OPS,
        scratch=tmp_path,
        restart=lambda: pg_server.control("restart"),
    )
    print(report)
    assert report["problems"] == []
    assert report["server_restarted"] and report["killed"] == [0, 1]
    assert all(report["acknowledged"].get(op, 0) > 0 for op in ALL_OPS if op != "search")
    # the sync folder: a real `fsmem sync` outlived the kills and the restart, and pushed hand saves
    assert report["sync"]["alive_through_the_run"] and report["sync"]["last_once_exit"] == 0
    assert report["hand_saves"] > 0 and report["hand"]["in_row"] > 0 and report["sync"]["pushed"] > 0
    assert report["search_hits_that_had_to_be_found"] > 0 and report["fact_attributes_checked"] > 0

    # The audit is not blind to a lost hand save: a write that drops the person's lines from one of
    # its files is found, save by save.
    import fsmem

    project = report["project"]
    memory = fsmem.open(postgres, project=project, cache=tmp_path / "tamper-cache")
    with memory.drive.change("write") as tx:
        tx.write(HAND_OWN[0], b"# lines gone\n")
    memory.close()
    again = audit(postgres, project, tmp_path / "journals", report["killed"], tmp_path / "by-hand")
    lost = [problem for problem in again["problems"] if problem.startswith("hand save ")]
    assert lost and all(f" of {HAND_OWN[0]} " in problem for problem in lost)
    assert len(lost) == sum(1 for problem in again["problems"] if HAND_OWN[0] in problem)
