"""The log as rows, read by sequence number, and LISTEN/NOTIFY on the project's channel.

A change writes its log rows last, under the project's commit lock held to COMMIT
(``PgTransaction._flush_log``), so sequence numbers are in commit order: a worker that saw sequence N
has seen every change up to N. The same statement NOTIFYs the channel; a ``Listener`` hears it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from fsmem._errors import RequestError
from fsmem._store.postgres.connection import PgProject
from fsmem._store.postgres.keys import file_key
from fsmem._store.postgres.reads import iso
from fsmem._store.types import LogEntry

LOG_COLUMNS = "time, command, path, before, after, thread, new_path"


def log(db: PgProject, since: int = 0) -> Iterator[LogEntry]:
    """The log after sequence number ``since``, in sequence (= commit) order."""
    for row in db.rows(f"SELECT {LOG_COLUMNS} FROM fsmem.log WHERE project = %s AND seq > %s ORDER BY seq", (since,)):
        yield log_entry(row)


def last_change(db: PgProject, path: str) -> LogEntry | None:
    """The newest log entry that changed ``path`` (as its path or as the path it moved to)."""
    row = db.one(
        f"(SELECT seq, {LOG_COLUMNS} FROM fsmem.log WHERE project = %s AND path = %s ORDER BY seq DESC LIMIT 1) "
        f"UNION ALL (SELECT seq, {LOG_COLUMNS} FROM fsmem.log WHERE project = %s AND new_path = %s "
        "ORDER BY seq DESC LIMIT 1) ORDER BY seq DESC LIMIT 1",
        (file_key(path), db.project_id, path),
    )
    return None if row is None else log_entry(row[1:])


def newest_seq(db: PgProject) -> int:
    """The sequence number of the newest change (0 for none): one backward index scan."""
    row = db.one("SELECT coalesce(max(seq), 0) FROM fsmem.log WHERE project = %s", ())
    return int(row[0]) if row else 0


def log_from(db: PgProject, since: int) -> tuple[int | None, tuple[int, int], list[str]]:
    """The log from row ``since`` on, in one query: (that row's time in microseconds, ``None`` when
    there is no such row — a database restored from a backup, a project made again; the newest
    row's (sequence number, time) at or after it, ``(since, time)`` when none is newer; the paths
    changed after ``since``, moves' both ends, in order)."""
    at: int | None = None
    newest, paths = (since, 0), dict[str, None]()
    rows = db.rows(
        "SELECT seq, time, path, new_path FROM fsmem.log WHERE project = %s AND seq >= %s ORDER BY seq", (since,)
    )
    for number, moment, path, new_path in rows:
        newest = (int(number), _micros(moment))
        if number == since:
            at = newest[1]
            continue
        paths[path] = None
        if new_path is not None:
            paths[new_path] = None
    return at, newest, list(paths)


def newest_time(db: PgProject) -> tuple[int, int]:
    """The newest log row's sequence number and time in microseconds ((0, 0): no change yet)."""
    row = db.one("SELECT seq, time FROM fsmem.log WHERE project = %s ORDER BY seq DESC LIMIT 1", ())
    return (0, 0) if row is None else (int(row[0]), _micros(row[1]))


def changes_since(db: PgProject, seq: int) -> tuple[int, list[str]]:
    """(the newest sequence number, the paths changed after ``seq``, moves' both ends, in order)."""
    newest, paths = seq, dict[str, None]()
    for number, path, new_path in db.rows(
        "SELECT seq, path, new_path FROM fsmem.log WHERE project = %s AND seq > %s ORDER BY seq", (seq,)
    ):
        newest = number
        paths[path] = None
        if new_path is not None:
            paths[new_path] = None
    return newest, list(paths)


def log_entry(row: Sequence[Any]) -> LogEntry:
    """A row of ``LOG_COLUMNS`` as the log entry every store returns."""
    time, command, path, before, after, thread, new_path = row
    return LogEntry(iso(time), command, path, before, after, thread, new_path)


def _micros(moment: datetime) -> int:
    """A timestamptz as whole microseconds since the epoch: exact, whatever the session's time zone."""
    return (moment - _EPOCH) // timedelta(microseconds=1)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Listener:
    """A thread LISTENing on the project's channel; reconnects (and calls back) after an outage."""

    def __init__(self, store: PgProject, callback: Callable[[int], None], poll: float = 0.5) -> None:
        self._store, self._callback, self._poll = store, callback, poll
        self._stopping = threading.Event()
        self.ready = threading.Event()  # set once LISTEN is in place (and again after each reconnect)
        self._thread = threading.Thread(target=self._loop, name=f"fsmem-listen-{store.project}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=self._poll * 4 + 5)

    def _loop(self) -> None:
        reconnected = False
        while not self._stopping.is_set():
            try:
                with psycopg.connect(self._store.url, autocommit=True, connect_timeout=5) as conn:
                    conn.execute(f"LISTEN {self._store.channel}")
                    self.ready.set()
                    if reconnected:  # commits made while we were away sent no notification we got
                        self._callback(newest_seq(self._store))
                    while not self._stopping.is_set():
                        for note in conn.notifies(timeout=self._poll):
                            self._callback(int(note.payload))
            except (psycopg.Error, RequestError):
                self.ready.clear()
                reconnected = True
                self._stopping.wait(self._poll)
