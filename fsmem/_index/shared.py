"""One index and one watcher per memory in a process, however many ``Memory`` objects open it.

A server that opens a ``Memory`` per request, or a test harness that opens fifty, would otherwise
give each its own tantivy index and its own watcher on the same files: fifty writers queueing for
tantivy's one writer lock, fifty inotify watches of every folder. Here a process keeps one
``Index`` (and at most one watcher) per memory, keyed by where the index lives (the store's ``state``)
and the settings it runs with; each ``Memory`` holds a ``Share`` of it, taken on first use:

    share = join(drive)                        # nothing is opened: the index opens on its first search
    with share.lease() as index:               # the index, kept on a live store for the call
        index.search("deploy", watched=share.watched(start=True))
    share.leave()                              # the last one out stops the watcher

A store that holds connections (PostgreSQL's pool) is closed with the ``Memory`` that opened it: when
that one leaves while others stay, the index is built again on the store of one that stays (its
watcher too), after the searches still using the old one have returned.
"""

from __future__ import annotations

import os
import threading
import warnings
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol, TypeVar

from fsmem._store.folder.drive import Drive
from fsmem._store.interface import Store

if TYPE_CHECKING:
    from fsmem._index.feed import IndexWatcher
    from fsmem._index.index import Index

__all__ = ["Attached", "Share", "join"]


class Attached(Protocol):
    """What a layer above keeps beside the shared index (the meaning's embedding worker): one per
    memory in a process too, stopped when the index it was made on goes."""

    def stop(self) -> None: ...


AttachedT = TypeVar("AttachedT", bound=Attached)

_registry: dict[tuple[object, ...], _Root] = {}
_registry_lock = threading.Lock()


def join(drive: Store) -> Share:
    """A share of this process's index of ``drive``'s memory (made on first use, nothing opened yet)."""
    key = (type(drive).__name__, os.path.realpath(drive.state), drive.label, drive.settings)
    with _registry_lock:
        root = _registry.get(key)
        if root is None:
            root = _registry[key] = _Root(key)
        share = Share(root, drive)
        root.members.add(share)
    return share


class _Root:
    """What the shares of one memory hold in common: the index, its watcher, and who holds a share."""

    def __init__(self, key: tuple[object, ...]) -> None:
        self.key = key
        # Held weakly: a Memory dropped without close() leaves with its share. (The one whose store the
        # index reads through stays until closed: the index holds its store, which holds its hooks.)
        self.members: weakref.WeakSet[Share] = weakref.WeakSet()
        self.index: Index | None = None
        self.watcher: IndexWatcher | None = None
        self.watch_refused = False
        self.attached: dict[str, Attached] = {}  # made on the index now, by name
        self.leases: dict[int, int] = {}  # id(index) -> calls using it now
        self.mutex = threading.RLock()
        self.idle = threading.Condition(self.mutex)

    def current(self, drive: Store) -> Index:
        index = self.index
        if index is not None:
            return index
        with self.mutex:
            if self.index is None:
                from fsmem._index.index import Index  # tantivy: loaded by the first search (or commit)

                self.index = Index(drive)
            return self.index


class Share:
    """One ``Memory``'s hold on its process's index of the memory."""

    def __init__(self, root: _Root, drive: Store) -> None:
        self._root = root
        self.drive = drive

    @property
    def index(self) -> Index:
        return self._root.current(self.drive)

    @property
    def watcher(self) -> IndexWatcher | None:
        return self._root.watcher

    @contextmanager
    def lease(self) -> Iterator[Index]:
        """The index, kept on the store it reads from until the block ends (a leaving share waits)."""
        root = self._root
        if isinstance(self.drive, Drive):  # a folder's index is never handed over: nothing to count
            yield root.current(self.drive)
            return
        with root.mutex:
            index = root.current(self.drive)
            root.leases[id(index)] = root.leases.get(id(index), 0) + 1
        try:
            yield index
        finally:
            with root.mutex:
                root.leases[id(index)] -= 1
                if not root.leases[id(index)]:
                    del root.leases[id(index)]
                    root.idle.notify_all()

    def attached(self, name: str, make: Callable[[Index], AttachedT]) -> AttachedT:
        """The object kept under ``name`` beside the index (made by ``make(index)`` on first use): one
        for every ``Memory`` of the memory in this process."""
        root = self._root
        with root.mutex:
            found = root.attached.get(name)
            if found is None:
                found = root.attached[name] = make(root.current(self.drive))
            return found  # type: ignore[return-value]  # what ``make`` made under this name

    def attached_if_any(self, name: str) -> Attached | None:
        return self._root.attached.get(name)

    def watched(self, start: bool) -> set[str] | None:
        """What the process's watcher has seen change and not applied yet (``None``: no watcher
        vouches). With ``start``, the first call starts one; a process that searches again then
        refreshes only those paths instead of comparing every file."""
        root = self._root
        if root.watcher is None and start and not root.watch_refused:
            with root.mutex:
                if root.watcher is None and not root.watch_refused:
                    self._start_watcher()
        watcher = root.watcher
        return watcher.unapplied() if watcher is not None else None

    def _start_watcher(self, **options: float) -> None:
        root = self._root
        try:
            watcher = root.current(self.drive).watcher(**options).start()  # the store's: watchdog, or LISTEN
        except (ImportError, OSError) as error:
            self._refuse_watching(str(error))
            return
        if not watcher.watching:
            watcher.stop()
            self._refuse_watching("; ".join(watcher.errors) or "no watch could be placed")
            return
        root.watcher = watcher

    def _refuse_watching(self, reason: str) -> None:
        self._root.watch_refused = True
        warnings.warn(
            f"cannot watch {self.drive.label} for changes ({reason}); every search asks what changed instead",
            stacklevel=6,
        )

    def watch(self, **options: float) -> IndexWatcher:
        """Start the process's watcher of this memory with ``options``, replacing the one it had."""
        root = self._root
        with root.mutex:
            if root.watcher is not None:
                root.watcher.stop()
                root.watcher = None
            root.watcher = root.current(self.drive).watcher(**options).start()
            root.watch_refused = False
            return root.watcher

    def leave(self) -> None:
        """Give this share up. The last one out stops the watcher and forgets the index; a share whose
        store the index reads from hands it to one that stays, unless the store holds nothing to close."""
        root = self._root
        with _registry_lock:
            if self not in root.members:
                return
            root.members.discard(self)
            successor = next(iter(root.members), None)
            last = successor is None
            if last and _registry.get(root.key) is root:
                del _registry[root.key]
        with root.mutex:
            index = root.index
            if last:
                watcher, root.watcher, root.index = root.watcher, None, None
            elif successor is not None and root.index is not None and root.index.drive is self.drive:
                if isinstance(self.drive, Drive):
                    return  # a folder holds no connection: the index goes on reading through it
                watcher = self._hand_over(successor.drive)
            else:
                return
            attached, root.attached = list(root.attached.values()), {}  # made on the index that went
        if watcher is not None:
            watcher.stop()
        for each in attached:
            each.stop()
        if last and index is not None:
            index.close(self.drive.settings.lock_timeout)  # this process's changes committed before it goes

    def _hand_over(self, drive: Store) -> IndexWatcher | None:
        """Under the root's mutex: rebuild the index on ``drive`` once the calls on this one have
        returned, and restart the watcher on it. Returns the old watcher, to be stopped."""
        root = self._root
        old = root.index
        assert old is not None
        from fsmem._index.index import Index

        root.index = Index(drive)
        root.idle.wait_for(lambda: id(old) not in root.leases)
        watcher, root.watcher = root.watcher, None
        if watcher is not None:
            try:
                root.watcher = root.index.watcher().start()
            except (ImportError, OSError):
                root.watcher = None  # searches compare (or catch up from the log) instead
        return watcher
