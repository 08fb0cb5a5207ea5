"""The index's freshness keeper: what changed since the index last looked, and bringing it level.

Three sources, cheapest first:

- the pending list (``index_state``): paths changes through fsmem touched, applied by whoever
  searches next in any process, under tantivy's writer lock only (a search never waits for the root
  lock a writer holds);
- a watcher (``fsmem.watch``): hand edits, as they happen; while one beats, searches skip the rest;
- the comparison: ``Drive.changes_since`` says which files differ from what the index last saw (a
  folder answers with a walk of stats; another kind of drive would answer its own way).

A hand edit found by the watcher or the comparison keeps the text it replaced (the index stores the
text it last read) as a version, logged as a ``hand_edit``, so nothing a person overwrote is lost.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path

from fsmem.core.search import RACY_WINDOW_NS, Plan
from fsmem.core.versions import version_of
from fsmem.drive import Drive
from fsmem.errors import FsmemError
from fsmem.index_state import (
    Manifest,
    pending_file,
    read_applied,
    read_pending,
    watcher_health,
)
from fsmem.index_store import BIG_BATCH, MAX_INDEXED_BYTES, Store
from fsmem.walk import stamp_of

RECONCILE_CHUNK = 5000  # files re-indexed per batch: a checkout of thousands never holds one writer long


class Freshness:
    """Keeps one store level with the files of its drive."""

    def __init__(self, store: Store, drive: Drive) -> None:
        self.store = store
        self.drive = drive
        self.files_seen = 0
        self._pending_file = str(pending_file(drive.root))
        self._pending_seen: tuple[int, int, int] | None = None
        self._mutex = threading.Lock()  # one comparison at a time per process (they share the walk cache)

    # --- the pending list ------------------------------------------------------------------------

    def apply_pending(self) -> int:
        """Index the paths changes through fsmem noted since this generation last applied the list.

        Takes tantivy's writer lock, never the root lock: a search does not wait for a writer. A write
        that returned has noted its paths, so the next search anywhere finds them here.
        """
        key = _stat_key(self._pending_file)
        if key is None or key == self._pending_seen:
            return 0
        self.store.open()
        got = read_pending(self.drive.root, read_applied(self.store.folder))
        if got is None or not got[0]:
            self._pending_seen = key
            return 0
        with self.store.batch() as batch:
            got = read_pending(self.drive.root, read_applied(self.store.folder))  # inside: authoritative
            if got is None:
                return 0
            paths, batch.applied = got
            changed = batch.refresh(paths)
        self._pending_seen = key
        return changed

    # --- the comparison --------------------------------------------------------------------------

    def compare(self) -> Plan:
        """What differs between the files and the index (no lock, no index writes)."""
        self.store.open()
        manifest = self.store.manifest
        assert manifest is not None
        with self._mutex:
            plan, self.files_seen = self.drive.changes_since(
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
        elif not watcher_health(self.drive.root)[0]:
            self.reconcile()

    def _unsettled(self, paths: Iterable[str]) -> list[str]:
        """``paths`` less the files the index holds exactly as they are now."""
        self.store.open()
        manifest = self.store.manifest
        assert manifest is not None
        seen = manifest.load()
        out = []
        for path in sorted(paths):
            entry = seen.get(path)
            if entry is None or stamp_of(self.drive.root, path) != entry[0]:
                out.append(path)
            elif entry[2] < max(entry[0][1], entry[0][2]) + RACY_WINDOW_NS and _hash_of(self.drive, path) != entry[1]:
                out.append(path)  # changed within the stamp's tick: only the hash can tell
        return out

    # --- hand edits ------------------------------------------------------------------------------

    def keep_hand_edits(self, paths: Iterable[str]) -> list[str]:
        """Keep, as versions, the texts the index last read for ``paths`` that a person has since
        replaced outside fsmem. Returns the paths kept.

        Only a text the index holds exactly (it hashes to what the manifest recorded) is kept, under
        its real hash; a change through fsmem (the log says it wrote what the file holds) is not a
        hand edit, and keeps its own versions.
        """
        manifest = self.store.manifest
        if manifest is None:
            return []
        seen = manifest.load()
        found: list[tuple[str, bytes, str]] = []
        for path in paths:
            entry = seen.get(path)
            if entry is None:
                continue
            now = self.drive.read(path) if _is_file(self.drive, path) else None
            if now is None or version_of(now[:MAX_INDEXED_BYTES]) == entry[1]:
                continue
            old = self.store.text_seen(path)
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


def _stat_key(path: str) -> tuple[int, int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns
