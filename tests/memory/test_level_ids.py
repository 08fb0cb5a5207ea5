"""Level folders are found by the full id kept inside them (DESIGN §3), never by 8 characters alone.

Before: ``marketing-bot`` and ``marketing-lead`` (or ``3f9a1c2e-77`` and ``3f9a1c2e-7d41``) opened the
same folder, and each agent was told the other's memory was its own.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import fsmem
from fsmem._memory import levels as _levels
from fsmem._errors import Exists, ScopeError
from fsmem._core.layout import LEVEL_IDENTITY_FILE as IDENTITY_FILE
from fsmem._memory.levels import Scope
from tests.conftest import invoke, run_fsmem
from tests.procs.common import diff, snapshot

LOOK_ALIKES = [("marketing-bot", "marketing-lead"), ("3f9a1c2e-77", "3f9a1c2e-7d41"), ("AbCdEfGh1", "abcdefgh2")]


@pytest.fixture
def memory(tmp_path: Path) -> fsmem.Memory:
    return fsmem.open(tmp_path / "root", create=True)


@pytest.mark.parametrize(("first", "second"), LOOK_ALIKES)
def test_look_alike_agent_ids_get_their_own_folders_and_memories(memory, first: str, second: str) -> None:
    one = memory.run(Scope.agent(first, name="Marketing"), thread_id="a")
    two = memory.run(Scope.agent(second, name="Marketing"), thread_id="b")
    assert one.agent_folder != two.agent_folder
    assert one.call({"command": "write", "path": f"{one.agent_folder}/MEMORY.md",
                     "content": f"# I am {first}\n"})["ok"]
    files = memory.scope_files(Scope.agent(second))
    assert memory.read(files[1]) == ""  # the second agent's memory is its own, still empty
    assert memory.read(memory.scope_files(Scope.agent(first))[1]) == f"# I am {first}\n"
    for entity_id, folder in ((first, one.agent_folder), (second, two.agent_folder)):
        kept = json.loads((memory.root / folder / IDENTITY_FILE).read_text())
        assert kept == {"kind": "agent", "id": entity_id, "name": "Marketing"}


def test_the_second_folder_takes_a_longer_piece_of_its_id(memory) -> None:
    assert memory.create_agent("marketing-bot", "Marketing") == "agents/marketing-marketin"
    assert memory.create_agent("marketing-lead", "Marketing") == "agents/marketing-marketinglea"
    assert memory.create_agent("3f9a1c2e-77", "SEO") == "agents/seo-3f9a1c2e"
    assert memory.create_agent("3f9a1c2e-7d41", "SEO") == "agents/seo-3f9a1c2e7d41"


@pytest.mark.parametrize(("first", "second"), LOOK_ALIKES)
def test_look_alike_routine_ids_get_their_own_folders(memory, first: str, second: str) -> None:
    memory.create_agent("agent-1", "SEO")
    a = memory.create_routine("agent-1", first, "Daily")
    b = memory.create_routine("agent-1", second, "Daily")
    assert a != b
    assert _levels.find_routine(memory, first) == a and _levels.find_routine(memory, second) == b
    assert memory.run(Scope.routine("agent-1", second)).routine_folder == b


def test_deleting_one_look_alike_never_touches_the_other(memory) -> None:
    keep = memory.create_agent("marketing-bot", "Marketing")
    memory.run(Scope.agent("marketing-bot"), "t").call(
        {"command": "write", "path": f"{keep}/MEMORY.md", "content": "# keep me\n"})
    memory.create_agent("marketing-lead", "Marketing")
    memory.delete_agent("marketing-lead")
    assert memory.read(f"{keep}/MEMORY.md") == "# keep me\n"
    with pytest.raises(fsmem.NotFound):
        memory.delete_agent("marketing-lead")


def test_an_id_is_matched_exactly(memory) -> None:
    memory.create_agent("marketing-bot", "Marketing")
    assert _levels.find_agent(memory, "marketing-bo") is None
    assert _levels.find_agent(memory, "Marketing-bot") is None
    assert _levels.find_agent(memory, "marketing-bot") == "agents/marketing-marketin"
    with pytest.raises(ScopeError):
        memory.run(Scope.agent("marketing-b"))  # no folder, no name: a run never starts on a guess
    with pytest.raises(Exists):
        memory.create_agent("marketing-bot", "Other")


def test_moving_the_folder_moves_its_identity(memory) -> None:
    folder = memory.create_agent("3f9a1c2e-77", "SEO")
    (memory.root / folder / "MEMORY.md").write_text("# seo\n")
    (memory.root / folder).rename(memory.root / "agents/search-team-3f9a1c2e")
    run = memory.run(Scope.agent("3f9a1c2e-77"))
    assert run.agent_folder == "agents/search-team-3f9a1c2e"
    assert _levels.find_agent(memory, "3f9a1c2e-7d41") is None  # the suffix alone no longer opens it


def test_a_copied_folder_with_its_identity_raises(memory) -> None:
    folder = memory.create_agent("3f9a1c2e-77", "SEO")
    shutil.copytree(memory.root / folder, memory.root / "agents/seo-copy")
    with pytest.raises(ScopeError, match="matches 2 folders"):
        memory.run(Scope.agent("3f9a1c2e-77"))


# ---- a root made before identities were kept ------------------------------------------------


def _legacy_root(tmp_path: Path) -> fsmem.Memory:
    memory = fsmem.open(tmp_path / "root", create=True)
    for path, text in {"agents/seo-3f9a1c2e/MEMORY.md": "# SEO rules\n- titles under 60\n",
                       "agents/seo-3f9a1c2e/routines/meta-9b7d4e10/NOTES.md": "# meta notes\n",
                       "agents/blog-7e0a11b2/MEMORY.md": "# Blog\n"}.items():
        (memory.root / path).parent.mkdir(parents=True, exist_ok=True)
        (memory.root / path).write_text(text)
    return memory


def test_an_old_root_upgrades_without_loss(tmp_path: Path) -> None:
    memory = _legacy_root(tmp_path)
    run = memory.run(Scope.routine("3f9a1c2e-77aa", "9b7d4e10-0001"), thread_id="t")
    assert run.agent_folder == "agents/seo-3f9a1c2e"
    assert run.routine_folder == "agents/seo-3f9a1c2e/routines/meta-9b7d4e10"
    assert memory.read("agents/seo-3f9a1c2e/MEMORY.md") == "# SEO rules\n- titles under 60\n"
    assert _levels.read_identity(memory, "agents/seo-3f9a1c2e") == {
        "kind": "agent", "id": "3f9a1c2e-77aa", "name": "seo"}
    # adopted: from now on the full id is what opens it, and a look-alike gets a folder of its own
    other = memory.run(Scope.agent("3f9a1c2e-7d41", name="SEO"))
    assert other.agent_folder == "agents/seo-3f9a1c2e7d41"
    # an agent nobody asked for yet is listed, without an id
    listed = {a.folder: a.id for a in _levels.describe_agents(memory)}
    assert listed["agents/blog-7e0a11b2"] is None and listed["agents/seo-3f9a1c2e"] == "3f9a1c2e-77aa"


def test_two_old_folders_that_fit_one_id_raise(tmp_path: Path) -> None:
    memory = _legacy_root(tmp_path)
    (memory.root / "agents/seo-copy-3f9a1c2e").mkdir()
    before = snapshot(memory.root)
    with pytest.raises(ScopeError, match="matches 2 folders"):
        memory.run(Scope.agent("3f9a1c2e-77aa"))
    assert snapshot(memory.root) == before, diff(before, snapshot(memory.root))


# ---- the identity file is fsmem's, never the model's -----------------------------------------


def test_the_identity_file_is_hidden_from_the_tool(memory) -> None:
    folder = memory.create_agent("3f9a1c2e-77", "SEO")
    run = memory.run(Scope.agent("3f9a1c2e-77"), thread_id="t")
    assert IDENTITY_FILE not in run.call({"command": "read", "path": folder})["text"]
    assert IDENTITY_FILE not in run.call({"command": "read", "path": "/"})["text"]
    for request in ({"command": "read", "path": f"{folder}/{IDENTITY_FILE}"},
                    {"command": "write", "path": f"{folder}/{IDENTITY_FILE}", "content": "x"},
                    {"command": "delete", "path": f"{folder}/{IDENTITY_FILE}"}):
        assert run.call(request)["error"]["code"] == "BAD_PATH"
    hits = run.call({"command": "search", "query": "3f9a1c2e", "regex": True})
    assert hits["ok"] and IDENTITY_FILE not in hits["text"]
    assert not (memory.root / ".fsmem" / "versions" / folder / IDENTITY_FILE).exists()


# ---- the shell ---------------------------------------------------------------------------------


def test_agents_list_shows_names_and_full_ids(memory) -> None:
    memory.create_agent("3f9a1c2e-77", "SEO team")
    memory.create_agent("3f9a1c2e-7d41", "SEO night")
    memory.create_routine("3f9a1c2e-77", "9b7d4e10-1", "Meta tags")
    out = invoke(memory.root, "agents", "list").output
    assert out == ("SEO night    3f9a1c2e-7d41  agents/seo-night-3f9a1c2e\n"
                   "SEO team     3f9a1c2e-77    agents/seo-team-3f9a1c2e\n"
                   "  Meta tags  9b7d4e10-1     agents/seo-team-3f9a1c2e/routines/meta-tags-9b7d4e10\n")


def test_the_shell_takes_an_unambiguous_prefix_and_lists_candidates_otherwise(memory) -> None:
    memory.create_agent("3f9a1c2e-77", "SEO")
    memory.create_agent("3f9a1c2e-7d41", "SEO")
    before = snapshot(memory.root)
    ambiguous = invoke(memory.root, "agents", "delete", "3f9a1c2e-7")
    assert ambiguous.exit_code != 0
    assert "3f9a1c2e-77" in ambiguous.output and "3f9a1c2e-7d41" in ambiguous.output
    assert "type more of it" in ambiguous.output
    assert snapshot(memory.root) == before
    deleted = invoke(memory.root, "agents", "delete", "3f9a1c2e-7d")
    assert deleted.exit_code == 0, deleted.output
    assert _levels.find_agent(memory, "3f9a1c2e-7d41") is None
    assert _levels.find_agent(memory, "3f9a1c2e-77") == "agents/seo-3f9a1c2e"
    made = invoke(memory.root, "routines", "create", "3f9a1c2e-7", "r-1", "Daily")
    assert made.exit_code == 0 and made.output == "agents/seo-3f9a1c2e/routines/daily-r1\n"
    assert invoke(memory.root, "routines", "delete", "r-").exit_code == 0


def test_a_unique_name_works_wherever_an_id_prefix_does(memory) -> None:
    memory.create_agent("3f9a1c2e-77", "SEO")
    memory.create_agent("8d2b-11", "Ops team")
    memory.create_routine("3f9a1c2e-77", "r-1", "Rank check")
    assert _levels.match_id(memory, "seo", "agent") == "3f9a1c2e-77"
    assert _levels.match_id(memory, "ops TEAM", "agent") == "8d2b-11"
    assert _levels.match_id(memory, "rank check", "routine") == "r-1"
    memory.create_agent("5c81-01", "seo")  # now the name names two agents: listed, never guessed
    with pytest.raises(ScopeError, match="3f9a1c2e-77.*5c81-01|5c81-01.*3f9a1c2e-77"):
        _levels.match_id(memory, "SEO", "agent")
    (memory.root / "MEMORY.md").write_text("Project rules.\n")
    scoped = run_fsmem("tool", "--root", str(memory.root), "--scope", "agent:ops team",
                       input=json.dumps({"command": "read", "path": "agents"}))
    assert scoped.returncode == 0, scoped.stdout


def test_the_sample_projects_levels_carry_their_ids_in_the_checkout_and_the_wheel(tmp_path: Path) -> None:
    import glob
    import tomllib

    from fsmem._env.sample import SAMPLE_DIR, SEO, copy_sample

    root = copy_sample(tmp_path / "sample")
    fsmem.open(root, create=True).close()
    status = invoke(root, "status")
    assert f"SEO                  {SEO.id}  agents/seo-5c81d0e4" in status.output, status.output
    for routine in SEO.routines:
        assert routine.id in status.output
    assert "?" not in status.output
    scoped = run_fsmem("tool", "--root", str(root), "--scope", "agent:seo",
                       input=json.dumps({"command": "read", "path": "MEMORY.md"}))
    assert scoped.returncode == 0, scoped.stdout
    # A wheel carries what pyproject's package-data globs match, as setuptools globs (no dot files for *).
    config = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["fsmem._data.sample_project"]
    carried = {hit for pattern in patterns for hit in glob.glob(pattern, root_dir=SAMPLE_DIR, recursive=True)}
    present = {str(path.relative_to(SAMPLE_DIR)) for path in SAMPLE_DIR.rglob("*") if path.is_file()}
    assert present - carried == set()


# ---- scopes as small types (issue 11) --------------------------------------------------------


def test_scopes_are_small_frozen_types_behind_the_same_constructors() -> None:
    from dataclasses import FrozenInstanceError

    from fsmem._memory.levels import AgentScope, ChatScope, RoutineScope

    assert isinstance(Scope.chat(), ChatScope) and Scope.chat() == Scope.chat()
    agent = Scope.agent("3f9a1c2e-77", name="SEO")
    assert isinstance(agent, AgentScope) and (agent.agent_id, agent.agent_name, agent.routine_id) == (
        "3f9a1c2e-77", "SEO", None)
    routine = Scope.routine("a-1", "r-1", routine_name="Daily")
    assert isinstance(routine, RoutineScope) and routine.kind == "routine"
    for scope in (Scope.chat(), agent, routine):
        assert Scope.parse(scope.to_text()).to_text() == scope.to_text()
    assert Scope.parse("agent:a-1") == Scope.agent("a-1") and len({Scope.agent("a-1"), Scope.agent("a-1")}) == 1
    with pytest.raises(FrozenInstanceError):
        agent.agent_id = "other"  # type: ignore[misc]
    with pytest.raises(ScopeError):
        Scope.agent("---")
