"""Keep a root's index current while a process runs: the only module that imports watchdog.

    with Watcher(index):          # or `fsmem watch`, or `memory.watch()` in a harness
        ...                       # hand edits are indexed within the debounce delay

Events are collected, debounced (a quiet period, with a ceiling so a busy folder still gets indexed)
and applied in batches, one commit each, under the root lock. Temp and swap files are ignored; a save
by rename shows up as its destination. Lost events — an inotify queue overflow, a watch limit reached,
an error inside watchdog — cannot be replayed, so they trigger a full comparison (reconcile), and a
periodic reconcile catches anything else. A heartbeat file tells searches in other processes that a
healthy watcher runs, so they can skip their own comparison; it says ``degraded`` (and searches compare
again) whenever events may have been lost and not yet reconciled.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from fsmem._core.search import is_indexable_name
from fsmem._env.system import release_heap
from fsmem._index.feed import Followed
from fsmem._index.state import HEARTBEAT_INTERVAL, heartbeat_file, read_heartbeat, write_heartbeat
from fsmem._store.folder.drive import Drive

log = logging.getLogger("fsmem._watch")  # the name logging configs know (from before the layers)

# Changes only: opening or reading a file (our own comparisons read thousands) must not wake the
# watcher, or a reconcile's reads could overflow the queue and trigger another reconcile.
EVENTS = [
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileClosedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
]


class _LostEvents(logging.Handler):
    """watchdog reports a queue overflow or a failed watch only through its log: listen there."""

    def __init__(self, on_lost: Any) -> None:
        super().__init__(level=logging.WARNING)
        self.on_lost = on_lost

    def emit(self, record: logging.LogRecord) -> None:
        self.on_lost(record.getMessage())


class Watcher(FileSystemEventHandler):
    """Watch the root of ``index`` (a folder's) and apply what changes to ``index``."""

    def __init__(
        self,
        index: Followed,
        *,
        debounce: float = 0.15,
        max_delay: float = 1.0,
        heartbeat: float = HEARTBEAT_INTERVAL,
        reconcile_every: float = 300.0,
    ) -> None:
        self.index = index
        drive = index.drive
        if not isinstance(drive, Drive):
            raise TypeError("a folder watcher watches a folder's index; other stores bring their own watcher")
        self.root = drive.root
        self.state = drive.state
        self.debounce = debounce
        self.max_delay = max_delay
        self.heartbeat_interval = heartbeat
        self.reconcile_every = reconcile_every
        self._pending: set[str] = set()
        self._first_event: float | None = None
        self._last_event = 0.0
        self._lost: str | None = None
        self._condition = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._observer: Any = None
        self._tops: dict[str, Any] = {}
        self._log_handler = _LostEvents(self._events_lost)
        self._root_text = os.path.realpath(self.root)
        self.batches = 0
        self.reconciles = 0
        self.errors: list[str] = []
        self._listeners: list[Callable[[set[str] | None], None]] = []

    # --- lifecycle -------------------------------------------------------------------------------

    def start(self) -> Watcher:
        logging.getLogger("watchdog").addHandler(self._log_handler)
        self._observer = Observer()
        try:
            # The root itself without recursion, each visible top folder with it: .fsmem/ (our own
            # index commits) and .git/ never reach the watcher.
            self._observer.schedule(self, self._root_text, recursive=False, event_filter=EVENTS)
            for name in sorted(os.listdir(self._root_text)):
                self._watch_top(name)
            self._observer.start()
        except OSError as error:  # watch limit or instance limit: fall back to periodic reconciles
            self._events_lost(f"cannot watch the root ({error}); comparing periodically instead")
            try:
                self._observer.stop()  # release whatever watches were already placed
            except Exception:  # noqa: BLE001 - it may never have started
                pass
            self._observer = None
            self.reconcile_every = min(self.reconcile_every, 5.0)
        self.index.reconcile()  # after the watch is in place: nothing slips between the two
        release_heap()  # a full comparison's stamps, gone: the process stays at what it keeps
        self._beat()
        self._thread = threading.Thread(target=self._loop, name="fsmem-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._tell(None)
        with self._condition:
            self._condition.notify_all()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
        if self._thread is not None:
            self._thread.join(timeout=10)
        logging.getLogger("watchdog").removeHandler(self._log_handler)
        beat = read_heartbeat(self.state)
        if beat is not None and beat.get("pid") == os.getpid():  # another watcher's beat stays
            try:
                heartbeat_file(self.state).unlink()
            except FileNotFoundError:
                pass

    def unapplied(self) -> set[str] | None:
        """The paths events named that are not applied yet, while running with no event lost (then this
        process's searches refresh those and compare nothing); ``None`` otherwise."""
        running = self._observer is not None and self.running
        with self._condition:
            return set(self._pending) if running and self._lost is None else None

    def listen(self, hear: Callable[[set[str] | None], None]) -> None:
        """Tell ``hear`` the paths each event names as it arrives (from the watcher's thread), and
        None when events may have been lost or the watcher stops: the facts' view follows by it."""
        self._listeners.append(hear)

    def _tell(self, paths: set[str] | None) -> None:
        for hear in list(self._listeners):
            hear(paths)

    @property
    def running(self) -> bool:
        """Whether its worker applies what changes (``False`` once stopped, or if the worker died)."""
        return not self._stop.is_set() and self._thread is not None and self._thread.is_alive()

    @property
    def watching(self) -> bool:
        """Whether events arrive (``False`` when the root could not be watched: comparisons only)."""
        return self._observer is not None

    def __enter__(self) -> Watcher:
        return self if self._thread is not None else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _watch_top(self, name: str) -> None:
        """Watch a top-level folder recursively (a no-op for files, dot-folders and links)."""
        full = os.path.join(self._root_text, name)
        if name.startswith(".") or os.path.islink(full) or not os.path.isdir(full):
            return
        with self._condition:
            if name in self._tops:
                return
            self._tops[name] = self._observer.schedule(self, full, recursive=True, event_filter=EVENTS)

    def _unwatch_top(self, name: str) -> None:
        with self._condition:
            watch = self._tops.pop(name, None)
        if watch is not None:
            try:
                self._observer.unschedule(watch)
            except (KeyError, OSError):
                pass

    # --- events ----------------------------------------------------------------------------------

    def _relative(self, raw: str | bytes) -> str | None:
        text = os.fsdecode(raw)
        if not text.startswith(self._root_text + os.sep):
            return None
        rel = text[len(self._root_text) + 1 :].replace(os.sep, "/")
        if any(part.startswith(".") for part in rel.split("/")):  # .fsmem, .git, editor dot-files
            return None
        return rel

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        if event.is_directory and event.event_type == "modified":
            return  # a folder's mtime: its entries' own events say what changed
        if event.is_directory and self._observer is not None:
            self._follow_top_folders(event)
        paths = [event.src_path]
        if getattr(event, "dest_path", ""):
            paths.append(event.dest_path)
        wanted = []
        named = set()
        for raw in paths:
            rel = self._relative(raw)
            if rel is None:
                continue
            named.add(rel)
            if event.is_directory or is_indexable_name(rel.rsplit("/", 1)[-1]):
                wanted.append(rel)
        if named and self._listeners:
            self._tell(named)
        if not wanted:
            return
        now = time.monotonic()
        with self._condition:
            first = not self._pending
            self._pending.update(wanted)
            self._last_event = now
            if self._first_event is None:
                self._first_event = now
            self._condition.notify_all()
        if first:
            self._beat()  # tell searches there is work in flight: they compare for themselves meanwhile

    def _follow_top_folders(self, event: FileSystemEvent) -> None:
        """A top folder created, moved in, deleted or moved out: start or stop watching it.

        A folder moved in is then refreshed whole (its path goes to the batch like any other), so
        files written into it before its watch existed are not missed.
        """
        gone = os.fsdecode(event.src_path)
        arrived = os.fsdecode(getattr(event, "dest_path", "") or "")
        if event.event_type in ("deleted", "moved") and os.path.dirname(gone) == self._root_text:
            self._unwatch_top(os.path.basename(gone))
        target = arrived if event.event_type == "moved" else gone if event.event_type == "created" else ""
        if target and os.path.dirname(target) == self._root_text:
            try:
                self._watch_top(os.path.basename(target))
            except OSError as error:
                self._events_lost(f"cannot watch {target} ({error}); comparing instead")

    def _events_lost(self, message: str) -> None:
        if "overflow" in message.lower() or "limit" in message.lower() or "unable" in message.lower():
            with self._condition:
                self._lost = message
                self._condition.notify_all()
            self._tell(None)
            self._beat()

    # --- the worker ------------------------------------------------------------------------------

    def _loop(self) -> None:
        next_beat = 0.0
        next_reconcile = time.monotonic() + self.reconcile_every
        while not self._stop.is_set():
            batch: set[str] = set()
            lost: str | None = None
            with self._condition:
                now = time.monotonic()
                due = self._pending and (
                    now - self._last_event >= self.debounce
                    or (self._first_event is not None and now - self._first_event >= self.max_delay)
                )
                if due or self._lost:
                    batch, self._pending, self._first_event = self._pending, set(), None
                    lost, self._lost = self._lost, None
                else:
                    wait = self.debounce if self._pending else max(0.05, next_beat - now)
                    self._condition.wait(timeout=min(wait, self.heartbeat_interval))
                    if not (self._stop.is_set() or time.monotonic() >= next_beat):
                        continue
            try:
                if lost or time.monotonic() >= next_reconcile:
                    if lost:
                        log.warning("events may have been lost (%s); comparing every file", lost)
                    self.index.reconcile()
                    release_heap()
                    self.reconciles += 1
                    next_reconcile = time.monotonic() + self.reconcile_every
                elif batch:
                    self.index.refresh(batch)
                    self.batches += 1
            except Exception as error:  # noqa: BLE001 - keep watching; the next reconcile repairs
                self.errors.append(f"{type(error).__name__}: {error}")
                log.warning("could not apply changes to the index (%s); will compare again", error)
                with self._condition:
                    self._lost = self._lost or "a batch failed"
                time.sleep(min(1.0, self.debounce * 4))
            if time.monotonic() >= next_beat or batch or lost:
                self._beat()
                next_beat = time.monotonic() + self.heartbeat_interval

    def _beat(self) -> None:
        with self._condition:
            pending = len(self._pending)
            degraded = self._lost is not None or self._observer is None
        state = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "beat": time.time(),
            "interval": self.heartbeat_interval,
            "pending": pending,
            "state": "degraded" if degraded else "ok",
            "batches": self.batches,
        }
        if self._stop.is_set():
            return
        try:
            self.state.mkdir(exist_ok=True)
            write_heartbeat(self.state, state)
        except OSError as error:  # a heartbeat that cannot be written only costs searches a comparison
            self.errors.append(f"heartbeat: {error}")


# ---- a plain folder's changes (fsmem/_memory/sync.py) ----------------------------------------------------


class _FolderEvents(FileSystemEventHandler):
    def __init__(self, folder: str, on_change: Callable[[str, bool], None]) -> None:
        self.folder, self.on_change = folder, on_change

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write") or (event.is_directory and event.event_type == "modified"):
            return
        for raw in (event.src_path, getattr(event, "dest_path", "") or ""):
            text = os.fsdecode(raw)
            if not text.startswith(self.folder + os.sep):
                continue
            relative = text[len(self.folder) + 1 :].replace(os.sep, "/")
            if not any(part.startswith(".") for part in relative.split("/")):  # temp, swap and state files
                self.on_change(relative, event.is_directory)


def watch_folder(folder: str, on_change: Callable[[str, bool], None]) -> Callable[[], None]:
    """Call ``on_change(relative_path, is_folder)`` from watchdog's thread for each change under
    ``folder`` (dot-names left out); returns the function that stops watching."""
    observer = Observer()
    observer.schedule(_FolderEvents(folder, on_change), folder, recursive=True, event_filter=EVENTS)
    observer.start()

    def stop() -> None:
        observer.stop()
        observer.join(timeout=5)

    return stop
