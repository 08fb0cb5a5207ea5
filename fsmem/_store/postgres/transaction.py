"""The transaction: one per change, conditional on the versions it read, with the locks it holds.

How concurrency is held (decided and measured; docs/postgres.md): each change is ONE transaction at
READ COMMITTED that locks the rows it reads or changes (``SELECT … FOR UPDATE``), so the version it
checked cannot move before it commits — no lost update, and no retry loop as SERIALIZABLE would need.
A file created meanwhile meets the primary key (``ON CONFLICT DO NOTHING``) and is refused with
CONFLICT/EXISTS. Every change holds a shared per-project lock (a row of ``fsmem.locks``, which no
other project's role can see or lock: ``fsmem._store.postgres.locks``); a folder rename or delete
holds it exclusively, so it is atomic across all its files and no file appears in the folder halfway.
A change making a path locks it (and, shared, the folders above it) first: a file and a folder at one
path never both commit. Log rows are written last, under a per-project commit lock held to the
commit, so sequence numbers are in commit order (``fsmem._store.postgres.log`` reads them).

What a change replaces or deletes is kept as a version, trimmed to the newest N; ``keep_version``
keeps one outside a change (sync's text that lost a conflict).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import psycopg

from fsmem._core.versions import version_of
from fsmem._errors import BadPath, Conflict, Exists, NotFound
from fsmem._store.postgres import locks
from fsmem._store.postgres.connection import PgProject
from fsmem._store.postgres.keys import file_key, folder_prefix, identity_path, is_hidden, key_range
from fsmem._store.postgres.reads import check_free
from fsmem._store.types import HandEdit

ANY: Any = object()  # ``expect=ANY``: write whatever the file holds (the caller locked it by reading)
HOLDS = {"levels": locks.LEVELS, "facts": locks.FACTS}  # PgTransaction.hold's
# Rows are deleted by marking them gone: a trigger deletes them (migration 4), so a tenant's role needs
# no table-level DELETE, which would let it LOCK TABLE (docs/postgres.md, "Tenants apart").
DROP_FILES = "UPDATE fsmem.files SET gone = true WHERE project = %s"
# Keep a path's newest N kept versions (params: project, path, project, path, N).
TRIM_KEPT = (
    "UPDATE fsmem.kept_versions SET gone = true WHERE project = %s AND path = %s AND id <= ("
    "SELECT id FROM fsmem.kept_versions WHERE project = %s AND path = %s ORDER BY id DESC OFFSET %s LIMIT 1)"
)


class PgTransaction:
    """The operations of one change, on one connection inside BEGIN … COMMIT."""

    def __init__(self, store: PgProject, conn: psycopg.Connection[Any], command: str, thread: str | None) -> None:
        self.store, self.conn = store, conn
        self.command, self.thread = command, thread
        self.changed: list[str] = []
        self.hand_edits: list[HandEdit] = []  # rows have no editor saving behind a change's back
        self._entries: list[tuple[str, str | None, str | None, str | None]] = []
        self._lock_held: Literal["", "shared", "exclusive"] = ""
        self._seen: dict[str, str | None] = {}  # path -> version read: later operations expect it

    def read(self, path: str) -> bytes | None:
        """The file's bytes, its row locked until the change ends (None: no file; nothing locked)."""
        self._lock("shared")
        row = self._execute(
            "SELECT content FROM fsmem.files WHERE project = %s AND path = %s FOR UPDATE", (file_key(path),)
        ).fetchone()
        data = None if row is None else bytes(row[0])
        self._seen[path] = None if data is None else version_of(data)
        return data

    def write(self, path: str, data: bytes, expect: str | None = ANY) -> str:
        """Write a whole file, keeping what it held before. ``expect``: the version the caller saw
        (None: it must not exist). Returns the new version."""
        self._lock("shared")
        before = self._locked_version(file_key(path), expect)
        after = version_of(data)
        if before is None:
            self._check_free(path, "the file", itself=False)  # itself: ON CONFLICT below
            inserted = self._execute(
                "INSERT INTO fsmem.files (project, path, content, version) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT DO NOTHING RETURNING 1",
                (path, data, after),
            ).fetchone()
            if inserted is None:  # made by a change that committed after this one looked
                raise Conflict(f"{path} was created by another change meanwhile; read it and write again")
        else:
            self._keep(path)
            self._execute(
                "UPDATE fsmem.files SET content = %s, version = %s, modified = now() WHERE project = %s AND path = %s",
                (data, after, self.store.project_id, path),
                project_first=False,
            )
        self._log(path, before, after)
        return after

    def delete(self, path: str, expect: str | None = ANY) -> None:
        """Remove a file (``expect``: the version the caller saw) or a folder with all its files,
        keeping every file's content as a kept version."""
        if self._is_file(path):
            self._lock("shared")
            before = self._locked_version(path, expect)
            if before is not None:
                self._keep(path)
                self._execute(f"{DROP_FILES} AND path = %s", (path,))
                self._log(path, before, None)
                return
        self._lock("exclusive")  # a folder: no file may appear in it or leave it meanwhile
        files = self._folder_files(path)
        if not files:
            raise NotFound(f"there is no file or folder {path!r}")
        for name, version in files:
            if not is_hidden(name):  # a level folder's identity goes with it, unkept and unlogged
                self._keep(name)
                self._log(name, version, None)
        self._execute(f"{DROP_FILES} AND path >= %s AND path < %s", key_range(folder_prefix(path)))

    def move(self, source: str, destination: str) -> None:
        """Rename a file or a folder (all its files at once); never over an existing path."""
        if source == file_key(destination) or destination.startswith(folder_prefix(source)):
            raise BadPath(f"cannot move {source} into itself; choose a destination outside it")
        if self._is_file(source):
            self._lock("shared")
            version = self._locked_version(source, ANY)
            if version is not None:
                self._check_free(destination, "the new path")
                inserted = self._execute(
                    "INSERT INTO fsmem.files (project, path, content, version, modified) SELECT project, %s, "
                    "content, version, modified FROM fsmem.files WHERE project = %s AND path = %s "
                    "ON CONFLICT DO NOTHING RETURNING 1",
                    (destination, self.store.project_id, source),
                    project_first=False,
                ).fetchone()
                if inserted is None:
                    raise Exists(f"the new path {destination} already exists; choose another name or delete it first")
                self._execute(f"{DROP_FILES} AND path = %s", (source,))
                self._log(source, version, version, destination)
                return
        self._lock("exclusive")
        files = self._folder_files(source)
        if not files:
            raise NotFound(f"there is no file or folder {source!r}")
        self._check_free(destination, "the new path")
        low, high = key_range(folder_prefix(source))
        self._execute(
            "UPDATE fsmem.files SET path = %s || substr(path, %s) WHERE project = %s AND path >= %s AND path < %s",
            (destination, len(source) + 1, self.store.project_id, low, high),
            project_first=False,
        )
        for name, version in files:
            if not is_hidden(name):  # a level folder's identity moves with it, unlogged
                self._log(name, version, version, destination + name[len(source) :])

    # ---- levels and facts (the store interface's; their reads outside a change: fsmem._store.postgres.reads) ----

    def write_identity(self, folder: str, data: bytes) -> None:
        """Keep ``data`` as the level folder's identity: a row at ``<folder>/.fsmem-level`` (a path
        no tool call can name), never kept as a version nor logged; it moves and goes with its folder."""
        self._lock("shared")
        self._execute(
            "INSERT INTO fsmem.files (project, path, content, version) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (project, path) DO UPDATE SET content = excluded.content, version = excluded.version, "
            "modified = now()",
            (identity_path(folder), data, version_of(data)),
        )

    def lock_folder(self) -> None:
        """Take now the project's lock a folder rename or delete holds (exclusive), before this change
        reads the folder: taken after reading its files (the shared lock), two such changes would
        each wait for the other's shared lock (a deadlock). Reads after it see every change committed."""
        self._lock("exclusive")

    def hold(self, name: str) -> None:
        """No other change holding ``name`` ("levels", "facts") in this project runs until this one ends."""
        locks.take(self.conn, self.store.project_id, HOLDS[name])

    def stamp(self, path: str) -> str | None:
        """The file's version as this change leaves it (None: no file)."""
        if path in self._seen:
            return self._seen[path]
        row = self._execute(
            "SELECT version FROM fsmem.files WHERE project = %s AND path = %s", (file_key(path),)
        ).fetchone()
        return None if row is None else str(row[0])

    # ---- internals --------------------------------------------------------------------------------

    def _execute(self, query: str, params: Sequence[object], project_first: bool = True) -> psycopg.Cursor[Any]:
        return self.conn.execute(query, (self.store.project_id, *params) if project_first else params)

    def _lock(self, mode: Literal["shared", "exclusive"]) -> None:
        """The project's folder lock: shared for file changes, exclusive for a whole folder's."""
        if self._lock_held == "exclusive" or self._lock_held == mode:
            return
        locks.take(self.conn, self.store.project_id, locks.FOLDER, shared=mode == "shared")
        self._lock_held = mode

    def _is_file(self, path: str) -> bool:
        return (
            self._execute("SELECT 1 FROM fsmem.files WHERE project = %s AND path = %s", (file_key(path),)).fetchone()
            is not None
        )

    def _locked_version(self, path: str, expect: str | None) -> str | None:
        """Lock the file's row and return its version, refusing it when it is not ``expect``."""
        row = self._execute(
            "SELECT version FROM fsmem.files WHERE project = %s AND path = %s FOR UPDATE", (path,)
        ).fetchone()
        current = None if row is None else str(row[0])
        read_here = expect is ANY and path in self._seen
        if read_here:  # a path read in this change must still hold what was read (no row: no lock)
            expect = self._seen[path]
        if expect is not ANY and current != expect:
            if expect is None and read_here:
                raise Conflict(f"{path} was created by another change after this one read it; read it again")
            if expect is None:
                raise Exists(f"{path} already exists (version {current}); read it first to change it")
            if current is None:
                raise NotFound(
                    f"there is no file {path!r} any more (it was at version {expect}); list the "
                    "folder to see what is there"
                )
            raise Conflict(
                f"{path} changed since version {expect}: it is now at version {current}; read it "
                "again and redo the change on what it holds now"
            )
        return current

    def _folder_files(self, folder: str) -> list[tuple[str, str]]:
        return [
            (str(name), str(version))
            for name, version in self._execute(
                "SELECT path, version FROM fsmem.files WHERE project = %s AND path >= %s AND path < %s "
                "ORDER BY path FOR UPDATE",
                key_range(folder_prefix(folder)),
            ).fetchall()
        ]

    def _check_free(self, path: str, label: str, itself: bool = True) -> None:
        """Refuse ``path`` when a file or folder is there, or a file stands where a folder of it must
        be. Before looking, lock the path (exclusive) and each of its folders (shared) to the end of
        the change: a file and a folder at one path, made by two changes at once, wait for each other
        (the second then sees the first's), so both never commit."""
        parts = path.split("/")
        ancestors = ["/".join(parts[:end]) for end in range(1, len(parts))]
        locks.take_path(self.conn, self.store.project_id, path, ancestors)
        check_free(self.conn, self.store.project_id, path, label, itself)

    def _keep(self, path: str) -> None:
        """Copy the file's current row into kept_versions and trim them to the newest N."""
        self._execute(
            "INSERT INTO fsmem.kept_versions (project, path, version, command, content) "
            "SELECT project, path, version, %s, content FROM fsmem.files WHERE project = %s AND path = %s",
            (self.command, self.store.project_id, path),
            project_first=False,
        )
        self._execute(TRIM_KEPT, (path, self.store.project_id, path, self.store.versions_kept))

    def _log(self, path: str, before: str | None, after: str | None, new_path: str | None = None) -> None:
        self._entries.append((path, new_path, before, after))
        self._seen[path] = None if new_path is not None else after
        if new_path is not None:
            self._seen[new_path] = after
        self.changed.append(path)
        if new_path is not None:
            self.changed.append(new_path)

    def _flush_log(self) -> None:
        """Write the log rows under the commit lock (held to COMMIT: sequence order is commit order)
        and NOTIFY the project's listeners, delivered when the transaction commits."""
        if not self._entries:
            return
        project = self.store.project_id
        locks.take(self.conn, project, locks.COMMIT)
        paths, new_paths, befores, afters = (list(column) for column in zip(*self._entries, strict=True))
        self.conn.execute(
            "WITH added AS (INSERT INTO fsmem.log (project, command, thread, path, new_path, before, after, "
            "row_locks) SELECT %s, %s, %s, e.path, e.new_path, e.before, e.after, true "
            "FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[]) "
            "WITH ORDINALITY AS e(path, new_path, before, after, n) ORDER BY e.n "
            "RETURNING seq) "
            "SELECT pg_notify(%s, max(seq)::text) FROM added",
            (project, self.command, self.thread, paths, new_paths, befores, afters, self.store.channel),
        )


def keep_version(db: PgProject, path: str, data: bytes, command: str) -> str:
    """Keep ``data`` as a version of ``path`` without changing the file (a person's text that
    lost a conflict); trimmed to the newest N like any kept version. Returns its version. A version
    of ``path`` already kept is not kept again: a conflict tried pass after pass would otherwise
    push the file's real history out of the newest N."""
    version = version_of(data)

    def keep(conn: psycopg.Connection[Any]) -> None:
        with conn.transaction():
            locks.take(conn, db.project_id, locks.KEEP)
            held = conn.execute(
                "SELECT 1 FROM fsmem.kept_versions WHERE project = %s AND path = %s AND version = %s LIMIT 1",
                (db.project_id, file_key(path), version),
            ).fetchone()
            if held is not None:
                return
            conn.execute(
                "INSERT INTO fsmem.kept_versions (project, path, version, command, content) "
                "VALUES (%s, %s, %s, %s, %s)",
                (db.project_id, file_key(path), version, command, data),
            )
            conn.execute(TRIM_KEPT, (db.project_id, path, db.project_id, path, db.versions_kept))

    db.run(keep, write=True)
    return version
