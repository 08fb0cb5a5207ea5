"""Facts on the drive: ``notes/memory/<id>.md`` while they hold, ``notes/memory/history/<id>.md`` after.

    facts = memory.facts
    kept = facts.keep("Ana", "role", "Ana works in research.", source="chat: Planning", said="2026-10-12")
    kept.outcome, kept.replaced        # "current", the fact it moved to the history (or None)
    facts.current("ana")               # what holds now about Ana
    facts.history(kept.fact.id)        # the chain, newest first
    facts.edit(kept.fact.id, fact="Ana works in research, on search.")
    facts.forget(kept.fact.id)         # the fact and the chain it replaced

The rules are :mod:`fsmem._core.facts` and :mod:`fsmem._core.chains`; the files are written and read as
:mod:`.files` says; what this process knows of them, and how little it looks at before each call, is
:class:`.view.FactView`. Each plan runs through one drive change: locked, atomic per file, versions
kept, logged, indexed on commit. A change cut short by a crash is finished by the next change (the
repair), and every read already sees it finished.
"""

from __future__ import annotations

import secrets as random_source
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from fsmem._core import chains
from fsmem._core import facts as rules
from fsmem._core.chains import Op, Resolution
from fsmem._core.facts import Draft, Fact
from fsmem._core.versions import version_of
from fsmem._errors import BadFact, BadPath, FactSensitive
from fsmem._memory.facts.kept import Listing
from fsmem._memory.facts.problems import Problem, limit_problems
from fsmem._memory.facts.problems import check as find_problems
from fsmem._memory.facts.view import FactView, chain_paths, fact_paths, known_of, thing_paths

if TYPE_CHECKING:
    from fsmem._memory.facts.extraction import Extraction
    from fsmem._store.interface import Store, StoreChange

__all__ = ["Facts", "Kept", "Listing"]


def _by_path(problem: Problem) -> tuple[str, str]:
    return (problem.path, problem.message)


@dataclass(frozen=True)
class Kept:
    """What became of a fact kept: ``current``, ``history`` (said earlier), or ``known``."""

    outcome: str
    fact: Fact
    replaced: Fact | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "fact": self.fact.to_dict(),
            "replaced": self.replaced.to_dict() if self.replaced else None,
        }


class Facts:
    """The facts of one root. Reads need no lock; every change holds the root's write lock."""

    def __init__(
        self,
        drive: Store,
        *,
        clock: Callable[[], datetime] | None = None,
        watcher: Callable[[], object | None] | None = None,
    ) -> None:
        """``watcher``: the process's watcher of the root where one runs (None: none), whose word
        spares a look the stat of every file (see :class:`.view.FactView`)."""
        self.drive = drive
        self._clock = clock or (lambda: datetime.now(UTC))
        self._view = FactView(drive, watcher)
        self._guard = self._view.guard
        self._last_id: str | None = None

    def _now(self) -> datetime:
        return self._clock().astimezone(UTC).replace(microsecond=0)

    # ---- reading ----------------------------------------------------------------------------

    def get(self, fact_id: str) -> Fact:
        with self._guard:
            return self._view.load(lambda resolution: fact_paths(resolution, fact_id)).get(fact_id)

    def resolve_id(self, typed: str) -> str:
        """The full id an unambiguous prefix stands for, as a person types it (``fsmem facts show 2026113``)."""
        from fsmem._core.prefix import resolve_prefix

        with self._guard:
            resolution = self._view.load()
            return resolve_prefix(typed, [*resolution.facts, *resolution.broken], "fact", "fsmem facts list --all")

    def current(self, subject: str | None = None) -> list[Fact]:
        """The facts that hold now (of ``subject``, ignoring case and extra spaces), oldest said first."""
        return self._view.listing(subject, limits=False).facts

    def listing(self, subject: str | None = None) -> Listing:
        """What ``fsmem facts list`` shows: :meth:`current` and :meth:`broken` of one look."""
        with self._guard:
            return self._view.listing(subject)

    def history(self, fact_id: str) -> list[Fact]:
        """The chain ``fact_id`` belongs to, newest first: what holds now, then what it replaced."""
        with self._guard:
            resolution = self._view.load(lambda resolution: fact_paths(resolution, fact_id))
            resolution.get(fact_id)
            return list(reversed(resolution.chain(fact_id)))

    def known(self) -> list[tuple[str, str]]:
        """The subjects and attributes in use (by the facts that hold), as last written."""
        with self._guard:
            return known_of(self._view.load())

    def all(self) -> list[Fact]:
        """Every readable fact, holding or replaced, oldest said first."""
        with self._guard:
            return sorted(self._view.load().facts.values(), key=Fact.order)

    def broken(self, subject: str | None = None) -> list[Problem]:
        """The fact files that are no usable fact (unreadable, or no fact's name), and the facts that
        break a limit (used as they are), sorted by path; with ``subject``, those about it and those
        whose subject cannot be read. ``check`` says more (secrets, chains, half-done changes)."""
        with self._guard:
            if subject is None:
                resolution = self._view.load()
                return sorted([*self._view.problems(), *limit_problems(resolution.facts.values())], key=_by_path)
            return self.listing(subject).broken

    def check(self) -> list[Problem]:
        """What a person should mend: unreadable files, rule breaks, half-finished changes."""
        with self._guard:
            resolution = self._view.load()
            return find_problems(resolution, self._view.problems(), self._now)

    # ---- changing ---------------------------------------------------------------------------

    def _run(self, tx: StoreChange, resolution: Resolution, ops: list[Op]) -> None:
        """Write the ops, then remember what was written so the next read parses nothing."""
        from fsmem._memory.facts.files import render  # YAML's writer: loaded by the first change

        written: dict[str, str] = {}  # path -> the version written (a new process's view checks a racy stamp by it)
        for op in ops:
            if op.kind == "write":
                assert op.fact is not None
                data = render(op.fact)
                tx.write(op.path, data)
                written[op.path] = version_of(data)
            else:
                tx.delete(op.path)
        self._view.remember(tx, resolution, ops, written)

    def _change(
        self,
        command: str,
        thread: str | None,
        plan: Callable[[Resolution], list[Op]],
        applies: bool = False,
        scope: Callable[[Resolution], Iterable[str] | None] | None = None,
    ) -> list[Op]:
        """Under the lock: read, repair what a crash left, plan, then write. A plan that raises
        writes nothing. ``applies``: the plan advanced the resolution itself. Returns the ops written
        (what a crash left unwritten first)."""
        with self._guard:
            try:
                with self.drive.change(command=command, thread=thread) as tx:
                    tx.hold("facts")  # the root's lock on the folder; on PostgreSQL, one facts change at a time
                    resolution = self._view.load(scope)  # looked at again under the lock
                    fixes = list(resolution.fixes)
                    if fixes:
                        resolution.apply(fixes)
                    ops = plan(resolution)
                    if not applies:
                        resolution.apply(ops)
                    self._run(tx, resolution, [*fixes, *ops])
            except BaseException:
                # Refused before, during or at the commit (PostgreSQL commits when the block ends): what
                # this view holds may be what was planned, not what is kept. Look again next time.
                self._view.distrust()
                raise
        return [*fixes, *ops]

    def repair(self, thread: str | None = None) -> list[str]:
        """Mend what can be mended without guessing (each a change, the previous content kept as a
        version): ids taken from the file names, the rest of a change a crash cut short, links to
        facts that are gone (a chain joined by date to what holds for the same thing). Returns the
        paths written or deleted; what only a person can mend stays for :meth:`check` to report."""
        with self._guard:
            self._view.want_full_look()  # a full look: every file's stamp, whatever the journal says
            written: set[str] = set()
            if self._view.load() is not None and self._view.mendable_ids():
                try:
                    with self.drive.change(command="facts.repair", thread=thread) as tx:
                        tx.hold("facts")
                        self._view.want_full_look()
                        self._view.load()  # looked at again under the lock
                        from fsmem._memory.facts.files import render

                        for op in self._view.mendable_ids():
                            assert op.fact is not None
                            tx.write(op.path, render(op.fact))
                            written.add(op.path)
                finally:
                    self._view.distrust()  # the next look reads what was written

            def plan(resolution: Resolution) -> list[Op]:
                ops: list[Op] = []
                for fact in sorted(resolution.facts.values(), key=Fact.order):
                    if fact.id in resolution.facts and chains.rejoinable(resolution, fact.id) is not None:
                        step = chains.plan_rejoin(resolution, fact.id)
                        resolution.apply(step)
                        ops.extend(step)
                return ops

            self._view.want_full_look()
            written.update(op.path for op in self._change("facts.repair", thread, plan, applies=True))
            return sorted(written)

    def _new_id(self, resolution: Resolution, now: datetime) -> str:
        """A fresh id that sorts after every id made before it: the kept second, then the
        microsecond (20 bits) and 12 random bits, so two facts kept in one second keep their order."""
        while True:
            moment = self._clock().astimezone(UTC)
            micro = moment.microsecond if moment.replace(microsecond=0) == now else 999_999
            tail = (micro << 12) | random_source.randbelow(1 << 12)
            candidate = rules.new_fact_id(now, f"{tail:08x}")
            last = self._last_id
            if last is not None and candidate <= last and last[16:] < "ffffffff":
                # the clock stood still or went back: follow the last id rather than wait for it
                candidate = last[:16] + f"{int(last[16:], 16) + 1:08x}"
            if (
                candidate not in resolution.stored
                and candidate not in resolution.broken
                and not self._taken(rules.fact_path(candidate, "current"))
                and not self._taken(rules.fact_path(candidate, "history"))
            ):
                self._last_id = candidate
                return candidate

    def _taken(self, path: str) -> bool:
        """Whether anything stands at ``path`` (a link there leading out counts as taken)."""
        try:
            return self.drive.exists(path)
        except BadPath:  # a store that cannot be reached raises on: this loop must not spin on it
            return True

    def keep(
        self,
        subject: str,
        attribute: str,
        fact: str,
        source: str = rules.DEFAULT_SOURCE,
        said: object = None,
        *,
        thread: str | None = None,
    ) -> Kept:
        """Keep a fact by the rules; returns what became of it and what it replaced."""
        draft = rules.check_draft(subject, attribute, fact, source, said, now=self._now())
        return self.keep_drafts([draft], thread=thread)[0]

    def keep_many(self, items: Iterable[Mapping[str, Any]], *, thread: str | None = None) -> list[Kept]:
        """Keep several facts in one change (one lock, one index update). Each item has ``subject``,
        ``attribute``, ``fact`` and optionally ``source`` and ``said``. All are checked first: one bad
        item keeps none."""
        now = self._now()
        drafts = []
        for number, item in enumerate(items, start=1):
            try:
                drafts.append(
                    rules.check_draft(
                        item.get("subject"),
                        item.get("attribute"),
                        item.get("fact"),
                        item.get("source", rules.DEFAULT_SOURCE),
                        item.get("said"),
                        now=now,
                    )
                )
            except (BadFact, FactSensitive) as error:
                message = error.message.replace(". Nothing was kept;", ";").rstrip(".")
                raise type(error)(f"fact {number}: {message}; nothing was kept") from None
        return self.keep_drafts(drafts, thread=thread)

    def keep_drafts(self, drafts: Iterable[Draft], *, thread: str | None = None) -> list[Kept]:
        """Keep checked drafts (see :func:`fsmem._core.facts.check_draft`) in one change, in order."""
        drafts = list(drafts)
        results: list[Kept] = []
        if not drafts:
            return results

        def plan(resolution: Resolution) -> list[Op]:
            now = self._now()
            ops: list[Op] = []
            for draft in drafts:
                step = chains.plan_keep(resolution, draft, new_id=self._new_id(resolution, now), now=now)
                resolution.apply(step.ops)
                ops.extend(step.ops)
                results.append(Kept(step.outcome, resolution.facts.get(step.fact.id, step.fact), step.replaced))
            return ops

        with self._guard:
            self._change(
                "facts.keep",
                thread,
                plan,
                applies=True,
                scope=lambda resolution: [path for draft in drafts for path in thing_paths(resolution, draft.key)],
            )
            # later keeps of the same batch may have moved an earlier one: report each as it stands now
            final = self._view.resolution or self._view.load()
            return [
                Kept(
                    k.outcome,
                    final.facts.get(k.fact.id, k.fact),
                    final.facts.get(k.replaced.id, k.replaced) if k.replaced else None,
                )
                for k in results
            ]

    def edit(
        self,
        fact_id: str,
        *,
        fact: str | None = None,
        subject: str | None = None,
        attribute: str | None = None,
        thread: str | None = None,
    ) -> Fact:
        """Correct a fact's words, subject or attribute; it keeps its id and history, replaces nothing."""
        edited: list[Fact] = []

        def plan(resolution: Resolution) -> list[Op]:
            step = chains.plan_edit(
                resolution, fact_id, now=self._now(), fact=fact, subject=subject, attribute=attribute
            )
            edited.append(step.fact)
            return list(step.ops)

        def scope(resolution: Resolution) -> list[str] | None:
            old = resolution.facts.get(fact_id)
            if old is None:
                return None
            key = rules.thing_key(
                old.subject if subject is None else subject, old.attribute if attribute is None else attribute
            )
            return [*chain_paths(resolution, fact_id), *thing_paths(resolution, key)]

        self._change("facts.edit", thread, plan, scope=scope)
        return edited[0]

    def forget(self, fact_id: str, *, thread: str | None = None) -> list[Fact]:
        """Delete a fact and the facts it replaced, back to the first; returns them, newest first."""
        deleted: list[Fact] = []

        def plan(resolution: Resolution) -> list[Op]:
            step = chains.plan_forget(resolution, fact_id)
            deleted.extend(step.deleted)
            return list(step.ops)

        self._change("facts.forget", thread, plan, scope=lambda resolution: fact_paths(resolution, fact_id))
        return deleted

    # ---- the extractor ----------------------------------------------------------------------

    def propose(
        self, conversation: Any, llm: Any, *, source: str | None = None, said: object = None, prompt: str | None = None
    ) -> Extraction:
        """Ask ``llm`` (a :class:`fsmem._llm.model.ChatModel`) for the durable facts of ``conversation`` (a
        list of messages, or an object with ``messages`` and optionally ``title`` and ``date``).
        Each proposal says what keeping it would do; nothing is kept. Keep the chosen ones with
        ``keep_drafts([p.draft for p in chosen])``."""
        from fsmem._memory.facts.extraction import propose as propose_from  # the model's side: not for reads
        from fsmem._memory.usage import Metered

        metered = Metered(llm, self.drive.state, "remember")  # counted in `fsmem usage`
        return propose_from(self._view, conversation, metered, now=self._now(), source=source, said=said, prompt=prompt)
