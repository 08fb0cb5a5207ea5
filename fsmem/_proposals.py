"""Changes a reviewer made that wait for a person: kept by the store (``.fsmem/proposals/<id>.json`` in a folder).

A proposal records the request, the scope and thread it came from, and the version of every file it
would change as it was when the proposal was made (its base). ``approve`` applies it only if those
files still hold what they held; ``discard`` drops it.
"""

from __future__ import annotations

import secrets as random_ids
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from fsmem._core.requests import parse_request
from fsmem._core.versions import version_of
from fsmem._drive import now_iso
from fsmem._errors import Conflict, NotFound, RequestError

if TYPE_CHECKING:
    from fsmem._memory import Memory


@dataclass(frozen=True)
class ChangeProposal:
    """A change a review-mode run left for a person, and what each file held when it was made."""

    id: str
    made_at: str
    thread: str | None
    scope: str
    request: dict[str, Any]
    base: dict[str, str | None]  # path -> version it held (None: did not exist)
    summary: str
    diff: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def new_id() -> str:
    """Short enough to type, sortable by the second: ``20261130T010203-a1b2c3``.

    The ``T`` matters: fourteen digits in a row pass the Luhn check one time in ten, and text quoting
    such an id would be refused as a card number.
    """
    stamp = now_iso()
    return f"{stamp[:10].replace('-', '')}T{stamp[11:19].replace(':', '')}-{random_ids.token_hex(3)}"


def save(memory: Memory, proposal: ChangeProposal) -> None:
    memory.drive.save_proposal(asdict(proposal))


def load(memory: Memory, proposal_id: str) -> ChangeProposal:
    record = memory.drive.load_proposal(proposal_id)
    if record is None:
        raise NotFound(f"there is no proposal {proposal_id!r}; `fsmem proposals` lists them")
    return ChangeProposal(**record)


def resolve_id(memory: Memory, typed: str) -> str:
    """The full id an unambiguous prefix stands for, as a person types it (``fsmem proposals approve 2026``)."""
    from fsmem._core.prefix import resolve_prefix

    return resolve_prefix(typed, memory.drive.proposal_ids(), "proposal", "fsmem proposals")


def all_proposals(memory: Memory) -> list[ChangeProposal]:
    return sorted((load(memory, proposal_id) for proposal_id in memory.drive.proposal_ids()), key=lambda p: p.made_at)


def stale_paths(memory: Memory, proposal: ChangeProposal) -> list[str]:
    """The files that no longer hold what they held when the proposal was made."""
    stale = []
    for path, version in proposal.base.items():
        data = memory.drive.read(path)
        if (None if data is None else version_of(data)) != version:
            stale.append(path)
    folder = proposal.extra.get("folder")
    if folder and memory.drive.is_dir(folder):
        now = {entry.path for entry in memory.drive.walk_files(folder)}
        stale.extend(sorted(now - set(proposal.base)))
    return stale


def approve(memory: Memory, proposal_id: str) -> dict[str, Any]:
    """Apply a proposal as a change like any other, if what it changes is as it was."""
    from fsmem._levels import Scope

    proposal = load(memory, proposal_id)
    stale = stale_paths(memory, proposal)
    if stale:
        raise Conflict(
            f"proposal {proposal_id} can no longer apply: {', '.join(stale)} changed since it was made; "
            "discard it (`fsmem proposals discard ID`) and let the reviewer look again"
        )
    run = memory.run(Scope.parse(proposal.scope), thread_id=f"approve:{proposal_id}")
    for path, version in proposal.base.items():
        if version is not None:
            run.mark_seen(path, version)
    # The request was checked when it was proposed; it may carry flags a face set that the model's
    # schema does not offer (e.g. Claude's create), so it is parsed, not re-validated against the schema.
    try:
        result = run.execute(parse_request(proposal.request))
    except RequestError as error:
        raise Conflict(f"proposal {proposal_id} was not applied: {error.message}") from error
    discard(memory, proposal_id)
    return result


def discard(memory: Memory, proposal_id: str) -> None:
    memory.drive.delete_proposal(proposal_id)
