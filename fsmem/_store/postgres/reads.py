"""Reading a project's rows outside a change's locks: files, listings, kept versions, the rows the
index and the facts read many at once, and a level folder's identity row.

Each function takes the connected project (``PgProject``) and runs one query: on a pooled connection,
or on the connection of the change this thread has open (then it sees what that change did).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg

from fsmem._errors import BadPath, Exists, NotFound
from fsmem._store.postgres.connection import PgProject
from fsmem._store.postgres.keys import file_key, folder_prefix, identity_path, in_hidden_folder, key_range
from fsmem._store.types import Entry


@dataclass(frozen=True)
class KeptVersion:
    """An earlier content of a file, kept when a change replaced or deleted it."""

    path: str
    version: str
    kept_at: str
    command: str
    size: int


# ---- files and folders ----------------------------------------------------------------------------


def read(db: PgProject, path: str) -> bytes | None:
    """The bytes of a file, or None when there is no file there."""
    row = db.one("SELECT content FROM fsmem.files WHERE project = %s AND path = %s", (file_key(path),))
    return None if row is None else bytes(row[0])


def version(db: PgProject, path: str) -> str | None:
    """The file's version (its row's: a fact file's stamp), or None when there is no file there."""
    row = db.one("SELECT version FROM fsmem.files WHERE project = %s AND path = %s", (file_key(path),))
    return None if row is None else str(row[0])


def exists(db: PgProject, path: str) -> bool:
    low, high = key_range(folder_prefix(path))
    row = db.one(
        "SELECT EXISTS (SELECT 1 FROM fsmem.files WHERE project = %s AND (path = %s OR (path >= %s AND path < %s)))",
        (path, low, high),
    )
    return bool(row and row[0])


def is_dir(db: PgProject, path: str) -> bool:
    low, high = key_range(folder_prefix(path))
    row = db.one(
        "SELECT EXISTS (SELECT 1 FROM fsmem.files WHERE project = %s AND path >= %s AND path < %s)", (low, high)
    )
    return bool(row and row[0])


def entries(db: PgProject, path: str) -> list[Entry]:
    """The children of a folder, sorted: its files, and folders (a folder exists while it holds one)."""
    prefix = folder_prefix(path)
    children: dict[str, Entry] = {}
    for child, size, modified in db.rows(
        "SELECT path, octet_length(content), modified FROM fsmem.files WHERE project = %s "
        "AND path >= %s AND path < %s ORDER BY path",
        key_range(prefix),
    ):
        name, slash, _ = child[len(prefix) :].partition("/")
        if in_hidden_folder(child[len(prefix) :]):
            continue  # a skills folder's archive: hidden, as the folder store hides dot names
        if slash:
            children.setdefault(name, Entry(prefix + name, True, 0, modified.timestamp()))
        else:
            children[name] = Entry(child, False, size, modified.timestamp())
    if not children and path:
        raise NotFound(f"there is no folder {path!r}")
    return sorted(children.values(), key=lambda entry: entry.path)


def walk_files(db: PgProject, path: str = "") -> Iterator[Entry]:
    """Every file under a folder, in path order."""
    prefix = folder_prefix(path)
    for child, size, modified in db.rows(
        "SELECT path, octet_length(content), modified FROM fsmem.files WHERE project = %s "
        "AND path >= %s AND path < %s ORDER BY path",
        key_range(prefix),
    ):
        if not in_hidden_folder(child[len(prefix) :]):
            yield Entry(child, False, size, modified.timestamp())


def info(db: PgProject, path: str) -> Entry | None:
    """A file (its size and modified time), a folder (while it holds a file), or None."""
    if path == "":
        return Entry("", True, 0, 0.0)
    low, high = key_range(folder_prefix(path))
    row = db.run(
        lambda conn: conn.execute(
            "SELECT octet_length(content), modified, path = %s FROM fsmem.files WHERE project = %s "
            "AND (path = %s OR (path >= %s AND path < %s)) ORDER BY path = %s DESC, modified DESC LIMIT 1",
            (path, db.project_id, path, low, high, path),
        ).fetchone()
    )
    if row is None:
        return None
    size, modified, is_file = row
    return Entry(path, not is_file, size if is_file else 0, modified.timestamp())


def check_free(conn: psycopg.Connection[Any], project: int, path: str, label: str, itself: bool = True) -> None:
    """Refuse ``path`` when a file or folder is there (``itself``), or a file stands where a folder
    of it must be: ``PgDrive.check_free``'s answer, and a change's before it makes the path."""
    parts = path.split("/")
    ancestors = ["/".join(parts[:end]) for end in range(1, len(parts))]
    low, high = key_range(path + "/")
    row = conn.execute(
        "SELECT path FROM fsmem.files WHERE project = %s AND (path = ANY(%s::text[]) OR path = %s "
        "OR (path >= %s AND path < %s)) LIMIT 1",
        (project, ancestors, path if itself else None, low, high),
    ).fetchone()
    if row is None:
        return
    if row[0] in ancestors:
        raise BadPath(f"{label} {path} cannot be made: {row[0]} is a file, not a folder; choose a path inside a folder")
    raise Exists(f"{label} {path} already exists; choose another name or delete it first")


# ---- kept versions --------------------------------------------------------------------------------


def versions(db: PgProject, path: str) -> list[KeptVersion]:
    """Earlier contents of a file, newest first."""
    return [
        KeptVersion(path, version, iso(kept_at), command, size)
        for version, kept_at, command, size in db.rows(
            "SELECT version, kept_at, command, octet_length(content) FROM fsmem.kept_versions "
            "WHERE project = %s AND path = %s ORDER BY id DESC",
            (file_key(path),),
        )
    ]


def read_kept(db: PgProject, path: str, version: str) -> bytes | None:
    """The newest kept content of ``path`` with ``version``, or None."""
    row = db.one(
        "SELECT content FROM fsmem.kept_versions WHERE project = %s AND path = %s "
        "AND version = %s ORDER BY id DESC LIMIT 1",
        (file_key(path), version),
    )
    return None if row is None else bytes(row[0])


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


# ---- many rows at once: the search index, the facts, sync -----------------------------------------


def read_rows(db: PgProject, paths: Sequence[str]) -> dict[str, tuple[bytes, str, datetime]]:
    """Files' bytes, versions and when their rows last changed, in one query (a path with no file
    is left out): what the index and the facts read many files at once with."""
    if not paths:
        return {}
    rows = db.rows(
        "SELECT path, content, version, modified FROM fsmem.files WHERE project = %s AND path = ANY(%s::text[])",
        ([file_key(path) for path in paths],),
    )
    return {str(path): (bytes(content), str(version), modified) for path, content, version, modified in rows}


def file_versions(db: PgProject) -> dict[str, str]:
    """Every file's path and version (one query, no content): what a full comparison needs."""
    return {
        str(path): str(version)
        for path, version in db.rows("SELECT path, version FROM fsmem.files WHERE project = %s", ())
    }


def folder_versions(db: PgProject, folders: Sequence[str]) -> tuple[dict[str, Hashable], dict[str, str]]:
    """Every file directly in each folder with its version (a fact file's stamp is its row's version),
    and the folders in them (path → ``"folder"``): one range query per folder not inside another one
    asked for."""
    asked = sorted({file_key(folder) for folder in folders})
    tops = [folder for folder in asked if not any(folder.startswith(other + "/") for other in asked)]
    found: dict[str, Hashable] = {}
    others: dict[str, str] = {}
    for top in tops:
        for path, version in db.rows(
            "SELECT path, version FROM fsmem.files WHERE project = %s AND path >= %s AND path < %s",
            key_range(top + "/"),
        ):
            parent, _, name = path.rpartition("/")
            if name.startswith("."):
                continue  # a level folder's identity
            for folder in asked:
                if not path.startswith(folder + "/"):
                    continue
                if parent == folder:
                    found[path] = str(version)
                else:
                    others[folder + "/" + path[len(folder) + 1 :].split("/", 1)[0]] = "folder"
    return found, others


# ---- a level folder's identity --------------------------------------------------------------------


def read_identity(db: PgProject, folder: str) -> bytes | None:
    """What a change's ``write_identity`` kept for the level folder: its row at ``<folder>/.fsmem-level``
    (a path no tool call can name, never listed, kept as a version or logged), or None."""
    row = db.one("SELECT content FROM fsmem.files WHERE project = %s AND path = %s", (identity_path(folder),))
    return None if row is None else bytes(row[0])
