"""The index's freshness keeper: what changed since the index last looked, and bringing it level.

The question is the store's (``fsmem._index.feed.IndexFeed``): only the store knows whether the answer is a
walk, a watcher or a sequence number. Its sources, cheapest first:

- what the feed noted (``probe``/``noted``): the folder's pending list of paths changes through fsmem
  touched, PostgreSQL's log after the sequence number this generation applied; applied by whoever
  searches next, under tantivy's writer lock only (a search never waits for a writer's lock);
- a watcher (the folder: ``fsmem._index.watch``; PostgreSQL: LISTEN/NOTIFY): while one vouches, searches skip
  the rest;
- the comparison (``compare``): the folder walks its stats (``Drive.changes_since``), PostgreSQL
  lists the rows' sizes and modified times.

On the folder, a hand edit found by the watcher or the comparison keeps the text it replaced (the index
stores the text it last read) as a version, logged as a ``hand_edit``, so nothing a person overwrote is
lost (``FolderFeed``, below: the folder's answers).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path

from fsmem._core.search import Plan
from fsmem._index.delta import Delta
from fsmem._index.feed import IndexFeed
from fsmem._index.generations import BIG_BATCH, MAX_INDEXED_BYTES, IndexStore
from fsmem._index.state import (
    Manifest,
    read_applied,
)

RECONCILE_CHUNK = 5000  # files re-indexed per batch: a checkout of thousands never holds one writer long
DELTA_LIMIT = 2000  # paths a search reads for itself; past it (a bulk change left uncommitted) it applies them


class Freshness:
    """Keeps one index store level with the memory, through the memory store's feed."""

    def __init__(self, store: IndexStore, feed: IndexFeed) -> None:
        self.store = store
        self.feed = feed
        self.files_seen = 0
        self._probed: tuple[str | None, object] | None = None  # (generation, probe) last found applied
        self.probed: object = None  # what the feed's probe last answered (a delta read for it holds)
        # The feed's last answer, with the (generation, applied mark, probe) it was asked for: what
        # changed after a mark up to a probe's answer never changes, so a search after a watcher's wake
        # asks the feed its probe and nothing more.
        self._noted: tuple[tuple[str | None, object, object], tuple[set[str], object] | None] | None = None
        self._mutex = threading.Lock()  # one comparison at a time per process (they share the walk cache)

    # --- what the feed noted ---------------------------------------------------------------------

    def apply_pending(self) -> int:
        """Index the paths the feed noted since this generation last applied it.

        Takes tantivy's writer lock, never the store's: a search does not wait for a writer. A change
        that returned has been noted (the folder's list, PostgreSQL's log), so the next search anywhere
        finds it here.
        """
        probe = self.feed.probe()
        if probe is None:
            return 0
        self.store.open()
        key = (self.store.generation, probe)
        if key == self._probed:
            return 0
        got = self.feed.noted(read_applied(self.store.folder))
        if got is None or not got[0]:
            self._probed = key
            return 0
        with self.store.batch() as batch:
            got = self.feed.noted(read_applied(self.store.folder))  # inside: authoritative
            if got is None:
                return 0
            paths, batch.applied = got
            changed = batch.refresh(paths, files=self.feed.noted_files)
        self._probed = (self.store.generation, probe)
        return changed

    def noted(self) -> set[str] | None:
        """The paths the feed noted since the live generation's last commit, applied by no one yet: a
        search reads them for itself (its delta) and commits nothing. ``None``: too many to read per search
        (a first build's whole memory, a bulk change whose process died before committing it), which
        are applied here, once, as a rebuild would be."""
        probe = self.probed = self.feed.probe()
        if probe is None:
            return set()
        self.store.open()
        key = (self.store.generation, probe)
        if key == self._probed:
            return set()
        asked = (self.store.generation, read_applied(self.store.folder), probe)
        known = self._noted
        if known is not None and known[0] == asked:
            got = known[1]
        else:
            got = self.feed.noted(asked[1])  # the mark first: the searcher taken after holds it
            self._noted = (asked, got)
        if got is None or not got[0]:
            self._probed = key
            return set()
        if "" in got[0] or len(got[0]) > DELTA_LIMIT:
            self.apply_pending()
            return None
        return set(got[0])  # a copy: the answer kept stays as the feed gave it

    def settle_others(self, watched: set[str] | None, delta: Delta | None) -> bool:
        """Bring the index level with what changed besides the paths ``delta`` reads (a person's edits:
        the text each replaced is kept as a version, then the edit committed, as the index holds the text
        it last read): those this process's own watcher saw (``watched``), or, with no watcher of its own
        and none vouching, what a comparison finds. Whether anything was committed."""
        skip = delta.hidden if delta is not None else frozenset()
        if watched is not None:
            return bool(watched - skip) and self.refresh(watched - skip) > 0
        if self.feed.vouched():
            return False
        return bool(self.reconcile(delta))

    # --- the comparison --------------------------------------------------------------------------

    def compare(self, delta: Delta | None = None) -> Plan:
        """What differs between the files and the index (no lock, no index writes); with ``delta``, the
        index as it holds it (the folders of its paths are listed again, the root is not walked)."""
        self.store.open()
        manifest = self.store.manifest
        assert manifest is not None
        # With no delta the manifest's entries load only if the comparison looks into them (a walk cache
        # that holds needs none); a delta overlays them.
        seen = manifest.view() if delta is None else delta.overlay(manifest.load())
        unrecorded = set(delta.hidden) if delta is not None else set()
        with self._mutex:
            plan, self.files_seen = self.feed.compare(
                seen, _Memo(manifest, self.store.walk_cache, unrecorded), MAX_INDEXED_BYTES
            )
        return plan

    def reconcile(self, delta: Delta | None = None) -> Plan:
        """Compare, keep what hand edits replaced, re-index what differs. Returns what it found.
        ``delta``: what a search read for itself (changes through the store, their commit on its way):
        compared as the delta holds them, and left to that commit.

        A large difference (a `git checkout`, thousands of files moved in) is applied in chunks, one
        commit each, so other batches wait seconds, not minutes.
        """
        plan = self.compare(delta)
        if delta is not None:
            skip = delta.hidden
            plan = Plan(
                tuple(p for p in plan.changed if p not in skip),
                tuple(p for p in plan.removed if p not in skip),
                tuple(p for p in plan.racy if p not in skip),
            )
        if not (plan or plan.racy):
            return plan
        self.keep_hand_edits(plan.changed)
        changed, removed = list(plan.changed), list(plan.removed)
        with self.store.batch(big=len(changed) > BIG_BATCH) as batch:
            batch.apply(changed[:RECONCILE_CHUNK], removed[:RECONCILE_CHUNK])
            batch.settle(plan.racy)
        del changed[:RECONCILE_CHUNK], removed[:RECONCILE_CHUNK]
        while changed or removed:
            with self.store.batch(big=True) as batch:
                batch.apply(changed[:RECONCILE_CHUNK], removed[:RECONCILE_CHUNK])
            del changed[:RECONCILE_CHUNK], removed[:RECONCILE_CHUNK]
        return plan

    def refresh(self, paths: Iterable[str]) -> int:
        """Bring ``paths`` (files or folders) up to date, keeping what hand edits among them replaced.
        Files the index already holds as they are (a change through fsmem a search applied) are skipped."""
        noted = self.noted() or set()  # changes through the store: their writer commits them
        paths = self._unsettled(path for path in paths if path not in noted)
        if not paths:
            return 0
        self.keep_hand_edits(paths)
        with self.store.batch(big=len(paths) > BIG_BATCH) as batch:
            return batch.refresh(paths)

    def ensure_fresh(self, watched: set[str] | None = None) -> None:
        """Apply noted changes; then refresh what this process's own watcher saw change (``watched``),
        or, with no watcher of its own, compare unless another process's watcher beats."""
        self.apply_pending()
        if watched is not None:
            if watched:
                self.refresh(watched)
        elif not self.feed.vouched():
            self.reconcile()

    def _unsettled(self, paths: Iterable[str]) -> list[str]:
        """``paths`` less the files the index holds exactly as they are now, and less the folders
        (made, moved in) whose every file it holds so: a folder a watcher named stays named until the
        watcher's batch, and each search meanwhile would re-index it whole."""
        self.store.open()
        manifest = self.store.manifest
        assert manifest is not None
        seen = manifest.load()
        files, folders = [], []
        for path in paths:
            present = None if not path or path in seen else self.store.files_under(path)
            if present is None:
                files.append(path)
                continue
            differ = self.feed.unsettled(present, seen)
            if differ or len(present) != manifest.count_under(path):
                folders.append(path)
                folders.extend(differ)  # named too: a hand edit among them keeps the text it replaced
        return self.feed.unsettled(files, seen) + folders

    def keep_hand_edits(self, paths: Iterable[str]) -> list[str]:
        """Keep, as versions, the texts the index last read for ``paths`` that a person has since
        replaced outside fsmem (where a person can: the folder). Returns the paths kept."""
        manifest = self.store.manifest
        if manifest is None or not self.feed.hand_edits:
            return []
        return self.feed.replaced_by_hand(paths, manifest.load(), self.store.text_seen)


class _Memo:
    """The walk cache of a generation, keyed by its manifest (which says what was re-read since)."""

    def __init__(self, manifest: Manifest, file: Path, unrecorded: set[str]) -> None:
        self.manifest = manifest
        self.file = file
        self.unrecorded = unrecorded  # paths a delta holds, which the manifest does not record yet

    def key(self) -> tuple[int, int] | None:
        return self.manifest.key()

    def paths_since(self, key: tuple[int, int]) -> set[str] | None:
        return self.manifest.paths_since(key)
