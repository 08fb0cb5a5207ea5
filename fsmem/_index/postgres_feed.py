"""PostgreSQL's answers to the search index's freshness keeper (``fsmem._index.feed.IndexFeed``).

Each worker keeps its own tantivy index of a project in its cache folder (``PgDrive.state``), fed
from the log: the log's sequence number is in commit order, so a worker that applied sequence N has
seen every change up to N. Before a search the keeper asks for the newest number (one indexed query);
when it moved, it reads the paths changed since (``PgStore.log_from``), re-reads them from the
rows, and records the mark applied beside the index generation (durably), so a new process on the
same cache goes on from there. A mark is ``(project identity, sequence number, that log row's time)``:
sequence numbers are shared by every project of a database and start again in a restored one, so a
mark of another project (a cache folder used for two), or whose log row is gone or was written at
another time (a database restored from a backup, a project made again), re-reads the whole memory::

    feed = PgFeed(drive)            # what fsmem._index.index.feed_of(drive) makes
    feed.probe()                    # the newest sequence number: the one query a search makes
    feed.noted(applied)             # (paths changed after the mark ``applied``, the mark they reach)

A long-lived worker also LISTENs (``PgWatcher``): each commit's NOTIFY wakes it to read the change into
the delta the next search answers from (``Index.read_ahead``: the log rows and the rows themselves, off
the search's path), so that search asks the newest number and finds the rest read; the worker's
committer commits it to the cache index later, in the background. Rows change only through fsmem, so
there are no hand edits to keep and nothing to compare by stats: the log is the whole story (``vouched``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from fsmem._core.search import Indexed, Plan
from fsmem._errors import Busy
from fsmem._index.feed import Followed, IndexWatcher
from fsmem._store.atomic import make_dirs
from fsmem._store.postgres.drive import stamp_ns
from fsmem._store.postgres.log import Listener
from fsmem._store.postgres.store import PgStore

if TYPE_CHECKING:
    from fsmem._store.postgres.drive import PgDrive

LOCK_FILE = "index.lock"
LISTEN_READY_WAIT = 5.0  # seconds a watcher's start waits for LISTEN to be in place


class PgFeed:
    """The log's sequence number as the index's feed; marks are sequence numbers."""

    origin = "the database"
    hand_edits = False  # rows change only through fsmem
    noted_files = True  # the log names each file a change touched, a folder's one by one
    durable_marks = True  # the number applied is the whole story of what this index holds

    def __init__(self, drive: PgDrive) -> None:
        self.drive = drive
        self.pg: PgStore = drive.pg
        self.state = drive.state
        self.timeout = drive.settings.lock_timeout
        self.watchers: set[PgWatcher] = set()  # this process's, running: what ``health`` says
        self._local = threading.local()

    def probe(self) -> object:
        return self.pg.newest_seq()

    def noted(self, applied: object) -> tuple[set[str], object] | None:
        own = own_mark(applied, self.pg.identity)
        if own is None:  # none, an older fsmem's, or another project's (a cache folder used for two)
            return {""}, self.mark()  # "": the whole memory, re-read from the rows
        since, when = own
        at, newest, paths = self.pg.log_from(since)
        if since and at != when:  # the row this index applied is gone or was written again: the
            return {""}, self.mark()  # database was restored from a backup, or the log was reset
        if not paths:
            return None
        return set(paths), (self.pg.identity, *newest)

    def mark(self) -> object:
        return (self.pg.identity, *self.pg.newest_time())

    def vouched(self) -> bool:
        return True

    def compare(self, seen: Mapping[str, Indexed], memo: Any, limit: int) -> tuple[Plan, int]:
        """The rows' sizes and modified times against what the index holds (one query, no content)."""
        changed = []
        present = set()
        for entry in self.drive.walk_files():
            present.add(entry.path)
            held = seen.get(entry.path)
            if held is None or tuple(held[0][:2]) != (entry.size, stamp_ns(entry.modified)):
                changed.append(entry.path)
        removed = sorted(path for path in seen if path not in present)
        return Plan(tuple(sorted(changed)), tuple(removed), ()), len(present)

    def stamps(self, paths: Iterable[str]) -> object:
        return ()  # rows change only through fsmem, each change a new sequence number (the probe)

    def unsettled(self, paths: Iterable[str], seen: Mapping[str, Indexed]) -> list[str]:
        return sorted(paths)  # re-reading a row costs what checking it would

    def replaced_by_hand(
        self, paths: Iterable[str], seen: Mapping[str, Indexed], text_seen: Callable[[str], bytes | None]
    ) -> list[str]:
        return []

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """This cache's lock (a rebuild's swap), between the threads and processes sharing it; never
        the project's: one worker's rebuild holds up no other worker."""
        depth = getattr(self._local, "depth", 0)
        if depth:
            self._local.depth = depth + 1
            try:
                yield
            finally:
                self._local.depth -= 1
            return
        make_dirs(self.state)  # a cache folder removed by hand is made again: it is derived
        fd = os.open(self.state / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            deadline = time.monotonic() + self.timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise Busy(
                            f"the search index in {self.state} is being rebuilt by another process; "
                            "try again in a moment"
                        ) from None
                    time.sleep(0.01)
            self._local.depth = 1
            try:
                yield
            finally:
                self._local.depth = 0
        finally:
            os.close(fd)  # releases the flock

    def health(self) -> tuple[bool, dict[str, Any] | None]:
        running = [watcher for watcher in self.watchers if watcher.watching]
        if not running:
            return False, None
        return True, {
            "pid": os.getpid(),
            "state": "ok",
            "listening": True,
        }  # not the channel: its name is the project's secret

    def watcher(self, index: Followed, **options: float) -> IndexWatcher:
        return PgWatcher(index, self)


class PgWatcher:
    """LISTEN on the project's channel: each commit's NOTIFY reads the change into this worker's view."""

    def __init__(self, index: Followed, feed: PgFeed) -> None:
        self.index = index
        self.feed = feed
        self.errors: list[str] = []
        self.wakes = 0  # notifications acted on, each read ahead by the time it counts (the tests watch it)
        self._listener: Listener | None = None
        self._stopped = threading.Event()
        self._applied = -1  # the newest sequence number this watcher brought the index's view to
        self._mutex = threading.Lock()

    @property
    def watching(self) -> bool:
        listener = self._listener
        return listener is not None and listener.ready.is_set() and not self._stopped.is_set()

    def start(self) -> PgWatcher:
        self._listener = self.feed.pg.listen(self._notified)
        self._listener.ready.wait(LISTEN_READY_WAIT)
        if not self._listener.ready.is_set():
            self.errors.append(f"LISTEN was not in place after {LISTEN_READY_WAIT:g} s")
        self.feed.watchers.add(self)
        self._catch_up()  # after LISTEN is in place: nothing committed in between slips by
        return self

    def stop(self) -> None:
        self._stopped.set()
        self.feed.watchers.discard(self)
        if self._listener is not None:
            self._listener.stop()

    def unapplied(self) -> set[str] | None:
        """Nothing to refresh by path: a search's own newest-number query covers what a notification
        has not brought in yet. ``None`` (compare) never applies to the log, but says it is not running."""
        return set() if self.watching else None

    def _notified(self, seq: int) -> None:
        if self._stopped.is_set() or seq <= self._applied:
            return  # a notification of a commit a catch-up already applied
        with self._mutex:
            try:
                self.index.read_ahead()  # no commit here: on a busy disk it would hold up the next wakes
                self._applied = max(self._applied, seq)
            except Exception as error:  # noqa: BLE001 - keep listening; the next search reads it itself
                self.errors.append(f"{type(error).__name__}: {error}")
        self.wakes += 1

    def _catch_up(self) -> None:
        with self._mutex:
            try:
                self.index.apply_pending()
                self._applied = max(self._applied, applied_seq(self.index))
            except Exception as error:  # noqa: BLE001 - keep listening; the next search catches up itself
                self.errors.append(f"{type(error).__name__}: {error}")


def own_mark(applied: object, identity: str) -> tuple[int, int] | None:
    """``(sequence number, its log row's time)`` of a mark of the project ``identity``, else ``None``."""
    if not (isinstance(applied, tuple) and len(applied) == 3 and applied[0] == identity):
        return None
    seq, when = applied[1], applied[2]
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in (seq, when)):
        return None
    return seq, when


def applied_seq(index: Followed) -> int:
    """The sequence number the live generation of ``index`` (a PostgreSQL project's) applied (0: none known)."""
    feed = index.feed
    assert isinstance(feed, PgFeed), "a PostgreSQL project's index"
    own = own_mark(index.applied_mark(), feed.pg.identity)
    return 0 if own is None else own[0]
