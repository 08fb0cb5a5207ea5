"""A project's memory root, composed: settings, the drive, levels, runs, versions.

memory = fsmem.open("path/to/root", create=True)
memory.create_agent("3f9a1c2e-77", "SEO")
run = memory.run(Scope.agent("3f9a1c2e-77"), thread_id="t-1")
run.call({"command": "read", "path": "MEMORY.md"})
"""

from __future__ import annotations

import os
import re
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from fsmem._core import layout
from fsmem._core.layout import STATE_DIR
from fsmem._core.links import wiki_key
from fsmem._core.paths import normalize_path
from fsmem._core.text import check_text
from fsmem._env.config import Settings, load_settings
from fsmem._errors import BadStore, Conflict, Exists, FsmemError, NotFound, RequestError, RootNotFound, Storage
from fsmem._index.state import index_dir, note_pending, read_current
from fsmem._store.atomic import remove_dead_temps
from fsmem._store.folder.drive import Drive
from fsmem._store.folder.rootlock import CRASH_MARK
from fsmem._store.interface import Store

if TYPE_CHECKING:
    from fsmem._core.fusion import SearchResults
    from fsmem._index.feed import IndexWatcher
    from fsmem._index.index import Index
    from fsmem._index.shared import Share
    from fsmem._memory.facts.facts import Facts
    from fsmem._memory.hybrid import Hybrid
    from fsmem._memory.levels import Scope
    from fsmem._memory.tool import Run
    from fsmem._store.types import BrokenProposal, ChangeProposal, LogEntry, VersionInfo


def open(
    root: str | os.PathLike[str],
    create: bool = False,
    settings: Settings | None = None,
    *,
    project: str | None = None,
    cache: str | os.PathLike[str] | None = None,
) -> Memory:
    """Open a project's memory: a folder (``root``), or a project in PostgreSQL (``root`` a
    ``postgresql://`` URL and ``project`` its name; ``cache`` the folder this worker keeps its search
    index in, by default under ``~/.cache/fsmem``). With ``create``, make it first (an empty
    ``MEMORY.md``; a folder also gets its ``.fsmem/``)."""
    from fsmem._env.system import check_system

    check_system()  # Linux and macOS; elsewhere, say what is missing before anything is touched
    if isinstance(root, str) and root.startswith(("postgresql://", "postgres://")):
        return _open_database(root, project, create, settings, cache)
    if project is not None:
        raise BadStore("a project name is for a PostgreSQL store; a folder is its own project (drop project=)")
    root_path = Path(root).expanduser()
    if not (root_path / STATE_DIR).is_dir():
        if not create:
            # Worded for Python; ``missing``/``root`` let a face word its own way to make it (the CLI: fsmem init).
            raise RootNotFound(
                f"{root_path} is not an fsmem root (no {STATE_DIR}/ folder); open it with "
                f"fsmem.open({str(root_path)!r}, create=True) to make it",
                missing="root",
                root=str(root_path),
            )
        from fsmem._store.folder.root import init_root  # only to make one

        init_root(root_path)
    settings = settings or load_settings(root_path)
    return Memory(Drive(root_path, settings), settings)


def _open_database(
    url: str, project: str | None, create: bool, settings: Settings | None, cache: str | os.PathLike[str] | None
) -> Memory:
    if not project:
        raise BadStore("a PostgreSQL store holds many projects: name one (project='rye-and-ember', --project)")
    try:
        from fsmem._store.postgres.drive import open_store
    except ImportError as error:
        from fsmem._env.resources import install_command

        raise BadStore(
            f"PostgreSQL needs the postgres extra ({error}); install it with {install_command('postgres')}"
        ) from error
    settings = settings or load_settings(None)
    return Memory(open_store(url, project, settings, create=create, cache=cache), settings)


def _sweep_unlocked_writes(state: Path) -> None:
    """Derived state (caches, the index's marks) and proposals are written outside the store's lock, so
    a process killed there leaves temp files no crash repair looks for: those of writers that are gone
    go here. (``proposals`` is ``fsmem._store.folder.proposals.PROPOSALS_DIR``, not imported: a cold
    search opens the memory and must not load the proposal record's request parser.)"""
    for folder in (state, state / "cache", state / "proposals"):
        remove_dead_temps(folder, deep=False)
    remove_dead_temps(index_dir(state))  # its generations' marks: a few folders, a few files each


class Memory:
    """One project's memory folder. Safe to share between threads and processes."""

    def __init__(self, drive: Store, settings: Settings) -> None:
        self.settings = settings
        self.drive = drive
        self._share: Share | None = None  # this process's index of the memory, shared on first use
        self._alone: Index | None = None  # after close: an index of its own, with no watcher
        self._alone_hybrid: Hybrid | None = None  # and its search by meaning, nothing in the background
        self._closed = False
        self._share_mutex = threading.Lock()
        if isinstance(drive, Drive):
            self._open_folder(drive)
        else:
            drive.on_commit.append(self._wake_embedding)  # a worker's index catches up on its next look
            _sweep_unlocked_writes(drive.state)

    def _open_folder(self, drive: Drive) -> None:
        """What a folder needs before use: notes for the index, folders a dead ``deleting_*`` block
        left parked, a killed change's repair, debris of writes made outside the lock, ``.fsmem/`` kept private."""
        # Every change notes its paths, under its lock: searchable from any process when it returns (a
        # search reads what was noted since the index's last commit). Once the lock is let go, the
        # index's committer commits them in the background; a change whose commit did not happen (a
        # kill, a full disk) is committed by the next commit of any process.
        drive.on_commit.append(self._note_for_index)
        drive.after_change.append(self._commit_for_index)  # the embedding is woken by the commit
        drive.restore_parked()
        if drive.crash_left():
            self._repair_after_crash(drive)
        else:
            _sweep_unlocked_writes(drive.state)
        self._keep_state_private(drive)

    def _repair_after_crash(self, drive: Drive) -> None:
        """A change was killed holding the lock (its lock file was left signed): remove the temp files
        of writers that are gone, finish the facts change it cut short, then forget the mark."""
        try:
            with drive.held_if_free("repair") as held:  # taking it finds a dead holder's signature
                if not held or not os.path.lexists(drive.state / CRASH_MARK):
                    return  # a live change holds it (it was signed by one at work): nothing to repair
                remove_dead_temps(drive.root)
                if (drive.root / layout.FACTS_DIR).is_dir():
                    self.facts.repair()
                os.unlink(drive.state / CRASH_MARK)
        except (FsmemError, OSError):
            pass  # a read-only root: the next open tries again; reads never need the repair

    @staticmethod
    def _keep_state_private(drive: Drive) -> None:
        """``.fsmem/`` (full text in the index, the log, versions) is the owner's alone, even in a root
        made by an older fsmem or under a loose umask; everything inside is reached only through it."""
        try:
            if os.stat(drive.state).st_mode & 0o077:
                os.chmod(drive.state, 0o700)
        except OSError:
            pass  # read-only, or not ours: nothing to do that would not fail

    def _note_for_index(self, paths: set[str]) -> None:
        try:
            note_pending(self.drive.state, paths)
        except OSError as error:
            warnings.warn(
                f"could not note a change for the search index ({error}); the next search's comparison will find it",
                stacklevel=3,
            )

    def _commit_for_index(self, paths: set[str]) -> None:
        share = self._shared()
        if share is None or read_current(self.drive.state) is None:
            return  # closed, or no index built yet (the first search builds one, the change in it)
        share.index.commit_soon()  # searches read the change for themselves until it lands

    @property
    def root(self) -> Path | None:
        """The memory folder (None for a store that is no folder: a database)."""
        return self.drive.root if isinstance(self.drive, Drive) else None

    @property
    def name(self) -> str:
        """The project's name: its folder's, or the one it has in the database."""
        return self.drive.name

    def __repr__(self) -> str:
        return f"<fsmem.Memory {self.drive.label}>"

    # ---- runs -------------------------------------------------------------------------------

    def run(self, scope: Scope | None = None, thread_id: str | None = None, review: bool = False) -> Run:
        """A run of the memory tool for one thread; it remembers the versions it has seen.

        With ``review=True`` (a background reviewer), a write that only adds lines applies at once and
        every other change becomes a proposal for a person (:meth:`approve` / :meth:`discard`).
        """
        from fsmem._memory.levels import Scope
        from fsmem._memory.tool import Run

        return Run(self, scope or Scope.chat(), thread_id, review=review)

    @cached_property
    def facts(self) -> Facts:
        """The facts of this root: keep, edit, forget, current, history, known, propose."""
        from fsmem._memory.facts.facts import Facts

        return Facts(self.drive, watcher=lambda: self._watcher)  # its word spares a look every file's stat

    def read(self, path: str) -> str:
        data = self.drive.read(normalize_path(path))
        if data is None:
            raise NotFound(f"there is no file {path!r}")
        return data.decode("utf-8", errors="replace")

    # ---- levels -----------------------------------------------------------------------------

    def create_agent(self, agent_id: str, name: str, *, exist_ok: bool = False) -> str:
        """Make the agent's folder; with ``exist_ok``, an agent that has one keeps it (get-or-create)."""
        from fsmem._memory import levels

        try:
            return levels.create_agent(self, agent_id, name)
        except Exists:
            folder = levels.find_agent(self, agent_id) if exist_ok else None
            if folder is None:
                raise
            return folder

    def create_routine(self, agent_id: str, routine_id: str, name: str, *, exist_ok: bool = False) -> str:
        """Make the routine's folder; with ``exist_ok``, a routine of this agent that has one keeps it."""
        from fsmem._memory import levels

        try:
            return levels.create_routine(self, agent_id, routine_id, name)
        except Exists:
            folder = levels.find_routine(self, routine_id, agent_id) if exist_ok else None
            if folder is None:  # not there, or a routine of another agent: still an error
                raise
            return folder

    def delete_agent(self, agent_id: str) -> dict[str, str]:
        from fsmem._memory import levels

        return levels.delete_agent(self, agent_id)

    def delete_routine(self, routine_id: str) -> dict[str, str]:
        from fsmem._memory import levels

        return levels.delete_routine(self, routine_id)

    def deleting_agent(self, agent_id: str):
        from fsmem._memory import levels

        folder = levels.find_agent(self, agent_id)
        if folder is None:
            raise NotFound(f"agent {agent_id!r} has no folder")
        return levels.deleting(self, folder, "delete_agent")

    def deleting_routine(self, routine_id: str):
        from fsmem._memory import levels

        folder = levels.find_routine(self, routine_id)
        if folder is None:
            raise NotFound(f"routine {routine_id!r} has no folder")
        return levels.deleting(self, folder, "delete_routine")

    def scope_files(self, scope: Scope) -> list[str]:
        from fsmem._memory import levels

        return levels.scope_files(self, scope)

    # ---- search -----------------------------------------------------------------------------

    @property
    def index(self) -> Index:
        """The search index of this memory: one per memory in a process, however many ``Memory``
        objects open it (``fsmem._index.shared``)."""
        share = self._shared()
        if share is not None:
            return share.index
        if self._alone is None:
            from fsmem._index.index import Index  # tantivy: loaded by the first search (or commit)

            self._alone = Index(self.drive)
        return self._alone

    def _shared(self) -> Share | None:
        if self._share is None and not self._closed:
            with self._share_mutex:
                if self._share is None and not self._closed:
                    from fsmem._index.shared import join

                    self._share = join(self.drive)
        return self._share

    @property
    def _watcher(self) -> IndexWatcher | None:
        """The watcher of this process that keeps this memory's index current (``None``: none runs)."""
        share = self._share
        return share.watcher if share is not None else None

    @property
    def hybrid(self) -> Hybrid:
        """Search by words and by meaning, fused: one per memory in a process, beside its index (its
        embedding worker too); after ``close()``, one of this object's own that starts nothing."""
        from fsmem._memory.hybrid import Hybrid

        share = self._shared()
        if share is not None:
            return share.attached("hybrid", lambda index: Hybrid(index, self.settings))
        if self._alone_hybrid is None:
            self._alone_hybrid = Hybrid(self.index, self.settings)
            self._alone_hybrid.stop()  # searches go on; nothing embeds in the background
        return self._alone_hybrid

    def search(
        self,
        query: str,
        *,
        regex: bool = False,
        include: str | Iterable[str] | None = None,
        exclude: str | Iterable[str] | None = None,
        since: str | datetime | None = None,
        limit: int = 10,
        mode: str | None = None,
    ) -> SearchResults:
        """Ranked files with snippets (text mode), or matching lines (``regex=True``). ``mode``: rank
        by ``"words"``, ``"meaning"`` or ``"both"`` (default ``settings.search_mode``); the result's
        ``meaning`` says how much meaning took part (``off``, ``partial``, ``full``)."""
        from fsmem._core.fusion import SearchResults, check_mode

        check_text("query", query)  # before anything is opened or started
        mode = check_mode(self.settings.search_mode if mode is None else mode)
        if regex:
            from fsmem._index.grep import grep

            return SearchResults(
                grep(
                    self.drive,
                    query,
                    include=include,
                    exclude=exclude,
                    since=since,
                    limit=limit,
                    timeout=self.settings.regex_timeout,
                )
            )
        try:
            share = self._shared()
            if share is None:  # closed: the folder's searches compare again; PostgreSQL's answer STORAGE
                return self._fused(self.index, query, mode, limit, include, exclude, since, watched=None)
            with share.lease() as index:
                watched = share.watched(start=self.settings.watch)
                return self._fused(index, query, mode, limit, include, exclude, since, watched=watched)
        except Storage as error:
            if not error.read_only:
                raise
        # A read-only root: its index cannot be opened (tantivy takes a lock file to read), so scan the
        # files for lines holding any of the words, as a regex search would.
        from fsmem._index.grep import grep

        words = [re.escape(word) for word in query.split() if word]
        return SearchResults(
            grep(
                self.drive,
                "(?i)" + "|".join(words or [re.escape(query)]),
                include=include,
                exclude=exclude,
                since=since,
                limit=limit,
                timeout=self.settings.regex_timeout,
            )
        )

    def _fused(
        self,
        index: Index,
        query: str,
        mode: str,
        limit: int,
        include: str | Iterable[str] | None,
        exclude: str | Iterable[str] | None,
        since: str | datetime | None,
        *,
        watched: set[str] | None,
    ) -> SearchResults:
        return self.hybrid.search(
            query,
            mode,
            limit,
            words=lambda depth: index.search(
                query, include=include, exclude=exclude, since=since, limit=depth, watched=watched
            ),
            filters=lambda: index.query.filters(include, exclude, since),
        )

    def linking_to(self, paths: Iterable[str]) -> list[str]:
        """Files that may link to any of ``paths`` (by the index's link keys; read them to be sure)."""
        keys = [key for path in paths for key in (path, wiki_key(path))]
        if not keys:
            return []
        share = self._shared()
        if share is None:  # closed, as in search
            return self.index.linking_to(keys)
        with share.lease() as index:
            return index.linking_to(keys, watched=share.watched(start=self.settings.watch))

    # ---- meaning ----------------------------------------------------------------------------

    def start_embedding(self) -> bool:
        """Embed the files' passages in the background of this process (a long-lived one: the first
        search of a watching process does it unasked); ``False`` when meaning is off or not set up."""
        return self.hybrid.start()

    def embed_pending(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Embed every file waiting for its passages, here and now; the number embedded."""
        meaning = self.hybrid.meaning()
        if meaning is None:
            return 0
        self.index.ensure_fresh()
        return meaning.embed_pending(progress=progress)

    def meaning_status(self) -> dict[str, Any]:
        """``meaning`` (``off``, ``partial``, ``full``) and, when on, the model and the backlog."""
        self.index.apply_pending()
        return self.hybrid.status()

    def _wake_embedding(self, _paths: set[str]) -> None:
        share = self._share
        hybrid = share.attached_if_any("hybrid") if share is not None else None
        if hybrid is not None:
            cast("Hybrid", hybrid).wake()

    def watch(self, **options: float) -> IndexWatcher:
        """Keep the index current from this process (the folder: watchdog, with ``options`` such as
        ``debounce``; PostgreSQL: LISTEN/NOTIFY); replaces the watcher a first search started. The
        watcher is the process's for this memory: it stops when the last ``Memory`` on it closes."""
        share = self._shared()
        if share is None:
            raise Storage("this memory was closed (memory.close()); open it again to watch it")
        return share.watch(**options)

    def close(self) -> None:
        """Let go of what this memory holds: its share of the process's index (the last ``Memory`` of a
        root to close stops the watcher and the embedding; the others keep searching), and on PostgreSQL
        its connections (calls after it answer STORAGE, saying the memory was closed). On a folder,
        searches after it compare again."""
        with self._share_mutex:
            share, self._share = self._share, None
            self._closed = True
        if share is not None:
            share.leave()
        if self._alone_hybrid is not None:
            self._alone_hybrid.stop()
        self.drive.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- history ----------------------------------------------------------------------------

    def versions(self, path: str) -> list[VersionInfo]:
        """Earlier contents of a file (deletes included), newest first; at most 20."""
        path = normalize_path(path)
        return self.drive.versions(path)

    def revert(self, path: str, version: str | None = None, thread: str | None = None) -> str:
        """Put back an earlier content (the newest kept one by default). A change like any other."""
        path = normalize_path(path)
        kept = self.drive.versions(path)
        if version is not None:
            kept = [v for v in kept if v.version.startswith(version)]
        if not kept:
            which = f"version {version}" if version else "an earlier version"
            raise NotFound(f"{path!r} has no {which} kept; `fsmem versions {path}` lists what there is")
        data = self.drive.read_version(kept[0])
        with self.drive.change("revert", thread) as tx:
            return tx.write(path, data)

    # ---- proposals --------------------------------------------------------------------------

    def proposals(self) -> list[ChangeProposal | BrokenProposal]:
        """The proposals waiting for a person, oldest first; then any that cannot be read as one
        (``BrokenProposal``: ``id`` and ``problem``), which ``approve`` refuses and ``discard`` drops."""
        from fsmem._memory import proposals

        return proposals.all_proposals(self)

    def approve(self, proposal_id: str) -> dict[str, Any]:
        """Apply a proposal as a change like any other, if what it changes is as it was."""
        from fsmem._core.requests import parse_request
        from fsmem._memory import proposals
        from fsmem._memory.levels import Scope

        proposal = proposals.load(self, proposal_id)
        stale = proposals.stale_paths(self, proposal)
        if stale:
            raise Conflict(
                f"proposal {proposal_id} can no longer apply: {', '.join(stale)} changed since it was made; "
                "discard it (`fsmem proposals discard ID`) and let the reviewer look again"
            )
        run = self.run(Scope.parse(proposal.scope), thread_id=f"approve:{proposal_id}")
        for path, version in proposal.base.items():
            if version is not None:
                run.mark_seen(path, version)
        # The request was checked when it was proposed; it may carry flags a face set that the model's
        # schema does not offer (e.g. Claude's create), so it is parsed, not re-validated against the schema.
        try:
            result = run.execute(parse_request(proposal.request))
        except RequestError as error:
            raise Conflict(f"proposal {proposal_id} was not applied: {error.message}") from error
        proposals.discard(self, proposal_id)
        return result

    def discard(self, proposal_id: str) -> None:
        from fsmem._memory import proposals

        proposals.discard(self, proposal_id)

    def log(self) -> Iterator[LogEntry]:
        return self.drive.log()
