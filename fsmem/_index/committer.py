"""The index's commits, off every acknowledged path: one thread a process per index, batching what it
finds noted (the folder's pending list, PostgreSQL's log) into one commit.

    committer = Committer(index.apply_pending)
    committer.wake()                  # a change of this process returned: commit it soon (BATCH), in the background
    committer.wake(GRACE, must=False) # a search read a delta: commit it if nobody has by then
    committer.close(timeout)          # before a Memory lets go: the commit asked for now is done

A search never waits for it: until the commit lands, every search reads what changed for itself
(``fsmem._index.delta``). The files and the log are the record, so a commit that never happens (a
process killed after its change returned) is only late: the next commit of any process applies it.
A process that exits makes the commit its own changes asked for first; one a search asked for is left
to the next (the thread does not hold the exit for it).
"""

from __future__ import annotations

import threading
import time
import warnings
import weakref
from collections.abc import Callable

BATCH = 0.05  # seconds a change's commit waits for others to join it (and for a search right after it)
GRACE = 0.5  # seconds a search's delta waits for the process that made it to commit it
_POLL = 0.05  # how often a thread waiting for later checks whether its process is exiting


_committers: weakref.WeakSet[Committer] = weakref.WeakSet()  # this process's, for ``at_rest``


def at_rest(timeout: float) -> bool:
    """Wait until no committer of this process has a commit asked for, due or under way (for a caller
    that must see every index at rest: a test's snapshot of a root); whether that happened in time."""
    deadline = time.monotonic() + timeout
    while any(committer.busy() for committer in list(_committers)):
        if time.monotonic() > deadline:
            return False
        time.sleep(_POLL / 5)
    return True


class Committer:
    """Runs ``commit`` (which applies everything noted so far) in a thread of its own, when woken."""

    def __init__(self, commit: Callable[[], object]) -> None:
        self._commit = commit
        self._condition = threading.Condition()
        self._due: float | None = None  # when the next commit is due
        self._must = False  # it was asked for by a change of this process: done even as the process exits
        self._running = False  # a commit is under way
        self._thread: threading.Thread | None = None
        self._closed = False
        self.after: list[Callable[[], None]] = []  # called after each commit (the embedding's wake)
        self.commits = 0  # commits run (the tests watch it)
        self.errors: list[str] = []
        _committers.add(self)

    def busy(self) -> bool:
        """Whether a commit is due or under way."""
        with self._condition:
            return self._due is not None or self._running

    def wake(self, after: float = BATCH, must: bool = True) -> None:
        """Commit in ``after`` seconds (what is noted meanwhile joins the commit). ``must``: a change of
        this process asked for it, so an exiting process still makes it; otherwise it is left to the next."""
        with self._condition:
            if self._closed:
                return
            due = time.monotonic() + after
            self._due = due if self._due is None else min(self._due, due)
            self._must = self._must or must
            if self._thread is None:
                # Not a daemon: an exiting process finishes the commit its own change asked for.
                self._thread = threading.Thread(target=self._loop, name="fsmem-commit", daemon=False)
                self._thread.start()
            else:
                self._condition.notify_all()

    def flush(self, timeout: float) -> bool:
        """Make the commit this process's changes asked for now, and wait until it is done (up to
        ``timeout`` seconds); whether that happened in time."""
        deadline = time.monotonic() + timeout
        with self._condition:
            if self._must:
                self._due = time.monotonic()
                self._condition.notify_all()
            while self._must or (self._running and self._thread is not None):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._condition.wait(min(left, _POLL))
        return True

    def close(self, timeout: float) -> None:
        """Finish the commit this process's changes asked for (up to ``timeout`` seconds), drop one a
        search asked for, and take no more: the index is let go (its store may be closed next)."""
        self.flush(timeout)
        with self._condition:
            self._closed = True
            self._due = None
            self._condition.notify_all()

    def _loop(self) -> None:
        while True:
            with self._condition:
                while True:
                    exiting = not threading.main_thread().is_alive()
                    if self._due is None or (exiting and not self._must):
                        self._due = None  # nothing asked, or only by a search and the process goes
                        self._thread = None
                        self._condition.notify_all()
                        return
                    left = self._due - time.monotonic()
                    if left <= 0 or exiting:
                        break
                    self._condition.wait(min(left, _POLL))
                self._due, self._must, self._running = None, False, True
            try:
                self._commit()
                self.commits += 1
                for hook in self.after:
                    hook()
            except Exception as error:  # noqa: BLE001 - a thread of its own: nothing above it to tell
                self.errors.append(f"{type(error).__name__}: {error}")
                warnings.warn(
                    f"could not commit a change to the search index ({error}); searches read it for "
                    "themselves until a later commit lands",
                    stacklevel=2,
                )
            finally:
                with self._condition:
                    self._running = False
                    self._condition.notify_all()
