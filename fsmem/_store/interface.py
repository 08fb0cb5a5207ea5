"""What every part of fsmem may ask of where a project's memory is kept: the store interface.

Two stores stand behind it: the folder (``fsmem._store.folder.drive.Drive``, the embedded default) and PostgreSQL
(``fsmem._store.postgres.drive.PgDrive``, for many workers on many machines). Everything above them (the tool,
levels, facts, versions, the log, proposals, review, context, the index, the faces) asks only what
this interface offers, so it behaves the same on both::

    with store.change(command="write", thread="t-1") as tx:
        before = tx.read("MEMORY.md")       # what the change checks against
        tx.write("MEMORY.md", b"# Project\\n")

Paths are already normalized by ``fsmem._core.paths``. What a store keeps for this machine alone and
can rebuild at any time (the search index, parse caches, the watcher's heartbeat) lives under
``state``: inside the root for the folder, in a cache folder of the worker for PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from fsmem._core.search import Stamp
from fsmem._env.config import Settings

if TYPE_CHECKING:  # the records' types only: a search asks the store for none of them, nor builds their classes
    from fsmem._store.types import Entry, HandEdit, LogEntry, Parked, ProjectCopy, VersionInfo


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

    # ---- levels and facts (fsmem._memory.levels, fsmem._memory.facts) -------------------------------------------
    def write_identity(self, folder: str, data: bytes) -> None: ...  # a level folder's hidden identity
    def hold(self, name: str) -> None: ...  # "levels", "facts": one such change at a time until this one ends
    def stamp(self, path: str) -> Hashable | None: ...  # as this change leaves the file

    # ---- folders (fsmem._memory.tool: a folder's rename or delete) ----------------------------------------
    def lock_folder(self) -> None:
        """Hold now what a folder's rename or delete holds, before reading the folder's files: no
        other change runs in the project until this one ends (the folder: its root lock is held already)."""
        ...


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
    def check_free(self, destination: str, label: str = "the new path") -> None: ...

    # ---- changing -----------------------------------------------------------------------------
    def change(self, command: str, thread: str | None = None) -> AbstractContextManager[StoreChange]: ...

    # ---- history ------------------------------------------------------------------------------
    def versions(self, path: str) -> list[VersionInfo]: ...
    def read_version(self, kept: VersionInfo) -> bytes: ...
    def log(self) -> Iterator[LogEntry]: ...
    def last_change(self, path: str) -> LogEntry | None: ...

    # ---- proposals ----------------------------------------------------------------------------
    # A proposal is kept as the plain record ``fsmem._store.types.ChangeProposal`` turns into (asdict).
    def save_proposal(self, record: dict[str, Any]) -> None: ...
    def load_proposal(self, proposal_id: str) -> dict[str, Any] | None: ...
    def proposal_ids(self) -> list[str]: ...
    def delete_proposal(self, proposal_id: str) -> None: ...

    def close(self) -> None: ...

    # ---- levels (fsmem._memory.levels): a level folder's identity; a folder taken away by deleting_* -----
    def level_identity(self, folder: str) -> bytes | None: ...  # what tx.write_identity kept
    def parked(self) -> list[Parked]: ...  # folders a deleting_* block has taken away now
    def deleting(self, folder: str, command: str) -> AbstractContextManager[None]: ...

    # ---- facts (fsmem._memory.facts): a stamp tells a file changed without reading it ----------------------
    # The folder: (size, mtime_ns, inode), one stat a file; PostgreSQL: the row's version, one query.
    def stamps(self, folders: Sequence[str]) -> tuple[dict[str, Hashable], dict[str, str]]: ...
    def stamp(self, path: str) -> Hashable | None: ...
    def read_stamped(self, paths: Sequence[str]) -> dict[str, tuple[bytes, Hashable]]: ...  # none: no file
    def folders_mark(self, folders: Sequence[str]) -> Hashable | None: ...  # None: cannot tell, look at all

    # ---- copy (fsmem/_memory/copy.py: a whole project from one store to another) ------------------------
    def export_project(self) -> ProjectCopy: ...
    def import_project(self, copy: ProjectCopy) -> None: ...

    # ---- for the search index ---------------------------------------------------
    def index_read(self, paths: Iterable[str], limit: int) -> Iterator[tuple[str, tuple[Stamp, bytes] | None]]:
        """Each path with the first ``limit`` bytes of its memory file and the stamp its feed compares
        by (``None``: no memory file there), in order; read a few at a time (PostgreSQL: one query
        for many), never all at once."""
        ...
