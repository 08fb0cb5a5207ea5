"""A whole project from one store to another: import, export and backup in one step (``fsmem copy``).

    copy("notes/", "postgresql://db.internal/fsmem#rye-and-ember")   # folder -> PostgreSQL
    copy("postgresql://db.internal/fsmem", "backup/", project="rye-and-ember")  # and back
    copy("notes/", "notes-backup/")                                  # folder -> folder

Files, kept versions (time, command, bytes), the log (time, command, paths, versions, thread, in
order) and proposals travel as they are. Copying reads the source (one snapshot: the folder under its
lock, PostgreSQL in one REPEATABLE READ transaction) and writes the destination all or nothing: one
transaction on PostgreSQL, a temp folder renamed into place for a folder. A destination that already
holds memory is refused (``EXISTS``), and so is a source that does not exist (``NO_ROOT``); either way
nothing is written. What is not memory (a picture, a link, an editor's swap file, a file in
``.fsmem/versions/`` that no change kept there) is left out and listed in ``Copied.skipped``. A file in
``.fsmem/proposals/`` that is not a proposal (cut short, edited, a link) stops the copy
(``BAD_PROPOSAL``, naming it) before the destination is touched. Derived state (the search index) is
not copied: it is rebuilt on open.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote, urlsplit

from fsmem._env.resources import install_command
from fsmem._errors import BadStore, RootNotFound
from fsmem._store.types import ProjectCopy

URL_SCHEMES = ("postgresql", "postgres")


class _Copyable(Protocol):
    """The copy block of ``fsmem._store.interface.Store``: all a copy asks of either side."""

    def export_project(self) -> ProjectCopy: ...
    def import_project(self, copy: ProjectCopy) -> None: ...


@dataclass(frozen=True)
class Place:
    """Where a project is: a folder, or a project in a PostgreSQL database."""

    folder: Path | None = None
    url: str | None = None
    project: str | None = None

    def __str__(self) -> str:
        if self.folder is not None:
            return str(self.folder)
        from fsmem._store.postgres.cache import redacted

        return f"project {self.project!r} in {redacted(self.url or '')}"


@dataclass(frozen=True)
class Copied:
    files: int
    versions: int
    log: int
    proposals: int
    skipped: list[str] = field(default_factory=list)


def place(text: str, project: str | None = None) -> Place:
    """A folder path, or a ``postgresql://…`` URL naming its project as ``#NAME`` (else ``project``)."""
    if text.split("://", 1)[0].lower() not in URL_SCHEMES or "://" not in text:
        return Place(folder=Path(text).expanduser().absolute())
    parts = urlsplit(text)
    name = unquote(parts.fragment) if parts.fragment else project
    if not name:
        raise BadStore(
            "a PostgreSQL side of a copy needs a project: add it to the URL as #NAME "
            "(postgresql://host/db#rye-and-ember) or pass --project NAME"
        )
    return Place(url=text.partition("#")[0], project=name)


def copy(source: str, destination: str, project: str | None = None) -> Copied:
    """Copy the project at ``source`` to ``destination`` (see the module's docstring)."""
    source_place, destination_place = place(source, project), place(destination, project)
    with contextlib.ExitStack() as opened:
        # The source is read whole before the destination is opened: a source that cannot be copied
        # (a proposal file that is not one) stops the copy before anything is made there.
        held = _open(source_place, opened, create=False).export_project()
        _open(destination_place, opened, create=True).import_project(held)
    return Copied(len(held.files), len(held.versions), len(held.log), len(held.proposals), held.skipped)


def _open(where: Place, opened: contextlib.ExitStack, *, create: bool) -> _Copyable:
    if where.folder is not None:
        from fsmem._core.layout import STATE_DIR
        from fsmem._env.config import load_settings
        from fsmem._store.folder.drive import Drive

        if not create and not where.folder.is_dir():
            raise RootNotFound(f"there is no folder {where.folder} to copy; check the path")
        has_state = (where.folder / STATE_DIR).is_dir()
        return Drive(where.folder, load_settings(where.folder if has_state and not create else None))
    try:
        from fsmem._store.postgres.store import PgStore
    except ImportError as error:
        raise BadStore(
            f"copying to or from PostgreSQL needs the postgres extra: {install_command('postgres')}"
        ) from error
    assert where.url is not None and where.project is not None
    try:
        store = PgStore.open(where.url, where.project, create=create)
    except RootNotFound as error:
        raise RootNotFound(f"there is no {where} to copy (or this role may not see it); check the name") from error
    opened.callback(store.close)
    return store
