"""A project's memory in PostgreSQL, behind the store interface (``fsmem._store.interface.Store``).

``fsmem.open("postgresql://host/db", project="rye-and-ember")`` returns a ``Memory`` on this store:
the same tool, levels, facts, versions, log, proposals and search as on a folder. The record is the
database's rows (``fsmem._store.postgres.store``: one transaction per change, conditional on the versions read);
what this worker derives from them and can rebuild at any time (its search index, parse caches)
lives in a cache folder of its own, ``state``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from fsmem._core.layout import PROJECT_FILE, STATE_DIR
from fsmem._core.paths import is_memory_file_name, normalize_path
from fsmem._core.search import Stamp
from fsmem._env.config import Settings
from fsmem._errors import BadStore, Conflict, Exists, FsmemError, NotFound, TooLarge
from fsmem._store.atomic import make_dirs
from fsmem._store.postgres.cache import default_cache, redacted
from fsmem._store.postgres.store import PgStore
from fsmem._store.postgres.transaction import PgTransaction
from fsmem._store.types import ChangeProposal, Entry, LogEntry, Parked, ProjectCopy, VersionInfo


def open_store(
    url: str, project: str, settings: Settings, *, create: bool = False, cache: str | os.PathLike[str] | None = None
) -> PgDrive:
    """Connect to the project (made, with an empty ``MEMORY.md``, when ``create``)."""
    store = PgStore.open(
        url,
        project,
        create=create,
        lock_timeout=settings.lock_timeout,
        versions_kept=settings.versions_kept,
        pool_size=settings.pg_pool_size,
    )
    try:
        drive = PgDrive(store, Path(cache) if cache is not None else default_cache(url, store.project), settings, url)
        if create and not drive.exists(PROJECT_FILE):
            # Workers opening a new project at once: the first makes MEMORY.md, the rest find it made.
            with contextlib.suppress(Exists, Conflict), drive.change("init") as tx:
                if tx.read(PROJECT_FILE) is None:
                    tx.write(PROJECT_FILE, b"")
    except BaseException:
        store.close()  # nothing half-open is handed back: no pool left behind
        raise
    return drive


def _made_state(cache: Path, project: str) -> Path:
    """The cache folder's state folder, made 0700; a path that cannot be one is BAD_STORE, saying why."""
    state = cache / STATE_DIR
    try:
        make_dirs(state)
        os.chmod(state, 0o700)
    except OSError as error:
        blocking = next((str(up) for up in (state, *state.parents) if up.exists() and not up.is_dir()), None)
        why = f"{blocking} is a file, not a folder" if blocking else (error.strerror or str(error))
        raise BadStore(
            f"the search cache folder {str(cache)!r} of project {project!r} cannot be used ({why}); "
            "give this worker a folder it may write (fsmem.open(..., cache=DIR), or $XDG_CACHE_HOME for "
            "the default)" + (", or move that file away" if blocking else "")
        ) from error
    return state


def stamp_ns(modified: float) -> int:
    """A row's modified time (microseconds in PostgreSQL) as the nanoseconds of a stamp, exactly."""
    return round(modified * 1e6) * 1000


class PgDrive:
    """The store interface over one project's rows; this worker's derived state in ``cache``."""

    def __init__(self, store: PgStore, cache: Path, settings: Settings, url: str) -> None:
        self.pg = store
        self.settings = settings
        self.url = url
        self.name = store.project
        self.label = f"project {store.project} in {redacted(url)}"
        self.cache = Path(os.path.realpath(cache))
        self.state = _made_state(self.cache, store.project)
        self.on_commit: list[Callable[[set[str]], None]] = store.on_commit
        self._deleting: dict[str, Parked] = {}  # level folders this process's deleting_* blocks are deleting

    def close(self) -> None:
        self.pg.close()

    # ---- reading --------------------------------------------------------------------------------

    def read(self, path: str, limit: int | None = None) -> bytes | None:
        if path == "":
            return None
        data = self.pg.read(path)
        if data is not None and limit is not None and len(data) > limit:
            raise TooLarge(
                f"{path} is {len(data):,} bytes, more than the {limit:,} a read shows whole; read part of "
                "it with start_line and end_line (say lines 1-200), or search it"
            )
        return data

    def exists(self, path: str) -> bool:
        return path == "" or self.pg.exists(path)

    def is_dir(self, path: str) -> bool:
        return path == "" or self.pg.is_dir(path)

    def info(self, path: str) -> Entry | None:
        return self.pg.info(path)

    def canonical(self, path: str) -> str:
        """Rows hold no links: a path is where it is."""
        return path

    def entries(self, path: str) -> list[Entry]:
        return [
            entry
            for entry in self.pg.entries(path)
            if not entry.path.rsplit("/", 1)[-1].startswith(".")
            and entry.path not in self._deleting  # gone for this process: its deleting_* block deleted it
        ]

    def walk_files(self, path: str = "") -> Iterator[Entry]:
        for entry in self.pg.walk_files(path):
            if "/." not in f"/{entry.path}" and is_memory_file_name(entry.path.rsplit("/", 1)[-1]):
                yield entry

    def check_free(self, destination: str, label: str = "the new path") -> None:
        self.pg.check_free(destination, label)

    # ---- changing -------------------------------------------------------------------------------

    def change(self, command: str, thread: str | None = None) -> contextlib.AbstractContextManager[PgTransaction]:
        return self.pg.change(command, thread)

    # ---- history --------------------------------------------------------------------------------

    def versions(self, path: str) -> list[VersionInfo]:
        return [
            VersionInfo(kept.path, kept.version, kept.kept_at, kept.command, kept.size)
            for kept in self.pg.versions(path)
        ]

    def read_version(self, kept: VersionInfo) -> bytes:
        data = self.pg.read_kept(kept.path, kept.version)
        if data is None:
            raise NotFound(f"version {kept.version} of {kept.path} is no longer kept; list them again")
        return data

    def log(self) -> Iterator[LogEntry]:
        return self.pg.log()

    def last_change(self, path: str) -> LogEntry | None:
        return self.pg.last_change(path)

    # ---- proposals ------------------------------------------------------------------------------

    def save_proposal(self, record: dict[str, Any]) -> None:
        self.pg.save_proposal(ChangeProposal(**record))

    def load_proposal(self, proposal_id: str) -> dict[str, Any] | None:
        try:
            return asdict(self.pg.load_proposal(proposal_id))
        except NotFound:
            return None

    def proposal_ids(self) -> list[str]:
        return [proposal.id for proposal in self.pg.proposals()]

    def delete_proposal(self, proposal_id: str) -> None:
        self.pg.delete_proposal(proposal_id)

    # ---- levels and facts (store interface; a change's side: PgTransaction) --------------------------------

    def level_identity(self, folder: str) -> bytes | None:
        """The row at ``<folder>/.fsmem-level`` that ``tx.write_identity`` kept (or None)."""
        return self.pg.read_identity(folder)

    def parked(self) -> list[Parked]:
        """The level folders this process's ``deleting_*`` blocks are deleting now (another worker's
        block holds the levels until it ends: nothing of it needs refusing here)."""
        return list(self._deleting.values())

    def deleting(self, folder: str, command: str) -> contextlib.AbstractContextManager[None]:
        return delete_in_one_transaction(self.pg, folder, command, self._deleting)

    def stamps(self, folders: Sequence[str]) -> tuple[dict[str, Hashable], dict[str, str]]:
        """A fact file's stamp is its row's version: the facts folders' stamps are one range query."""
        return self.pg.folder_versions(folders)

    def stamp(self, path: str) -> Hashable | None:
        return self.pg.version(path)

    def read_stamped(self, paths: Sequence[str]) -> dict[str, tuple[bytes, Hashable]]:
        """The bytes and the version of each row, read together: one query however many (a new worker
        reads every fact so, when its cache folder holds no parse cache)."""
        return {path: (data, version) for path, (data, version, _) in self.pg.read_rows(paths).items()}

    def folders_mark(self, folders: Sequence[str]) -> Hashable | None:
        """The project's newest sequence number (one indexed query): every change to a row is logged,
        so while it stands still nothing changed, in the folders or anywhere (a facts call then looks
        at the versions of the few rows it depends on, not at them all)."""
        return self.pg.newest_seq()

    # ---- the search index (issue 12, pg-index) ----------------------------------------------------

    def index_read(self, paths: Iterable[str], limit: int) -> Iterator[tuple[str, tuple[Stamp, bytes] | None]]:
        """Each memory file's first ``limit`` bytes and its stamp (size, modified), a query per
        ``INDEX_READ_CHUNK`` paths."""
        chunk: list[str] = []
        for path in paths:
            chunk.append(path)
            if len(chunk) == INDEX_READ_CHUNK:
                yield from self._index_chunk(chunk, limit)
                chunk = []
        if chunk:
            yield from self._index_chunk(chunk, limit)

    def _index_chunk(self, paths: list[str], limit: int) -> Iterator[tuple[str, tuple[Stamp, bytes] | None]]:
        # what ``walk_files`` does not list (or no tool could name) is not in the index either
        wanted = [path for path in paths if _index_path(path)]
        rows = self.pg.read_rows(wanted)
        for path in paths:
            got = rows.get(path)
            if got is None:
                yield path, None
            else:
                data, _, modified = got
                yield path, (Stamp(len(data), stamp_ns(modified.timestamp()), 0, 0), data[:limit])

    # ---- copy (fsmem/_memory/copy.py) -------------------------------------------------------------------

    def export_project(self) -> ProjectCopy:
        return self.pg.export_project()

    def import_project(self, copy: ProjectCopy) -> None:
        self.pg.import_project(copy)


@contextlib.contextmanager
def delete_in_one_transaction(store: PgStore, folder: str, command: str, taken: dict[str, Parked]) -> Iterator[None]:
    """A ``deleting_*`` block: ONE transaction held across the block, in which the folder's rows are
    deleted (versions kept, logged); committed when the block ends, rolled back when it raises.
    Nothing is ever moved aside, so nothing is left to restore after a crash: the server rolls back
    the transaction of a connection that died. Until it commits, other workers still see the
    folder, and their changes to the project wait for it (the folder delete holds the project's
    folder lock), as do level creations (the block holds "levels"); in this process, making the
    folder's id anew is refused (``parked``: ``taken``, the folders this process's blocks are
    deleting now) rather than left to wait for the block it runs in."""
    identity = store.read_identity(folder)
    with store.change(command) as tx:
        tx.hold("levels")
        tx.delete(folder)
        taken[folder] = Parked(folder, identity, f"the open transaction deleting it (project {store.project})")
        try:
            yield
        finally:
            taken.pop(folder, None)


# ---- the search index (issue 12, pg-index) ---------------------------------------------------------

INDEX_READ_CHUNK = 200  # rows a query of the index reads: a rebuild never holds a project's text at once


def _index_path(path: str) -> bool:
    try:
        normal = normalize_path(path) == path
    except FsmemError:
        return False
    return normal and bool(path) and "/." not in f"/{path}" and is_memory_file_name(path.rsplit("/", 1)[-1])
