"""Chains: what replaces what, and how the facts about one thing stay a whole chain on disk.

The facts about one thing form a *chain* ordered by when they were said; the last of the chain holds
now (it lives in ``notes/memory/``), the others were replaced (``notes/memory/history/``), each
knowing which fact replaced it and until when it held. Keeping a fact:

    about a new thing                         -> current
    said later than the current fact          -> current; the older one moves to the history
    said earlier than the current fact        -> history at once, in its place in the chain
    the same sentence as the current fact     -> nothing is kept

Everything here is pure. The stored links (``replaces``, ``replaced_by``, ``until``) are derived data:
:func:`resolve` rebuilds them from the chains (facts joined by any link, ordered by ``said``), which is
what makes a change spread over several files safe. Each plan writes the new fact first, linked to its
neighbours; a crash after that write is finished by the next :func:`resolve` (the *repair*), a crash
before it leaves the old state.

>>> from fsmem._core.facts import check_draft, parse_moment
>>> now = parse_moment("2026-11-30T10:00:00Z")
>>> draft = check_draft("Ana", "role", "Ana leads the data team.", said="2026-09-01", now=now)
>>> plan_keep(resolve([]), draft, new_id="20261130T100000-0000abcd", now=now).outcome
'current'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Literal

from fsmem._core.facts import (
    Draft,
    Fact,
    Location,
    Outcome,
    check_draft,
    clean_name,
    fact_id_of_path,
    fact_path,
    same_sentence,
)
from fsmem._errors import BadFact, NotFound

__all__ = [
    "Op",
    "Resolution",
    "KeepPlan",
    "EditPlan",
    "ForgetPlan",
    "resolve",
    "restore",
    "plan_keep",
    "plan_edit",
    "plan_forget",
    "rejoinable",
    "plan_rejoin",
]


# --------------------------------------------------------------------------- resolution


@dataclass(frozen=True)
class Op:
    """One file operation of a plan: write ``fact`` at its path, or delete ``path``."""

    kind: Literal["write", "delete"]
    path: str
    fact: Fact | None = None


@dataclass
class Resolution:
    """Every readable fact in its canonical state, the chains, and the fixes that would store it.

    Build one with :func:`resolve`; :meth:`apply` advances it by a plan's ops, re-resolving only the
    chains those ops touch (so keeping many facts stays cheap).
    """

    facts: dict[str, Fact] = field(default_factory=dict)
    chains: dict[int, list[str]] = field(default_factory=dict)  # each oldest first
    chain_of: dict[str, int] = field(default_factory=dict)
    fixes: list[Op] = field(default_factory=list)
    stored: dict[str, dict[Location, Fact]] = field(default_factory=dict)
    broken: frozenset[str] = frozenset()
    frozen: set[int] = field(default_factory=set)  # chains touching an unreadable file
    changed: set[str] = field(default_factory=set)  # ids placed or dropped since a keeper last drained it
    _holding: dict[tuple[str, str], set[str]] = field(default_factory=dict, repr=False)
    _things_of: dict[str, set[tuple[str, str]]] = field(default_factory=dict, repr=False)  # by subject
    _next_chain: int = field(default=0, repr=False)

    def current(self, subject: str | None = None) -> list[Fact]:
        """Facts that hold now, oldest said first; only ``subject``'s when given (case/space-blind)."""
        if subject is None:
            keys: Iterable[tuple[str, str]] = self._holding
        else:
            keys = self._things_of.get(clean_name(subject).casefold(), ())
        found = [self.facts[fid] for key in keys for fid in self._holding[key]]
        return sorted(found, key=Fact.order)

    def holding(self, key: tuple[str, str]) -> Fact | None:
        """The fact that holds now for a thing (the latest said if a person made two)."""
        found = [self.facts[fid] for fid in self._holding.get(key, ())]
        return max(found, key=Fact.order) if found else None

    def duplicates(self) -> list[list[str]]:
        """Things that have more than one fact holding (a person made them), each as sorted ids."""
        return sorted(sorted(ids) for ids in self._holding.values() if len(ids) > 1)

    def chain(self, fact_id: str) -> list[Fact]:
        """The whole chain ``fact_id`` belongs to, oldest first."""
        return [self.facts[i] for i in self.chains[self.chain_of[fact_id]]]

    def mendable(self, fact_id: str) -> None:
        """Refuse to relink a chain that touches a file fsmem cannot read."""
        if self.chain_of.get(fact_id) in self.frozen:
            fact = self.facts[fact_id]
            raise BadFact(
                f"the history of {fact.subject} / {fact.attribute} has a file fsmem cannot "
                "read; run `fsmem check` and mend it first"
            )

    def get(self, fact_id: str) -> Fact:
        try:
            return self.facts[fact_id]
        except KeyError:
            if fact_id in self.broken:
                raise BadFact(
                    f"fact {fact_id} cannot be read: its file is damaged. `fsmem check` says "
                    "what is wrong; mend the file, or restore it with `fsmem versions`"
                ) from None
            raise NotFound(
                f"no fact {fact_id}: `fsmem facts list` shows the facts that hold, `fsmem facts history ID` a chain"
            ) from None

    # ---- building

    def _add_chain(self, chain: list[Fact], frozen: bool, chosen: Mapping[str, Fact]) -> None:
        number = self._next_chain
        self._next_chain += 1
        self.chains[number] = [fact.id for fact in chain]
        if frozen:
            self.frozen.add(number)
        for fact in chain:
            self.changed.add(fact.id)
            self.chain_of[fact.id] = number
            placed = chosen[fact.id] if frozen else fact
            self.facts[fact.id] = placed
            if placed.holds:
                self._holding.setdefault(placed.key, set()).add(placed.id)
                self._things_of.setdefault(placed.key[0], set()).add(placed.key)
            if not frozen:
                self.fixes.extend(_store_ops(fact, self.stored[fact.id]))

    def _drop(self, fact_id: str) -> None:
        fact = self.facts.pop(fact_id, None)
        self.chain_of.pop(fact_id, None)
        if fact is not None and fact.holds:
            ids = self._holding.get(fact.key)
            if ids is not None:
                ids.discard(fact_id)
                if not ids:
                    del self._holding[fact.key]
                    things = self._things_of[fact.key[0]]
                    things.discard(fact.key)
                    if not things:
                        del self._things_of[fact.key[0]]

    def apply(self, ops: Iterable[Op]) -> None:
        """Advance to the state after ``ops`` ran (as the drive would run them)."""
        touched: set[str] = set()
        for op in ops:
            found = fact_id_of_path(op.path)
            if found is None:
                continue
            fid, location = found
            if op.kind == "write":
                assert op.fact is not None
                self.stored.setdefault(fid, {})[location] = op.fact
            else:
                places = self.stored.get(fid, {})
                places.pop(location, None)
                if not places:
                    self.stored.pop(fid, None)
            touched.add(fid)
        affected: set[str] = set()
        frontier = list(touched)
        while frontier:  # the old chains of touched facts, and the chains their links now reach
            fid = frontier.pop()
            if fid in affected:
                continue
            affected.add(fid)
            if fid in self.chain_of:
                frontier.extend(self.chains[self.chain_of[fid]])
            for copy in self.stored.get(fid, {}).values():
                frontier.extend(other for other in (*copy.replaces, copy.replaced_by) if other)
        for number in {self.chain_of[fid] for fid in affected if fid in self.chain_of}:
            del self.chains[number]
            self.frozen.discard(number)
        for fid in affected:
            self._drop(fid)
        self.changed |= affected
        self.fixes = [op for op in self.fixes if (fact_id_of_path(op.path) or ("", ""))[0] not in affected]
        _resolve_into(self, {fid: self.stored[fid] for fid in affected if fid in self.stored})


def _relinked(chain: Sequence[Fact], present: Mapping[str, object] | None = None) -> list[Fact]:
    """The chain with links derived from its order: each replaced by the next, until its date.

    The last fact holds — unless its file says it was replaced by a fact that is gone (a person
    deleted it): then it stays replaced, as its file says (``present`` are the ids on disk).
    """
    out = []
    for index, fact in enumerate(chain):
        before = chain[index - 1] if index > 0 else None
        after = chain[index + 1] if index + 1 < len(chain) else None
        replaced_by: str | None
        until: datetime | None
        if after is None and present is not None and fact.replaced_by is not None and fact.replaced_by not in present:
            replaced_by, until = fact.replaced_by, fact.until
        else:
            replaced_by, until = (after.id, after.said) if after else (None, None)
        replaces = (before.id,) if before else ()
        if (fact.replaces, fact.replaced_by, fact.until) == (replaces, replaced_by, until):
            out.append(fact)  # the common case: the file already says so
        else:
            out.append(replace(fact, replaces=replaces, replaced_by=replaced_by, until=until))
    return out


def restore(
    stored: Iterable[tuple[Location, Fact]], chains: Iterable[tuple[Sequence[Fact], bool]], broken: Iterable[str] = ()
) -> Resolution | None:
    """The resolution :func:`resolve` gave before, from the files read and its chains as kept (each
    its facts as placed, oldest first, and whether it was frozen), without resolving again; None when
    the chains do not cover each fact read exactly once (then resolve)."""
    resolution = Resolution(broken=frozenset(broken))
    for location, fact in stored:
        resolution.stored.setdefault(fact.id, {})[location] = fact
    for chain, frozen in chains:
        if not chain or any(f.id not in resolution.stored or f.id in resolution.chain_of for f in chain):
            return None
        resolution._add_chain(list(chain), frozen, {fact.id: fact for fact in chain})
    if len(resolution.chain_of) != len(resolution.stored):
        return None
    resolution.changed.clear()
    return resolution


def resolve(stored: Iterable[tuple[Location, Fact]], broken: Iterable[str] = ()) -> Resolution:
    """Rebuild the canonical state from the files read (each as its location and fact).

    Facts joined by any link (``replaces`` or ``replaced_by``, in either direction) form one chain,
    ordered by :meth:`Fact.order`; links are derived from that order and the last fact holds. A fact
    found both current and in the history is one fact (the history copy is read). ``fixes`` are the
    writes and deletes that make the files say this — none for a chain touching an unreadable file
    (``broken`` ids), which is left for a person to mend.
    """
    resolution = Resolution(broken=frozenset(broken))
    for location, fact in stored:
        resolution.stored.setdefault(fact.id, {})[location] = fact
    _resolve_into(resolution, resolution.stored)
    return resolution


def _resolve_into(resolution: Resolution, copies: Mapping[str, Mapping[Location, Fact]]) -> None:
    """Resolve the facts in ``copies`` (whole chains) and add them to ``resolution``."""
    chosen = {fid: places.get("history") or places["current"] for fid, places in copies.items()}
    parent = {fid: fid for fid in chosen}  # union-find over links to readable facts

    def find(fid: str) -> str:
        while parent[fid] != fid:
            parent[fid] = parent[parent[fid]]
            fid = parent[fid]
        return fid

    touches_broken: set[str] = set()
    for fid, places in copies.items():
        for fact in places.values():
            for other in (*fact.replaces, fact.replaced_by):
                if other is None:
                    continue
                if other in parent:
                    a, b = find(fid), find(other)
                    if a != b:
                        parent[a] = b
                elif other in resolution.broken:
                    touches_broken.add(fid)

    groups: dict[str, list[Fact]] = {}
    for fid, fact in chosen.items():
        groups.setdefault(find(fid), []).append(fact)
    frozen_roots = {find(fid) for fid in touches_broken}
    for root, members in sorted(groups.items(), key=lambda item: min(f.order() for f in item[1])):
        # a chain touching an unreadable file keeps what its files say until a person mends it
        chain = _relinked(sorted(members, key=Fact.order), present=resolution.stored)
        resolution._add_chain(chain, root in frozen_roots, chosen)


def _store_ops(fact: Fact, places: Mapping[Location, Fact]) -> list[Op]:
    """Writes/deletes that make the files hold ``fact`` in its canonical place (history before delete)."""
    ops: list[Op] = []
    there = places.get(fact.location)
    if there is not fact and there != fact:  # mostly the very object read: no field-by-field compare
        ops.append(Op("write", fact.path, fact))
    for location in places:
        if location != fact.location:
            ops.append(Op("delete", fact_path(fact.id, location)))
    return ops


# --------------------------------------------------------------------------- plans


@dataclass(frozen=True)
class KeepPlan:
    outcome: Outcome
    fact: Fact  # the fact kept, or (outcome "known") the one already holding
    replaced: Fact | None = None  # the fact this one moved to the history
    ops: tuple[Op, ...] = ()


@dataclass(frozen=True)
class EditPlan:
    fact: Fact
    ops: tuple[Op, ...] = ()


@dataclass(frozen=True)
class ForgetPlan:
    deleted: tuple[Fact, ...]  # newest first
    ops: tuple[Op, ...] = ()


def _chain_change(resolution: Resolution, new_chain: list[Fact], first: Fact | None) -> list[Op]:
    """Ops turning the stored chain into ``new_chain``: ``first``'s write leads, so a crash after it is
    finished by :func:`resolve`; history copies are written before current copies are deleted."""
    ops: list[Op] = []
    later: list[Op] = []
    for fact in _relinked(new_chain):
        places = resolution.stored.get(fact.id, {})
        for op in _store_ops(fact, places):
            if first is not None and op.fact is not None and op.fact.id == first.id:
                ops.insert(0, op)
            else:
                later.append(op)
    writes = [op for op in later if op.kind == "write"]
    deletes = [op for op in later if op.kind == "delete"]
    return ops + writes + deletes


def plan_keep(resolution: Resolution, draft: Draft, *, new_id: str, now: datetime) -> KeepPlan:
    """What keeping ``draft`` does, by the rules in the module docstring."""
    if new_id in resolution.facts or new_id in resolution.broken:
        raise ValueError(f"fact id {new_id} is taken")
    holding = resolution.holding(draft.key)
    if holding is not None and same_sentence(holding.text, draft.text):
        return KeepPlan("known", holding)
    if holding is not None:
        # the very same statement kept twice (same words, same date) is known too
        for earlier in resolution.chain(holding.id):
            if earlier.said == draft.said and same_sentence(earlier.text, draft.text):
                return KeepPlan("known", earlier)
    # a thing keeps the spelling it was first given ("ana / Role" joins "Ana / role" as "Ana / role")
    subject, attribute = (holding.subject, holding.attribute) if holding else (draft.subject, draft.attribute)
    new = Fact(
        id=new_id,
        subject=subject,
        attribute=attribute,
        text=draft.text,
        source=draft.source,
        said=draft.said,
        kept=now.astimezone(UTC).replace(microsecond=0),
    )
    if holding is None:
        return KeepPlan("current", new, None, (Op("write", new.path, new),))
    resolution.mendable(holding.id)
    chain = resolution.chain(holding.id)
    new_chain = sorted([*chain, new], key=Fact.order)
    placed = next(fact for fact in _relinked(new_chain) if fact.id == new_id)
    ops = _chain_change(resolution, new_chain, placed)
    if placed.holds:
        replaced = next(fact for fact in _relinked(new_chain) if fact.id == holding.id)
        return KeepPlan("current", placed, replaced, tuple(ops))
    return KeepPlan("history", placed, None, tuple(ops))


def plan_edit(
    resolution: Resolution,
    fact_id: str,
    *,
    now: datetime,
    fact: str | None = None,
    subject: str | None = None,
    attribute: str | None = None,
) -> EditPlan:
    """Correct a fact's words, subject or attribute: same id, same chain, nothing replaced."""
    old = resolution.get(fact_id)
    if fact is None and subject is None and attribute is None:
        raise BadFact("nothing to edit: give a new sentence, subject or attribute")
    draft = check_draft(
        old.subject if subject is None else subject,
        old.attribute if attribute is None else attribute,
        old.text if fact is None else fact,
        old.source,
        old.said,
        now=now,
    )
    if draft.key != old.key:
        if not old.holds:
            raise BadFact(
                f"fact {fact_id} was replaced; only the sentence of a replaced fact can be "
                "corrected. Edit the fact that holds now to change the subject or attribute"
            )
        other = resolution.holding(draft.key)
        if other is not None and other.id != fact_id:
            raise BadFact(
                f"{other.subject} / {other.attribute} already has a fact that holds "
                f"({other.id}); an edit replaces nothing. Keep the new sentence instead, or "
                f"forget {other.id} first"
            )
    edited = replace(
        old,
        subject=draft.subject,
        attribute=draft.attribute,
        text=draft.text,
        edited=now.astimezone(UTC).replace(microsecond=0),
    )
    if edited == replace(old, edited=edited.edited):
        return EditPlan(old, ())
    return EditPlan(edited, (Op("write", edited.path, edited),))


def plan_forget(resolution: Resolution, fact_id: str) -> ForgetPlan:
    """Delete a fact and the facts it replaced, back to the first; later facts stay.

    Deletes run oldest first: a crash part-way leaves the fact that holds and a shorter history, and
    forgetting again finishes the job.
    """
    resolution.get(fact_id)
    resolution.mendable(fact_id)
    chain = resolution.chain(fact_id)
    cut = [fact.id for fact in chain].index(fact_id) + 1
    gone, kept = chain[:cut], chain[cut:]
    ops: list[Op] = []
    for fact in gone:
        for location in resolution.stored.get(fact.id, {}):
            ops.append(Op("delete", fact_path(fact.id, location)))
    ops.extend(_chain_change(resolution, kept, None))
    return ForgetPlan(tuple(reversed(gone)), tuple(ops))


def rejoinable(resolution: Resolution, fact_id: str) -> Fact | None:
    """For a fact whose file says it was replaced by a fact that is gone (a person deleted it): the
    fact holding for the same thing in another chain, which its chain can join by date, as keeping
    them in any order would have placed them; None when nothing holds for that thing, or a chain
    touches a file fsmem cannot read."""
    fact = resolution.facts[fact_id]
    gone = fact.replaced_by
    if gone is None or gone in resolution.facts or gone in resolution.broken:
        return None
    holding = resolution.holding(fact.key)
    if holding is None or resolution.chain_of[holding.id] == resolution.chain_of[fact_id]:
        return None
    if {resolution.chain_of[holding.id], resolution.chain_of[fact_id]} & resolution.frozen:
        return None
    return holding


def plan_rejoin(resolution: Resolution, fact_id: str) -> list[Op]:
    """The ops that join ``fact_id``'s chain to the chain of :func:`rejoinable`'s fact, by date."""
    holding = rejoinable(resolution, fact_id)
    if holding is None:
        return []
    merged = sorted([*resolution.chain(fact_id), *resolution.chain(holding.id)], key=Fact.order)
    return _chain_change(resolution, merged, None)
