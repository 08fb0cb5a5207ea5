"""Where a memory's passage vectors are kept: derived state, keyed by (model, path, file version).

    keep = FolderVectors(index_dir(state) / "vectors.sqlite3")   # the folder store: beside the generations
    keep.put(model, "seo/titles.md", "3f9a1c2e77aa", [(1, "# Titles\\n…", vector_bytes), …])
    keep.held(model)                     # {"seo/titles.md": "3f9a1c2e77aa"}: files whose passages are all in
    keep.vectors(model, {"seo/titles.md": "3f9a1c2e77aa"})   # (path, version, vector) of exactly those versions
    keep.passage(model, "seo/titles.md", "3f9a1c2e77aa", 0)   # (1, "# Titles\n…"): one passage's line and text
    keep.prune(model, live)              # drop the passages of files gone

A file's passages are put in one transaction with its version, replacing any of an older one, so a
reader sees a file's passages all or none. Rows are read only for the version the index holds now:
a passage never outlives its file's version. A search scans the vectors alone; a passage's text is
read only for the few files it shows by meaning. On PostgreSQL the same rows live in the database
(``fsmem._index.pg_vectors``), so a new worker finds them embedded.

The folder's keep is one SQLite file (``sqlite3``, the standard library's): several processes of
one machine put and read it at once (WAL, a busy timeout), and a damaged one is deleted and made
again, like the index.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from fsmem._errors import Busy

if TYPE_CHECKING:
    import sqlite3

__all__ = ["FolderVectors", "VectorKeep", "VectorRow"]

VectorRow = tuple[str, str, bytes]  # path, version, one passage's float32 vector bytes
BUSY_TIMEOUT = 5.0


class VectorKeep(Protocol):
    def held(self, model: str) -> dict[str, str]:
        """path → the version whose passages are all kept."""
        ...

    def put(self, model: str, path: str, version: str, passages: list[tuple[int, str, bytes]]) -> None: ...

    def count(self, model: str) -> int:
        """How many passages are kept under ``model``, of any version (at least what ``vectors`` yields)."""
        ...

    def vectors(self, model: str, live: Mapping[str, str]) -> Iterator[VectorRow]:
        """The passage vectors of the files of ``live`` (path → version) whose kept version is that one,
        by path, each file's passages together and in order. Consume it whole (it may hold a lock)."""
        ...

    def vectors_of(self, model: str, files: Mapping[str, str]) -> Iterator[VectorRow]:
        """``vectors`` for just the files of ``files`` (a few hundred at most), looked up by path."""
        ...

    def passage(self, model: str, path: str, version: str, n: int) -> tuple[int, str] | None:
        """The line and text of passage ``n`` (from 0) of ``path`` at ``version``; ``None`` once that
        version's passages are gone."""
        ...

    def prune(self, model: str, live: Mapping[str, str]) -> int:
        """Drop what is kept for paths not in ``live``; the number of files dropped."""
        ...

    def mark(self) -> object:
        """Changes whenever what is kept may have changed (any process's put or prune); the same in every
        process while what is kept is the same (a view saved under it may be loaded by another)."""
        ...

    def holds_any(self) -> bool:
        """Whether any file's passages are kept at all (asked before a model is loaded for nothing)."""
        ...

    def beside(self, name: str) -> Path | None:
        """Where a file derived from this keep is kept (the search's view), or None: the keep is no file."""
        ...

    def close(self) -> None: ...


_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    model TEXT NOT NULL, path TEXT NOT NULL, version TEXT NOT NULL, PRIMARY KEY (model, path)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS passages (
    model TEXT NOT NULL, path TEXT NOT NULL, n INTEGER NOT NULL, line INTEGER NOT NULL,
    text TEXT NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (model, path, n)
);  -- a rowid table: rows of 1.5 KB are half the size there that they take in a WITHOUT ROWID one
"""
_MARK_SCHEMA = """
CREATE TABLE IF NOT EXISTS changes (
    one INTEGER PRIMARY KEY CHECK (one = 0), keep TEXT NOT NULL, n INTEGER NOT NULL
);  -- the keep's mark: a name of its own (a keep made again is another) and its count of changes
"""
_COUNT_CHANGE = "UPDATE changes SET n = n + 1"


class FolderVectors:
    """The folder store's keep: one SQLite file, owner-only, shared by the root's processes."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    def _connect(self) -> sqlite3.Connection:
        if self._db is not None:
            return self._db
        import sqlite3  # once there are passages to keep or look up: a search asks ``holds_any`` first

        self.file.parent.mkdir(parents=True, exist_ok=True)
        try:
            db = self._open()
        except sqlite3.DatabaseError:
            self._remove()  # not a database (or damaged): derived state, made again
            db = self._open()
        self._db = db
        return db

    def _open(self) -> sqlite3.Connection:
        import sqlite3

        os.close(os.open(self.file, os.O_CREAT | os.O_WRONLY, 0o600))  # SQLite gives its WAL the same mode
        db = sqlite3.connect(self.file, timeout=BUSY_TIMEOUT, check_same_thread=False, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")  # derived state: a crash may lose the last puts, never corrupt
            db.executescript(_SCHEMA)
            self._give_a_mark(db)
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    def _give_a_mark(self, db: sqlite3.Connection) -> None:
        """The keep's lasting mark, made once (by the first process to open it, or to open one made
        before marks): a keep that has one is opened without a write, so never waits on another's put."""
        import sqlite3

        if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'changes'").fetchone() is not None:
            if db.execute("SELECT 1 FROM changes").fetchone() is not None:
                return
        try:
            db.executescript(_MARK_SCHEMA)
            db.execute("INSERT OR IGNORE INTO changes VALUES (0, ?, 0)", (os.urandom(8).hex(),))
        except sqlite3.OperationalError as error:  # busy (or read-only, full): not damage, the keep stays
            db.close()
            raise Busy(f"the passages' keep {self.file} could not be written ({error}); try again") from error

    def _remove(self) -> None:
        for suffix in ("", "-wal", "-shm", ".view"):
            Path(f"{self.file}{suffix}").unlink(missing_ok=True)

    def held(self, model: str) -> dict[str, str]:
        with self._lock:
            cursor = self._connect().execute("SELECT path, version FROM files WHERE model = ?", (model,))
            return dict(cursor.fetchall())

    def put(self, model: str, path: str, version: str, passages: list[tuple[int, str, bytes]]) -> None:
        with self._lock:
            db = self._connect()
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("DELETE FROM passages WHERE model = ? AND path = ?", (model, path))
                db.executemany(
                    "INSERT INTO passages VALUES (?, ?, ?, ?, ?, ?)",
                    [(model, path, n, line, text, vector) for n, (line, text, vector) in enumerate(passages)],
                )
                db.execute("INSERT OR REPLACE INTO files VALUES (?, ?, ?)", (model, path, version))
                db.execute(_COUNT_CHANGE)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def count(self, model: str) -> int:
        with self._lock:
            (count,) = self._connect().execute("SELECT count(*) FROM passages WHERE model = ?", (model,)).fetchone()
            return int(count)

    def vectors(self, model: str, live: Mapping[str, str]) -> Iterator[VectorRow]:
        with self._lock:  # one statement, streamed: the rows are never all in memory at once
            cursor = self._connect().execute(
                "SELECT p.path, f.version, p.vector FROM passages p "
                "JOIN files f ON f.model = p.model AND f.path = p.path WHERE p.model = ? ORDER BY p.path, p.n",
                (model,),
            )
            for path, kept, vector in cursor:
                if live.get(path) == kept:
                    yield path, kept, vector

    def vectors_of(self, model: str, files: Mapping[str, str]) -> Iterator[VectorRow]:
        with self._lock:
            db = self._connect()
            for batch in _batches(sorted(files), 500):
                marks = ",".join("?" * len(batch))
                cursor = db.execute(
                    "SELECT p.path, f.version, p.vector FROM passages p JOIN files f ON f.model = p.model "  # noqa: S608
                    f"AND f.path = p.path WHERE p.model = ? AND p.path IN ({marks}) ORDER BY p.path, p.n",
                    (model, *batch),
                )
                for path, kept, vector in cursor:
                    if files.get(path) == kept:
                        yield path, kept, vector

    def passage(self, model: str, path: str, version: str, n: int) -> tuple[int, str] | None:
        with self._lock:
            found = (
                self._connect()
                .execute(
                    "SELECT p.line, p.text FROM passages p JOIN files f ON f.model = p.model AND f.path = p.path "
                    "WHERE p.model = ? AND p.path = ? AND p.n = ? AND f.version = ?",
                    (model, path, n, version),
                )
                .fetchone()
            )
            return None if found is None else (int(found[0]), str(found[1]))

    def prune(self, model: str, live: Mapping[str, str]) -> int:
        gone = [path for path in self.held(model) if path not in live]
        if not gone:
            return 0
        with self._lock:
            db = self._connect()
            db.execute("BEGIN IMMEDIATE")
            try:
                for batch in _batches(gone, 500):
                    marks = ",".join("?" * len(batch))
                    db.execute(f"DELETE FROM passages WHERE model = ? AND path IN ({marks})", (model, *batch))  # noqa: S608
                    db.execute(f"DELETE FROM files WHERE model = ? AND path IN ({marks})", (model, *batch))  # noqa: S608
                db.execute(_COUNT_CHANGE)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return len(gone)

    def holds_any(self) -> bool:
        try:
            if self._db is None and os.stat(self.file).st_size == 0:
                return False
        except FileNotFoundError:
            return False  # never made: nothing was ever embedded here
        with self._lock:
            return self._connect().execute("SELECT 1 FROM files LIMIT 1").fetchone() is not None

    def mark(self) -> object:
        """The keep's name and count of changes: the same in every process that reads the same rows."""
        with self._lock:
            row = self._connect().execute("SELECT keep, n FROM changes").fetchone()
            return (str(row[0]), int(row[1]))

    def beside(self, name: str) -> Path | None:
        return self.file.with_name(f"{self.file.name}.{name}")

    def size(self) -> int:
        files = [Path(f"{self.file}{suffix}") for suffix in ("", "-wal")]
        return sum(file.stat().st_size for file in files if file.exists())

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


def _batches(items: list[str], size: int) -> Iterable[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
