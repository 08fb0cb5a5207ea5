"""What every part of fsmem may ask of where a project's memory is kept: the store interface.

Two stores stand behind it: the folder (``fsmem._drive.Drive``, the embedded default) and PostgreSQL
(``fsmem._pg_drive.PgDrive``, for many workers on many machines). Everything above them (the tool,
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

from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from fsmem._config import Settings
    from fsmem._core.search import Indexed, Plan, Stamp
    from fsmem._drive import Entry, HandEdit, LogEntry, Parked, VersionInfo


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

    # ---- levels and facts (fsmem._levels, fsmem._facts) -------------------------------------------
    def write_identity(self, folder: str, data: bytes) -> None: ...  # a level folder's hidden identity
    def hold(self, name: str) -> None: ...  # "levels", "facts": one such change at a time until this one ends
    def stamp(self, path: str) -> Hashable | None: ...  # as this change leaves the file

    # ---- folders (fsmem._tool: a folder's rename or delete) ----------------------------------------
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
    def refuse_special(self, path: str) -> None: ...
    def check_free(self, destination: str, label: str = "the new path") -> None: ...

    # ---- changing -----------------------------------------------------------------------------
    def change(self, command: str, thread: str | None = None) -> AbstractContextManager[StoreChange]: ...

    # ---- history ------------------------------------------------------------------------------
    def versions(self, path: str) -> list[VersionInfo]: ...
    def read_version(self, kept: VersionInfo) -> bytes: ...
    def log(self) -> Iterator[LogEntry]: ...
    def last_change(self, path: str) -> LogEntry | None: ...

    # ---- proposals ----------------------------------------------------------------------------
    # A proposal is kept as the plain record ``fsmem._proposals.ChangeProposal`` turns into (asdict).
    def save_proposal(self, record: dict[str, Any]) -> None: ...
    def load_proposal(self, proposal_id: str) -> dict[str, Any] | None: ...
    def proposal_ids(self) -> list[str]: ...
    def delete_proposal(self, proposal_id: str) -> None: ...

    def close(self) -> None: ...

    # ---- levels (fsmem._levels): a level folder's identity; a folder taken away by deleting_* -----
    def level_identity(self, folder: str) -> bytes | None: ...
    def parked(self) -> list[Parked]: ...  # folders a deleting_* block has taken away now
    def deleting(self, folder: str, command: str) -> AbstractContextManager[None]: ...
    def restore_parked(self) -> list[str]: ...  # put back what a dead process's block had taken away

    # ---- facts (fsmem._facts): a stamp tells a file changed without reading it ----------------------
    # The folder: (size, mtime_ns, inode), one stat a file; PostgreSQL: the row's version, one query.
    def stamps(self, folders: Sequence[str]) -> tuple[dict[str, Hashable], dict[str, str]]: ...
    def stamp(self, path: str) -> Hashable | None: ...
    def read_stamped(self, paths: Sequence[str]) -> dict[str, tuple[bytes, Hashable]]: ...  # none: no file
    def folders_mark(self, folders: Sequence[str]) -> Hashable | None: ...  # None: cannot tell, look at all

    # ---- copy (fsmem/_copy.py: a whole project from one store to another) ------------------------
    def export_project(self) -> ProjectCopy: ...
    def import_project(self, copy: ProjectCopy) -> None: ...

    # ---- the search index (issue 12, pg-index) ---------------------------------------------------
    def index_read(self, paths: Iterable[str], limit: int) -> Iterator[tuple[str, tuple[Stamp, bytes] | None]]:
        """Each path with the first ``limit`` bytes of its memory file and the stamp its feed compares
        by (``None``: no memory file there), in order; read a few at a time (PostgreSQL: one query
        for many), never all at once."""
        ...

    def index_feed(self) -> IndexFeed:
        """How this store tells its search index what changed (cheap to make; one per index)."""
        ...


# ---- the search index (issue 12, pg-index) ----------------------------------------------------------


class IndexFeed(Protocol):
    """What changed in a store since its search index last looked: the freshness keeper's one
    question, answered the store's own way. The folder: the list changes through fsmem note, its
    watcher's heartbeat, a walk of stats (``fsmem._freshness.FolderFeed``); PostgreSQL: the log's
    sequence number, and LISTEN/NOTIFY (``fsmem._pg_index.PgFeed``).

    A *mark* says how far a generation of the index applied the feed; it is the store's own JSON
    value (the folder: the pending list's token and offset; PostgreSQL: the project's identity, a
    sequence number and that log row's time, so a cache of another project or of a database restored
    from a backup is read again) and is kept beside the generation, so a new process on the same index
    goes on from there.
    """

    origin: str  # where a rebuild reads the memory from, for messages: "the root", "the database"
    hand_edits: bool  # files change outside the store (an editor): the text they replaced is kept
    noted_files: bool  # ``noted`` names files only (a log's entries), never a folder to list again
    durable_marks: bool  # marks are fsynced (a log's number is worth it; a pending list re-reads cheaply)

    def probe(self) -> object:
        """Cheap, before every search: the same answer as last time when nothing changed since
        (``None``: nothing was ever noted)."""
        ...

    def noted(self, applied: object) -> tuple[set[str], object] | None:
        """The paths changed after the mark ``applied`` and the mark they reach (``None``: none)."""
        ...

    def mark(self) -> object:
        """The mark as of now: a build that compares after taking it has seen everything up to it."""
        ...

    def vouched(self) -> bool:
        """Whether ``noted`` is the whole story now (no comparison needed before a search)."""
        ...

    def compare(self, seen: Mapping[str, Indexed], memo: Any, limit: int) -> tuple[Plan, int]:
        """What differs between the memory and ``seen`` (what the index holds), and the file count."""
        ...

    def unsettled(self, paths: Iterable[str], seen: Mapping[str, Indexed]) -> list[str]:
        """``paths`` less those the index holds exactly as they are now."""
        ...

    def replaced_by_hand(
        self, paths: Iterable[str], seen: Mapping[str, Indexed], text_seen: Callable[[str], bytes | None]
    ) -> list[str]:
        """Keep, as versions, texts the index holds that a person replaced outside fsmem; the paths kept."""
        ...

    def locked(self) -> AbstractContextManager[None]:
        """What a swap of index generations holds (the folder: the root lock; PostgreSQL: the cache's)."""
        ...

    def health(self) -> tuple[bool, dict[str, Any] | None]:
        """Whether a watcher keeps the index current between searches, and what it last said."""
        ...

    def watcher(self, index: Any, **options: float) -> IndexWatcher:
        """This store's watcher for ``index`` (not started): watchdog for the folder, LISTEN for PostgreSQL."""
        ...


class IndexWatcher(Protocol):
    """Keeps an index current while a process lives (started by the first search, stopped by close)."""

    errors: list[str]

    @property
    def watching(self) -> bool: ...

    def start(self) -> IndexWatcher: ...
    def stop(self) -> None: ...
    def unapplied(self) -> set[str] | None:
        """Paths seen changing and not applied yet while it vouches for the rest; ``None``: it does not."""
        ...


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
