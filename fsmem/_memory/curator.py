"""The curator (docs/skills.md): archives the review's skills that nobody used for 30 days. No model call.

    result = curate(memory)                 # when due: idle 2 hours, last pass 7 days old
    result = curate(memory, now=clock())    # an injected clock, for tests and schedulers
    restore(memory, "weekly-report")        # an archived skill back in the list (counts as a use)

An archived skill moves, whole, to ``.archive/`` inside its skills folder (``skills/.archive/<name>``,
``agents/<agent>/skills/.archive/<name>``): a dot folder, so the listing, the tool and search no longer
see it, and nothing is deleted. The time of the last pass is kept in ``<state>/curator.json``; the first
pass ever only records itself. Rules: ``fsmem._core.curator``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from fsmem._core import layout
from fsmem._core.curator import Due, SkillState, parse_time, pass_due, to_archive
from fsmem._errors import Exists, FsmemError, NotFound
from fsmem._memory.skills import read_uses, record_use, skill_folders, skills_in
from fsmem._store.atomic import write_atomic

__all__ = ["ARCHIVE", "CuratorPass", "Skill", "archived_skills", "curate", "restore", "skills_folders", "skills_of"]

ARCHIVE = ".archive"
STATE_FILE = "curator.json"
THREAD = "curator"


@dataclass(frozen=True)
class CuratorPass:
    """What one call did: ``ran`` says whether a pass ran (``due``, ``first``) or why not."""

    ran: Due
    archived: tuple[str, ...] = ()
    failed: tuple[str, ...] = field(default=())  # a skill another process moved meanwhile, say


@dataclass(frozen=True)
class Skill:
    """One skill as `fsmem skills list` shows it."""

    name: str
    path: str  # its SKILL.md
    description: str
    origin: str  # "review", or "person" for every skill the review did not make
    created: str
    last_used: str | None
    archived: bool = False


def skills_folders(memory: Any) -> list[str]:
    """Every skills folder of the project: the project's, then each agent's."""
    agents = memory.drive.entries(layout.AGENTS_DIR) if memory.drive.is_dir(layout.AGENTS_DIR) else []
    folders = skill_folders(None) + [f"{e.path}/{layout.SKILLS_DIR}" for e in agents if e.is_dir]
    return [folder for folder in folders if memory.drive.is_dir(folder)]


def _history(memory: Any) -> tuple[dict[str, str], dict[str, str], str | None]:
    """From the log: each skill folder's first and last change, and the newest change of all."""
    first: dict[str, str] = {}
    last: dict[str, str] = {}
    newest = None
    for entry in memory.drive.log():
        newest = entry.time
        for path in (entry.path, entry.new_path):
            found = layout.skill_of(path or "")
            if found is not None and not found[1].startswith("."):
                folder = f"{found[0]}/{found[1]}"
                first.setdefault(folder, entry.time)
                last[folder] = entry.time
    return first, last, newest


def skills_of(memory: Any) -> list[Skill]:
    """Every skill of the project in use (not archived), by folder."""
    first, last, _ = _history(memory)
    uses = read_uses(memory.drive.state)
    found = []
    for folder in skills_folders(memory):
        for path, head in skills_in(memory.drive, folder):
            skill_folder = path.rsplit("/", 1)[0]
            created = first.get(skill_folder) or _modified(memory, path)
            found.append(_skill(head, path, created, uses.get(skill_folder)))
    return found


def archived_skills(memory: Any) -> list[Skill]:
    """The skills the curator archived, found in each skills folder's ``.archive/``."""
    found = []
    for folder in skills_folders(memory):
        archive = f"{folder}/{ARCHIVE}"
        if not memory.drive.is_dir(archive):
            continue
        for path, head in skills_in(memory.drive, archive):
            found.append(_skill(head, path, _modified(memory, path), None, archived=True))
    return found


def _skill(head: Any, path: str, created: str, last_used: str | None, archived: bool = False) -> Skill:
    origin = "review" if head.by_review else "person"
    return Skill(head.name, path, head.description, origin, created, last_used, archived)


def _modified(memory: Any, path: str) -> str:
    info = memory.drive.info(path)
    moment = datetime.fromtimestamp(info.modified if info else 0, UTC)
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def _last_pass(memory: Any) -> datetime | None:
    try:
        return parse_time(json.loads((memory.drive.state / STATE_FILE).read_text(encoding="utf-8"))["last_pass"])
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None


def curate(memory: Any, now: datetime | None = None) -> CuratorPass:
    """Run a pass when one is due; a call that finds none due costs one small read."""
    now = now or datetime.now(UTC)
    last_pass = _last_pass(memory)
    if last_pass is not None and pass_due(now, last_pass, None) == "recent":
        return CuratorPass("recent")
    first, last, newest = _history(memory)
    uses = read_uses(memory.drive.state)
    activity = max([parse_time(t) for t in [newest, *uses.values()] if t], default=None)
    due = pass_due(now, last_pass, activity)
    if due in ("recent", "busy"):
        return CuratorPass(due)
    archived: list[str] = []
    failed: list[str] = []
    if due == "due":
        states = []
        for skill in skills_of(memory):
            folder = skill.path.rsplit("/", 1)[0]
            states.append(
                SkillState(
                    folder,
                    skill.origin == "review",
                    parse_time(skill.created),
                    parse_time(uses[folder]) if folder in uses else None,
                    parse_time(last[folder]) if folder in last else None,
                )
            )
        for folder in to_archive(states, now):
            try:
                _archive(memory, folder)
                archived.append(folder)
            except FsmemError:
                failed.append(folder)
    try:
        write_atomic(memory.drive.state / STATE_FILE, json.dumps({"last_pass": now.isoformat()}).encode("utf-8"))
    except OSError as error:  # the pass ran; the next call runs one again
        logging.getLogger("fsmem.skills").warning("the curator's pass could not be recorded: %s", error)
    return CuratorPass(due, tuple(archived), tuple(failed))


def _archive(memory: Any, folder: str) -> None:
    parent, name = folder.rsplit("/", 1)
    destination = f"{parent}/{ARCHIVE}/{name}"
    number = 2
    while memory.drive.exists(destination) or memory.drive.is_dir(destination):
        destination, number = f"{parent}/{ARCHIVE}/{name}-{number}", number + 1
    with memory.drive.change("curator.archive", THREAD) as tx:
        tx.move(folder, destination)


def restore(memory: Any, name: str, agent_folder: str | None = None, now: datetime | None = None) -> str:
    """Put an archived skill back in its skills folder; the restore counts as a use. Its new path."""
    parent = f"{agent_folder}/{layout.SKILLS_DIR}" if agent_folder else layout.SKILLS_DIR
    source, destination = f"{parent}/{ARCHIVE}/{name}", f"{parent}/{name}"
    if not memory.drive.is_dir(source):
        raise NotFound(f"there is no archived skill {name!r} in {parent}/; `fsmem skills list` shows the archived ones")
    if memory.drive.is_dir(destination) or memory.drive.exists(destination):
        raise Exists(f"{destination} exists already; rename it first, then restore {name}")
    with memory.drive.change("curator.restore", THREAD) as tx:
        tx.move(source, destination)
    record_use(memory.drive.state, destination, (now or datetime.now(UTC)).isoformat().replace("+00:00", "Z"))
    return f"{destination}/{layout.SKILL_FILE}"
