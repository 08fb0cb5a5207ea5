"""``fsmem.open(url, project=…)``: a Memory on PostgreSQL, through the same tool, API and shell.

The conformance suite (tests/store/test_conformance.py) runs every behaviour on both stores; these are
what only a database has: opening by URL and project, tenants apart, the shell's --store/--project.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from conftest import invoke, run_fsmem

import fsmem
from fsmem._errors import BadStore, RootNotFound
from fsmem._memory.levels import Scope


def _project() -> str:
    return f"p-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def memory(postgres: str, tmp_path: Path):
    memory = fsmem.open(postgres, project=_project(), create=True, cache=tmp_path / "cache")
    yield memory
    memory.close()


def test_a_new_project_starts_with_an_empty_top_file_and_its_cache_apart(memory, tmp_path: Path) -> None:
    assert memory.read("MEMORY.md") == ""
    assert memory.root is None
    assert memory.drive.state == (tmp_path / "cache" / ".fsmem").resolve()
    assert oct(memory.drive.state.stat().st_mode & 0o777) == "0o700"
    assert memory.name.startswith("p-") and memory.name in repr(memory)


def test_the_tool_writes_reads_renames_and_deletes_rows(memory) -> None:
    run = memory.run(Scope.chat(), thread_id="t-1")
    written = run.call({"command": "write", "path": "seo/titles.md", "content": "# Titles\n- under 60 chars\n"})
    assert written["ok"], written
    read = run.call({"command": "read", "path": "seo/titles.md"})
    assert read["content"] == "# Titles\n- under 60 chars\n" and read["version"] == written["version"]
    edited = run.call({"command": "write", "path": "seo/titles.md", "old_text": "60", "new_text": "55"})
    assert edited["ok"], edited
    assert run.call({"command": "rename", "path": "seo", "new_path": "search"})["ok"]
    assert memory.read("search/titles.md") == "# Titles\n- under 55 chars\n"
    folder = run.call({"command": "read", "path": "/"})
    assert "search/" in folder["text"] and "seo/" not in folder["text"]
    deleted = run.call({"command": "delete", "path": "search/titles.md"})
    assert deleted["ok"], deleted
    assert [entry.command for entry in memory.log()][-4:] == ["write", "write", "rename", "delete"]
    assert [v.command for v in memory.versions("seo/titles.md")] == ["write"]
    assert [v.command for v in memory.versions("search/titles.md")] == ["delete"]


def test_a_change_from_another_run_is_a_conflict_and_changes_nothing(memory) -> None:
    first, second = memory.run(thread_id="a"), memory.run(thread_id="b")
    assert first.call({"command": "write", "path": "MEMORY.md", "content": "one\n"})["ok"]
    assert second.call({"command": "read", "path": "MEMORY.md"})["ok"]
    assert first.call({"command": "write", "path": "MEMORY.md", "content": "two\n"})["ok"]
    refused = second.call({"command": "write", "path": "MEMORY.md", "content": "three\n"})
    assert refused["error"]["code"] == "CONFLICT"
    assert memory.read("MEMORY.md") == "two\n"


def test_revert_puts_back_a_kept_version(memory) -> None:
    run = memory.run(thread_id="t")
    run.call({"command": "write", "path": "MEMORY.md", "content": "first\n"})
    run.call({"command": "write", "path": "MEMORY.md", "content": "second\n"})
    memory.revert("MEMORY.md")
    assert memory.read("MEMORY.md") == "first\n"
    assert memory.log().__next__().command in {"init", "write"}


def test_proposals_are_rows(memory) -> None:
    run = memory.run(thread_id="t")
    run.call({"command": "write", "path": "MEMORY.md", "content": "keep\n"})
    reviewer = memory.run(thread_id="r", review=True)
    reviewer.call({"command": "read", "path": "MEMORY.md"})
    proposed = reviewer.call({"command": "write", "path": "MEMORY.md", "content": "changed\n"})
    assert proposed["ok"] and proposed.get("proposal"), proposed
    (proposal,) = memory.proposals()
    assert memory.read("MEMORY.md") == "keep\n"
    memory.approve(proposal.id)
    assert memory.read("MEMORY.md") == "changed\n" and memory.proposals() == []


def test_projects_are_apart(postgres: str, tmp_path: Path) -> None:
    ours = fsmem.open(postgres, project=_project(), create=True, cache=tmp_path / "a")
    theirs = fsmem.open(postgres, project=_project(), create=True, cache=tmp_path / "b")
    try:
        theirs.run(thread_id="t").call({"command": "write", "path": "secret-plans.md", "content": "theirs\n"})
        run = ours.run(thread_id="t")
        assert run.call({"command": "read", "path": "secret-plans.md"})["error"]["code"] == "NOT_FOUND"
        assert run.call({"command": "delete", "path": "secret-plans.md"})["error"]["code"] == "NOT_FOUND"
        assert "secret-plans" not in run.call({"command": "read", "path": "/"})["text"]
        assert all(entry.path != "secret-plans.md" for entry in ours.log())
    finally:
        ours.close()
        theirs.close()


def test_opening_needs_a_project_and_an_existing_one(postgres: str, tmp_path: Path) -> None:
    with pytest.raises(BadStore):
        fsmem.open(postgres, cache=tmp_path / "c")
    with pytest.raises(RootNotFound):
        fsmem.open(postgres, project=_project(), cache=tmp_path / "c")
    with pytest.raises(BadStore):
        fsmem.open(tmp_path, project="x")


def test_the_shell_opens_a_project_by_store_and_project(postgres: str, tmp_path: Path, monkeypatch) -> None:
    project = _project()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    made = run_fsmem("init", "--store", postgres, "--project", project, env={"XDG_CACHE_HOME": str(tmp_path / "x")})
    assert made.returncode == 0, made.stderr
    wrote = run_fsmem(
        "write", "notes.md", "--store", postgres, "--project", project,
        input="# Notes\n", env={"XDG_CACHE_HOME": str(tmp_path / "x")},
    )
    assert wrote.returncode == 0, wrote.stderr
    env = {"FSMEM_STORE": postgres, "FSMEM_PROJECT": project, "XDG_CACHE_HOME": str(tmp_path / "x")}
    read = run_fsmem("read", "notes.md", env=env)
    assert read.returncode == 0 and "# Notes" in read.stdout, read.stderr
    missing = run_fsmem("read", "notes.md", "--store", postgres, env={"XDG_CACHE_HOME": str(tmp_path / "x")})
    assert missing.returncode == 2 and missing.stderr.startswith("Error:") and "--project" in missing.stderr


def test_the_shell_says_when_a_project_does_not_exist(postgres: str, tmp_path: Path) -> None:
    result = invoke(tmp_path, "read", "MEMORY.md")  # a folder that is no root: the folder's refusal
    assert result.exit_code != 0
    gone = run_fsmem("read", "MEMORY.md", "--store", postgres, "--project", _project(),
                     env={"XDG_CACHE_HOME": str(tmp_path / "x")})
    assert gone.returncode != 0 and "no project" in gone.stderr


def test_a_folder_named_by_root_leaves_the_store_variables_aside(tmp_path: Path) -> None:
    """``$FSMEM_STORE``/``$FSMEM_PROJECT`` set in a shell do not stop a command given ``--root`` (a
    folder); giving ``--root`` with ``--store`` is refused as naming two places."""
    fsmem.open(tmp_path / "root", create=True)
    env = {"FSMEM_PROJECT": "somewhere", "FSMEM_STORE": "postgresql://nobody@/nowhere"}
    read = run_fsmem("read", "MEMORY.md", "--root", str(tmp_path / "root"), env=env)
    assert read.returncode == 0, read.stderr
    both = run_fsmem("read", "MEMORY.md", "--root", str(tmp_path / "root"), "--project", "x")
    assert both.returncode == 2 and both.stderr.startswith("Error: [BAD_STORE]"), both.stderr


def test_workers_opening_a_new_project_at_once_both_open_it(postgres: str, tmp_path: Path, monkeypatch) -> None:
    """The second worker's ``open(create=True)`` finds MEMORY.md made by the first between its look
    and its write: it opens the project, never CONFLICT."""
    from fsmem._store.postgres import transaction as _pg_transaction
    from fsmem._store.postgres.store import PgStore

    project = _project()
    PgStore.open(postgres, project, create=True).close()  # the row exists; MEMORY.md not yet
    real_read = _pg_transaction.PgTransaction.read
    raced = []

    def read(self, path):
        got = real_read(self, path)
        if path == "MEMORY.md" and got is None and not raced:
            raced.append(path)
            other = PgStore.open(postgres, project)  # another worker's first open commits it now
            with other.change("init") as tx:
                tx.write("MEMORY.md", b"", expect=None)
            other.close()
        return got

    monkeypatch.setattr(_pg_transaction.PgTransaction, "read", read)
    memory = fsmem.open(postgres, project=project, create=True, cache=tmp_path / "c")
    try:
        assert raced and memory.read("MEMORY.md") == ""
    finally:
        memory.close()


def test_a_closed_memory_says_so(postgres: str, tmp_path: Path) -> None:
    """After ``close()`` its connections are gone: a call answers STORAGE saying the memory was closed
    (not that the server cannot be reached), and nothing is raised past ``run.call``."""
    memory = fsmem.open(postgres, project=_project(), create=True, cache=tmp_path / "c")
    run = memory.run(thread_id="t")
    memory.close()
    refused = run.call({"command": "read", "path": "MEMORY.md"})
    assert refused["error"]["code"] == "STORAGE" and "was closed" in refused["error"]["message"]
    written = run.call({"command": "write", "path": "new.md", "content": "x\n"})
    assert written["error"]["code"] == "STORAGE" and "was closed" in written["error"]["message"]
