"""The folder's answers to the index's freshness keeper: the pending list changes through fsmem note,
the watcher's heartbeat, a walk of stats (``Drive.changes_since``), and keeping what a person's hand
edit replaced as a version (the index holds the text it last read).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from typing import Any

from fsmem._core.search import Indexed, Plan, racy
from fsmem._core.versions import version_of
from fsmem._errors import FsmemError
from fsmem._index.feed import Followed, IndexWatcher
from fsmem._index.generations import MAX_INDEXED_BYTES
from fsmem._index.state import file_key, pending_file, pending_mark, read_pending, watcher_health
from fsmem._store.folder.drive import Drive
from fsmem._store.folder.walk import stamp_of


class FolderFeed:
    """The folder's answers: the pending list, the watcher, a walk of stats."""

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

    def watcher(self, index: Followed, **options: float) -> IndexWatcher:
        from fsmem._index.watch import Watcher  # watchdog: only for a process that searches

        return Watcher(index, **options)

    def stamps(self, paths: Iterable[str]) -> object:
        return tuple(stamp_of(self.drive.root, path) for path in paths)

    def unsettled(self, paths: Iterable[str], seen: Mapping[str, Indexed]) -> list[str]:
        out = []
        root = self.drive.root
        for path in sorted(paths):
            entry = seen.get(path)
            if entry is None or stamp_of(root, path) != entry[0]:
                out.append(path)
            elif racy(max(entry[0][1], entry[0][2]), entry[2]) and _hash_of(self.drive, path) != entry[1]:
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


def _hash_of(drive: Drive, path: str) -> str | None:
    data = drive.read(path) if _is_file(drive, path) else None
    return None if data is None else version_of(data[:MAX_INDEXED_BYTES])


def _is_file(drive: Drive, path: str) -> bool:
    try:
        return drive.resolve(path).is_file()
    except (FsmemError, OSError):  # a path the drive refuses is no memory file
        return False
