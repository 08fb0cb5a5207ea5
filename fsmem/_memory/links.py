"""Linked notes, once for both stores: a file's links and backlinks, its linked notes for recall, and
the links a rename rewrites so none breaks (the rules are ``fsmem._core.links``; the index finds which
files may link to a path, each is then read to be sure).

    links_of(memory, "seo/titles.md")    # -> Links(path, links=(Linked, ...), backlinks=(Linked, ...))
    linked_notes(memory, "MEMORY.md", text, limit=4)   # paths its links lead to, in order
    plan = rename_plan(memory, "seo", "web/seo", moved)   # in the change, its checks passed: who may link
    writes = plan.texts(tx, drive)                        # each read again, before tx.move; written after it
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fsmem._core.layout import is_fact_path
from fsmem._core.links import find_links, moved_to, resolve_link, rewrite_links
from fsmem._core.paths import normalize_path
from fsmem._errors import NotFound

if TYPE_CHECKING:
    from fsmem._memory.project import Project
    from fsmem._store.interface import Store, StoreChange

__all__ = ["Linked", "Links", "RenamePlan", "linked_notes", "links_of", "rename_plan"]


@dataclass(frozen=True)
class Linked:
    """One link: from ``source`` (line ``line``), as written, to ``target`` (``None``: no such file)."""

    source: str
    line: int
    kind: str  # "markdown" or "wiki"
    written: str
    target: str | None

    def to_dict(self) -> dict[str, Any]:
        names = ("source", "line", "kind", "written", "target")
        return {name: getattr(self, name) for name in names}


@dataclass(frozen=True)
class Links:
    path: str
    links: tuple[Linked, ...]  # what the file links to, in order
    backlinks: tuple[Linked, ...]  # links in other files that lead to it, by path

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "links": [link.to_dict() for link in self.links],
            "backlinks": [link.to_dict() for link in self.backlinks],
        }


def _text(drive: Store, path: str) -> str | None:
    data = drive.read(path)
    return None if data is None else data.decode("utf-8", errors="replace")


def _exists(drive: Store) -> Callable[[str], bool]:
    return lambda path: drive.exists(path) and not drive.is_dir(path)


def _resolved(drive: Store, path: str, text: str) -> list[Linked]:
    exists = _exists(drive)
    return [
        Linked(path, text.count("\n", 0, link.start) + 1, link.kind, link.written, resolve_link(link, path, exists))
        for link in find_links(path, text)
    ]


def links_of(memory: Project, path: str) -> Links:
    """What ``path`` links to and which files link to it (``NOT_FOUND`` when there is no such file)."""
    path = normalize_path(path)
    drive = memory.drive
    text = _text(drive, path) if path else None
    if text is None:
        raise NotFound(f"there is no file {path or '/'!r}; give the path of a memory file, as `fsmem read` shows it")
    backlinks = [
        link
        for source in memory.linking_to([path])
        if source != path and (other := _text(drive, source)) is not None
        for link in _resolved(drive, source, other)
        if link.target == path
    ]
    return Links(path, tuple(_resolved(drive, path, text)), tuple(backlinks))


def linked_notes(memory: Project, path: str, text: str, limit: int) -> list[str]:
    """The files ``path``'s links lead to (depth 1), each once, in order, at most ``limit``."""
    found: list[str] = []
    for link in _resolved(memory.drive, path, text):
        if link.target is not None and link.target != path and link.target not in found:
            found.append(link.target)
            if len(found) >= limit:
                break
    return found


@dataclass
class RenamePlan:
    """The files that may hold a link a move of ``source`` to ``destination`` would break (the index's
    backlinks, brought up to date first, and the moved files); each is read in the change to be sure."""

    source: str
    destination: str
    candidates: tuple[str, ...]  # files that may hold such a link, by their paths before the move

    def texts(self, tx: StoreChange, drive: Store) -> dict[str, bytes]:
        """Inside the change, before ``tx.move``: each candidate read again, and the new bytes of those
        whose links break, by the path each will have after the move."""
        exists = _exists(drive)
        writes: dict[str, bytes] = {}
        for old in self.candidates:
            data = tx.read(old)
            if data is None:
                continue
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                continue
            new_text = rewrite_links(old, text, self.source, self.destination, exists)
            if new_text is not None:
                writes[moved_to(old, self.source, self.destination) or old] = new_text.encode("utf-8")
        return writes


def rename_plan(memory: Project, source: str, destination: str, moved: Iterable[str]) -> RenamePlan:
    """Inside the change that moves ``source`` (whose files are ``moved``) to ``destination``, once its
    checks passed: the files that may link to them and the moved files themselves (their relative links)."""
    moved = list(moved)
    # fact files change only through the facts API
    candidates = dict.fromkeys(p for p in [*moved, *memory.linking_to(moved)] if not is_fact_path(p))
    return RenamePlan(source, destination, tuple(candidates))
