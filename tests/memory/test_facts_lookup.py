"""Facts found by subject without a look at every file: the folders' stamps, the journal of changes
through fsmem, and the stamps of the files a call depends on. Whatever changed on disk is still seen."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import fsmem
from fsmem._memory.facts.facts import Facts
from fsmem._memory.facts.journal import JOURNAL_FILE
from fsmem._memory.facts.view import FactView
from tests.conftest import run_fsmem


@pytest.fixture
def memory(tmp_path):
    return fsmem.open(tmp_path / "root", create=True)


@pytest.fixture
def full_looks(monkeypatch) -> list[int]:
    """How many times any view looked at every fact file (a spy on the real scan)."""
    looks: list[int] = []
    real_scan = FactView._scan

    def counted(self):
        looks.append(1)
        return real_scan(self)

    monkeypatch.setattr(FactView, "_scan", counted)
    return looks


def _save_by_rename(path: Path, text: str) -> None:
    """As most editors save: a new file renamed over the old one."""
    temp = path.with_name("." + path.name + ".swp")
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, path)


def test_calls_about_one_thing_look_at_its_files_only(memory, full_looks) -> None:
    facts = memory.facts
    facts.keep("Ana", "role", "Ana leads the data team.", said="2026-09-01")
    facts.current()  # the first look of a view is a full one
    looks = len(full_looks)
    kept = facts.keep("Ana", "role", "Ana works in research.", said="2026-10-12")
    facts.keep("Bruno", "team", "Bruno is in ops.")
    assert [f.text for f in facts.current("ana")] == ["Ana works in research."]
    assert [f.id for f in facts.history(kept.fact.id)] == [kept.fact.id, kept.replaced.id]
    assert facts.get(kept.fact.id).text == "Ana works in research."
    assert len(full_looks) == looks


def test_an_edit_in_place_is_seen_by_a_call_about_its_subject(memory, full_looks) -> None:
    facts = memory.facts
    kept = facts.keep("Ana", "role", "Ana works in research.", said="2026-10-12")
    facts.current("ana")
    path = memory.root / kept.fact.path
    path.write_text(path.read_text().replace("in research.", "in research, on search."))  # in place
    assert [f.text for f in facts.current("ana")] == ["Ana works in research, on search."]
    # a keep plans on what the file says now: the same sentence is known, nothing new is kept
    again = facts.keep("Ana", "role", "Ana works in research, on search.")
    assert again.outcome == "known" and again.fact.id == kept.fact.id


def test_a_file_added_or_removed_by_hand_is_seen(memory) -> None:
    facts = memory.facts
    ana = facts.keep("Ana", "role", "Ana works in research.", said="2026-10-12")
    bruno = facts.keep("Bruno", "team", "Bruno is in ops.", said="2026-10-12")
    assert facts.current("bruno")
    copy = (memory.root / bruno.fact.path).read_text().replace(bruno.fact.id, "20261013T090000-0000cafe")
    copy = copy.replace("Bruno is in ops.", "Bruno is in research.").replace("said: 2026-10-12", "said: 2026-10-13")
    _save_by_rename(memory.root / "notes/memory/20261013T090000-0000cafe.md", copy)
    # two facts hold for one thing (a person made the second): both are seen, `fsmem check` names them
    assert [f.text for f in facts.current("bruno")] == ["Bruno is in ops.", "Bruno is in research."]
    (memory.root / ana.fact.path).unlink()
    assert facts.current("ana") == []


def test_a_hand_edit_between_two_changes_of_another_process_is_seen(memory) -> None:
    facts = memory.facts
    ana = facts.keep("Ana", "role", "Ana works in research.", said="2026-10-12")
    assert facts.current("carla") == []
    # while this view waits: a person adds a fact by hand, then another process keeps one
    _save_by_rename(memory.root / "notes/memory/20261013T090000-0000cafe.md",
                    (memory.root / ana.fact.path).read_text()
                    .replace(ana.fact.id, "20261013T090000-0000cafe").replace("subject: Ana", "subject: Carla")
                    .replace("Ana works", "Carla works"))
    done = run_fsmem("facts", "keep", "Bruno", "team", "Bruno is in ops.", "--root", str(memory.root))
    assert done.returncode == 0, done.stderr
    assert [f.text for f in facts.current("bruno")] == ["Bruno is in ops."]
    assert [f.text for f in facts.current("carla")] == ["Carla works in research."]


def test_changes_of_another_process_are_followed_through_the_journal(memory, full_looks) -> None:
    facts = memory.facts
    facts.keep("Ana", "role", "Ana leads the data team.", said="2026-09-01")
    assert facts.current("ana")
    looks = len(full_looks)
    other = Facts(memory.drive)  # another view of the same root, as another process holds
    other.current("ana")  # its first answer comes from the kept view: no look at every file
    newer = other.keep("ana", "Role", "Ana works in research.", said="2026-10-12")  # a full look: all chains
    assert [f.id for f in facts.current("ana")] == [newer.fact.id]
    assert facts.get(newer.replaced.id).replaced_by == newer.fact.id
    assert len(full_looks) == looks + 1  # the other view's keep, and none of this view's


def test_a_lost_journal_means_a_full_look_not_a_wrong_answer(memory) -> None:
    facts = memory.facts
    facts.keep("Ana", "role", "Ana leads the data team.", said="2026-09-01")
    assert facts.current("ana")
    other = Facts(memory.drive)
    other.current()
    (memory.drive.state / JOURNAL_FILE).unlink()
    newer = other.keep("Ana", "role", "Ana works in research.", said="2026-10-12")
    (memory.drive.state / JOURNAL_FILE).write_text("not a journal\n")
    assert [f.id for f in facts.current("ana")] == [newer.fact.id]
    assert facts.all() == Facts(memory.drive).all()


def test_a_journal_grown_past_its_limit_starts_again_and_views_follow(memory, monkeypatch) -> None:
    import fsmem._memory.facts.journal as module

    monkeypatch.setattr(module, "JOURNAL_LIMIT", 300)  # about one line
    facts, other = memory.facts, Facts(memory.drive)
    assert facts.current("ana") == [] and other.current("ana") == []
    journal = memory.drive.state / JOURNAL_FILE
    sizes = []
    for day in range(1, 6):
        kept = other.keep("Ana", "role", f"Ana has role {day}.", said=f"2026-09-0{day}")
        sizes.append(journal.stat().st_size)
        assert [f.id for f in facts.current("ana")] == [kept.fact.id]
    assert max(sizes) < 700 and sizes != sorted(sizes)  # it started again, more than once
    assert facts.all() == Facts(memory.drive).all()


def test_a_new_view_answers_from_the_kept_view_and_follows_a_hand_link_resolving_only_its_chains(
    memory, monkeypatch
) -> None:
    """A new process's `fsmem facts list [SUBJECT]` reads the kept view and resolves nothing; after a
    person links two chains by hand, the next new view resolves those chains only (never all of them),
    and its answer is what resolving every file from scratch gives."""
    import fsmem._core.chains as chains_module

    facts = memory.facts
    facts.keep("Ana", "role", "Ana leads the data team.", said="2026-09-01")
    new = facts.keep("Ana", "role", "Ana works in research.", said="2026-10-12").fact
    bruno = facts.keep("Bruno", "team", "Bruno is in ops.", said="2026-11-01").fact
    facts.keep("Carla", "city", "Carla lives in Porto.", said="2026-11-02")
    facts.keep("Dan", "city", "Dan lives in Lyon.", said="2026-11-03")
    resolved: list[int] = []
    for name in ("resolve", "_resolve_into"):
        real = getattr(chains_module, name)
        monkeypatch.setattr(chains_module, name, lambda *a, real=real, name=name: resolved.append(
            len(a[1]) if name == "_resolve_into" else -1) or real(*a))
    before = Facts(memory.drive).current()
    assert [f.id for f in Facts(memory.drive).current("ana")] == [new.id] and resolved == []
    # a person links Bruno's fact to Ana's by hand, in Bruno's file only: it now replaces Ana's
    path = memory.root / bruno.path
    path.write_text(path.read_text().replace("replaces: []", f"replaces: [{new.id}]"))
    # an edit in place: a call about Bruno checks the stamps of Bruno's chain, sees it, and resolves
    # the chains it touches again: Ana's two facts and Bruno's, not Carla's or Dan's
    assert [(f.id, f.replaces) for f in Facts(memory.drive).current("bruno")] == [(bruno.id, (new.id,))]
    assert resolved == [3] and len(before) == 4
    resolved.clear()
    (memory.drive.state / "cache/facts.sqlite").unlink()
    monkeypatch.undo()
    expected = Facts(memory.drive).current()  # every file resolved from scratch
    assert new.id not in [f.id for f in expected]
    for subject in ("ana", " BRUNO ", "carla", None):
        wanted = None if subject is None else " ".join(subject.split()).casefold()
        assert Facts(memory.drive).current(subject) == [f for f in expected if wanted in (None, f.key[0])]
