"""The index's freshness keeper: what changed since the index last looked, and bringing it level.

The question is the store's (``fsmem._store.IndexFeed``): only the store knows whether the answer is a
walk, a watcher or a sequence number. Its sources, cheapest first:

- what the feed noted (``probe``/``noted``): the folder's pending list of paths changes through fsmem
  touched, PostgreSQL's log after the sequence number this generation applied; applied by whoever
  searches next, under tantivy's writer lock only (a search never waits for a writer's lock);
- a watcher (the folder: ``fsmem._watch``; PostgreSQL: LISTEN/NOTIFY): while one vouches, searches skip
  the rest;
- the comparison (``compare``): the folder walks its stats (``Drive.changes_since``), PostgreSQL
  lists the rows' sizes and modified times.

On the folder, a hand edit found by the watcher or the comparison keeps the text it replaced (the index
stores the text it last read) as a version, logged as a ``hand_edit``, so nothing a person overwrote is
lost (``FolderFeed``, below: the folder's answers).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from fsmem._core.search import RACY_WINDOW_NS, Indexed, Plan
from fsmem._core.versions import version_of
from fsmem._drive import Drive
from fsmem._errors import FsmemError
from fsmem._index_state import (
    Manifest,
    file_key,
    pending_file,
    pending_mark,
    read_applied,
    read_pending,
    watcher_health,
)
from fsmem._index_store import BIG_BATCH, MAX_INDEXED_BYTES, IndexStore
from fsmem._store import IndexFeed, IndexWatcher
from fsmem._walk import stamp_of

RECONCILE_CHUNK = 5000  # files re-indexed per batch: a checkout of thousands never holds one writer long


class Freshness:
    """Keeps one index store level with the memory, through the memory store's feed."""

    def __init__(self, store: IndexStore, feed: IndexFeed) -> None:
        self.store = store
        self.feed = feed
        self.files_seen = 0
        self._probed: tuple[str | None, object] | None = None  # (generation, probe) last found applied
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

    # --- the comparison --------------------------------------------------------------------------

    def compare(self) -> Plan:
        """What differs between the files and the index (no lock, no index writes)."""
        self.store.open()
        manifest = self.store.manifest
        assert manifest is not None
        with self._mutex:
            plan, self.files_seen = self.feed.compare(
                manifest.load(), _Memo(manifest, self.store.walk_cache), MAX_INDEXED_BYTES
            )
        return plan

    def reconcile(self) -> Plan:
        """Compare, keep what hand edits replaced, re-index what differs. Returns what it found.

        A large difference (a `git checkout`, thousands of files moved in) is applied in chunks, one
        commit each, so other batches wait seconds, not minutes.
        """
        plan = self.compare()
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
        paths = self._unsettled(paths)
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


class FolderFeed:
    """The folder's answers (``Drive.index_feed()``): the pending list, the watcher, a walk of stats."""

    origin = "the root"
    hand_edits = True
    noted_files = False  # a change's paths: a folder moved or deleted is noted as the folder
    durable_marks = False  # a lost mark re-reads the list from its start: cheap

    def __init__(self, drive: Drive) -> None:
        self.drive = drive
        self.state = drive.state
        self._pending_file = str(pending_file(drive.state))

    def probe(self) -> object:
        return file_key(self._pending_file)

    def noted(self, applied: object) -> tuple[set[str], object] | None:
        return read_pending(self.state, applied)

    def mark(self) -> object:
        return pending_mark(self.state)

    def vouched(self) -> bool:
        return watcher_health(self.state)[0]

    def compare(self, seen: Mapping[str, Indexed], memo: Any, limit: int) -> tuple[Plan, int]:
        return self.drive.changes_since(seen, memo, limit)

    def locked(self) -> AbstractContextManager[None]:
        return self.drive.locked()

    def health(self) -> tuple[bool, dict[str, Any] | None]:
        return watcher_health(self.state)

    def watcher(self, index: Any, **options: float) -> IndexWatcher:
        from fsmem._watch import Watcher  # watchdog: only for a process that searches

        return Watcher(index, **options)

    def unsettled(self, paths: Iterable[str], seen: Mapping[str, Indexed]) -> list[str]:
        out = []
        root = self.drive.root
        for path in sorted(paths):
            entry = seen.get(path)
            if entry is None or stamp_of(root, path) != entry[0]:
                out.append(path)
            elif entry[2] < max(entry[0][1], entry[0][2]) + RACY_WINDOW_NS and _hash_of(self.drive, path) != entry[1]:
                out.append(path)  # changed within the stamp's tick: only the hash can tell
        return out

    def replaced_by_hand(
        self, paths: Iterable[str], seen: Mapping[str, Indexed], text_seen: Callable[[str], bytes | None]
    ) -> list[str]:
        """Only a text the index holds exactly (it hashes to what the manifest recorded) is kept, under
        its real hash; a change through fsmem (the log says it wrote what the file holds) is not a
        hand edit, and keeps its own versions."""
        found: list[tuple[str, bytes, str]] = []
        for path in paths:
            entry = seen.get(path)
            if entry is None:
                continue
            now = self.drive.read(path) if _is_file(self.drive, path) else None
            if now is None or version_of(now[:MAX_INDEXED_BYTES]) == entry[1]:
                continue
            old = text_seen(path)
            if old is None or version_of(old) != entry[1]:
                continue  # not held whole (a giant, or bytes that were not UTF-8)
            found.append((path, old, version_of(now)))
        if not found:
            return []
        kept = []
        with self.drive.change("hand_edit") as tx:  # under the root lock, the log is the whole story
            for path, old, now_version in found:
                last = self.drive.last_change(path)
                if last is not None and last.after != version_of(old):
                    continue  # fsmem wrote what the file holds, or kept this text already
                if last is not None and last.after == now_version:
                    continue
                tx.keep_replaced(path, old, now_version)
                kept.append(path)
        return kept


class _Memo:
    """The walk cache of a generation, keyed by its manifest (which says what was re-read since)."""

    def __init__(self, manifest: Manifest, file: Path) -> None:
        self.manifest = manifest
        self.file = file

    def key(self) -> tuple[int, int] | None:
        return self.manifest.key()

    def paths_since(self, key: tuple[int, int]) -> set[str] | None:
        return self.manifest.paths_since(key)


def _hash_of(drive: Drive, path: str) -> str | None:
    data = drive.read(path) if _is_file(drive, path) else None
    return None if data is None else version_of(data[:MAX_INDEXED_BYTES])


def _is_file(drive: Drive, path: str) -> bool:
    try:
        return drive.resolve(path).is_file()
    except (FsmemError, OSError):  # a path the drive refuses is no memory file
        return False
