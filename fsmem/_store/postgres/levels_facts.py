"""Levels and facts on PostgreSQL: the store side of the interface's "levels" and "facts" blocks.

``PgDrive`` answers those methods with these functions (the change's side, ``write_identity``,
``hold`` and ``stamp``, is ``PgTransaction``'s):

- A level folder's identity is a row at ``<folder>/.fsmem-level``: a path no tool call can name, never
  listed, kept as a version or logged; it moves with its folder and goes with its delete.
- A ``deleting_*`` block is ONE transaction held across the block: the folder's rows are deleted in
  it (versions kept, logged), committed when the block ends, rolled back when it raises. Nothing is
  ever moved aside, so nothing is left to restore after a crash: the server rolls back the
  transaction of a connection that died. Until it commits, other workers still see the folder, and
  their changes to the project wait for it (the folder delete holds the project's folder lock), as do
  level creations (the block holds "levels"); in this process, making the folder's id anew is
  refused (``parked``) rather than left to wait for the block it runs in.
- A fact file's stamp is its row's version: the facts folders' stamps are one range query. The
  folders' mark is the project's newest sequence number (``PgDrive.folders_mark``): while it stands
  still, a facts call looks at the versions of the few rows it depends on, not at them all.
"""

from __future__ import annotations

import contextlib
from collections.abc import Hashable, Iterator, Sequence

from fsmem._store.postgres.keys import file_key, identity_path, key_range
from fsmem._store.postgres.store import PgStore
from fsmem._store.types import Parked


def level_identity(store: PgStore, folder: str) -> bytes | None:
    row = store.one("SELECT content FROM fsmem.files WHERE project = %s AND path = %s", (identity_path(folder),))
    return None if row is None else bytes(row[0])


@contextlib.contextmanager
def deleting(store: PgStore, folder: str, command: str, taken: dict[str, Parked]) -> Iterator[None]:
    """The folder deleted in one transaction held across the block (see the module's text); ``taken``:
    the folders this process's blocks are deleting now, which ``parked`` reports."""
    identity = level_identity(store, folder)
    with store.change(command) as tx:
        tx.hold("levels")
        tx.delete(folder)
        taken[folder] = Parked(folder, identity, f"the open transaction deleting it (project {store.project})")
        try:
            yield
        finally:
            taken.pop(folder, None)


def stamps(store: PgStore, folders: Sequence[str]) -> tuple[dict[str, Hashable], dict[str, str]]:
    """Every file directly in each folder with its version, and the folders in them (path →
    ``"folder"``): one range query per folder not inside another one asked for."""
    asked = sorted({file_key(folder) for folder in folders})
    tops = [folder for folder in asked if not any(folder.startswith(other + "/") for other in asked)]
    found: dict[str, Hashable] = {}
    others: dict[str, str] = {}
    for top in tops:
        for path, version in store.rows(
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


def stamp(store: PgStore, path: str) -> str | None:
    row = store.one("SELECT version FROM fsmem.files WHERE project = %s AND path = %s", (file_key(path),))
    return None if row is None else str(row[0])


def read_stamped(store: PgStore, paths: Sequence[str]) -> dict[str, tuple[bytes, Hashable]]:
    """The bytes and the version of each row, read together: one query however many (a new worker
    reads every fact so, when its cache folder holds no parse cache)."""
    return {path: (data, version) for path, (data, version, _) in store.read_rows(paths).items()}
