"""What a store tells its search index: the freshness keeper's one question, answered the store's
own way (``IndexFeed``), the watcher that keeps an index current while a process lives
(``IndexWatcher``), and what such a watcher drives (``Followed``: the index, as a watcher sees it).

The index builds each store's feed (``fsmem._index.index.feed_of``): the folder's is
``fsmem._index.folder_feed.FolderFeed``, PostgreSQL's ``fsmem._index.postgres_feed.PgFeed``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol

from fsmem._core.search import Indexed, Plan
from fsmem._store.interface import Store


class IndexFeed(Protocol):
    """What changed in a store since its search index last looked: the freshness keeper's one
    question, answered the store's own way. The folder: the list changes through fsmem note, its
    watcher's heartbeat, a walk of stats (``fsmem._index.folder_feed.FolderFeed``); PostgreSQL: the log's
    sequence number, and LISTEN/NOTIFY (``fsmem._index.postgres_feed.PgFeed``).

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

    def stamps(self, paths: Iterable[str]) -> object:
        """What tells whether ``paths`` changed since a delta read them, besides the probe (the folder:
        their stamps, for a person's save; PostgreSQL: nothing, rows change only through the log)."""
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

    def watcher(self, index: Followed, **options: float) -> IndexWatcher:
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


class Followed(Protocol):
    """The index as its watcher drives it: what it reads from, and how it is brought level."""

    drive: Store
    feed: IndexFeed

    def reconcile(self) -> object: ...
    def refresh(self, paths: Iterable[str]) -> object: ...
    def apply_pending(self) -> int: ...
    def read_ahead(self) -> None: ...
    def applied_mark(self) -> object: ...
