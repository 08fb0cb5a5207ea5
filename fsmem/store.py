"""What every part of fsmem may ask of where a project's memory is kept: the store interface.

Two stores stand behind it: the folder (``fsmem.drive.Drive``, the embedded default) and PostgreSQL
(``fsmem.pg_drive.PgDrive``, for many workers on many machines). Everything above them (the tool,
levels, facts, versions, the log, proposals, review, context, the index, the faces) asks only what
this interface offers, so it behaves the same on both::

    with store.change(command="write", thread="t-1") as tx:
        before = tx.read("MEMORY.md")       # what the change checks against
        tx.write("MEMORY.md", b"# Project\\n")

Paths are already normalized by ``fsmem.core.paths``. What a store keeps for this machine alone and
can rebuild at any time (the search index, parse caches, the watcher's heartbeat) lives under
``state``: inside the root for the folder, in a cache folder of the worker for PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from fsmem.config import Settings
    from fsmem.drive import Entry, HandEdit, LogEntry, VersionInfo


class StoreChange(Protocol):
    """The operations of one change (``store.change(...)``). On the folder each takes effect when
    called, under the root's lock; on PostgreSQL the whole block is one transaction."""

    command: str
    thread: str | None
    changed: list[str]
    hand_edits: list[HandEdit]

    def read(self, path: str) -> bytes | None: ...
    def write(self, path: str, data: bytes) -> str: ...
    def delete(self, path: str) -> None: ...
    def move(self, source: str, destination: str) -> None: ...


class Store(Protocol):
    settings: Settings
    state: Path  # this machine's derived state (index, caches): rebuilt from the store when lost
    name: str  # the project's name: the root folder's name, or the project's in the database
    label: str  # where it is kept, for messages: the root's path, or "project X in postgresql://…"
    on_commit: list[Callable[[set[str]], None]]  # called with the changed paths after each change

    # ---- reading ------------------------------------------------------------------------------
    def read(self, path: str, limit: int | None = None) -> bytes | None: ...
    def exists(self, path: str) -> bool: ...
    def is_dir(self, path: str) -> bool: ...
    def info(self, path: str) -> Entry | None: ...
    def canonical(self, path: str) -> str: ...
    def entries(self, path: str) -> list[Entry]: ...
    def walk_files(self, path: str = "") -> Iterator[Entry]: ...
    def refuse_special(self, path: str) -> None: ...
    def check_free(self, destination: str, label: str = "the new path") -> None: ...

    # ---- changing -----------------------------------------------------------------------------
    def locked(self, command: str = "lock") -> AbstractContextManager[None]: ...
    def change(self, command: str, thread: str | None = None) -> AbstractContextManager[StoreChange]: ...

    # ---- history ------------------------------------------------------------------------------
    def versions(self, path: str) -> list[VersionInfo]: ...
    def read_version(self, kept: VersionInfo) -> bytes: ...
    def log(self) -> Iterator[LogEntry]: ...
    def last_change(self, path: str) -> LogEntry | None: ...

    # ---- proposals ----------------------------------------------------------------------------
    # A proposal is kept as the plain record ``fsmem.proposals.ChangeProposal`` turns into (asdict).
    def save_proposal(self, record: dict[str, Any]) -> None: ...
    def load_proposal(self, proposal_id: str) -> dict[str, Any] | None: ...
    def proposal_ids(self) -> list[str]: ...
    def delete_proposal(self, proposal_id: str) -> None: ...

    def close(self) -> None: ...

    # ---- copy (fsmem/copy.py: a whole project from one store to another) ------------------------
    def export_project(self) -> ProjectCopy: ...
    def import_project(self, copy: ProjectCopy) -> None: ...


# ---- copy -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CopiedFile:
    path: str
    data: bytes
    modified: float  # seconds since the epoch


@dataclass(frozen=True)
class CopiedVersion:
    """A kept version with its bytes, as ``export_project`` reads it."""

    path: str
    version: str
    kept_at: str  # ISO time, as ``VersionInfo.kept_at``
    command: str
    data: bytes


@dataclass(frozen=True)
class ProjectCopy:
    """Everything a project holds, read at one moment: ``Store.export_project`` gives it,
    ``Store.import_project`` writes it (all or nothing, into a store that holds no memory yet).

    ``versions`` are oldest first (per path, the order ``versions()`` shows reversed); ``log`` in its
    order. ``skipped`` names what the source held that is not memory (not copied)."""

    files: list[CopiedFile]
    versions: list[CopiedVersion]
    log: list[LogEntry]
    proposals: list[dict[str, Any]]  # records, as ``save_proposal`` takes them
    skipped: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.files or self.versions or self.log or self.proposals)
