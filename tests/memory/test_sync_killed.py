"""`fsmem sync` killed between a folder write and the state save that records it (issue 20): the next
pass neither loses the person's text nor reports a false conflict. A real kill (SIGKILL) in a child
process, against a real PostgreSQL server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fsmem._core.versions import version_of
from tests.memory.test_sync import once, put, store  # noqa: F401 - store is the fixture
from tests.procs.common import REPO

PERSON = "- a person's line, saved as the sync wrote\n"


def killed_pass(folder: Path, postgres: str, store, mode: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run(
        [sys.executable, str(REPO / "tests/procs/sync_killed.py"), str(folder), postgres, store.project, mode],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )
    assert done.returncode == -9, done.stderr  # killed where the test put the kill, not earlier


@pytest.fixture
def synced(tmp_path, store):
    """A folder synced at v1, and the database at v2 since."""
    put(store, "notes.md", "# Notes\n\n- v1\n")
    folder = tmp_path / "mirror"
    assert once(folder, store).pulled == ["notes.md"]
    put(store, "notes.md", "# Notes\n\n- v1\n- v2\n")
    return folder


def test_a_save_after_the_killed_pass_is_pushed_not_a_conflict(synced, postgres, store) -> None:
    killed_pass(synced, postgres, store, "after-swap")
    assert (synced / "notes.md").read_text() == "# Notes\n\n- v1\n- v2\n"  # the pull was made, not recorded
    (synced / "notes.md").write_text("# Notes\n\n- v1\n- v2\n- the person's, on the pulled text\n")
    report = once(synced, store)
    assert report.conflicts == [] and report.errors == [] and report.pushed == ["notes.md"], report
    assert store.read("notes.md") == b"# Notes\n\n- v1\n- v2\n- the person's, on the pulled text\n"
    assert not list(synced.glob("*.conflict"))


def test_with_no_save_after_it_the_next_pass_has_nothing_to_do(synced, postgres, store) -> None:
    killed_pass(synced, postgres, store, "after-swap")
    report = once(synced, store)
    assert not report.changed, report
    put(store, "notes.md", "# Notes\n\n- v1\n- v2\n- v3\n")  # and the next pull is a pull, not a conflict
    report = once(synced, store)
    assert report.pulled == ["notes.md"] and report.conflicts == [], report


def test_a_save_the_killed_swap_took_out_is_kept_by_the_next_pass(synced, postgres, store) -> None:
    killed_pass(synced, postgres, store, "late-save")
    assert (synced / "notes.md").read_text() == "# Notes\n\n- v1\n- v2\n"
    report = once(synced, store)
    mine = f"# Notes\n\n- v1\n{PERSON}".encode()
    assert report.conflicts == ["notes.md.conflict"], report
    assert mine in (synced / "notes.md.conflict").read_bytes()
    kept = {info.version: info.command for info in store.versions("notes.md")}
    assert kept.get(version_of(mine)) == "conflict"
    assert store.read("notes.md") == b"# Notes\n\n- v1\n- v2\n"
    assert [name for name in os.listdir(synced) if name.endswith(".tmp")] == []  # the swapped-out file is gone
    assert not once(synced, store).changed  # done once


def test_a_journaled_write_taken_back_is_not_finished_by_the_next_pass(synced, store) -> None:
    """A folder write journaled, then refused before its swap, adds a line taking itself back (the
    journal only grows): the next pass leaves the base where it was and pulls, not pushes."""
    import json

    v2 = version_of(b"# Notes\n\n- v1\n- v2\n")
    journal = synced / ".fsmem-sync" / "swaps.jsonl"
    entry = {"path": "notes.md", "to": v2, "expected": None, "base": None, "temp": ".notes.md.refused.tmp"}
    journal.write_text(json.dumps(entry) + "\n" + json.dumps({"cancelled": entry["temp"]}) + "\n")
    report = once(synced, store)
    assert report.pulled == ["notes.md"] and report.pushed == [] and report.conflicts == [], report
    assert store.read("notes.md") == b"# Notes\n\n- v1\n- v2\n"
    assert not journal.exists()  # the state was saved: the journal goes


def test_a_journal_line_cut_short_by_a_kill_is_skipped(synced, store) -> None:
    journal = synced / ".fsmem-sync" / "swaps.jsonl"
    journal.write_text('{"path": "notes.md", "to": "abc')
    report = once(synced, store)
    assert report.pulled == ["notes.md"] and report.errors == [], report
