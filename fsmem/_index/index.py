"""The full-text index of a memory, cut along its seams and composed here:

    store       (``index_store``)  tantivy generations under the store's ``state``: open, follow,
                                   write a batch, rebuild
    freshness   (``freshness``)    what changed since the last look, as the memory's store answers it
                                   (``feed_of(store)``: the folder's pending list, watcher and walk;
                                   PostgreSQL's log sequence and LISTEN/NOTIFY)
    query       (``query``)        clauses, ranking, hits

    index = memory.index                      # Index(drive): the drive brings its settings
    index.search("deploy staging", limit=5)   # the last commit, plus what changed since (read, not committed)
    index.commit_soon()                       # a change returned: its commit, in the background
    index.refresh({"seo/titles.md"}); index.reconcile(); index.rebuild(progress); index.status()

No commit on a search's path: a search answers from the last commit plus a delta of what the feed noted
since (``delta``: those files read now, indexed in RAM, ranked with the committed documents as one
ranking); the commit is made off every acknowledged path by the process that changed something
(``committer``), or by a searching process once the delta has waited ``committer.GRACE`` for it.

The one lock is the feed's (the folder's root lock): only a rebuild's swap and the keeping of hand edits
take it. Index writes are kept apart by tantivy's own writer lock, so a search never waits behind a
change through fsmem.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from fsmem._core.search import SCHEMA_VERSION, Plan, SearchHit
from fsmem._core.text import check_text
from fsmem._errors import BadRequest
from fsmem._index.committer import GRACE, Committer
from fsmem._index.delta import Delta, RamIndex, average_lengths
from fsmem._index.faults import disk_fault
from fsmem._index.feed import IndexFeed, IndexWatcher
from fsmem._index.folder_feed import FolderFeed
from fsmem._index.freshness import Freshness
from fsmem._index.generations import IndexStore, IndexWarning
from fsmem._index.query import TextQuery
from fsmem._index.state import read_applied
from fsmem._store.folder.drive import Drive
from fsmem._store.interface import Store

__all__ = ["Index", "IndexWarning", "SearchHit"]

MAX_LIMIT = 10_000  # more hits than anyone reads; a bigger limit is taken as this one
_NOT_COMPARED = object()  # a search that brings in nothing but what the feed noted (``fresh=False``)


def feed_of(store: Store) -> IndexFeed:
    """How ``store`` tells its index what changed: the folder's feed, or PostgreSQL's."""
    if isinstance(store, Drive):
        return FolderFeed(store)
    from fsmem._index.postgres_feed import PgFeed  # psycopg: only for a store that is PostgreSQL's
    from fsmem._store.postgres.drive import PgDrive

    if not isinstance(store, PgDrive):
        raise TypeError(f"no search index for a store of type {type(store).__name__}")
    return PgFeed(store)


class Index:
    """The index of one memory. Cheap to create; opens (or builds) the tantivy index on first use.
    Safe to share between threads."""

    def __init__(self, drive: Store) -> None:
        self.drive = drive
        self.state = drive.state
        self.feed = feed_of(drive)
        self.store = IndexStore(drive, self.feed)
        self.freshness = Freshness(self.store, self.feed)
        self.query = TextQuery(self.store.schema, self.store.analyzer)
        self.committer = Committer(lambda: self.freshness.apply_pending())
        self._delta: tuple[object, Delta] | None = None  # the last delta read, and what it was read for
        self._ram = RamIndex(self.store)  # what each delta is built in
        self._reading = threading.Lock()  # one delta read at a time: a search waits for a watcher's, and finds it
        self._averages: tuple[object, dict[str, float]] | None = None  # the committed field lengths

    def commit_soon(self) -> None:
        """A change through the store returned: commit what it noted, in the background."""
        self.committer.wake()

    def close(self, timeout: float) -> None:
        """Wait (up to ``timeout`` seconds) for the commit of this process's changes; commit no more."""
        self.committer.close(timeout)

    def search(
        self,
        query: str,
        *,
        include: Iterable[str] | str | None = None,
        exclude: Iterable[str] | str | None = None,
        since: datetime | str | None = None,
        limit: int = 10,
        fresh: bool = True,
        watched: set[str] | None = None,
    ) -> list[SearchHit]:
        """Ranked files for ``query``. ``fresh``: compare with the files first, unless ``watched`` (the
        paths the caller's own watcher saw change and has not applied yet) or another process's
        watcher vouches; changes through fsmem since the last commit are read either way (the delta),
        never committed here."""
        if not isinstance(limit, int) or limit < 1:
            raise BadRequest("limit must be a whole number of at least 1")
        check_text("query", query)  # the Python API and the shell come here without the tool's checks
        # tantivy sizes its collector by the limit: 10**12 aborts the whole process (capacity overflow)
        limit = min(limit, MAX_LIMIT)
        filters = self.query.filters(include, exclude, since)  # refused before anything is touched
        behind = None
        paths: set[str] = set()
        try:
            paths = self.freshness.noted() or set()
        except Exception as error:  # noqa: BLE001 - only a disk fault is answered here
            behind = disk_fault(error, "bringing the search index up to date")
            if behind is None:
                raise
        try:
            hits = self._answer(query, filters, limit, paths, watched if fresh else _NOT_COMPARED)
        except (OSError, ValueError) as error:  # no index to answer from, and no room to build one
            fault = disk_fault(error, "searching the index")
            if fault is None:
                raise
            raise fault from error
        if behind is not None:
            # What the last commit holds is still there to search: an answer beats a refusal. A hand
            # edit whose replaced text could not be kept stays unindexed, so it is kept once there is room.
            warnings.warn(
                IndexWarning(
                    f"the search index could not be brought up to date ({behind.message}); these "
                    "results are from its last commit and may miss the latest changes"
                ),
                stacklevel=2,
            )
        return hits

    def linking_to(self, keys: Iterable[str], *, watched: set[str] | None = None) -> list[str]:
        """Paths of the files holding a link with any of ``keys`` (``core.links.link_keys``), fresh as
        :meth:`search` is."""
        searcher, delta = self._view(self.freshness.noted() or set(), watched)
        return self.query.linking_to(searcher, keys, MAX_LIMIT, delta)

    def hits_for(self, paths: Iterable[str], filters: list[Any]) -> dict[str, SearchHit]:
        """The hits of ``paths`` that pass ``filters`` (score 0): files found by meaning alone."""
        searcher, delta = self._view(self.freshness.noted() or set())
        return self.query.hits_for(searcher, paths, filters, delta)

    def read_ahead(self) -> None:
        """Read what the feed noted since the last commit into the delta the next search answers from,
        before that search comes (a watcher's wake: the search then asks the feed its probe and finds the
        rest read); commits nothing (the committer does, once the delta has waited ``GRACE``)."""
        paths = self.freshness.noted()
        if paths:
            self._delta_of(paths, self.store.searcher())

    def changed_since_commit(self) -> frozenset[str]:
        """The paths changed through the store since the index's last commit (what a search reads for
        itself): what was derived from the committed index for them (passages) may be older than the file."""
        delta = self._view(self.freshness.noted() or set())[1]
        return delta.hidden if delta is not None else frozenset()

    def _view(self, paths: set[str], watched: set[str] | None | object = _NOT_COMPARED) -> tuple[Any, Delta | None]:
        """The committed searcher (taken after the feed's mark was read, so it holds at least what that
        mark says), and the delta of ``paths`` read now (``None``: nothing changed since the commit).
        Unless ``watched`` is ``_NOT_COMPARED``, what else changed (a person's edits, found by this
        process's watcher, ``watched``, or by a comparison) is brought in first (``Freshness.settle_others``)."""
        searcher = self.store.searcher()
        delta = self._delta_of(paths, searcher) if paths else None
        if watched is not _NOT_COMPARED:
            try:
                settled = self.freshness.settle_others(watched, delta)  # type: ignore[arg-type]
            except Exception as error:  # noqa: BLE001 - only a disk fault: the answer is from what is committed
                fault = disk_fault(error, "bringing the search index up to date")
                if fault is None:
                    raise
                warnings.warn(
                    IndexWarning(
                        f"the search index could not be brought up to date ({fault.message}); these "
                        "results are from its last commit and may miss a person's latest edits"
                    ),
                    stacklevel=4,
                )
                settled = False
            if settled:
                searcher = self.store.searcher()
        return searcher, delta

    def _delta_of(self, paths: set[str], searcher: Any) -> Delta:
        self.committer.wake(GRACE, must=False)  # the process that changed them commits first; if it died, this one
        with self._reading:
            changed, removed = self.store.expand(paths, self.feed.noted_files)
            commit = (self.store.generation, self.store.commit_key)
            key = (commit, self.freshness.probed, tuple(changed), tuple(removed), self.feed.stamps(changed))
            known = self._delta
            if known is not None and known[0] == key:
                return known[1]
            averages = self._averages
            if averages is None or averages[0] != commit:
                averages = self._averages = (commit, average_lengths(searcher, self.store.schema, self.store.analyzer))
            delta = Delta.build(self.store, self._ram, changed, removed, searcher, averages[1])
            self._delta = (key, delta)
            return delta

    def _answer(
        self, query: str, filters: list[Any], limit: int, paths: set[str], watched: set[str] | None | object
    ) -> list[SearchHit]:
        try:
            searcher, delta = self._view(paths, watched)
            return self.query.search(searcher, query, filters, limit, delta)
        except ValueError as error:  # a segment file gone or damaged under a live index
            if disk_fault(error, "searching the index") is not None:
                raise
            with self.feed.locked():
                self.store.build_locked(self._catch_up)
            warnings.warn(
                IndexWarning(f"the search index was corrupt ({error}); rebuilt it from the files"), stacklevel=3
            )
            return self.query.search(self.store.searcher(), query, filters, limit)

    # --- freshness -------------------------------------------------------------------------------

    def apply_pending(self) -> int:
        return self.freshness.apply_pending()

    def compare(self) -> Plan:
        return self.freshness.compare()

    def applied_mark(self) -> object:
        """The feed's mark the live generation applied (``None``: none known)."""
        self.store.open()
        return read_applied(self.store.folder)

    def reconcile(self) -> Plan:
        return self.freshness.reconcile()

    def refresh(self, paths: Iterable[str]) -> int:
        return self.freshness.refresh(paths)

    def ensure_fresh(self) -> None:
        self.freshness.ensure_fresh()

    def locked(self) -> AbstractContextManager[None]:
        """The feed's lock (the folder: its root lock, which holds off every change)."""
        return self.feed.locked()

    def watcher(self, **options: float) -> IndexWatcher:
        """The store's watcher for this index, not started (``fsmem._index.watch.Watcher`` for the folder)."""
        return self.feed.watcher(self, **options)

    # --- the store -------------------------------------------------------------------------------

    def rebuild(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Rebuild from the memory beside the live index, then swap it in. Returns the file count.

        Searches keep using the old generation meanwhile; writes wait only for the swap at the end.
        """
        return self.store.rebuild(progress, self._catch_up)

    def _catch_up(self) -> None:
        """On a generation just built, under the feed's lock: what changed while it was being built."""
        plan = self.freshness.compare()
        if plan:
            with self.store.batch() as batch:
                batch.apply(plan.changed, plan.removed)

    def status(self) -> dict[str, Any]:
        """Documents, files, how many are stale, whether a watcher keeps it current."""
        self.freshness.apply_pending()  # changes made through fsmem are never counted as stale
        plan = self.freshness.compare()
        healthy, beat = self.feed.health()
        folder = self.store.folder
        return {
            "documents": self.store.num_docs(),
            "files": self.freshness.files_seen,
            "stale": len(plan.changed) + len(plan.removed),
            "watcher": bool(healthy),
            "watcher_pid": beat.get("pid") if beat else None,
            "generation": self.store.generation,
            "schema": SCHEMA_VERSION,
            "index_bytes": sum(f.stat().st_size for f in folder.iterdir() if f.is_file()),
        }
