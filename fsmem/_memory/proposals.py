"""Changes a reviewer made that wait for a person: kept by the store (``.fsmem/proposals/<id>.json`` in a folder).

A proposal records the request, the scope and thread it came from, and the version of every file it
would change as it was when the proposal was made (its base). ``approve`` applies it only if those
files still hold what they held; ``discard`` drops it. One the store cannot read as a proposal (a
file cut short or edited by hand) is listed as a ``BrokenProposal``; ``load`` refuses it
(``BAD_PROPOSAL``), ``discard`` drops it.
"""

from __future__ import annotations

import secrets as random_ids
from dataclasses import asdict
from typing import TYPE_CHECKING

from fsmem._core.versions import version_of
from fsmem._errors import BadProposal, NotFound, RequestError
from fsmem._store.types import BrokenProposal, ChangeProposal, now_iso

if TYPE_CHECKING:
    from fsmem._memory.project import Project


def new_id() -> str:
    """Short enough to type, sortable by the second: ``20261130T010203-a1b2c3``.

    The ``T`` matters: fourteen digits in a row pass the Luhn check one time in ten, and text quoting
    such an id would be refused as a card number.
    """
    stamp = now_iso()
    return f"{stamp[:10].replace('-', '')}T{stamp[11:19].replace(':', '')}-{random_ids.token_hex(3)}"


def save(memory: Project, proposal: ChangeProposal) -> None:
    memory.drive.save_proposal(asdict(proposal))


def load(memory: Project, proposal_id: str) -> ChangeProposal:
    record = memory.drive.load_proposal(proposal_id)
    if record is None:
        raise NotFound(f"there is no proposal {proposal_id!r}; `fsmem proposals` lists them")
    return ChangeProposal(**record)


def resolve_id(memory: Project, typed: str) -> str:
    """The full id an unambiguous prefix stands for, as a person types it (``fsmem proposals approve 2026``)."""
    from fsmem._core.prefix import resolve_prefix

    return resolve_prefix(typed, memory.drive.proposal_ids(), "proposal", "fsmem proposals")


def all_proposals(memory: Project) -> list[ChangeProposal | BrokenProposal]:
    """Every proposal kept, oldest first, then the broken ones by id (each with what is wrong)."""
    readable: list[ChangeProposal] = []
    broken: list[BrokenProposal] = []
    for proposal_id in memory.drive.proposal_ids():
        try:
            readable.append(load(memory, proposal_id))
        except BadProposal as error:
            broken.append(BrokenProposal(proposal_id, str(error.details["problem"])))
        except NotFound:
            continue  # discarded or approved since it was listed
    return [*sorted(readable, key=lambda p: p.made_at), *broken]


def stale_paths(memory: Project, proposal: ChangeProposal) -> list[str]:
    """The files that no longer hold what they held when the proposal was made."""
    stale = []
    for path, version in proposal.base.items():
        try:
            data = memory.drive.read(path)
        except RequestError:  # a FIFO, or a link out of the root, there now: not what the proposal saw
            stale.append(path)
            continue
        if (None if data is None else version_of(data)) != version:
            stale.append(path)
    folder = proposal.extra.get("folder")
    if folder and memory.drive.is_dir(folder):
        now = {entry.path for entry in memory.drive.walk_files(folder)}
        stale.extend(sorted(now - set(proposal.base)))
    return stale


def discard(memory: Project, proposal_id: str) -> None:
    memory.drive.delete_proposal(proposal_id)
