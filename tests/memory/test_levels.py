"""Agents, routines and scopes (docs/design.md §3)."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

import fsmem
from fsmem import Scope, ScopeError
from fsmem._memory import levels as _levels


@pytest.fixture
def memory(tmp_path):
    return fsmem.open(tmp_path / "root", create=True)


def test_folders_are_named_by_slug_and_id_prefix(memory):
    assert memory.create_agent("3f9a1c2e-5555", "SEO Agent") == "agents/seo-agent-3f9a1c2e"
    routine = memory.create_routine("3f9a1c2e-5555", "9b7d4e10-7777", "Meta tags")
    assert routine == "agents/seo-agent-3f9a1c2e/routines/meta-tags-9b7d4e10"
    assert (memory.root / routine / "NOTES.md").read_text() == ""


def test_scope_files_in_load_order(memory):
    memory.create_agent("3f9a1c2e", "SEO")
    memory.create_routine("3f9a1c2e", "9b7d4e10", "Meta")
    assert fsmem.scope_files(memory, Scope.chat()) == ["MEMORY.md"]
    assert fsmem.scope_files(memory, Scope.agent("3f9a1c2e")) == ["MEMORY.md", "agents/seo-3f9a1c2e/MEMORY.md"]
    assert fsmem.scope_files(memory, Scope.routine("3f9a1c2e", "9b7d4e10")) == [
        "MEMORY.md", "agents/seo-3f9a1c2e/MEMORY.md", "agents/seo-3f9a1c2e/routines/meta-9b7d4e10/NOTES.md"]


def test_renamed_agent_keeps_its_folder(memory):
    memory.create_agent("3f9a1c2e", "SEO")
    (memory.root / "agents/seo-3f9a1c2e/MEMORY.md").write_text("kept\n")
    # the harness renamed the agent: the scope carries the new name, the folder is found by id
    files = fsmem.scope_files(memory, Scope.agent("3f9a1c2e", name="Search Optimizer"))
    assert files[1] == "agents/seo-3f9a1c2e/MEMORY.md"


def test_missing_folder_is_made_on_first_use_when_named(memory):
    files = fsmem.scope_files(memory, Scope.routine("aa11bb22", "cc33dd44", agent_name="Old", routine_name="Daily"))
    assert files[2] == "agents/old-aa11bb22/routines/daily-cc33dd44/NOTES.md"


def test_unknown_scope_without_names_raises(memory):
    with pytest.raises(ScopeError):
        memory.run(Scope.agent("deadbeef"))


def test_id_matching_two_folders_raises(memory):
    import shutil

    folder = memory.create_agent("3f9a1c2e", "SEO")
    shutil.copytree(memory.root / folder, memory.root / "agents/copy-3f9a1c2e")  # its identity too
    with pytest.raises(ScopeError, match="matches 2 folders"):
        memory.run(Scope.agent("3f9a1c2e"))


def test_a_look_alike_folder_without_identity_does_not_take_an_agents_place(memory):
    folder = memory.create_agent("3f9a1c2e", "SEO")
    (memory.root / "agents/copy-3f9a1c2e").mkdir()  # made by hand: no kept id, only the suffix
    assert memory.run(Scope.agent("3f9a1c2e")).agent_folder == folder


def test_two_routines_with_one_name_never_share(memory):
    memory.create_agent("3f9a1c2e", "SEO")
    a = memory.create_routine("3f9a1c2e", "11111111", "Daily")
    b = memory.create_routine("3f9a1c2e", "22222222", "Daily")
    assert a != b


def test_delete_routine_returns_its_notes(memory):
    memory.create_agent("3f9a1c2e", "SEO")
    folder = memory.create_routine("3f9a1c2e", "9b7d4e10", "Meta")
    (memory.root / folder / "NOTES.md").write_text("baseline: 42\n")
    held = memory.delete_routine("9b7d4e10")
    assert held == {f"{folder}/NOTES.md": "baseline: 42\n"}
    assert not (memory.root / folder).exists()


def test_new_agent_with_reused_name_starts_empty(memory):
    memory.create_agent("3f9a1c2e", "SEO")
    (memory.root / "agents/seo-3f9a1c2e/MEMORY.md").write_text("old agent\n")
    memory.delete_agent("3f9a1c2e")
    folder = memory.create_agent("77777777", "SEO")
    assert (memory.root / folder / "MEMORY.md").read_text() == ""


def test_deleting_routine_restores_when_the_block_raises(memory):
    memory.create_agent("3f9a1c2e", "SEO")
    folder = memory.create_routine("3f9a1c2e", "9b7d4e10", "Meta")
    (memory.root / folder / "NOTES.md").write_text("notes\n")
    with pytest.raises(RuntimeError):
        with memory.deleting_routine("9b7d4e10") as held:
            assert held == {f"{folder}/NOTES.md": "notes\n"}
            assert not (memory.root / folder).exists()
            raise RuntimeError("the harness's own delete failed")
    assert (memory.root / folder / "NOTES.md").read_text() == "notes\n"
    with memory.deleting_routine("9b7d4e10"):
        pass
    assert not (memory.root / folder).exists()


def test_scope_parse():
    assert Scope.parse("chat") == Scope.chat()
    assert Scope.parse("agent:abc12345") == Scope.agent("abc12345")
    assert Scope.parse("routine:a1/b2") == Scope.routine("a1", "b2")
    with pytest.raises(ScopeError):
        Scope.parse("team:x")


def test_folder_parked_by_a_dead_process_comes_back_on_open(memory):
    memory.create_agent("3f9a1c2e", "SEO")
    folder = memory.create_routine("3f9a1c2e", "9b7d4e10", "Meta")
    (memory.root / folder / "NOTES.md").write_text("notes\n")
    aside = memory.drive.state / "deleting-999999999-x"
    aside.mkdir()
    (aside / "from").write_text(folder)
    (memory.root / folder).rename(aside / "folder")
    reopened = fsmem.open(memory.root)
    assert (reopened.root / folder / "NOTES.md").read_text() == "notes\n"
    assert not aside.exists()


@pytest.mark.parametrize("text, scope", [
    ("agent:3f9a1c2e-77:SEO bot", Scope.agent("3f9a1c2e-77", "SEO bot")),
    ("agent:a1:A/B tests: weekly", Scope.agent("a1", "A/B tests: weekly")),
    ("routine:a1/b2:SEO/Meta tags", Scope.routine("a1", "b2", "SEO", "Meta tags")),
    ("routine:a1/b2:/Meta tags", Scope.routine("a1", "b2", None, "Meta tags")),
    ("routine:a%2F1/b2:x%3Ay%2Fz/50%25", Scope.routine("a/1", "b2", "x:y/z", "50%")),
])
def test_scope_text_carries_names_and_round_trips(text, scope):
    assert Scope.parse(text) == scope
    assert Scope.parse(scope.to_text()) == scope


def test_scope_with_a_name_makes_the_missing_folder_on_first_use(memory):
    run = memory.run(Scope.parse("routine:3f9a1c2e-77/9b7d4e10:SEO bot/Meta tags"))
    assert run.agent_folder == "agents/seo-bot-3f9a1c2e"
    assert run.routine_folder == "agents/seo-bot-3f9a1c2e/routines/meta-tags-9b7d4e10"
    assert (memory.root / run.routine_folder / "NOTES.md").is_file()
    with pytest.raises(ScopeError, match="add :NAME"):
        Scope.parse("routine:a1/b2:only-one-name")


# ---- a deleting block never loses the folder; first use from two processes makes one folder ----------


def test_a_run_inside_a_deleting_block_never_remakes_the_folder_and_a_raise_keeps_the_notes(memory):
    memory.create_agent("3f9a1c2e", "A")
    folder = memory.create_routine("3f9a1c2e", "9b7d4e10", "R")
    (memory.root / folder / "NOTES.md").write_text("precious notes\n")
    named = Scope.routine("3f9a1c2e", "9b7d4e10", agent_name="A", routine_name="R")
    with pytest.raises(RuntimeError, match="harness's own"):
        with memory.deleting_routine("9b7d4e10"):
            with pytest.raises(ScopeError, match="being deleted"):
                memory.run(named)
            assert not (memory.root / folder).exists()
            raise RuntimeError("the harness's own delete failed")
    assert (memory.root / folder / "NOTES.md").read_text() == "precious notes\n"
    assert fsmem.scope_files(memory, named)[-1] == f"{folder}/NOTES.md"
    assert not list(memory.drive.state.glob("deleting-*"))


def test_a_run_inside_deleting_agent_is_refused_and_the_agent_comes_back(memory):
    folder = memory.create_agent("3f9a1c2e", "A")
    (memory.root / folder / "MEMORY.md").write_text("agent notes\n")
    with pytest.raises(RuntimeError):
        with memory.deleting_agent("3f9a1c2e"):
            with pytest.raises(ScopeError, match="being deleted"):
                memory.run(Scope.agent("3f9a1c2e", "A"))
            with pytest.raises(ScopeError, match="being deleted"):
                memory.run(Scope.routine("3f9a1c2e", "9b7d4e10", "A", "R"))
            raise RuntimeError("the harness's own delete failed")
    assert (memory.root / folder / "MEMORY.md").read_text() == "agent notes\n"
    assert _levels.describe_agents(memory)[0].folder == folder and len(_levels.describe_agents(memory)) == 1


@pytest.mark.parametrize("block_raises", [True, False])
def test_a_folder_that_cannot_go_back_stays_parked_whole_and_the_error_says_where(memory, block_raises):
    memory.create_agent("3f9a1c2e", "A")
    folder = memory.create_routine("3f9a1c2e", "9b7d4e10", "R")
    (memory.root / folder / "NOTES.md").write_text("precious notes\n")
    with pytest.raises(fsmem.FsmemError) as raised:
        with memory.deleting_routine("9b7d4e10"):
            (memory.root / folder).mkdir()  # a person's hand takes the place meanwhile
            (memory.root / folder / "other.md").write_text("theirs\n")
            if block_raises:
                raise RuntimeError("the harness's own delete failed")
    error = raised.value
    assert error.code == "PARKED"
    kept = Path(error.details["kept_at"])
    assert str(kept) in error.message and folder in error.message
    assert (kept / "NOTES.md").read_text() == "precious notes\n"
    assert (memory.root / folder / "other.md").read_text() == "theirs\n"
    # a later open (this process alive, then as if dead) never drops it either
    fsmem.open(memory.root)
    assert (kept / "NOTES.md").read_text() == "precious notes\n"


def _first_use(root: str, rounds: list[tuple[str, str]], barrier, results) -> None:
    memory = fsmem.open(root)
    for round_, (agent_id, routine_id) in enumerate(rounds):
        barrier.wait()  # every process starts each round's first use at once
        try:
            run = memory.run(Scope.routine(agent_id, routine_id, agent_name="SEO", routine_name="Meta"))
            results.put((round_, (run.agent_folder, run.routine_folder)))
        except Exception as error:  # reported to the test, which fails on it
            results.put((round_, ("error", repr(error))))


@pytest.mark.slow
def test_first_use_from_several_processes_at_once_makes_one_folder(memory):
    # The same processes race round after round: starting fresh ones each round cost most of the test.
    context = multiprocessing.get_context("spawn")
    processes = 4
    rounds = [(f"3f9a1c2e-{round_}", f"9b7d4e10-{round_}") for round_ in range(4)]
    barrier, results = context.Barrier(processes), context.Queue()
    workers = [
        context.Process(target=_first_use, args=(str(memory.root), rounds, barrier, results))
        for _ in range(processes)
    ]
    for worker in workers:
        worker.start()
    got: dict[int, list] = {}
    for _ in range(processes * len(rounds)):
        round_, result = results.get(timeout=120)
        got.setdefault(round_, []).append(result)
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    for round_, (agent_id, _routine_id) in enumerate(rounds):
        assert len(set(got[round_])) == 1, got[round_]
        agent_folder, routine_folder = got[round_][0]
        assert [a.folder for a in _levels.describe_agents(memory) if a.id == agent_id] == [agent_folder]
        assert [r.folder for r in _levels.describe_routines(memory, agent_folder)] == [routine_folder]
