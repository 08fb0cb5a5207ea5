"""docs/design.md sentences that had no test of their own (the audit): each test names its sentence."""

from __future__ import annotations

import json
import shutil
import unicodedata
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import fsmem
from fsmem import Scope
from tests.conftest import run_fsmem

KEPT_STATE = {"versions", "proposals", "log.jsonl"}


def _paths(hits) -> list[str]:
    return sorted(hit.path for hit in hits)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    memory = fsmem.open(root, create=True)
    run = memory.run(Scope.chat(), thread_id="setup")
    assert run.call({"command": "write", "path": "brand.md", "content": "# Brand\nThe zebra palette.\n"})["ok"]
    assert run.call({"command": "write", "path": "brand.md", "old_text": "zebra", "new_text": "okapi"})["ok"]
    memory.facts.keep("Ana", "city", "Ana lives in Porto.")
    assert _paths(memory.search("okapi")) == ["brand.md"]
    return root


# §2 "Everything under .fsmem/ except versions/, proposals/ and log.jsonl can be deleted and is rebuilt."

def _delete_derived_state(root: Path) -> list[str]:
    removed = []
    for entry in sorted((root / ".fsmem").iterdir()):
        if entry.name in KEPT_STATE:
            continue
        shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
        removed.append(entry.name)
    return removed


def test_deleting_all_derived_state_leaves_a_working_root(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    warm = fsmem.open(root)  # its facts' look writes the kept view under cache/
    assert len(warm.facts.current()) == 1
    heartbeat = root / ".fsmem" / "watch.json"
    with warm.watch(debounce=0.05):
        assert _paths(warm.search("okapi")) == ["brand.md"]
        beat = heartbeat.read_bytes()
    heartbeat.write_bytes(beat)  # as a killed watcher leaves it
    removed = _delete_derived_state(root)
    assert {"index", "lock", "cache", "watch.json"} <= set(removed), removed
    memory = fsmem.open(root)
    assert _paths(memory.search("okapi")) == ["brand.md"]
    assert [fact.text for fact in memory.facts.current()] == ["Ana lives in Porto."]
    assert len(memory.versions("brand.md")) == 1  # versions/ survived, and still lists what it held
    run = memory.run(Scope.chat(), thread_id="after")
    assert run.call({"command": "read", "path": "brand.md"})["ok"]
    assert run.call({"command": "write", "path": "brand.md", "old_text": "okapi", "new_text": "quokka"})["ok"]
    assert _paths(memory.search("quokka")) == ["brand.md"]
    assert _paths(memory.search("okapi")) == []
    assert memory.revert("brand.md")  # the kept versions still serve a revert
    assert "okapi" in (root / "brand.md").read_text(encoding="utf-8")


def test_deleting_all_derived_state_between_processes(root: Path) -> None:
    fsmem.open(root).search("okapi")  # every derived file exists now
    _delete_derived_state(root)
    found = run_fsmem("search", "--root", str(root), "okapi", "--json")
    assert found.returncode == 0, found.stderr
    assert [hit["path"] for hit in json.loads(found.stdout)] == ["brand.md"]
    wrote = run_fsmem("write", "--root", str(root), "new.md", input="# New\nwombat\n")
    assert wrote.returncode == 0, wrote.stderr
    _delete_derived_state(root)
    again = run_fsmem("search", "--root", str(root), "wombat", "--json")
    assert again.returncode == 0, again.stderr
    assert [hit["path"] for hit in json.loads(again.stdout)] == ["new.md"]
    log = [json.loads(line) for line in (root / ".fsmem" / "log.jsonl").read_text().splitlines()]
    assert [entry["path"] for entry in log][-1] == "new.md"  # the log was kept and appended to


# §2 "A service with many projects keeps one root per project. Nothing crosses roots: one index per root."

def test_nothing_crosses_roots(tmp_path: Path) -> None:
    one, two = fsmem.open(tmp_path / "one", create=True), fsmem.open(tmp_path / "two", create=True)
    run_one = one.run(Scope.chat(), thread_id="t")
    run_two = two.run(Scope.chat(), thread_id="t")
    assert run_one.call({"command": "write", "path": "brand.md", "content": "zebra in one\n"})["ok"]
    assert run_two.call({"command": "write", "path": "brand.md", "content": "okapi in two\n"})["ok"]
    one.facts.keep("Ana", "city", "Ana lives in Porto.")
    assert _paths(one.search("zebra")) == ["brand.md"] and _paths(one.search("okapi")) == []
    assert _paths(two.search("okapi")) == ["brand.md"] and _paths(two.search("zebra")) == []
    assert _paths(two.search("Porto")) == [] and two.facts.current() == []
    # a run of one root never saw the other's file, so the same path there is a separate file
    written = run_one.call({"command": "write", "path": "brand.md", "content": "changed\n"})
    assert written["ok"], written
    assert (tmp_path / "two" / "brand.md").read_text(encoding="utf-8") == "okapi in two\n"
    assert two.versions("brand.md") == []
    shell = run_fsmem("search", "--root", str(tmp_path / "two"), "zebra", "--json")
    assert shell.returncode == 0 and json.loads(shell.stdout) == [], shell


# §3 "Every scope may read and search the whole root."

def test_every_scope_reads_and_searches_the_whole_root(tmp_path: Path) -> None:
    memory = fsmem.open(tmp_path / "root", create=True)
    memory.create_agent("aaaaaaaa-1", "One")
    other = memory.create_agent("bbbbbbbb-2", "Two")
    routine = memory.create_routine("bbbbbbbb-2", "cccccccc-3", "Daily")
    setup = memory.run(Scope.chat(), thread_id="setup")
    for path in (f"{other}/MEMORY.md", f"{routine}/NOTES.md", "seo/titles.md"):
        assert setup.call({"command": "write", "path": path, "content": f"zebra note in {path}\n"})["ok"]
    memory.facts.keep("Ana", "zebra", "Ana keeps a zebra.")
    expected = sorted([f"{other}/MEMORY.md", f"{routine}/NOTES.md", "seo/titles.md"])
    for scope in (Scope.chat(), Scope.agent("aaaaaaaa-1"), Scope.routine("bbbbbbbb-2", "cccccccc-3")):
        run = memory.run(scope, thread_id="reader")
        for path in expected:
            read = run.call({"command": "read", "path": path})
            assert read["ok"] and "zebra note" in read["text"], (scope, path, read)
        found = run.call({"command": "search", "query": "zebra"})
        assert found["ok"], found
        paths = sorted(hit["path"] for hit in found["hits"])
        assert set(expected) <= set(paths) and any(p.startswith("notes/memory/") for p in paths), (scope, paths)
        grep = run.call({"command": "search", "query": "zebra note", "regex": True})
        assert grep["ok"] and all(f"{path}:1:" in grep["text"] for path in expected), (scope, grep)


# §4 "Paths … NFC-normalized": a name written by hand in another spelling is still the one file.

def test_a_hand_made_file_with_a_decomposed_name_can_be_read_by_the_path_search_shows(tmp_path: Path) -> None:
    memory = fsmem.open(tmp_path / "root", create=True)
    (memory.root / unicodedata.normalize("NFD", "café.md")).write_text("okapi by hand\n", encoding="utf-8")
    hits = memory.search("okapi")
    assert _paths(hits) == ["caf\u00e9.md"]
    run = memory.run(Scope.chat(), thread_id="t")
    read = run.call({"command": "read", "path": hits[0].path})
    assert read["ok"], read
    # a change through the NFC name lands in the file on disk, not beside it
    assert run.call({"command": "write", "path": "caf\u00e9.md", "old_text": "okapi", "new_text": "quagga"})["ok"]
    assert sorted(p.name for p in memory.root.glob("*.md") if p.name != "MEMORY.md") == [
        unicodedata.normalize("NFD", "café.md")]
    assert _paths(memory.search("quagga")) == ["caf\u00e9.md"] and memory.search("okapi") == []
    folder = unicodedata.normalize("NFD", "été")
    (memory.root / folder).mkdir()
    (memory.root / folder / "notes.md").write_text("wombat\n", encoding="utf-8")
    assert _paths(memory.search("wombat")) == ["\u00e9t\u00e9/notes.md"]
    assert run.call({"command": "read", "path": "\u00e9t\u00e9/notes.md"})["ok"]
    assert "\u00e9t\u00e9/" in run.call({"command": "read", "path": "/"})["text"]


# §4 "A refused call changes nothing, on disk or in the index."

def test_refusals_of_every_kind_leave_the_index_as_it_was(root: Path) -> None:
    memory = fsmem.open(root)
    run = memory.run(Scope.chat(), thread_id="t")
    assert run.call({"command": "read", "path": "brand.md"})["ok"]
    other = memory.run(Scope.chat(), thread_id="other")
    assert other.call({"command": "write", "path": "seen.md", "content": "# Seen\n"})["ok"]
    before = [(h.path, h.snippet) for h in memory.search("okapi OR quokka OR wombat OR seen")]
    status_before = memory.index.status()
    refusals = {
        "SENSITIVE": {"command": "write", "path": "brand.md", "old_text": "okapi",
                      "new_text": "wombat password: hunter2hunter2"},
        "TOO_LARGE": {"command": "write", "path": "big.md", "content": "wombat " * 6000},
        "EDIT_UNPLACED": {"command": "write", "path": "brand.md",
                          "content": "<!-- ... -->\nwombat nowhere\n<!-- ... -->\n"},
        "NOT_UNIQUE": {"command": "write", "path": "brand.md", "old_text": "e", "new_text": "wombat"},
        "NOT_READ": {"command": "write", "path": "seen.md", "content": "wombat\n"},
        "EXISTS": {"command": "rename", "path": "brand.md", "new_path": "seen.md"},
        "PROTECTED": {"command": "delete", "path": "notes/memory"},
        "BAD_PATH": {"command": "write", "path": "../wombat.md", "content": "wombat\n"},
    }
    for code, request in refusals.items():
        result = run.call(request)
        assert not result["ok"] and result["error"]["code"] == code, (code, result)
    assert [(h.path, h.snippet) for h in memory.search("okapi OR quokka OR wombat OR seen")] == before
    assert memory.search("wombat") == []
    status_after = memory.index.status()
    assert (status_after["documents"], status_after["generation"], status_after["stale"]) == (
        status_before["documents"], status_before["generation"], status_before["stale"])


# §7 "a date in the future is taken as now" — through the facts API, on the drive.

def test_a_fact_said_in_the_future_is_kept_as_said_now_and_a_later_fact_replaces_it(tmp_path: Path) -> None:
    memory = fsmem.open(tmp_path / "root", create=True)
    start = datetime.now(timezone.utc)
    kept = memory.facts.keep("Ana", "city", "Ana lives in Porto.", said=start + timedelta(days=365))
    assert kept.outcome == "current"
    assert start - timedelta(seconds=1) <= kept.fact.said <= datetime.now(timezone.utc)
    on_disk = (memory.root / "notes/memory" / f"{kept.fact.id}.md").read_text(encoding="utf-8")
    assert str(start.year + 1) not in on_disk.split("---")[1]
    # had the future date been kept, a fact said today would go to the history instead
    later = memory.facts.keep("Ana", "city", "Ana lives in Lisbon.")
    assert later.outcome == "current" and later.replaced is not None and later.replaced.id == kept.fact.id


# §2 "at most 32 KiB each (configurable)"

def test_the_file_size_limit_is_configurable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    fsmem.open(root, create=True)
    (root / ".fsmem" / "config.toml").write_text("max_file_bytes = 100\n", encoding="utf-8")
    run = fsmem.open(root).run(Scope.chat(), thread_id="t")
    assert run.call({"command": "write", "path": "a.md", "content": "x" * 100})["ok"]
    refused = run.call({"command": "write", "path": "b.md", "content": "x" * 101})
    assert refused["error"]["code"] == "TOO_LARGE" and not (root / "b.md").exists()
    monkeypatch.setenv("FSMEM_MAX_FILE_BYTES", "64000")
    run = fsmem.open(root).run(Scope.chat(), thread_id="t")
    assert run.call({"command": "write", "path": "c.md", "content": "x" * 40000})["ok"]


# §1 "an adapter class that backs [Claude's memory tool] with fsmem: same guards, versions, index"

def test_claude_memory_adapter_changes_are_searchable_at_once_and_facts_stay_read_only(tmp_path: Path) -> None:
    pytest.importorskip("anthropic")
    from anthropic.lib.tools import ToolError

    from fsmem.claude_memory import FsmemMemoryTool

    memory = fsmem.open(tmp_path / "root", create=True)
    tool = FsmemMemoryTool(memory, thread_id="claude-1")
    tool.call({"command": "create", "path": "/memories/rules.md", "file_text": "- the zebra rule\n"})
    assert _paths(memory.search("zebra")) == ["rules.md"]
    tool.call({"command": "str_replace", "path": "/memories/rules.md", "old_str": "zebra", "new_str": "okapi"})
    assert _paths(memory.search("zebra")) == [] and _paths(memory.search("okapi")) == ["rules.md"]
    tool.call({"command": "rename", "old_path": "/memories/rules.md", "new_path": "/memories/seo/rules.md"})
    assert _paths(memory.search("okapi")) == ["seo/rules.md"]
    tool.call({"command": "delete", "path": "/memories/seo/rules.md"})
    assert _paths(memory.search("okapi")) == []

    kept = memory.facts.keep("Ana", "city", "Ana lives in Porto.")
    fact_path = f"/memories/notes/memory/{kept.fact.id}.md"
    before = (memory.root / fact_path.removeprefix("/memories/")).read_bytes()
    assert "Porto" in tool.call({"command": "view", "path": fact_path})
    for request in ({"command": "str_replace", "path": fact_path, "old_str": "Porto", "new_str": "Braga"},
                    {"command": "delete", "path": fact_path},
                    {"command": "rename", "old_path": fact_path, "new_path": "/memories/porto.md"},
                    {"command": "create", "path": "/memories/notes/memory/made-up.md", "file_text": "x\n"}):
        with pytest.raises(ToolError):
            tool.call(request)
    assert (memory.root / fact_path.removeprefix("/memories/")).read_bytes() == before
    assert not (memory.root / "notes/memory/made-up.md").exists() and not (memory.root / "porto.md").exists()
    assert [fact.text for fact in memory.facts.current()] == ["Ana lives in Porto."]


# §4 read of a folder: "its tree two levels deep with sizes and dates"

def test_a_folder_read_is_two_levels_deep_with_sizes_and_dates(tmp_path: Path) -> None:
    import re

    memory = fsmem.open(tmp_path / "root", create=True)
    run = memory.run(Scope.chat(), thread_id="t")
    for path, content in {"brand.md": "hello world\n", "seo/titles.md": "abc\n", "seo/deep/er/x.md": "hidden\n"}.items():
        assert run.call({"command": "write", "path": path, "content": content})["ok"]
    lines = run.call({"command": "read", "path": "/"})["text"].splitlines()
    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d UTC"
    assert lines[0] == "/"
    assert re.fullmatch(rf"  brand\.md +12 B  {stamp}", next(l for l in lines if "brand.md" in l))
    assert re.fullmatch(rf"    titles\.md +4 B  {stamp}", next(l for l in lines if "titles.md" in l))
    assert "    deep/" in lines and not any("er/" in l or "x.md" in l for l in lines)  # a third level is not shown
    below = run.call({"command": "read", "path": "seo/deep"})["text"].splitlines()
    assert below[0] == "seo/deep/" and "  er/" in below
    assert re.fullmatch(rf"    x\.md +7 B  {stamp}", next(l for l in below if "x.md" in l))


# §3 "deleting an agent removes its whole folder"; §9 "deletes included" in the versions

def test_deleting_an_agent_removes_its_whole_folder_and_keeps_every_file_in_versions(tmp_path: Path) -> None:
    memory = fsmem.open(tmp_path / "root", create=True)
    agent = memory.create_agent("3f9a1c2e-0001", "SEO")
    routine = memory.create_routine("3f9a1c2e-0001", "9b7d4e10-0001", "Meta tags")
    other = memory.create_agent("77777777-0001", "Other")
    files = {f"{agent}/MEMORY.md": "agent zebra\n", f"{routine}/NOTES.md": "routine zebra\n",
             f"{agent}/drafts/plan.md": "plan zebra\n", f"{other}/MEMORY.md": "other zebra\n"}
    setup = memory.run(Scope.chat(), thread_id="setup")
    for path, content in files.items():
        assert setup.call({"command": "write", "path": path, "content": content})["ok"]
    held = memory.delete_agent("3f9a1c2e-0001")
    assert held == {path: content for path, content in files.items() if path.startswith(agent)}
    assert not (memory.root / agent).exists()
    assert (memory.root / other / "MEMORY.md").read_text(encoding="utf-8") == "other zebra\n"
    assert _paths(memory.search("zebra")) == [f"{other}/MEMORY.md"]
    for path in held:
        assert [v.version for v in memory.versions(path)], path  # the deleted content is kept
    with pytest.raises(fsmem.ScopeError):
        memory.run(Scope.agent("3f9a1c2e-0001"))  # the folder is gone, and no name was given to remake it


# §5 "A crash at any point leaves the old file or the new one whole, never a mix, and the index is repaired
# from the files on the next open." — a process killed at each step after the file changed.

_CRASHING_WRITER = r"""
import os, sys
import fsmem, fsmem._store.folder.change, fsmem._index.index, fsmem._index.generations, fsmem._memory.memory
root, where = sys.argv[1], sys.argv[2]
if where == "after_replace":
    original = fsmem._store.folder.change.exchange  # a write swaps its temp file in
    def swap_then_die(temp, target):
        done = original(temp, target)
        if target.name == "brand.md":
            os._exit(9)
        return done
    fsmem._store.folder.change.exchange = swap_then_die
elif where == "before_index_note":
    fsmem._memory.memory.note_pending = lambda root, paths: os._exit(9)
memory = fsmem.open(root)
run = memory.run(fsmem.Scope.chat(), thread_id="crasher")
run.call({"command": "read", "path": "brand.md"})
if where == "inside_index_apply":  # the writer commits its own change, once its lock is let go
    memory.search("okapi")
    fsmem._index.generations.Batch.apply = lambda self, *args, **kwargs: os._exit(9)
result = run.call({"command": "write", "path": "brand.md", "old_text": "okapi", "new_text": "quagga"})
print(result)
"""


@pytest.mark.parametrize("where", ["after_replace", "before_index_note", "inside_index_apply"])
def test_a_process_killed_after_the_file_changed_leaves_a_whole_file_and_a_repaired_index(
        root: Path, where: str) -> None:
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    env = {**{k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}, "PYTHONPATH": str(REPO)}
    crashed = subprocess.run([sys.executable, "-c", _CRASHING_WRITER, str(root), where],
                             capture_output=True, text=True, env=env, timeout=60)
    assert crashed.returncode == 9, (crashed.stdout, crashed.stderr)
    assert (root / "brand.md").read_text(encoding="utf-8") == "# Brand\nThe quagga palette.\n"
    memory = fsmem.open(root)
    assert _paths(memory.search("quagga")) == ["brand.md"]
    assert _paths(memory.search("okapi")) == []
    assert memory.index.status()["stale"] == 0
    run = memory.run(Scope.chat(), thread_id="after")
    assert run.call({"command": "read", "path": "brand.md"})["ok"]
    assert run.call({"command": "write", "path": "brand.md", "old_text": "quagga", "new_text": "zorse"})["ok"]
    assert _paths(memory.search("zorse")) == ["brand.md"]


# §3 "with memory.deleting_routine(id) as held: removes the folder only when the block succeeds and puts it
# back when it raises" — and either way the index and the versions agree with the files.

def test_deleting_routine_keeps_versions_and_search_in_step_with_the_folder(tmp_path: Path) -> None:
    memory = fsmem.open(tmp_path / "root", create=True)
    memory.create_agent("3f9a1c2e-0001", "SEO")
    folder = memory.create_routine("3f9a1c2e-0001", "9b7d4e10-0001", "Meta tags")
    run = memory.run(Scope.routine("3f9a1c2e-0001", "9b7d4e10-0001"), thread_id="t")
    files = {f"{folder}/NOTES.md": "baseline zebra 42\n", f"{folder}/runs/last.md": "last zebra run\n"}
    for path, content in files.items():
        assert run.call({"command": "write", "path": path, "content": content})["ok"]
    assert _paths(memory.search("zebra")) == sorted(files)

    with pytest.raises(RuntimeError):
        with memory.deleting_routine("9b7d4e10-0001") as held:
            assert held == files
            raise RuntimeError("the harness's own delete failed")
    assert {p: (memory.root / p).read_text(encoding="utf-8") for p in files} == files
    assert _paths(memory.search("zebra")) == sorted(files)
    again = memory.run(Scope.routine("3f9a1c2e-0001", "9b7d4e10-0001"), thread_id="t2")
    assert again.call({"command": "read", "path": f"{folder}/NOTES.md"})["ok"]

    with memory.deleting_routine("9b7d4e10-0001") as held:
        assert held == files
    assert not (memory.root / folder).exists()
    assert _paths(memory.search("zebra")) == []
    for path in files:
        assert memory.versions(path), path
    reused = memory.create_routine("3f9a1c2e-0001", "11112222-0001", "Meta tags")
    assert reused != folder and (memory.root / reused / "NOTES.md").read_text(encoding="utf-8") == ""


# §1 "a person … `fsmem proposals` from the shell"; §9 approve applies it only if the files still hold what
# they held; the approved change is searchable, logged and versioned like any other.

def test_proposals_from_the_shell_in_real_processes(tmp_path: Path) -> None:
    memory = fsmem.open(tmp_path / "root", create=True)
    root = memory.root
    (root / "MEMORY.md").write_text("# Rules\n- one zebra\n- two\n", encoding="utf-8")
    reviewer = memory.run(Scope.chat(), thread_id="review-1", review=True)
    assert reviewer.call({"command": "read", "path": "MEMORY.md"})["ok"]
    held = reviewer.call({"command": "write", "path": "MEMORY.md", "old_text": "zebra", "new_text": "okapi"})
    assert held["ok"] and held["proposal"]
    dropped = reviewer.call({"command": "write", "path": "brand.md", "content": "# Brand\n"})
    assert dropped["ok"] and "proposal" not in dropped  # a new file only adds lines: applied at once
    gone = reviewer.call({"command": "delete", "path": "brand.md"})
    assert gone["ok"] and gone["proposal"] and (root / "brand.md").exists()

    listed = run_fsmem("proposals", "--root", str(root), "--json")
    assert listed.returncode == 0, listed.stderr
    ids = {entry["id"] for entry in json.loads(listed.stdout)}
    assert ids == {held["proposal"], gone["proposal"]}, listed.stdout
    shown = run_fsmem("proposals", "show", held["proposal"], "--root", str(root))
    assert shown.returncode == 0 and "-- one zebra" in shown.stdout and "+- one okapi" in shown.stdout, shown

    approved = run_fsmem("proposals", "approve", held["proposal"], "--root", str(root))
    assert approved.returncode == 0, approved.stderr
    assert (root / "MEMORY.md").read_text(encoding="utf-8") == "# Rules\n- one okapi\n- two\n"
    assert _paths(fsmem.open(root).search("okapi")) == ["MEMORY.md"]
    assert fsmem.open(root).versions("MEMORY.md")
    discarded = run_fsmem("proposals", "discard", gone["proposal"], "--root", str(root))
    assert discarded.returncode == 0 and (root / "brand.md").exists(), discarded
    again = run_fsmem("proposals", "approve", gone["proposal"], "--root", str(root))
    assert again.returncode != 0 and again.stderr.startswith("Error: [NOT_FOUND]"), again
    assert json.loads(run_fsmem("proposals", "--root", str(root), "--json").stdout) == []


# §4 "Every refusal has a stable code … A refused call changes nothing": a rename whose new_path runs
# through an existing file is refused (it used to escape Run.call as FileExistsError).

@pytest.mark.parametrize("review", [False, True])
@pytest.mark.parametrize("source, new_path", [("a/x.md", "b/y.md/z.md"), ("a", "b/y.md/c"),
                                              ("a/x.md", "b/y.md/deeper/z.md")])
def test_a_rename_through_an_existing_file_is_bad_path_and_changes_nothing(
        tmp_path: Path, source: str, new_path: str, review: bool) -> None:
    memory = fsmem.open(tmp_path / "root", create=True)
    setup = memory.run(Scope.chat(), thread_id="setup")
    for path in ("a/x.md", "b/y.md"):
        assert setup.call({"command": "write", "path": path, "content": f"{path}\n"})["ok"]
    run = memory.run(Scope.chat(), thread_id="t", review=review)
    assert run.call({"command": "read", "path": "a/x.md"})["ok"]
    before = sorted((p.relative_to(memory.root).as_posix(), p.is_dir()) for p in memory.root.rglob("*"))
    result = run.call({"command": "rename", "path": source, "new_path": new_path})
    assert not result["ok"] and result["error"]["code"] == "BAD_PATH", result
    assert "b/y.md is a file" in result["error"]["message"]
    assert sorted((p.relative_to(memory.root).as_posix(), p.is_dir()) for p in memory.root.rglob("*")) == before
    assert memory.proposals() == []


# §3 "An id that matches two folders … raises: a run never starts with the wrong memory" — for routines
# too, and for the lifecycle calls, which then change nothing.

def test_an_ambiguous_routine_or_agent_id_raises_everywhere_and_removes_nothing(tmp_path: Path) -> None:
    memory = fsmem.open(tmp_path / "root", create=True)
    memory.create_agent("3f9a1c2e-1", "SEO")
    routine = memory.create_routine("3f9a1c2e-1", "9b7d4e10-1", "Meta")
    # A copy holds the same kept id (.fsmem-level): two folders claim it. (An empty look-alike folder
    # made by hand claims nothing: folders are found by the full id they keep, DESIGN §3.)
    shutil.copytree(memory.root / routine, memory.root / "agents/seo-3f9a1c2e/routines/copy-9b7d4e10")
    calls = [lambda: memory.run(Scope.routine("3f9a1c2e-1", "9b7d4e10-1")),
             lambda: memory.delete_routine("9b7d4e10-1"),
             lambda: memory.create_routine("3f9a1c2e-1", "9b7d4e10-1", "Meta")]
    for call in calls:
        with pytest.raises(fsmem.ScopeError, match="matches 2 folders"):
            call()
    with pytest.raises(fsmem.ScopeError, match="matches 2 folders"):
        with memory.deleting_routine("9b7d4e10-1"):
            pytest.fail("the block must not run")
    assert (memory.root / routine / "NOTES.md").exists()
    shutil.copytree(memory.root / "agents/seo-3f9a1c2e", memory.root / "agents/copy-3f9a1c2e")
    for call in (lambda: memory.delete_agent("3f9a1c2e-1"), lambda: memory.create_agent("3f9a1c2e-1", "SEO"),
                 lambda: memory.run(Scope.agent("3f9a1c2e-1", name="SEO"))):
        with pytest.raises(fsmem.ScopeError, match="matches 2 folders"):
            call()
    assert (memory.root / routine / "NOTES.md").exists() and (memory.root / "agents/seo-3f9a1c2e/MEMORY.md").exists()


# §6 "a document per file with its path, level, kind (memory, notes, topic, fact, replaced fact), title …"

def test_every_kind_and_level_of_file_is_indexed_as_such(tmp_path: Path) -> None:
    memory = fsmem.open(tmp_path / "root", create=True)
    agent = memory.create_agent("3f9a1c2e-1", "SEO")
    routine = memory.create_routine("3f9a1c2e-1", "9b7d4e10-1", "Meta")
    setup = memory.run(Scope.chat(), thread_id="setup")
    expected = {"MEMORY.md": ("memory", "project"), f"{agent}/MEMORY.md": ("memory", "agent"),
                f"{routine}/NOTES.md": ("notes", "routine"), "brand.md": ("topic", "project"),
                f"{agent}/titles.md": ("topic", "agent"), f"{routine}/runs.md": ("topic", "routine")}
    for path in expected:
        assert setup.call({"command": "write", "path": path, "content": f"# {path}\nzebra\n"})["ok"]
    first = memory.facts.keep("Ana", "pet", "Ana has a zebra.", said="2026-01-01")
    second = memory.facts.keep("Ana", "pet", "Ana has two zebras.")
    expected[f"notes/memory/{second.fact.id}.md"] = ("fact", "project")
    expected[f"notes/memory/history/{first.fact.id}.md"] = ("replaced_fact", "project")
    hits = memory.search("zebra", limit=20)
    assert {hit.path: (hit.kind, hit.level) for hit in hits} == expected
    assert hits[-1].kind == "replaced_fact"  # what holds comes before what was replaced
    titles = {hit.path: hit.title for hit in hits}
    assert titles["brand.md"] == "brand.md" and titles[f"{agent}/titles.md"] == f"{agent}/titles.md"


# §3 "Fact files … change only through the facts API": a rename into or out of the facts folder is refused
# with that reason (it used to say the facts folder was a level folder).

@pytest.mark.parametrize("source, new_path", [("seo/a.md", "notes/memory/x.md"), ("seo", "notes/memory/seo"),
                                              ("seo/a.md", "notes/memory/history/x.md"), ("FACT", "p.md")])
def test_a_rename_into_or_out_of_the_facts_is_refused_as_a_fact_change(
        tmp_path: Path, source: str, new_path: str) -> None:
    memory = fsmem.open(tmp_path / "root", create=True)
    fact = memory.facts.keep("Ana", "city", "Ana lives in Porto.").fact
    run = memory.run(Scope.chat(), thread_id="t")
    assert run.call({"command": "write", "path": "seo/a.md", "content": "x\n"})["ok"]
    source = f"notes/memory/{fact.id}.md" if source == "FACT" else source
    assert run.call({"command": "read", "path": source})["ok"]
    result = run.call({"command": "rename", "path": source, "new_path": new_path})
    assert result["error"]["code"] == "PROTECTED", result
    assert "facts API" in result["error"]["message"], result
    assert (memory.root / source).exists() and not (memory.root / new_path).exists()


# §3 "The model may not create … a level folder": a file put straight into agents/ or routines/ is refused
# with a message that says where such a file may go.

@pytest.mark.parametrize("path", ["agents/x.md", "agents/seo-3f9a1c2e/routines/x.md"])
def test_a_file_in_the_place_of_a_level_folder_is_refused_with_where_it_may_go(tmp_path: Path, path: str) -> None:
    memory = fsmem.open(tmp_path / "root", create=True)
    memory.create_agent("3f9a1c2e-1", "SEO")
    result = memory.run(Scope.chat(), thread_id="t").call({"command": "write", "path": path, "content": "x\n"})
    assert result["error"] == {"code": "PROTECTED", "message": (
        f"{path} is the place of a level folder (agents/ holds only agent folders, routines/ only routine "
        "folders); only the harness creates, renames or deletes those. Put the file in an existing agent's or "
        "routine's folder, or in a project topic folder")}
    assert not (memory.root / path).exists()
