"""`fsmem sync` keeps the rules the tool keeps (fsmem/_memory/sync.py): a conflict that cannot finish keeps the
person's text once, not once a pass; a top file deleted by hand is emptied, a level folder deleted by
hand comes back, a fact file changes only through the facts API. Real PostgreSQL, real folders."""

from __future__ import annotations

import errno
import json
import uuid
from pathlib import Path

import pytest

import fsmem._memory.sync as sync_module
from fsmem._memory import levels as _levels
from fsmem._memory.sync import Sync


@pytest.fixture
def store(postgres):
    from fsmem._store.postgres.store import PgStore

    with PgStore.open(postgres, f"rules-{uuid.uuid4().hex[:8]}") as opened:
        yield opened


def put(store, path: str, text: str, expect=None) -> str:
    with store.change("write", thread="t-1") as tx:
        return tx.write(path, text.encode(), **({} if expect is None else {"expect": expect}))


# ---- a conflict that cannot finish -------------------------------------------------------------------


def test_the_same_text_is_kept_once_as_a_version_of_a_path(store) -> None:
    put(store, "notes/x.md", "db\n")
    first = store.keep_version("notes/x.md", b"the person's text\n", "conflict")
    again = store.keep_version("notes/x.md", b"the person's text\n", "conflict")
    assert first == again and [kept.command for kept in store.versions("notes/x.md")] == ["conflict"]
    other = store.keep_version("notes/x.md", b"another text\n", "conflict")
    assert other != first and len(store.versions("notes/x.md")) == 2


def test_a_conflict_whose_note_cannot_be_written_keeps_the_text_once_and_evicts_no_history(
    tmp_path: Path, store, monkeypatch
) -> None:
    version = None
    for number in range(5):  # a file with a real history: four kept versions
        version = put(store, "notes/x.md", f"db v{number}\n", expect=version)
    history = [(kept.command, kept.version) for kept in store.versions("notes/x.md")]
    folder = tmp_path / "mirror"
    store.versions_kept = len(history) + 1  # the cap one above what is kept: each extra copy evicts
    with Sync.open(folder, store) as mirror:
        mirror.run_once(None)
        (folder / "notes/x.md").write_text("the person's text\n")
        put(store, "notes/x.md", "db v5\n")
        history = [(kept.command, kept.version) for kept in store.versions("notes/x.md")]
        real = sync_module.write_atomic

        def disk_full_for_notes(path, data, **options):
            if ".conflict" in Path(path).name:
                raise OSError(errno.ENOSPC, "No space left on device")
            return real(path, data, **options)

        monkeypatch.setattr(sync_module, "write_atomic", disk_full_for_notes)
        for _ in range(4):
            report = mirror.run_once(None)
            assert report.errors == ["notes/x.md: [Errno 28] No space left on device"]
        kept = [(k.command, k.version) for k in store.versions("notes/x.md")]
        mine = sync_module.version_of(b"the person's text\n")
        assert kept[0] == ("conflict", mine) and kept[1:] == history[: len(kept) - 1]
        assert len(kept) == store.versions_kept and sum(command == "conflict" for command, _ in kept) == 1
        assert (folder / "notes/x.md").read_text() == "the person's text\n"  # nothing of theirs lost
        assert json.loads((folder / ".fsmem-sync/state.json").read_text())["kept"] == {"notes/x.md": mine}
        monkeypatch.undo()  # room again: the conflict finishes
        report = mirror.run_once(None)
        assert report.conflicts == ["notes/x.md.conflict"] and report.errors == []
        assert f"Your text is kept as version {mine}" in (folder / "notes/x.md.conflict").read_text()
        assert (folder / "notes/x.md").read_text() == "db v5\n"
        assert [(k.command, k.version) for k in store.versions("notes/x.md")] == kept
        assert json.loads((folder / ".fsmem-sync/state.json").read_text())["kept"] == {}


# ---- the tool's rules -------------------------------------------------------------------------------


@pytest.fixture
def memory(postgres, tmp_path: Path):
    import fsmem

    opened = fsmem.open(postgres, project=f"rules-{uuid.uuid4().hex[:8]}", create=True, cache=tmp_path / "cache")
    yield opened
    opened.close()


def mirror_of(memory, folder: Path):
    mirror = Sync.open(folder, memory.drive.pg)
    assert mirror.run_once(None).errors == []
    return mirror


def test_an_agent_folder_deleted_by_hand_comes_back_with_a_note(tmp_path: Path, memory) -> None:
    import shutil

    folder = _levels.create_agent(memory, "agent-77-abc", "Ghost")
    pg = memory.drive.pg
    with pg.change("write") as tx:
        tx.write(f"{folder}/seo.md", b"# SEO\nkeep titles short\n")
    here = tmp_path / "mirror"
    with mirror_of(memory, here) as mirror:
        held = {path: (here / path).read_bytes() for path in (f"{folder}/MEMORY.md", f"{folder}/seo.md")}
        shutil.rmtree(here / "agents")  # a person deletes the agent's folder
        report = mirror.run_once(None)
        assert report.pushed == [] and report.errors == [] and report.conflicts == [f"{folder}.conflict"]
        assert {path: (here / path).read_bytes() for path in held} == held  # back as the memory holds it
        note = (here / f"{folder}.conflict").read_text()
        assert "Agents are deleted by the harness (`fsmem agents delete ID`)" in note
        assert not mirror.run_once(None).changed  # settled: the next pass does nothing
    assert [(agent.id, agent.folder) for agent in _levels.describe_agents(memory)] == [("agent-77-abc", folder)]
    assert {path: pg.read(path) for path in held} == held


def test_a_routine_folder_deleted_by_hand_comes_back_and_its_agent_stays(tmp_path: Path, memory) -> None:
    import shutil

    agent = memory.create_agent("agent-88-abc", "SEO")
    routine = memory.create_routine("agent-88-abc", "rt-42-xyz", "Meta tags")
    here = tmp_path / "mirror"
    with mirror_of(memory, here) as mirror:
        shutil.rmtree(here / routine)
        report = mirror.run_once(None)
        assert report.pushed == [] and report.conflicts == [f"{routine}.conflict"]
        assert (
            "Routines are deleted by the harness (`fsmem routines delete ID`)"
            in (here / f"{routine}.conflict").read_text()
        )
        assert (here / routine / "NOTES.md").exists() and (here / agent / "MEMORY.md").exists()
    assert memory.drive.pg.exists(f"{routine}/NOTES.md")


def test_a_top_file_deleted_by_hand_is_emptied_not_removed(tmp_path: Path, memory) -> None:
    agent = memory.create_agent("agent-99-abc", "Writer")
    pg = memory.drive.pg
    with pg.change("write") as tx:
        tx.write("MEMORY.md", b"# Project\nthe project's own memory\n")
        tx.write(f"{agent}/MEMORY.md", b"# Writer\nthe agent's memory\n")
    here = tmp_path / "mirror"
    with mirror_of(memory, here) as mirror:
        (here / "MEMORY.md").unlink()
        (here / agent / "MEMORY.md").unlink()
        report = mirror.run_once(None)
        assert sorted(report.pushed) == sorted(["MEMORY.md", f"{agent}/MEMORY.md"]) and report.errors == []
        assert (here / "MEMORY.md").read_bytes() == b"" and (here / agent / "MEMORY.md").read_bytes() == b""
        assert not mirror.run_once(None).changed
        (here / "MEMORY.md").unlink()  # already empty: nothing to push, the empty file comes back
        assert mirror.run_once(None).pushed == [] and (here / "MEMORY.md").read_bytes() == b""
    assert pg.read("MEMORY.md") == b"" and pg.read(f"{agent}/MEMORY.md") == b""
    kept = pg.versions("MEMORY.md")[0]
    assert pg.read_kept("MEMORY.md", kept.version) == b"# Project\nthe project's own memory\n"
    assert [level.id for level in _levels.describe_agents(memory)] == ["agent-99-abc"]


def test_fact_files_change_only_through_the_facts_api(tmp_path: Path, memory) -> None:
    memory.facts.keep("Ana", "role", "Ana leads data.")
    pg = memory.drive.pg
    (fact,) = [entry.path for entry in pg.walk_files("notes/memory")]
    original = pg.read(fact)
    here = tmp_path / "mirror"
    with mirror_of(memory, here) as mirror:
        (here / fact).write_text("---\nsubject: Ana\n---\nAna leads sales now.\n")  # a hand edit
        report = mirror.run_once(None)
        assert report.pushed == [] and report.conflicts == [f"{fact}.conflict"]
        assert (here / fact).read_bytes() == original and pg.read(fact) == original
        note = (here / f"{fact}.conflict").read_text()
        assert "facts change only through the facts API" in note and note.endswith("Ana leads sales now.\n")
        assert pg.read_kept(fact, pg.versions(fact)[0].version) == b"---\nsubject: Ana\n---\nAna leads sales now.\n"
        (here / fact).unlink()  # a hand deletion
        report = mirror.run_once(None)
        assert report.pushed == [] and (here / fact).read_bytes() == original and pg.read(fact) == original
        assert "not by deleting the file" in (here / f"{fact}.conflict-2").read_text()
        made = "notes/memory/made-by-hand.md"
        (here / made).write_text("a fact written by hand\n")  # a new fact file
        report = mirror.run_once(None)
        assert report.pushed == [] and not (here / made).exists() and pg.read(made) is None
        assert (here / f"{made}.conflict").read_text().endswith("a fact written by hand\n")
        assert not mirror.run_once(None).changed
    assert [f.text for f in memory.facts.all()] == ["Ana leads data."]


def test_a_file_in_an_agent_folder_the_memory_does_not_have_is_not_pushed(tmp_path: Path, memory) -> None:
    here = tmp_path / "mirror"
    with mirror_of(memory, here) as mirror:
        (here / "agents" / "made-up-1234").mkdir(parents=True)
        (here / "agents" / "made-up-1234" / "MEMORY.md").write_text("an agent made by hand\n")
        (here / "agents" / "stray.md").write_text("a file where only agent folders go\n")
        report = mirror.run_once(None)
        assert report.pushed == [] and report.errors == []
        assert sorted(report.conflicts) == ["agents/made-up-1234/MEMORY.md.conflict", "agents/stray.md.conflict"]
        assert "agents are created by the harness" in (here / "agents/made-up-1234/MEMORY.md.conflict").read_text()
        assert not (here / "agents" / "made-up-1234" / "MEMORY.md").exists()
    assert _levels.describe_agents(memory) == [] and not memory.drive.pg.is_dir("agents")
