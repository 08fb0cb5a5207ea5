"""The review run by itself: after the turn that makes a conversation due, in the background.

    reviews = BackgroundReviews(memory, scope, model, thread_id)
    reviews.after_turn(session.messages)     # True: a review started (never delays the answer)
    for line in reviews.notices():           # what finished reviews did, one line each
        print(line)                          # "Memory updated · Skill 'weekly-report' updated"
    reviews.wait()                           # before the process ends

The decision is ``fsmem._core.due.review_due``, read from the stored conversation; the review is
``fsmem._memory.review.review`` on a copy of it. One review per conversation at a time, across threads
and processes: a review holds an exclusive ``flock`` on ``<state>/reviews/<conversation>.lock`` while it
runs (the kernel lets it go when the process dies, so a crash never blocks the next one); a turn that
ends while one runs starts none. On PostgreSQL the lock is in the worker's cache folder: a
conversation is one harness's, on one machine.
"""

from __future__ import annotations

import copy
import fcntl
import hashlib
import logging
import os
import threading
from pathlib import Path
from typing import IO, Any

from fsmem._core.due import ReviewDue, TurnEnded, review_due
from fsmem._errors import FsmemError
from fsmem._memory.review import DEFAULT_MAX_CALLS, ReviewResult, review

__all__ = ["BackgroundReviews", "review_lock"]

_log = logging.getLogger("fsmem.review")


def review_lock(state: Path, conversation_id: str) -> IO[bytes] | None:
    """The conversation's review lock, held (close the file to release it); None when a review of
    this conversation runs already, in this process or another."""
    folder = state / "reviews"
    folder.mkdir(mode=0o700, exist_ok=True)
    name = hashlib.sha256(conversation_id.encode("utf-8")).hexdigest()[:24]
    handle = open(folder / f"{name}.lock", "ab")  # noqa: SIM115 - held open for the review's life
    os.chmod(handle.name, 0o600)
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


class BackgroundReviews:
    """The reviews of one conversation: started when due, one at a time, their lines kept for the face."""

    def __init__(
        self,
        memory: Any,
        scope: Any,
        model: Any,
        conversation_id: str,
        *,
        project: str | None = None,
        window: int | None = None,
        max_calls: int = DEFAULT_MAX_CALLS,
        temperature: float | None = None,
    ) -> None:
        self.memory = memory
        self.scope = scope
        self.model = model
        self.conversation_id = conversation_id
        self.project = project
        self.window = window
        self.max_calls = max_calls
        self.temperature = temperature
        self.results: list[ReviewResult] = []  # every review that finished, oldest first
        self.last_due: ReviewDue | None = None
        self._unseen: list[str] = []
        self._threads: list[threading.Thread] = []
        self._mutex = threading.Lock()

    def after_turn(self, conversation: list[dict[str, Any]], *, ended: TurnEnded = "answered") -> bool:
        """Start a review when the turn that just ended makes ``conversation`` due; True when one started."""
        due = review_due(conversation, ended=ended, routine=self.scope.kind == "routine")
        self.last_due = due
        if not due:
            return False
        try:
            lock = review_lock(self.memory.drive.state, self.conversation_id)
        except OSError as error:  # a read-only state folder: no review, and the turn goes on
            _log.warning("No review of %s: its lock could not be taken (%s).", self.conversation_id, error)
            return False
        if lock is None:
            _log.info("A review of conversation %s is running already: none started.", self.conversation_id)
            return False
        snapshot = copy.deepcopy(conversation)  # the review reads a copy; the turn goes on
        thread = threading.Thread(
            target=self._run, args=(snapshot, due, lock), name=f"fsmem-review-{self.conversation_id}", daemon=True
        )
        with self._mutex:
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()
        return True

    def _run(self, conversation: list[dict[str, Any]], due: ReviewDue, lock: IO[bytes]) -> None:
        try:
            result = review(
                self.memory,
                conversation,
                self.model,
                self.scope,
                max_calls=self.max_calls,
                project=self.project,
                temperature=self.temperature,
                halves=due.halves,
                window=self.window,
            )
        except FsmemError as error:  # a model that failed before any change: the log line is written
            _log.warning("A background review of %s failed: [%s] %s", self.conversation_id, error.code, error.message)
            return
        except Exception:  # a bug must not pass silently, nor kill the person's conversation
            _log.exception("A background review of %s failed", self.conversation_id)
            return
        finally:
            lock.close()
        with self._mutex:
            self.results.append(result)
            notice = result.notice()
            if notice:
                self._unseen.append(notice)

    def notices(self) -> list[str]:
        """The lines of reviews that finished since the last call (none for a review that changed nothing)."""
        with self._mutex:
            lines, self._unseen = self._unseen, []
        return lines

    def running(self) -> bool:
        with self._mutex:
            return any(thread.is_alive() for thread in self._threads)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the running reviews; False when one still runs after ``timeout`` seconds."""
        with self._mutex:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout)
        return not self.running()
