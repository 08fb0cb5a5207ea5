"""A project's memory as rows of PostgreSQL: the record the store interface sits on (issue 12).

It mirrors the folder's transaction (``fsmem._store.folder.change.Change``), so both can stand behind one interface::

    store = PgStore.open("postgresql://host/db", project="rye-and-ember")
    with store.change(command="write", thread="t-1") as tx:
        before = tx.read("MEMORY.md")          # locks the row until the change commits
        tx.write("MEMORY.md", b"# Project\\n")  # or tx.write(path, data, expect=version_seen)

``PgStore`` gathers the record's concerns, each in a module of its own that it calls in one line:
connecting (``connection``: the pool, the project, how a query runs; ``errors``: SQLSTATE → BUSY or
STORAGE), reading rows (``reads``), a change's transaction and its locks (``transaction``), the log's
sequence and LISTEN/NOTIFY (``log``), proposals (``proposals``) and a whole project's export and
import (``project_copy``). While a thread has a change open, its reads go through that change.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Hashable, Iterator, Sequence
from datetime import datetime

from fsmem._core.text import check_thread
from fsmem._store.postgres import log as pg_log
from fsmem._store.postgres import proposals as pg_proposals
from fsmem._store.postgres import reads
from fsmem._store.postgres.connection import PgProject
from fsmem._store.postgres.errors import committed
from fsmem._store.postgres.keys import file_key
from fsmem._store.postgres.log import Listener
from fsmem._store.postgres.project_copy import export_project, import_project
from fsmem._store.postgres.reads import KeptVersion
from fsmem._store.postgres.transaction import PgTransaction, keep_version
from fsmem._store.types import ChangeProposal, Entry, LogEntry, ProjectCopy


class PgStore(PgProject):
    """One project's files, kept versions, log and proposals in one PostgreSQL database."""

    # ---- reading (fsmem._store.postgres.reads) ----------------------------------------------------

    def read(self, path: str) -> bytes | None:
        return reads.read(self, path)

    def version(self, path: str) -> str | None:
        return reads.version(self, path)

    def exists(self, path: str) -> bool:
        return reads.exists(self, path)

    def is_dir(self, path: str) -> bool:
        return reads.is_dir(self, path)

    def entries(self, path: str) -> list[Entry]:
        return reads.entries(self, path)

    def walk_files(self, path: str = "") -> Iterator[Entry]:
        return reads.walk_files(self, path)

    def info(self, path: str) -> Entry | None:
        return reads.info(self, path)

    def check_free(self, path: str, label: str = "the new path") -> None:
        """Refuse ``path`` when a file or folder is there, or a file where a folder of it must be."""
        self.run(lambda conn: reads.check_free(conn, self.project_id, file_key(path), label))

    def versions(self, path: str) -> list[KeptVersion]:
        return reads.versions(self, path)

    def read_kept(self, path: str, version: str) -> bytes | None:
        return reads.read_kept(self, path, version)

    def read_rows(self, paths: Sequence[str]) -> dict[str, tuple[bytes, str, datetime]]:
        return reads.read_rows(self, paths)

    def file_versions(self) -> dict[str, str]:
        return reads.file_versions(self)

    def folder_versions(self, folders: Sequence[str]) -> tuple[dict[str, Hashable], dict[str, str]]:
        return reads.folder_versions(self, folders)

    def read_identity(self, folder: str) -> bytes | None:
        return reads.read_identity(self, folder)

    # ---- the log (fsmem._store.postgres.log) ------------------------------------------------------

    def log(self, since: int = 0) -> Iterator[LogEntry]:
        return pg_log.log(self, since)

    def last_change(self, path: str) -> LogEntry | None:
        return pg_log.last_change(self, path)

    def newest_seq(self) -> int:
        return pg_log.newest_seq(self)

    def log_from(self, since: int) -> tuple[int | None, tuple[int, int], list[str]]:
        return pg_log.log_from(self, since)

    def newest_time(self) -> tuple[int, int]:
        return pg_log.newest_time(self)

    def changes_since(self, seq: int) -> tuple[int, list[str]]:
        return pg_log.changes_since(self, seq)

    def listen(self, callback: Callable[[int], None]) -> Listener:
        """Call ``callback(newest_seq)`` from a thread after each commit (and after a reconnect)."""
        return Listener(self, callback)

    # ---- proposals (fsmem._store.postgres.proposals) ----------------------------------------------

    def save_proposal(self, proposal: ChangeProposal) -> None:
        pg_proposals.save(self, proposal)

    def load_proposal(self, proposal_id: str) -> ChangeProposal:
        return pg_proposals.load(self, proposal_id)

    def proposals(self) -> list[ChangeProposal]:
        return pg_proposals.every(self)

    def delete_proposal(self, proposal_id: str) -> None:
        pg_proposals.delete(self, proposal_id)

    # ---- changing (fsmem._store.postgres.transaction) ---------------------------------------------

    @contextlib.contextmanager
    def change(self, command: str, thread: str | None = None) -> Iterator[PgTransaction]:
        """One transaction: every operation in the block commits together, or none does. While it is
        open, this thread's reads of the store go through its connection (they see what it changed,
        and a thread never holds two of the pool's connections)."""
        check_thread(thread)
        with self.connection() as conn:
            tx = PgTransaction(self, conn, command, thread)
            outer = getattr(self._current, "conn", None)
            self._current.conn = conn
            try:
                with committed(
                    conn,
                    refused="nothing was changed",
                    unknown="the change may or may not have been applied; read the files to see before trying again",
                ):
                    yield tx
                    tx._flush_log()
            finally:
                self._current.conn = outer
        if tx.changed:
            for hook in self.on_commit:
                hook(set(tx.changed))

    def keep_version(self, path: str, data: bytes, command: str) -> str:
        return keep_version(self, path, data, command)

    # ---- copy (fsmem._store.postgres.project_copy) ------------------------------------------------

    def export_project(self) -> ProjectCopy:
        return export_project(self)

    def import_project(self, copy: ProjectCopy) -> None:
        import_project(self, copy)
