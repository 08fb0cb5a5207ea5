"""Agents, routines and scopes: which level folders exist and which top files a run loads.

Folders are named ``<slug of name>-<first 8 chars of id>`` and always found by the id suffix, so a
renamed agent keeps its folder. A scope is built by the harness from its own records, never from
anything the model said.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Literal
from urllib.parse import unquote

from fsmem.atomic import pid_alive
from fsmem.core.layout import (
    AGENTS_DIR,
    PROJECT_FILE,
    ROUTINES_DIR,
    agent_top_file,
    folder_matches_id,
    id_suffix,
    level_folder_name,
    routine_top_file,
)
from fsmem.errors import Exists, NotFound, ScopeError

PARKED_PREFIX = "deleting-"

if TYPE_CHECKING:
    from fsmem.memory import Memory


@dataclass(frozen=True)
class Scope:
    """Which levels a run loads: a chat, an agent's chat, or a routine's run."""

    kind: Literal["chat", "agent", "routine"]
    agent_id: str | None = None
    routine_id: str | None = None
    agent_name: str | None = None
    routine_name: str | None = None

    @classmethod
    def chat(cls) -> "Scope":
        return cls("chat")

    @classmethod
    def agent(cls, agent_id: str, name: str | None = None) -> "Scope":
        _check_id(agent_id, "agent")
        return cls("agent", agent_id=agent_id, agent_name=name)

    @classmethod
    def routine(cls, agent_id: str, routine_id: str, agent_name: str | None = None,
                routine_name: str | None = None) -> "Scope":
        _check_id(agent_id, "agent")
        _check_id(routine_id, "routine")
        return cls("routine", agent_id=agent_id, routine_id=routine_id,
                   agent_name=agent_name, routine_name=routine_name)

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
    def parse(cls, text: str) -> "Scope":
        """The CLI and MCP form: ``chat``, ``agent:ID[:NAME]``, ``routine:AGENT_ID/ROUTINE_ID[:AGENT_NAME/ROUTINE_NAME]``.

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
        raise ScopeError(f"scope {text!r} is not one of: chat, agent:ID, routine:AGENT_ID/ROUTINE_ID "
                         "(add :NAME, or :AGENT_NAME/ROUTINE_NAME, so a missing folder is made)")


def _escape(part: str | None) -> str:
    return (part or "").replace("%", "%25").replace("/", "%2F").replace(":", "%3A")


def _check_id(entity_id: str, what: str) -> None:
    try:
        id_suffix(entity_id)
    except (ValueError, TypeError) as error:
        raise ScopeError(f"{what} id {entity_id!r} has no letters or digits; pass the id the harness keeps") from error


# ---- finding folders by id ------------------------------------------------------------------


def _find_one(memory: "Memory", parent: str, entity_id: str, what: str) -> str | None:
    folder = memory.drive.root / parent
    if not folder.is_dir():
        return None
    matches = sorted(
        child.name for child in folder.iterdir()
        if child.is_dir() and not child.name.startswith(".") and folder_matches_id(child.name, entity_id)
    )
    if len(matches) > 1:
        raise ScopeError(
            f"{what} id {entity_id!r} matches {len(matches)} folders in {parent}/ "
            f"({', '.join(matches)}); rename or merge them by hand so one remains"
        )
    return f"{parent}/{matches[0]}" if matches else None


def find_agent(memory: "Memory", agent_id: str) -> str | None:
    return _find_one(memory, AGENTS_DIR, agent_id, "agent")


def find_routine(memory: "Memory", routine_id: str, agent_id: str | None = None) -> str | None:
    """A routine's folder; without the agent id, searched under every agent."""
    if agent_id is not None:
        agent_folder = find_agent(memory, agent_id)
        return None if agent_folder is None else _find_one(
            memory, f"{agent_folder}/{ROUTINES_DIR}", routine_id, "routine")
    found = [
        f for agent in list_agents(memory)
        if (f := _find_one(memory, f"{agent}/{ROUTINES_DIR}", routine_id, "routine"))
    ]
    if len(found) > 1:
        raise ScopeError(f"routine id {routine_id!r} matches {len(found)} folders ({', '.join(found)})")
    return found[0] if found else None


def list_agents(memory: "Memory") -> list[str]:
    folder = memory.drive.root / AGENTS_DIR
    if not folder.is_dir():
        return []
    return sorted(f"{AGENTS_DIR}/{c.name}" for c in folder.iterdir() if c.is_dir() and not c.name.startswith("."))


def list_routines(memory: "Memory", agent_folder: str) -> list[str]:
    folder = memory.drive.root / agent_folder / ROUTINES_DIR
    if not folder.is_dir():
        return []
    return sorted(f"{agent_folder}/{ROUTINES_DIR}/{c.name}" for c in folder.iterdir()
                  if c.is_dir() and not c.name.startswith("."))


# ---- lifecycle ------------------------------------------------------------------------------


def create_agent(memory: "Memory", agent_id: str, name: str) -> str:
    _check_id(agent_id, "agent")
    existing = find_agent(memory, agent_id)
    if existing is not None:
        raise Exists(f"agent {agent_id!r} already has a folder: {existing}")
    folder = f"{AGENTS_DIR}/{level_folder_name(name, agent_id)}"
    with memory.drive.change("create_agent") as tx:
        tx.write(agent_top_file(folder), b"")
    return folder


def create_routine(memory: "Memory", agent_id: str, routine_id: str, name: str,
                   agent_name: str | None = None) -> str:
    _check_id(routine_id, "routine")
    agent_folder = find_agent(memory, agent_id)
    if agent_folder is None:
        if agent_name is None:
            raise NotFound(f"agent {agent_id!r} has no folder; create the agent first")
        agent_folder = create_agent(memory, agent_id, agent_name)
    existing = find_routine(memory, routine_id)
    if existing is not None:
        raise Exists(f"routine {routine_id!r} already has a folder: {existing}")
    folder = f"{agent_folder}/{ROUTINES_DIR}/{level_folder_name(name, routine_id)}"
    with memory.drive.change("create_routine") as tx:
        tx.write(routine_top_file(folder), b"")
    return folder


def _held(memory: "Memory", folder: str) -> dict[str, str]:
    held = {}
    for entry in memory.drive.walk_files(folder):
        data = memory.drive.read(entry.path)
        if data is not None:
            held[entry.path] = data.decode("utf-8", errors="replace")
    return held


def delete_folder(memory: "Memory", folder: str, command: str) -> dict[str, str]:
    held = _held(memory, folder)
    with memory.drive.change(command) as tx:
        tx.delete(folder)
    return held


def delete_agent(memory: "Memory", agent_id: str) -> dict[str, str]:
    folder = find_agent(memory, agent_id)
    if folder is None:
        raise NotFound(f"agent {agent_id!r} has no folder")
    return delete_folder(memory, folder, "delete_agent")


def delete_routine(memory: "Memory", routine_id: str) -> dict[str, str]:
    folder = find_routine(memory, routine_id)
    if folder is None:
        raise NotFound(f"routine {routine_id!r} has no folder")
    return delete_folder(memory, folder, "delete_routine")


@contextlib.contextmanager
def deleting(memory: "Memory", folder: str, command: str) -> Iterator[dict[str, str]]:
    """Move the folder aside, yield what it held; drop it if the block succeeds, put it back if not.

    Between the move and the end of the block, runs no longer see the folder, so the harness's own
    delete and fsmem's happen as one step.
    """
    held = _held(memory, folder)
    aside = Path(tempfile.mkdtemp(prefix=f"{PARKED_PREFIX}{os.getpid()}-", dir=memory.drive.state))
    (aside / "from").write_text(folder, encoding="utf-8")
    parked = aside / "folder"
    with memory.drive.locked():
        (memory.drive.root / folder).rename(parked)
    try:
        yield held
    except BaseException:
        with memory.drive.locked():
            parked.rename(memory.drive.root / folder)
        raise
    else:
        with memory.drive.change(command) as tx:
            parked.rename(memory.drive.root / folder)
            tx.delete(folder)
    finally:
        shutil.rmtree(aside, ignore_errors=True)


def restore_parked(memory: "Memory") -> list[str]:
    """Put back folders parked by a ``deleting_*`` block whose process died before the block ended."""
    restored = []
    for aside in memory.drive.state.glob(f"{PARKED_PREFIX}*"):
        pid = aside.name[len(PARKED_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and pid_alive(int(pid)):
            continue
        parked, origin = aside / "folder", aside / "from"
        if parked.is_dir() and origin.is_file():
            folder = origin.read_text(encoding="utf-8")
            with memory.drive.locked():
                if not (memory.drive.root / folder).exists():
                    parked.rename(memory.drive.root / folder)
                    restored.append(folder)
        if not parked.exists():
            shutil.rmtree(aside, ignore_errors=True)
    return restored


# ---- scopes ---------------------------------------------------------------------------------


def scope_folders(memory: "Memory", scope: Scope) -> tuple[str | None, str | None]:
    """The agent and routine folders of a scope, creating missing ones when the scope names them."""
    if scope.kind == "chat":
        return None, None
    agent_folder = find_agent(memory, scope.agent_id)
    if agent_folder is None:
        if scope.agent_name is None:
            raise ScopeError(
                f"agent {scope.agent_id!r} has no folder; create it with create_agent, or pass its name "
                "in the scope so the folder is made on first use")
        agent_folder = create_agent(memory, scope.agent_id, scope.agent_name)
    if scope.kind == "agent":
        return agent_folder, None
    routine_folder = find_routine(memory, scope.routine_id, scope.agent_id)
    if routine_folder is None:
        elsewhere = find_routine(memory, scope.routine_id)
        if elsewhere is not None:
            raise ScopeError(f"routine {scope.routine_id!r} belongs to another agent ({elsewhere})")
        if scope.routine_name is None:
            raise ScopeError(
                f"routine {scope.routine_id!r} has no folder; create it with create_routine, or pass its "
                "name in the scope so the folder is made on first use")
        routine_folder = create_routine(memory, scope.agent_id, scope.routine_id, scope.routine_name)
    return agent_folder, routine_folder


def scope_files(memory: "Memory", scope: Scope) -> list[str]:
    """The top files a scope loads, in order: project, agent, routine."""
    agent_folder, routine_folder = scope_folders(memory, scope)
    files = [PROJECT_FILE]
    if agent_folder:
        files.append(agent_top_file(agent_folder))
    if routine_folder:
        files.append(routine_top_file(routine_folder))
    return files
