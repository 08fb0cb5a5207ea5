"""What the page reads beyond the tool (``fsmem._memory.browse``), on a folder."""

from __future__ import annotations

import pytest

import fsmem
from fsmem import Scope
from fsmem._memory import browse


@pytest.fixture
def memory(tmp_path):
    memory = fsmem.open(tmp_path / "root", create=True)
    yield memory
    memory.close()


def test_the_levels_tree_names_agents_and_routines_in_order(memory):
    memory.create_agent("b2000000-0000", "zeta")
    memory.create_agent("a1000000-0000", "Alpha")
    memory.create_routine("a1000000-0000", "r2000000-0000", "weekly")
    memory.create_routine("a1000000-0000", "r1000000-0000", "Daily")
    tree = browse.levels_tree(memory)
    assert (tree.kind, tree.folder, tree.top_file) == ("project", "", "MEMORY.md")
    assert [(a.name, a.id) for a in tree.routines] == [("Alpha", "a1000000-0000"), ("zeta", "b2000000-0000")]
    alpha = tree.routines[0]
    assert [r.name for r in alpha.routines] == ["Daily", "weekly"]
    assert alpha.routines[0].top_file == alpha.routines[0].folder + "/NOTES.md"


def test_loads_gives_each_top_file_of_a_scope_with_its_size(memory):
    memory.create_agent("a1000000-0000", "Alpha")
    memory.create_routine("a1000000-0000", "r1000000-0000", "Daily")
    run = memory.run(thread_id="t")
    run.call({"command": "read", "path": "MEMORY.md"})
    run.call({"command": "write", "path": "MEMORY.md", "content": "12345\n"})
    loaded = browse.loads(memory, Scope.routine("a1000000-0000", "r1000000-0000"))
    assert [(item.path.rsplit("/", 1)[-1], item.size) for item in loaded] == [
        ("MEMORY.md", 6), ("MEMORY.md", 0), ("NOTES.md", 0)]


def test_changes_are_newest_first_by_path_either_end_of_a_rename_and_by_thread(memory):
    one, two = memory.run(thread_id="one"), memory.run(thread_id="two")
    one.call({"command": "write", "path": "a.md", "content": "a\n"})
    two.call({"command": "write", "path": "b.md", "content": "b\n"})
    one.call({"command": "rename", "path": "a.md", "new_path": "c.md"})
    assert [(e.command, e.path) for e in browse.changes(memory, path="c.md")] == [("rename", "a.md")]
    assert [e.command for e in browse.changes(memory, path="a.md")] == ["rename", "write"]
    assert [e.path for e in browse.changes(memory, thread="two")] == ["b.md"]
    assert len(browse.changes(memory, limit=2)) == 2
    with pytest.raises(fsmem.BadPath):
        browse.changes(memory, path="../x")


def test_kept_text_is_a_kept_version_or_the_file_now(memory):
    run = memory.run(thread_id="t")
    first = run.call({"command": "write", "path": "a.md", "content": "first\n"})["version"]
    second = run.call({"command": "write", "path": "a.md", "content": "second\n"})["version"]
    assert browse.kept_text(memory, "a.md", first) == "first\n"
    assert browse.kept_text(memory, "a.md", second) == "second\n"
    with pytest.raises(fsmem.NotFound):
        browse.kept_text(memory, "a.md", "000000000000")


def test_a_proposal_against_now_shows_what_changed_since_when_it_no_longer_applies(memory):
    run = memory.run(thread_id="t")
    run.call({"command": "write", "path": "a.md", "content": "one\ntwo\n"})
    reviewer = memory.run(thread_id="review", review=True)
    reviewer.call({"command": "read", "path": "a.md"})
    reviewer.call({"command": "write", "path": "a.md", "old_text": "two", "new_text": "2"})
    (proposal,) = memory.proposals()
    fresh = browse.against_now(memory, proposal)
    assert fresh.applies and fresh.since == {} and "+2" in fresh.diff
    run.call({"command": "write", "path": "a.md", "old_text": "one", "new_text": "uno"})
    stale = browse.against_now(memory, proposal)
    assert not stale.applies and stale.stale == ["a.md"]
    assert "-one" in stale.since["a.md"] and "+uno" in stale.since["a.md"]
