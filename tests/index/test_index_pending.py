"""Writes through fsmem note their paths; the next search, from any process, indexes them first."""

from __future__ import annotations

import json
import warnings

import fsmem
from fsmem._index.freshness import Freshness
from fsmem._index.index import Index
from fsmem._index.state import file_key, index_dir, pending_mark, read_applied, read_current
from tests.conftest import run_fsmem


def _generation(root):
    return index_dir(root / ".fsmem") / read_current(root / ".fsmem")["generation"]


def test_a_write_is_noted_and_found_by_a_search_in_another_process_that_commits_nothing(tmp_path, monkeypatch):
    memory = fsmem.open(tmp_path, create=True)
    memory.search("anything")  # the index exists from here on
    monkeypatch.setattr(Index, "commit_soon", lambda self: None)  # the writer's commit is late
    run = memory.run(thread_id="t-1")
    assert run.call({"command": "write", "path": "seo/plan.md", "content": "# Plan\nzephyrine launch\n"})["ok"]
    pending = tmp_path / ".fsmem" / "index.pending"
    token, noted = pending.read_text().splitlines()
    assert token.startswith("#") and json.loads(noted) == "seo/plan.md"
    generation = _generation(tmp_path)
    applied = read_applied(generation)
    assert applied != pending_mark(tmp_path / ".fsmem")  # returned before its commit
    meta = file_key(str(generation / "meta.json"))
    found = run_fsmem("search", "zephyrine", "--root", str(tmp_path), "--json")
    assert found.returncode == 0, found.stderr
    assert [hit["path"] for hit in json.loads(found.stdout)] == ["seo/plan.md"]  # read from the delta
    assert file_key(str(generation / "meta.json")) == meta  # the reader committed nothing
    assert read_applied(generation) == applied
    monkeypatch.undo()
    memory.index.commit_soon()
    memory.index.committer.flush(30)
    assert read_applied(generation) == pending_mark(tmp_path / ".fsmem")  # the writer's commit, in the background
    memory.close()


def test_the_writer_commits_its_change_after_it_returned(tmp_path):
    memory = fsmem.open(tmp_path, create=True)
    memory.search("anything")
    assert memory.run().call({"command": "write", "path": "a.md", "content": "# A\nokapiword\n"})["ok"]
    memory.close()  # waits for the commit asked for now
    assert read_applied(_generation(tmp_path)) == pending_mark(tmp_path / ".fsmem")


def test_a_change_whose_commit_failed_is_found_and_committed_by_the_next_commit_anywhere(tmp_path, monkeypatch):
    memory = fsmem.open(tmp_path, create=True)
    memory.search("anything")

    def full_disk(self):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Freshness, "apply_pending", full_disk)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert memory.run().call({"command": "write", "path": "a.md", "content": "# A\nokapiword\n"})["ok"]
        memory.index.committer.flush(30)
    assert any("could not commit a change to the search index" in str(w.message) for w in caught)
    assert memory.index.committer.errors
    monkeypatch.undo()
    assert read_applied(_generation(tmp_path)) != pending_mark(tmp_path / ".fsmem")
    found = run_fsmem("search", "okapiword", "--root", str(tmp_path), "--json")
    assert found.returncode == 0, found.stderr
    assert [hit["path"] for hit in json.loads(found.stdout)] == ["a.md"]
    assert read_applied(_generation(tmp_path)) != pending_mark(tmp_path / ".fsmem")  # a one-shot commits nothing
    other = fsmem.open(tmp_path)
    assert other.run().call({"command": "write", "path": "b.md", "content": "# B\nbilbyword\n"})["ok"]
    other.close()
    assert read_applied(_generation(tmp_path)) == pending_mark(tmp_path / ".fsmem")  # both, in one commit
    memory.close()


def test_a_write_to_a_root_never_indexed_builds_no_index(tmp_path):
    memory = fsmem.open(tmp_path, create=True)
    assert memory.run().call({"command": "write", "path": "a.md", "content": "# A\nokapiword\n"})["ok"]
    assert read_current(tmp_path / ".fsmem") is None  # the first search builds it, the write in it
    assert [hit.path for hit in memory.search("okapiword")] == ["a.md"]


def test_a_delete_is_noted_too(tmp_path):
    memory = fsmem.open(tmp_path, create=True)
    run = memory.run()
    assert run.call({"command": "write", "path": "a.md", "content": "quokkaword\n"})["ok"]
    assert [h.path for h in memory.search("quokkaword")] == ["a.md"]
    assert run.call({"command": "delete", "path": "a.md"})["ok"]
    assert memory.search("quokkaword") == []


def test_a_torn_line_from_a_crash_is_skipped_and_the_comparison_repairs(tmp_path):
    memory = fsmem.open(tmp_path, create=True)
    memory.search("anything")
    (tmp_path / "b.md").write_text("wombatword\n")
    (tmp_path / ".fsmem" / "index.pending").write_text('"b.m')
    assert [h.path for h in memory.search("wombatword")] == ["b.md"]


def test_a_write_to_a_root_never_searched_imports_no_tantivy_nor_yaml(tmp_path):
    import subprocess
    import sys

    fsmem.open(tmp_path, create=True)
    code = (
        "import sys, fsmem\n"
        f"m = fsmem.open({str(tmp_path)!r})\n"
        "r = m.run().call({'command': 'write', 'path': 'x.md', 'content': 'hello\\n'})\n"
        "assert r['ok'], r\n"
        "print(sorted(m for m in ('tantivy', 'yaml', 'frontmatter') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(tmp_path),
                          env={"PYTHONPATH": str(__import__("pathlib").Path(__file__).resolve().parents[2])})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"  # a plain file's write parses no front matter
