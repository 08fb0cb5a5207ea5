"""What the model may not do to the layout: PROTECTED, and nothing changed.

docs/design.md §3: the model may not create, rename or delete a level folder, nor rename or delete a level's
top file (deleting MEMORY.md/NOTES.md empties it); it may not write into a folder of an agent or routine
that does not exist, nor touch .fsmem/; fact files change only through the facts API.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import fsmem
from fsmem._core.versions import version_of
from tests.conftest import run_fsmem
from tests.procs.common import diff, snapshot

AGENT_ID = "3f9a1c2e-7d41-4b0e-9a55-0c1d2e3f4a5b"
ROUTINE_ID = "9b7d4e10-1111-4222-8333-944455556666"
AGENT = "agents/seo-3f9a1c2e"
ROUTINE = f"{AGENT}/routines/meta-tags-9b7d4e10"
FACT = "notes/memory/f-2026-08-12-title.md"
OLD_FACT = "notes/memory/history/f-2026-07-01-title.md"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    memory = fsmem.open(folder, create=True)
    assert memory.create_agent(AGENT_ID, "SEO") == AGENT
    assert memory.create_routine(AGENT_ID, ROUTINE_ID, "Meta tags") == ROUTINE
    run = memory.run(fsmem.Scope.routine(AGENT_ID, ROUTINE_ID), thread_id="setup")
    for path, text in {
        "MEMORY.md": "# Project\n- titles end with | Field Notes\n",
        f"{AGENT}/MEMORY.md": "# SEO\n- /stories on hold until Dec 9\n",
        f"{ROUTINE}/NOTES.md": "# Meta tags\n- changed /stories title\n",
        f"{AGENT}/hold.md": "# Holds\n",
        "seo/titles.md": "# Titles\n",
    }.items():
        assert run.call({"command": "write", "path": path, "content": text})["ok"], path
    # Facts are made by the facts API (issue 4); here they are placed as that API would leave them.
    for path in (FACT, OLD_FACT):
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text("---\nsubject: /stories\nattribute: title\n---\nThe title is short.\n",
                                   encoding="utf-8")
    return folder


def seen_run(root: Path, *paths: str, review: bool = False):
    """A run of the routine that has read every file it will touch, so only protection can refuse."""
    run = fsmem.open(root).run(fsmem.Scope.routine(AGENT_ID, ROUTINE_ID), thread_id="model", review=review)
    for path in ("MEMORY.md", f"{AGENT}/MEMORY.md", f"{ROUTINE}/NOTES.md", f"{AGENT}/hold.md",
                 "seo/titles.md", FACT, OLD_FACT, *paths):
        run.call({"command": "read", "path": path})
    return run


def assert_protected(root: Path, request: dict, review: bool = False) -> dict:
    run = seen_run(root, review=review)
    before = snapshot(root)
    result = run.call(request)
    assert result["ok"] is False, result
    assert result["error"]["code"] == "PROTECTED", result
    assert result["text"].startswith("Error")
    assert snapshot(root) == before, diff(before, snapshot(root))
    return result


PROTECTED_CALLS = {
    # level folders: never created, renamed or deleted by the model
    "rename-agent-folder": {"command": "rename", "path": AGENT, "new_path": "agents/seo2-3f9a1c2e"},
    "rename-agent-folder-out": {"command": "rename", "path": AGENT, "new_path": "old-seo"},
    "delete-agent-folder": {"command": "delete", "path": AGENT},
    "rename-routine-folder": {"command": "rename", "path": ROUTINE, "new_path": f"{AGENT}/routines/meta-x-9b7d4e10"},
    "delete-routine-folder": {"command": "delete", "path": ROUTINE},
    "delete-routines-folder": {"command": "delete", "path": f"{AGENT}/routines"},
    "rename-routines-folder": {"command": "rename", "path": f"{AGENT}/routines", "new_path": f"{AGENT}/r"},
    "delete-agents": {"command": "delete", "path": "agents"},
    "rename-agents": {"command": "rename", "path": "agents", "new_path": "bots"},
    "rename-folder-into-agents": {"command": "rename", "path": "seo", "new_path": "agents/seo-deadbeef"},
    "rename-folder-into-routines": {"command": "rename", "path": "seo",
                                    "new_path": f"{AGENT}/routines/seo-12345678"},
    # top files: never renamed; delete empties (see below)
    "rename-project-top": {"command": "rename", "path": "MEMORY.md", "new_path": "OLD.md"},
    "rename-agent-top": {"command": "rename", "path": f"{AGENT}/MEMORY.md", "new_path": f"{AGENT}/old.md"},
    "rename-routine-top": {"command": "rename", "path": f"{ROUTINE}/NOTES.md", "new_path": f"{ROUTINE}/old.md"},
    # folders of agents and routines that do not exist
    "write-ghost-agent-top": {"command": "write", "path": "agents/ghost-deadbeef/MEMORY.md", "content": "# G\n"},
    "write-ghost-agent-topic": {"command": "write", "path": "agents/ghost-deadbeef/notes.md", "content": "# G\n"},
    "write-ghost-routine": {"command": "write", "path": f"{AGENT}/routines/ghost-12345678/NOTES.md",
                            "content": "# G\n"},
    "write-routine-of-ghost-agent": {"command": "write",
                                     "path": "agents/ghost-deadbeef/routines/r-12345678/NOTES.md",
                                     "content": "# G\n"},
    "rename-into-ghost-agent": {"command": "rename", "path": "seo/titles.md",
                                "new_path": "agents/ghost-deadbeef/titles.md"},
    "rename-into-ghost-routine": {"command": "rename", "path": "seo/titles.md",
                                  "new_path": f"{AGENT}/routines/ghost-12345678/titles.md"},
    # facts change only through the facts API
    "write-new-fact": {"command": "write", "path": "notes/memory/f-new.md", "content": "# A fact\n"},
    "write-existing-fact": {"command": "write", "path": FACT, "content": "---\nsubject: x\n---\nChanged.\n"},
    "replace-in-fact": {"command": "write", "path": FACT, "old_text": "short", "new_text": "long"},
    "write-history": {"command": "write", "path": OLD_FACT, "content": "# gone\n"},
    "write-new-history": {"command": "write", "path": "notes/memory/history/f-x.md", "content": "# x\n"},
    "rename-fact": {"command": "rename", "path": FACT, "new_path": "notes/memory/f-renamed.md"},
    "rename-fact-out": {"command": "rename", "path": FACT, "new_path": "fact.md"},
    "rename-into-facts": {"command": "rename", "path": "seo/titles.md", "new_path": "notes/memory/titles.md"},
    "delete-fact": {"command": "delete", "path": FACT},
    "delete-history-fact": {"command": "delete", "path": OLD_FACT},
    "delete-facts-folder": {"command": "delete", "path": "notes/memory"},
    "delete-notes-folder": {"command": "delete", "path": "notes"},
    "rename-facts-folder": {"command": "rename", "path": "notes/memory", "new_path": "notes/mem"},
    "rename-notes-folder": {"command": "rename", "path": "notes", "new_path": "old-notes"},
}


@pytest.mark.parametrize("request_", list(PROTECTED_CALLS.values()), ids=list(PROTECTED_CALLS))
def test_protected_operations_are_refused_and_change_nothing(root: Path, request_: dict) -> None:
    result = assert_protected(root, request_)
    assert len(result["error"]["message"]) > 20  # says why, and what to do instead


@pytest.mark.parametrize("request_", list(PROTECTED_CALLS.values()), ids=list(PROTECTED_CALLS))
def test_a_reviewer_gets_protected_too_and_no_proposal_is_made(root: Path, request_: dict) -> None:
    assert_protected(root, request_, review=True)


def test_deleting_the_root_is_refused(root: Path) -> None:
    for path in ("", "/"):
        run = seen_run(root)
        before = snapshot(root)
        result = run.call({"command": "delete", "path": path})
        assert result["ok"] is False and result["error"]["code"] in {"PROTECTED", "BAD_PATH"}, result
        assert snapshot(root) == before
        renamed = run.call({"command": "rename", "path": path, "new_path": "elsewhere"})
        assert renamed["ok"] is False and renamed["error"]["code"] in {"PROTECTED", "BAD_PATH"}, renamed
        assert snapshot(root) == before


@pytest.mark.parametrize("request_", [
    {"command": "write", "path": ".fsmem/log.jsonl", "content": "{}\n"},
    {"command": "write", "path": ".fsmem/config.toml", "content": "x = 1\n"},
    {"command": "delete", "path": ".fsmem"},
    {"command": "delete", "path": ".fsmem/versions"},
    {"command": "rename", "path": ".fsmem/lock", "new_path": "lock.md"},
    {"command": "rename", "path": "seo/titles.md", "new_path": ".fsmem/titles.md"},
], ids=["write-log", "write-config", "delete-state", "delete-versions", "rename-lock", "rename-into-state"])
def test_the_state_folder_is_out_of_reach(root: Path, request_: dict) -> None:
    # A path into .fsmem/ breaks the path rules (a segment starting with "."), so it is BAD_PATH.
    run = seen_run(root)
    before = snapshot(root)
    result = run.call(request_)
    assert result["ok"] is False and result["error"]["code"] == "BAD_PATH", result
    assert snapshot(root) == before, diff(before, snapshot(root))


@pytest.mark.parametrize("top", ["MEMORY.md", f"{AGENT}/MEMORY.md", f"{ROUTINE}/NOTES.md"])
def test_deleting_a_top_file_empties_it_and_keeps_the_version(root: Path, top: str) -> None:
    memory = fsmem.open(root)
    old = (root / top).read_text(encoding="utf-8")
    run = seen_run(root)
    result = run.call({"command": "delete", "path": top})
    assert result["ok"], result
    assert result["held"] == {top: old}  # what it held, so it can be written back
    assert (root / top).exists() and (root / top).read_bytes() == b""
    assert any(v.version == version_of(old.encode()) for v in memory.versions(top))
    last = json.loads((root / ".fsmem" / "log.jsonl").read_text(encoding="utf-8").splitlines()[-1])
    assert last["path"] == top and last["thread"] == "model"
    assert last["after"] == version_of(b"")
    # The emptied file is still the level's top file: writable again, and the folder still stands.
    again = run.call({"command": "write", "path": top, "content": old})
    assert again["ok"], again
    assert (root / top).read_text(encoding="utf-8") == old


def test_deleting_a_folder_that_holds_a_level_folder_is_refused_even_when_deep(root: Path) -> None:
    # `agents` holds every agent; a topic folder inside an agent is not a level folder and may go.
    run = seen_run(root)
    assert run.call({"command": "write", "path": f"{AGENT}/drafts/a.md", "content": "# A\n"})["ok"]
    gone = run.call({"command": "delete", "path": f"{AGENT}/drafts"})
    assert gone["ok"], gone
    assert gone["held"] == {f"{AGENT}/drafts/a.md": "# A\n"}
    assert (root / AGENT).is_dir() and (root / ROUTINE / "NOTES.md").exists()


def test_what_the_model_may_do_inside_its_levels(root: Path) -> None:
    """Protection must not get in the way of ordinary work."""
    run = seen_run(root)
    ok = [
        {"command": "write", "path": f"{AGENT}/MEMORY.md", "content": "# SEO\n- rule\n"},
        {"command": "write", "path": f"{ROUTINE}/NOTES.md", "content": "# Meta tags\n- note\n"},
        {"command": "write", "path": f"{ROUTINE}/baseline.md", "content": "# Baseline\n- 16\n"},
        {"command": "rename", "path": f"{AGENT}/hold.md", "new_path": f"{AGENT}/holds.md"},
        {"command": "rename", "path": "seo/titles.md", "new_path": f"{AGENT}/titles.md"},
        {"command": "read", "path": FACT},
        {"command": "read", "path": "notes/memory"},
        {"command": "search", "query": "title is short", "regex": True},
        {"command": "delete", "path": f"{ROUTINE}/baseline.md"},
    ]
    for request in ok:
        result = run.call(request)
        assert result["ok"], (request, result)


def test_a_scope_whose_folder_is_missing_gets_it_and_then_may_write(root: Path) -> None:
    memory = fsmem.open(root)
    scope = fsmem.Scope.agent("c0ffee00-0000-4000-8000-000000000000", name="Content")
    run = memory.run(scope, thread_id="t-1")
    result = run.call({"command": "write", "path": "agents/content-c0ffee00/MEMORY.md", "content": "# Content\n"})
    assert result["ok"], result


def test_protection_through_a_real_process(root: Path) -> None:
    before = snapshot(root)
    delete = run_fsmem("delete", "--root", str(root), AGENT)
    assert delete.returncode == 1 and delete.stderr.startswith("Error: [PROTECTED]"), delete
    tool = run_fsmem("tool", "--root", str(root), input=json.dumps(
        {"command": "write", "path": "agents/ghost-deadbeef/MEMORY.md", "content": "# G\n"}))
    assert json.loads(tool.stdout)["error"]["code"] == "PROTECTED", tool
    assert snapshot(root) == before, diff(before, snapshot(root))
