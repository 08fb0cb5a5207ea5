"""Broken fact files: flagged in search, listed with their problem, and repaired where no guess is needed
(issue 20): `fsmem check --repair` mends ids, changes cut short and links to facts that are gone, each a
change with the previous content kept as a version; what only a person can mend is left byte for byte."""

from __future__ import annotations

import pytest

import fsmem


@pytest.fixture
def memory(tmp_path):
    return fsmem.open(tmp_path / "root", create=True)


def _file(memory, fact) -> object:
    return memory.root / fact.path


def test_a_broken_fact_file_is_flagged_in_search_not_shown_as_an_empty_fact(memory) -> None:
    good = memory.facts.keep("Bruno", "team", "Bruno works in ops.")
    bad = memory.facts.keep("Ana", "role", "Ana leads the data team.")
    path = _file(memory, bad.fact)
    path.write_text(path.read_text().replace("subject: Ana", "subject: [Ana"))
    long = memory.facts.keep("Carla", "role", "Carla runs sales.")
    _file(memory, long.fact).write_text(
        _file(memory, long.fact).read_text().replace("Carla runs sales.", "Carla runs sales. " + "x" * 2100)
    )
    hits = {hit.path: hit for hit in memory.search("Ana Bruno Carla")}
    assert hits[bad.fact.path].problem == (
        "the front matter is not valid YAML (line 4); mend it or restore a version with `fsmem versions`"
    )
    assert hits[long.fact.path].problem.startswith("the fact is 2,118 characters; the limit is 2,000.")
    assert hits[good.fact.path].problem is None
    result = memory.run(fsmem.Scope.chat(), thread_id="t").call({"command": "search", "query": "Ana"})
    assert "broken fact file, not used as a fact: the front matter is not valid YAML" in result["text"]
    assert result["hits"][0]["problem"].startswith("the front matter is not valid YAML")


def test_broken_lists_unreadable_files_and_limit_breaks_by_subject(memory) -> None:
    facts = memory.facts
    ana = facts.keep("Ana", "role", "Ana leads the data team.")
    bruno = facts.keep("Bruno", "team", "Bruno works in ops.")
    _file(memory, ana.fact).write_text(_file(memory, ana.fact).read_text().replace("said:", "sad:"))
    unreadable = memory.root / "notes/memory/20260101T000000-00000000.md"
    unreadable.write_text("---\nid: [\n---\nwho knows\n")
    broken = {p.path: p for p in facts.broken()}
    assert broken[ana.fact.path].message == "the front matter lacks said"
    assert broken[ana.fact.path].subject == "Ana"
    assert broken[unreadable.relative_to(memory.root).as_posix()].subject is None
    assert sorted(p.path for p in facts.broken("ana")) == sorted(
        [ana.fact.path, "notes/memory/20260101T000000-00000000.md"]
    )
    assert [p.path for p in facts.broken("Bruno")] == ["notes/memory/20260101T000000-00000000.md"]
    assert [f.id for f in facts.current()] == [bruno.fact.id]


def test_repair_takes_a_missing_or_wrong_id_from_the_file_name_and_keeps_the_version(memory) -> None:
    facts = memory.facts
    ana = facts.keep("Ana", "role", "Ana leads the data team.")
    bruno = facts.keep("Bruno", "team", "Bruno works in ops.")
    path_a, path_b = _file(memory, ana.fact), _file(memory, bruno.fact)
    hand_a = path_a.read_text().replace(f"id: {ana.fact.id}\n", "")
    hand_b = path_b.read_text().replace(f"id: {bruno.fact.id}", "id: 20200101T000000-00000000")
    path_a.write_text(hand_a)
    path_b.write_text(hand_b)
    problems = {p.path: p for p in facts.check()}
    assert problems[ana.fact.path].repair == "takes the fact's id from its file's name"
    assert problems[bruno.fact.path].repair == "takes the fact's id from its file's name"
    assert facts.repair() == sorted([ana.fact.path, bruno.fact.path])
    assert facts.check() == []
    assert [f.id for f in fsmem.open(memory.root).facts.current()] == [ana.fact.id, bruno.fact.id]
    kept = memory.versions(ana.fact.path)
    assert memory.drive.read_version(kept[0]).decode() == hand_a  # the person's text stays


def test_repair_changes_nothing_it_cannot_mend_and_says_so(memory) -> None:
    facts = memory.facts
    ana = facts.keep("Ana", "role", "Ana leads the data team.")
    bruno = facts.keep("Bruno", "team", "Bruno works in ops.")
    texts = {
        ana.fact.path: _file(memory, ana.fact).read_text().replace("subject: Ana", "subject: [Ana"),
        bruno.fact.path: _file(memory, bruno.fact).read_text().replace("Bruno works in ops.", "x" * 2100),
        "notes/memory/20260101T000000-00000000.md": "no front matter at all\n",
    }
    for path, text in texts.items():
        (memory.root / path).write_text(text)
    log = len(list(memory.log()))
    assert facts.repair() == []
    assert {path: (memory.root / path).read_text() for path in texts} == texts
    assert len(list(memory.log())) == log
    assert {p.path: p.repair for p in facts.check()} == dict.fromkeys(texts)


def test_repair_joins_a_chain_cut_by_a_hand_delete_to_what_holds_by_date(memory) -> None:
    facts = memory.facts
    first = facts.keep("Ana", "role", "Ana is an intern.", said="2026-01-01")
    middle = facts.keep("Ana", "role", "Ana leads the data team.", said="2026-05-01")
    last = facts.keep("Ana", "role", "Ana works in research.", said="2026-09-01")
    (memory.root / facts.get(middle.fact.id).path).unlink()  # a person deletes the middle one
    alone = facts.keep("Bruno", "team", "Bruno works in ops.", said="2026-01-01")
    bruno_next = facts.keep("Bruno", "team", "Bruno works in sales.", said="2026-02-01")
    (memory.root / facts.get(bruno_next.fact.id).path).unlink()  # and what held last for Bruno
    problems = {p.path: p for p in facts.check()}
    cut = problems[facts.get(first.fact.id).path]
    assert cut.repair == f"joins it to the chain of {last.fact.id}, by date"
    orphan = problems[facts.get(alone.fact.id).path]
    assert orphan.repair is None and "nothing holds for the same thing now" in orphan.message
    before = (memory.root / facts.get(alone.fact.id).path).read_bytes()
    assert facts.repair()
    assert [f.id for f in facts.history(last.fact.id)] == [last.fact.id, first.fact.id]
    assert facts.get(first.fact.id).replaced_by == last.fact.id
    assert (memory.root / facts.get(alone.fact.id).path).read_bytes() == before
    assert [p.path for p in fsmem.open(memory.root).facts.check()] == [facts.get(alone.fact.id).path]


def test_repair_mends_links_to_nowhere_and_a_current_fact_that_was_replaced(memory) -> None:
    facts = memory.facts
    old = facts.keep("Ana", "role", "Ana leads the data team.", said="2026-05-01")
    new = facts.keep("Ana", "role", "Ana works in research.", said="2026-09-01")
    other = facts.keep("Bruno", "team", "Bruno works in ops.")
    path = _file(memory, other.fact)
    path.write_text(path.read_text().replace("replaces: []", "replaces: [20200101T000000-00000000]"))
    history = memory.root / f"notes/memory/history/{old.fact.id}.md"
    (memory.root / f"notes/memory/{old.fact.id}.md").write_bytes(history.read_bytes())  # back in the current folder
    history.unlink()
    assert any(p.repair == "writes the rest of the change, as every read already sees it" for p in facts.check())
    repaired = facts.repair()
    assert f"notes/memory/history/{old.fact.id}.md" in repaired and other.fact.path in repaired
    assert facts.check() == []
    assert "replaces: []" in path.read_text()
    assert history.exists() and not (memory.root / f"notes/memory/{old.fact.id}.md").exists()
    assert [f.id for f in fsmem.open(memory.root).facts.current()] == [new.fact.id, other.fact.id]
