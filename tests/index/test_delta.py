"""A change through fsmem is found before its commit lands: a search reads it into a delta in RAM
(``fsmem._index.delta``) ranked with the committed index as one ranking, and commits nothing; the
writer commits in the background (``fsmem._index.committer``), and a process killed before that
leaves a change the next search still finds and the next commit anywhere applies."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tantivy

import fsmem
from fsmem._env.config import Settings
from fsmem._index.index import Index
from fsmem._index.state import file_key, index_dir, note_pending, pending_mark, read_applied, read_current
from tests.conftest import REPO, run_fsmem

WORDS = ["deploy", "staging", "river", "stone", "cloud", "harbor", "lantern", "meadow", "copper", "violet"]


def _generation(root: Path) -> Path:
    return index_dir(root / ".fsmem") / read_current(root / ".fsmem")["generation"]


def _corpus(root: Path, count: int = 120) -> fsmem.Memory:
    import random

    rng = random.Random(7)
    vocabulary = WORDS + [f"word{k}" for k in range(400)]  # a few common words, many rare ones
    weights = [1.0 / (rank + 3) for rank in range(len(vocabulary))]
    memory = fsmem.open(root, create=True, settings=Settings(watch=False, durable=False))
    for i in range(count):
        body = " ".join(rng.choices(vocabulary, weights, k=rng.randint(4, 60)))
        (root / f"notes/n{i}.md").parent.mkdir(exist_ok=True)
        (root / f"notes/n{i}.md").write_text(f"# Note {i}\n\n{body}\n")
    memory.index.rebuild()
    return memory


def _hand_noted(root: Path, files: dict[str, str | None]) -> None:
    """Files changed as a change through fsmem leaves them before its commit: written, and noted."""
    for path, text in files.items():
        if text is None:
            (root / path).unlink()
        else:
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text)
    note_pending(root / ".fsmem", set(files))


QUERIES = ["harbor", "deploy staging", '"river stone"', "lant", "zebra copper", "meadow violet cloud"]


def test_a_delta_ranks_with_the_committed_documents_as_it_will_once_committed(tmp_path):
    memory = _corpus(tmp_path)
    index = memory.index
    _hand_noted(
        tmp_path,
        {
            "new.md": "# New\n\nzebra harbor river stone " + "copper " * 7 + "\n",
            "notes/n3.md": "# Note 3\n\nzebra lantern lantern meadow\n",
            "notes/n4.md": None,  # deleted
            "long.md": "# Long\n\n" + " ".join(WORDS * 40) + "\n",  # longer than any committed note
        },
    )
    before = {q: [(h.path, h.score, h.snippet) for h in index.search(q, limit=12, fresh=False)] for q in QUERIES}
    assert index.committer.commits == 0  # the search committed nothing
    assert read_applied(_generation(tmp_path)) != pending_mark(tmp_path / ".fsmem")
    index.apply_pending()  # what the committer does
    after = {q: [(h.path, h.score, h.snippet) for h in index.search(q, limit=12, fresh=False)] for q in QUERIES}
    changed = ("new.md", "notes/n3.md", "long.md")
    for query in QUERIES:
        early = {path: (score, shown) for path, score, shown in before[query]}
        late = {path: (score, shown) for path, score, shown in after[query]}
        # Committing moves every score a little (the averages change); relative to a committed
        # document's, a delta document's score is what it is once committed.
        reference = next((p for p, _, _ in after[query] if p not in changed and p in early), None)
        for path in changed:
            if path in late and reference is not None:
                ratio_early = early[path][0] / early[reference][0]
                ratio_late = late[path][0] / late[reference][0]
                assert ratio_early == pytest.approx(ratio_late, rel=0.05), (query, path)
                words = [w.strip('"') for w in query.split()]
                assert any(word[:4] in early[path][1] for word in words), (query, early[path][1])  # a window of the match
                rank = [p for p, _, _ in after[query]].index(path)
                assert abs([p for p, _, _ in before[query]].index(path) - rank) <= 1, (query, before, after)
    assert "notes/n4.md" not in {path for hits in before.values() for path, _, _ in hits}
    assert [h.path for h in index.search("zebra", limit=5, fresh=False)][:2] == ["notes/n3.md", "new.md"]
    memory.close()


def test_a_delta_keeps_filters_kinds_and_replaced_facts_after_those_that_hold(tmp_path):
    memory = _corpus(tmp_path, 30)
    index = memory.index
    facts = memory.facts
    facts.keep("the launch", "day", "The okapi launch is on Friday.")
    index.apply_pending()
    facts.keep("the launch", "day", "The okapi launch moved to Monday.")  # the first is replaced now
    assert read_applied(_generation(tmp_path)) != pending_mark(tmp_path / ".fsmem") or index.committer.commits
    hits = index.search("okapi launch", limit=5, fresh=False)
    assert [hit.kind for hit in hits] == ["fact", "replaced_fact"]
    assert "Monday" in hits[0].snippet and "Friday" in hits[1].snippet
    _hand_noted(tmp_path, {"seo/plan.md": "# Plan\n\nokapi okapi plan\n"})
    assert [h.path for h in index.search("okapi", include="seo/**", fresh=False)] == ["seo/plan.md"]
    assert "seo/plan.md" not in [h.path for h in index.search("okapi", exclude="seo/**", fresh=False)]
    assert index.search("okapi", include="seo/**", since="2200-01-01", fresh=False) == []
    assert index.search("okapi", include="seo/**", since="1d", fresh=False)[0].level == "project"
    memory.close()


def test_each_delta_replaces_the_last_in_the_kept_ram_index_and_an_earlier_one_still_answers(tmp_path):
    memory = _corpus(tmp_path, 30)
    index = memory.index
    _hand_noted(tmp_path, {"first.md": "# First\n\nquokka burrow\n"})
    assert [h.path for h in index.search("quokka", fresh=False)] == ["first.md"]
    first = index._delta[1] if index._delta is not None else None
    assert first is not None and first.searcher is not None
    _hand_noted(tmp_path, {"first.md": None, "second.md": "# Second\n\nnumbat burrow\n"})
    assert [h.path for h in index.search("burrow", fresh=False)] == ["second.md"]  # the first file deleted
    assert index.search("quokka", fresh=False) == []
    second = index._delta[1] if index._delta is not None else None
    assert second is not None and second is not first and second.searcher is not None
    quokka = tantivy.Query.term_query(index.store.schema, "body", "quokka")
    assert second.searcher.search(quokka, 5).hits == []  # the build before left nothing behind
    # A search still holding the first delta reads it whole: a searcher is a snapshot.
    assert [first.searcher.doc(address)["path"] for _, address in first.searcher.search(quokka, 5).hits] == [
        ["first.md"]
    ]
    memory.close()


def test_a_search_in_another_process_finds_an_acknowledged_change_and_commits_nothing(tmp_path):
    memory = _corpus(tmp_path, 20)
    memory.close()
    generation = _generation(tmp_path)
    _hand_noted(tmp_path, {"a.md": "# A\n\nquokkaword\n"})
    meta = file_key(str(generation / "meta.json"))
    manifest = file_key(str(generation / "files"))
    found = run_fsmem("search", "quokkaword", "--root", str(tmp_path), "--json")
    assert found.returncode == 0, found.stderr
    assert [hit["path"] for hit in json.loads(found.stdout)] == ["a.md"]
    assert file_key(str(generation / "meta.json")) == meta  # no commit
    assert file_key(str(generation / "files")) == manifest


WRITER = """
import sys, time, fsmem
from fsmem._index.freshness import Freshness
memory = fsmem.open(sys.argv[1])
memory.search("anything")
Freshness.apply_pending = lambda self: time.sleep(3600)  # the commit after the ack never comes
result = memory.run().call({"command": "write", "path": "killed.md", "content": "# K\\n\\nwallabyword\\n"})
print("acked" if result["ok"] else result, flush=True)
time.sleep(3600)
"""


def test_a_writer_killed_between_its_ack_and_its_commit_loses_nothing(tmp_path):
    memory = _corpus(tmp_path, 20)
    memory.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    env["PYTHONPATH"] = str(REPO)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "acked\n"
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
    assert read_applied(_generation(tmp_path)) != pending_mark(tmp_path / ".fsmem")  # killed before its commit
    found = run_fsmem("search", "wallabyword", "--root", str(tmp_path), "--json")
    assert found.returncode == 0, found.stderr
    assert [hit["path"] for hit in json.loads(found.stdout)] == ["killed.md"]  # the files are the record
    other = fsmem.open(tmp_path)  # a long-lived reader: once the delta has waited its grace, it commits it
    assert [hit.path for hit in other.search("wallabyword")] == ["killed.md"]
    deadline = time.monotonic() + 30
    while read_applied(_generation(tmp_path)) != pending_mark(tmp_path / ".fsmem"):
        assert time.monotonic() < deadline, "the reader never committed the dead writer's change"
        time.sleep(0.05)
    assert [hit.path for hit in other.search("wallabyword")] == ["killed.md"]  # from the commit now
    other.close()


def test_a_process_that_exits_without_closing_finishes_the_commit_of_its_change(tmp_path):
    memory = _corpus(tmp_path, 5)
    memory.close()
    code = (
        "import sys, fsmem\n"
        "m = fsmem.open(sys.argv[1])\n"
        "assert m.run().call({'command': 'write', 'path': 'x.md', 'content': '# X\\n\\nnumbatword\\n'})['ok']\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert read_applied(_generation(tmp_path)) == pending_mark(tmp_path / ".fsmem")


def test_the_writer_returns_before_its_commit(tmp_path, monkeypatch):
    memory = _corpus(tmp_path, 5)
    asked = []
    monkeypatch.setattr(Index, "commit_soon", lambda self: asked.append(1))
    assert memory.run().call({"command": "write", "path": "y.md", "content": "# Y\n\nbilbyword\n"})["ok"]
    assert asked == [1] and read_applied(_generation(tmp_path)) != pending_mark(tmp_path / ".fsmem")
    assert [hit.path for hit in memory.search("bilbyword")] == ["y.md"]
    memory.close()
