"""Agents, routines and scopes: which level folders exist and which top files a run loads.

Folders are named ``<slug of name>-<first 8 chars of id>`` for people, and found by the **full id**,
kept in a small hidden file inside each folder (``.fsmem-level``: kind, id, name), so moving the folder
moves its identity and two ids that share their first 8 characters never share a folder (the second
one's folder gets a longer piece of its id, ``marketing-bot-marketingbot``). A folder made before
identities were kept (no ``.fsmem-level``) is adopted by the first id that asks for it when it is the
only folder whose suffix fits; two such candidates raise instead. A scope is built by the harness from
its own records, never from anything the model said.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal
from urllib.parse import unquote

from fsmem._core.layout import (
    AGENTS_DIR,
    PROJECT_FILE,
    ROUTINES_DIR,
    agent_top_file,
    folder_matches_id,
    id_suffix,
    level_folder_name,
    routine_top_file,
    slug,
)
from fsmem._errors import BadPath, Exists, NotFound, ScopeError

if TYPE_CHECKING:
    from fsmem._memory.project import Project
    from fsmem._store.interface import StoreChange


class Scope:
    """Which levels a run loads: ``Scope.chat()``, ``Scope.agent(id)`` or ``Scope.routine(agent, id)``.

    Each is a small frozen dataclass (``ChatScope``, ``AgentScope``, ``RoutineScope``) holding only
    what it needs; the ids and names a scope does not have read as None, so callers need not ask
    which kind it is before reading them.
    """

    kind: ClassVar[Literal["chat", "agent", "routine"]]
    agent_id: str | None = None
    routine_id: str | None = None
    agent_name: str | None = None
    routine_name: str | None = None

    @staticmethod
    def chat() -> ChatScope:
        return ChatScope()

    @staticmethod
    def agent(agent_id: str, name: str | None = None) -> AgentScope:
        _check_id(agent_id, "agent")
        return AgentScope(agent_id, name)

    @staticmethod
    def routine(
        agent_id: str, routine_id: str, agent_name: str | None = None, routine_name: str | None = None
    ) -> RoutineScope:
        _check_id(agent_id, "agent")
        _check_id(routine_id, "routine")
        return RoutineScope(agent_id, routine_id, agent_name, routine_name)

    def to_text(self) -> str:
        """The inverse of :meth:`parse`: names ride along when the scope has them."""
        if self.kind == "chat":
            return "chat"
        if self.kind == "agent":
            text = f"agent:{_escape(self.agent_id)}"
            return text if self.agent_name is None else f"{text}:{_escape(self.agent_name)}"
        text = f"routine:{_escape(self.agent_id)}/{_escape(self.routine_id)}"
        if self.agent_name is None and self.routine_name is None:
            return text
        return f"{text}:{_escape(self.agent_name or '')}/{_escape(self.routine_name or '')}"

    @classmethod
    def parse(cls, text: str) -> Scope:
        """The CLI and MCP form: ``chat``, ``agent:ID[:NAME]``,
        ``routine:AGENT_ID/ROUTINE_ID[:AGENT_NAME/ROUTINE_NAME]``.

        A name lets the folder be made on first use (a config pasted before the harness made it).
        ``%``, ``/`` and ``:`` inside an id or a name are written ``%25``, ``%2F``, ``%3A``; an empty
        name is no name (``routine:a1/b2:/Meta tags`` names only the routine).
        """
        kind, _, rest = text.partition(":")
        ids, _, names = rest.partition(":")
        if kind == "chat" and not rest:
            return cls.chat()
        if kind == "agent" and ids:
            return cls.agent(unquote(ids), unquote(names) or None)
        if kind == "routine" and ids.count("/") == 1 and (not names or names.count("/") == 1):
            agent_id, routine_id = map(unquote, ids.split("/"))
            agent_name, _, routine_name = names.partition("/")
            return cls.routine(agent_id, routine_id, unquote(agent_name) or None, unquote(routine_name) or None)
        raise ScopeError(
            f"scope {text!r} is not one of: chat, agent:ID, routine:AGENT_ID/ROUTINE_ID "
            "(add :NAME, or :AGENT_NAME/ROUTINE_NAME, so a missing folder is made)"
        )


def _escape(part: str | None) -> str:
    return (part or "").replace("%", "%25").replace("/", "%2F").replace(":", "%3A")


@dataclass(frozen=True)
class ChatScope(Scope):
    """A chat with no agent: the project's ``MEMORY.md``."""

    kind: ClassVar[Literal["chat"]] = "chat"


@dataclass(frozen=True)
class AgentScope(Scope):
    """An agent's chat: the project's and the agent's ``MEMORY.md``."""

    kind: ClassVar[Literal["agent"]] = "agent"
    agent_id: str
    agent_name: str | None = None


@dataclass(frozen=True)
class RoutineScope(Scope):
    """A routine's run: those two, and the routine's ``NOTES.md``."""

    kind: ClassVar[Literal["routine"]] = "routine"
    agent_id: str
    routine_id: str
    agent_name: str | None = None
    routine_name: str | None = None


def _check_id(entity_id: str, what: str) -> None:
    try:
        id_suffix(entity_id)
    except (ValueError, TypeError) as error:
        raise ScopeError(f"{what} id {entity_id!r} has no letters or digits; pass the id the harness keeps") from error


# ---- finding folders by id ------------------------------------------------------------------


@dataclass(frozen=True)
class LevelFolder:
    """A level folder as people and scripts see it (``fsmem agents list``)."""

    kind: Literal["agent", "routine"]
    id: str | None  # None: made before identities were kept, and not claimed by an id yet
    name: str
    folder: str  # root-relative: "agents/seo-3f9a1c2e"


def read_identity(memory: Project, folder: str) -> dict[str, str] | None:
    """The kind, id and name kept in a level folder, or None (none kept yet, or unreadable)."""
    return _parse_identity(memory.drive.level_identity(folder))


def _parse_identity(kept: bytes | None) -> dict[str, str] | None:
    if kept is None:
        return None
    try:
        data = json.loads(kept.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError included
        return None
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        return None
    return {key: str(data.get(key) or "") for key in ("kind", "id", "name")}


def _write_identity(tx: StoreChange, folder: str, kind: str, entity_id: str, name: str) -> None:
    data = json.dumps({"kind": kind, "id": entity_id, "name": name}, ensure_ascii=False) + "\n"
    tx.write_identity(folder, data.encode("utf-8"))


def _children(memory: Project, parent: str) -> list[str]:
    """The names of the folders in ``parent`` (none when it is missing or no folder)."""
    try:
        entries = memory.drive.entries(parent)
    except (NotFound, NotADirectoryError, BadPath):  # BadPath: a link leading out of the memory
        return []
    return sorted(
        name for entry in entries if entry.is_dir and not (name := entry.path.rsplit("/", 1)[-1]).startswith(".")
    )


def _find_one(memory: Project, parent: str, entity_id: str, what: str, tx: StoreChange | None = None) -> str | None:
    """The folder in ``parent`` whose kept identity is ``entity_id``; else the one folder made before
    identities were kept whose suffix fits it (adopted: its identity is written now, in ``tx`` when
    the caller's change is under way); else None."""
    names = _children(memory, parent)
    claimed, unclaimed = [], []
    for name in names:
        identity = read_identity(memory, f"{parent}/{name}")
        if identity is None:
            if folder_matches_id(name, entity_id):
                unclaimed.append(name)
        elif identity["id"] == entity_id:
            claimed.append(name)
    for matches in (claimed, unclaimed):
        if len(matches) > 1:
            raise ScopeError(
                f"{what} id {entity_id!r} matches {len(matches)} folders in {parent}/ "
                f"({', '.join(matches)}); rename or merge them by hand so one remains"
            )
    if claimed:
        return f"{parent}/{claimed[0]}"
    if not unclaimed:
        return None
    folder = f"{parent}/{unclaimed[0]}"
    if tx is not None:
        return _adopt(memory, tx, folder, what, entity_id)
    with memory.drive.change("adopt_level") as own:
        own.hold("levels")
        return _adopt(memory, own, folder, what, entity_id)


def _adopt(memory: Project, tx: StoreChange, folder: str, what: str, entity_id: str) -> str | None:
    """Claim a folder made before identities were kept for ``entity_id``, unless another process
    claimed it meanwhile (looked at again with the levels held: no other claim can land now)."""
    identity = read_identity(memory, folder)
    if identity is None:
        _write_identity(tx, folder, what, entity_id, _name_of(folder.rsplit("/", 1)[-1]))
        return folder
    return folder if identity["id"] == entity_id else None


def _name_of(folder_name: str) -> str:
    """The name a folder was made with, as well as its slug tells it: ``title-tuning-a27f3b90`` → ``title-tuning``."""
    return folder_name.rsplit("-", 1)[0]


def _free_folder_name(memory: Project, parent: str, name: str, entity_id: str) -> str:
    """``<slug>-<first 8 of id>``; when another id's folder has that name, a longer piece of the id."""
    taken = set(_children(memory, parent)) | {n.lower() for n in _children(memory, parent)}
    first = level_folder_name(name, entity_id)
    if first not in taken:
        return first
    cleaned = re.sub(r"[^A-Za-z0-9_]", "", entity_id).lower()
    for length in (12, 16, 24, len(cleaned)):
        candidate = f"{slug(name)}-{cleaned[:length]}"
        if candidate not in taken:
            return candidate
    number = 2
    while f"{first}-{number}" in taken:
        number += 1
    return f"{first}-{number}"


def find_agent(memory: Project, agent_id: str, tx: StoreChange | None = None) -> str | None:
    """The agent's folder; ``tx``: the change under way (a folder adopted is claimed in it)."""
    return _find_one(memory, AGENTS_DIR, agent_id, "agent", tx)


def find_routine(
    memory: Project, routine_id: str, agent_id: str | None = None, tx: StoreChange | None = None
) -> str | None:
    """A routine's folder; without the agent id, searched under every agent."""
    if agent_id is not None:
        agent_folder = find_agent(memory, agent_id, tx)
        return (
            None
            if agent_folder is None
            else _find_one(memory, f"{agent_folder}/{ROUTINES_DIR}", routine_id, "routine", tx)
        )
    found = [
        f
        for agent in list_agents(memory)
        if (f := _find_one(memory, f"{agent}/{ROUTINES_DIR}", routine_id, "routine", tx))
    ]
    if len(found) > 1:
        raise ScopeError(f"routine id {routine_id!r} matches {len(found)} folders ({', '.join(found)})")
    return found[0] if found else None


def list_agents(memory: Project) -> list[str]:
    return [f"{AGENTS_DIR}/{name}" for name in _children(memory, AGENTS_DIR)]


def list_routines(memory: Project, agent_folder: str) -> list[str]:
    return [f"{agent_folder}/{ROUTINES_DIR}/{name}" for name in _children(memory, f"{agent_folder}/{ROUTINES_DIR}")]


def _described(memory: Project, folder: str, kind: Literal["agent", "routine"]) -> LevelFolder:
    identity = read_identity(memory, folder)
    if identity is None:
        return LevelFolder(kind, None, _name_of(folder.rsplit("/", 1)[-1]), folder)
    return LevelFolder(kind, identity["id"], identity["name"] or _name_of(folder.rsplit("/", 1)[-1]), folder)


def describe_agents(memory: Project) -> list[LevelFolder]:
    """Every agent folder with its full id and name (id None for a folder not claimed yet)."""
    return [_described(memory, folder, "agent") for folder in list_agents(memory)]


def describe_routines(memory: Project, agent_folder: str) -> list[LevelFolder]:
    return [_described(memory, folder, "routine") for folder in list_routines(memory, agent_folder)]


def match_id(memory: Project, typed: str, kind: Literal["agent", "routine"]) -> str:
    """The full id a person typed at the shell, who may type an unambiguous prefix of it, or the name.

    An exact id wins; else the one kept id that starts with ``typed`` or whose name is ``typed``
    (ignoring case); two or more raise ``ScopeError`` listing them. With none, ``typed`` is returned as
    is (a folder made before ids were kept may still be found by it).
    """
    if kind == "agent":
        known = describe_agents(memory)
    else:
        known = [r for agent in list_agents(memory) for r in describe_routines(memory, agent)]
    ids = {level.id for level in known if level.id is not None}
    if typed in ids:
        return typed
    wanted = typed.casefold()
    fitting = sorted(
        (
            level
            for level in known
            if level.id is not None and (level.id.startswith(typed) or level.name.casefold() == wanted)
        ),
        key=lambda level: level.folder,
    )
    if len(fitting) > 1:
        shown = ", ".join(f"{level.id} ({level.name}, {level.folder})" for level in fitting)
        raise ScopeError(
            f"{kind} {typed!r} is the start of an id or the name of {len(fitting)} {kind}s: {shown}; "
            "type more of its id"
        )
    return fitting[0].id if fitting and fitting[0].id is not None else typed


# ---- lifecycle ------------------------------------------------------------------------------


def create_agent(memory: Project, agent_id: str, name: str, *, exist_ok: bool = False) -> str:
    """Make the agent's folder; with ``exist_ok``, an agent that has one keeps it (get-or-create)."""
    _check_id(agent_id, "agent")
    existing = find_agent(memory, agent_id)
    if existing is not None and not exist_ok:
        raise Exists(f"agent {agent_id!r} already has a folder: {existing}")
    if existing is not None:
        return existing
    with memory.drive.change("create_agent") as tx:
        # Looked up again with the levels held: another process may have made it since (two first uses at
        # once would otherwise pick two names for one id, and every later run would match two folders).
        _refuse_parked(memory, "agent", agent_id)  # before the hold: a block of this process may hold it
        tx.hold("levels")
        existing = find_agent(memory, agent_id, tx)
        if existing is not None:
            if exist_ok:
                return existing
            raise Exists(f"agent {agent_id!r} already has a folder: {existing}")
        folder = f"{AGENTS_DIR}/{_free_folder_name(memory, AGENTS_DIR, name, agent_id)}"
        tx.write(agent_top_file(folder), b"")
        _write_identity(tx, folder, "agent", agent_id, name)
    return folder


def create_routine(
    memory: Project,
    agent_id: str,
    routine_id: str,
    name: str,
    agent_name: str | None = None,
    *,
    exist_ok: bool = False,
) -> str:
    """Make the routine's folder; with ``exist_ok``, a routine of this agent that has one keeps it."""
    _check_id(routine_id, "routine")
    agent_folder = find_agent(memory, agent_id)
    if agent_folder is None:
        if agent_name is None:
            raise NotFound(f"agent {agent_id!r} has no folder; create the agent first")
        agent_folder = create_agent(memory, agent_id, agent_name, exist_ok=exist_ok)
    parent = f"{agent_folder}/{ROUTINES_DIR}"
    existing = _existing_routine(memory, routine_id, parent, exist_ok)
    if existing is not None:
        return existing
    with memory.drive.change("create_routine") as tx:
        _refuse_parked(memory, "routine", routine_id, parent)  # before the hold: a block of this process may hold it
        tx.hold("levels")
        existing = _existing_routine(memory, routine_id, parent, exist_ok, tx)  # again, the levels held
        if existing is not None:
            return existing
        folder = f"{parent}/{_free_folder_name(memory, parent, name, routine_id)}"
        tx.write(routine_top_file(folder), b"")
        _write_identity(tx, folder, "routine", routine_id, name)
    return folder


def _existing_routine(
    memory: Project, routine_id: str, parent: str, exist_ok: bool, tx: StoreChange | None = None
) -> str | None:
    """The routine's folder when it has one and ``exist_ok`` lets it be kept (under ``parent``: this
    agent's); a folder anywhere else raises ``EXISTS``; None when it has none."""
    existing = find_routine(memory, routine_id, tx=tx)
    if existing is None:
        return None
    if exist_ok and existing.startswith(f"{parent}/"):
        return existing
    raise Exists(f"routine {routine_id!r} already has a folder: {existing}")


def _refuse_parked(memory: Project, kind: str, entity_id: str, inside: str | None = None) -> None:
    """Refuse to make a folder for an id whose folder (or whose agent's folder) is parked by a
    ``deleting_*`` block: a new one would stand where the parked one must go back. ``inside``: the
    folder it would be made in, refused too when it is being deleted."""
    for parked in memory.drive.parked():
        if inside is not None and (inside + "/").startswith(parked.origin + "/"):
            raise ScopeError(
                f"{kind} {entity_id!r} cannot be made in {inside}: {parked.origin} is being deleted (its "
                f"content is held at {parked.kept_at} until the deleting block ends)"
            )
        identity = _parse_identity(parked.identity)
        name = parked.origin.rsplit("/", 1)[-1]
        parent = parked.origin.rsplit("/", 1)[0]
        ours = (
            identity["id"] == entity_id and identity["kind"] == kind
            if identity is not None
            else folder_matches_id(name, entity_id) and parent.endswith(AGENTS_DIR if kind == "agent" else ROUTINES_DIR)
        )
        if ours:
            raise ScopeError(
                f"{kind} {entity_id!r} is being deleted (its folder {parked.origin} is moved aside to "
                f"{parked.kept_at} until the deleting block ends); run it again after the delete, or create "
                "it anew then"
            )


def _held(memory: Project, folder: str) -> dict[str, str]:
    held = {}
    for entry in memory.drive.walk_files(folder):
        data = memory.drive.read(entry.path)
        if data is not None:
            held[entry.path] = data.decode("utf-8", errors="replace")
    return held


def delete_folder(memory: Project, folder: str, command: str) -> dict[str, str]:
    held = _held(memory, folder)
    with memory.drive.change(command) as tx:
        tx.delete(folder)
    return held


def delete_agent(memory: Project, agent_id: str) -> dict[str, str]:
    folder = find_agent(memory, agent_id)
    if folder is None:
        raise NotFound(f"agent {agent_id!r} has no folder")
    return delete_folder(memory, folder, "delete_agent")


def delete_routine(memory: Project, routine_id: str) -> dict[str, str]:
    folder = find_routine(memory, routine_id)
    if folder is None:
        raise NotFound(f"routine {routine_id!r} has no folder")
    return delete_folder(memory, folder, "delete_routine")


@contextlib.contextmanager
def deleting(memory: Project, folder: str, command: str) -> Iterator[dict[str, str]]:
    """Take the folder away for the block, yield what it held; drop it if the block succeeds (versions
    kept), put it back if not.

    Between the start and the end of the block, runs no longer see the folder (nor make a new one for its
    id), so the harness's own delete and fsmem's happen as one step. How is the store's
    (``Store.deleting``): the folder is moved aside (``LevelParked`` says where when it cannot go back);
    PostgreSQL deletes it in one transaction held across the block.
    """
    held = _held(memory, folder)
    with memory.drive.deleting(folder, command):
        yield held


def scope_folders(memory: Project, scope: Scope) -> tuple[str | None, str | None]:
    """The agent and routine folders of a scope, creating missing ones when the scope names them."""
    if not isinstance(scope, (AgentScope, RoutineScope)):
        if isinstance(scope, ChatScope):
            return None, None
        raise ScopeError(f"{scope!r} is not a scope; build one with Scope.chat(), Scope.agent() or Scope.routine()")
    agent_folder = find_agent(memory, scope.agent_id)
    if agent_folder is None:
        if scope.agent_name is None:
            # Worded for Python; ``missing`` and the ids let each face word its own way to make it.
            raise ScopeError(
                f"agent {scope.agent_id!r} has no folder; make it with memory.create_agent(agent_id, name), "
                "or pass its name in the scope (Scope.agent(agent_id, name)) so the folder is made on first use",
                missing="agent",
                agent_id=scope.agent_id,
            )
        agent_folder = create_agent(memory, scope.agent_id, scope.agent_name, exist_ok=True)
    if isinstance(scope, AgentScope):
        return agent_folder, None
    routine_folder = find_routine(memory, scope.routine_id, scope.agent_id)
    if routine_folder is None:
        elsewhere = find_routine(memory, scope.routine_id)
        if elsewhere is not None and elsewhere.startswith(f"{agent_folder}/"):
            return agent_folder, elsewhere  # made by another process since the look-up above
        if elsewhere is not None:
            raise ScopeError(f"routine {scope.routine_id!r} belongs to another agent ({elsewhere})")
        if scope.routine_name is None:
            raise ScopeError(
                f"routine {scope.routine_id!r} has no folder; make it with memory.create_routine(agent_id, "
                "routine_id, name), or pass its name in the scope (Scope.routine(agent_id, routine_id, "
                "routine_name=name)) so the folder is made on first use",
                missing="routine",
                agent_id=scope.agent_id,
                routine_id=scope.routine_id,
            )
        routine_folder = create_routine(memory, scope.agent_id, scope.routine_id, scope.routine_name, exist_ok=True)
    return agent_folder, routine_folder


def scope_files(memory: Project, scope: Scope) -> list[str]:
    """The top files a scope loads, in order: project, agent, routine."""
    agent_folder, routine_folder = scope_folders(memory, scope)
    files = [PROJECT_FILE]
    if agent_folder:
        files.append(agent_top_file(agent_folder))
    if routine_folder:
        files.append(routine_top_file(routine_folder))
    return files
