"""Random keeps, edits, forgets and hand edits on a real folder, read by two independent views.

After every step: each thing has at most one fact holding, chains have no gaps, each fact file sits
where its links say, and a long-lived view agrees with a fresh one (a new process's view).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import fsmem
from fsmem._errors import BadFact, FactSensitive
from fsmem._memory.facts.facts import Facts

SUBJECTS = st.sampled_from(["Ana", "ana", "Bruno"])
ATTRIBUTES = st.sampled_from(["role", "Role ", "team"])
SENTENCES = st.integers(0, 4).map(lambda n: f"It is sentence {n}.")
DAYS = st.integers(1, 28).map(lambda d: f"2026-09-{d:02d}")


class FactsOnDisk(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="fsmem-stateful-"))
        self.memory = fsmem.open(self.folder / "root", create=True)
        self.facts = self.memory.facts
        self.other = Facts(self.memory.drive)  # another writer on the same root

    def teardown(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def _ids(self) -> list[str]:
        return sorted(fact.id for fact in self.facts.all())

    @rule(subject=SUBJECTS, attribute=ATTRIBUTES, sentence=SENTENCES, said=DAYS, which=st.booleans())
    def keep(self, subject, attribute, sentence, said, which) -> None:
        writer = self.facts if which else self.other
        kept = writer.keep(subject, attribute, sentence, said=said)
        assert kept.outcome in ("current", "history", "known")
        holding = self.facts.current(subject)
        assert any(f.text == sentence for f in self.facts.history(kept.fact.id))
        assert len([f for f in holding if f.key == kept.fact.key]) == 1

    @precondition(lambda self: self.facts.all())
    @rule(data=st.data(), sentence=SENTENCES)
    def edit(self, data, sentence) -> None:
        target = data.draw(st.sampled_from(self._ids()))
        before = self.facts.history(target)
        try:
            edited = self.other.edit(target, fact=f"Edited: {sentence}")
        except BadFact:
            return
        assert edited.id == target
        assert [f.id for f in self.facts.history(target)] == [f.id for f in before]

    @precondition(lambda self: self.facts.all())
    @rule(data=st.data())
    def forget(self, data) -> None:
        target = data.draw(st.sampled_from(self._ids()))
        chain = [f.id for f in reversed(self.facts.history(target))]
        deleted = self.facts.forget(target)
        assert [f.id for f in deleted] == list(reversed(chain[: chain.index(target) + 1]))
        assert not set(f.id for f in deleted) & set(self._ids())

    @precondition(lambda self: self.facts.all())
    @rule(data=st.data(), day=DAYS)
    def hand_edit_said(self, data, day) -> None:
        target = self.facts.get(data.draw(st.sampled_from(self._ids())))
        path = self.memory.root / target.path
        text = path.read_text(encoding="utf-8")
        said_line = next(line for line in text.splitlines() if line.startswith("said: "))
        path.write_text(text.replace(said_line, f"said: {day}", 1), encoding="utf-8")

    @rule(subject=SUBJECTS)
    def refused(self, subject) -> None:
        before = self._ids()
        try:
            self.other.keep(subject, "password", "It is in the vault.")
        except FactSensitive:
            pass
        assert self._ids() == before

    @invariant()
    def views_agree_and_chains_are_whole(self) -> None:
        fresh = Facts(self.memory.drive)
        facts = self.facts.all()
        assert facts == fresh.all() == self.other.all()
        keys = [f.key for f in self.facts.current()]
        assert len(keys) == len(set(keys))
        for fact in facts:
            chain = list(reversed(self.facts.history(fact.id)))
            assert [f.said for f in chain] == sorted(f.said for f in chain)
            assert chain[-1].holds and not any(f.holds for f in chain[:-1])
            for older, newer in zip(chain, chain[1:]):
                assert older.replaced_by == newer.id and older.until == newer.said
        self.facts.repair()
        for fact in self.facts.all():
            assert (self.memory.root / fact.path).is_file()
            other = fact.path.replace("/history/", "/") if not fact.holds else \
                fact.path.replace("notes/memory/", "notes/memory/history/")
            assert not (self.memory.root / other).exists()
        assert self.facts.check() == []


FactsOnDisk.TestCase.settings = settings(max_examples=40, stateful_step_count=20, deadline=None)
TestFactsOnDisk = FactsOnDisk.TestCase
