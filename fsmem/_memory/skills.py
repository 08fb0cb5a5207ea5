"""Skills, kept like memory (docs/skills.md): the tool's checks when a skill changes, the listing each
scope's context carries, and the record of their use the curator reads.

    check_write(run, path, before, after)   # in tool.Run._write: True when the file is in a skill
    refuse_removal(run, path)               # a review never deletes nor renames a skill
    listing_documents(run)                  # the scope's <skills> message (names and descriptions)
    note_use(run, path)                     # a read of a skill's file: the curator's "used"

Everything else a skill needs is the memory tool's as it is: paths, secrets, sizes, the stale-write
check, 20 versions a file, the log.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fsmem._core import layout
from fsmem._core.context import Document
from fsmem._core.skills import SkillHead, check_head, listing
from fsmem._errors import BadSkill, Protected
from fsmem._store.atomic import append_line, json_lines
from fsmem._store.interface import Store
from fsmem._store.types import now_iso

__all__ = [
    "USES_FILE",
    "check_write",
    "head_of",
    "listing_documents",
    "note_use",
    "read_uses",
    "record_use",
    "refuse_removal",
    "skill_folders",
    "skills_in",
]

USES_FILE = "skill_uses.jsonl"
_log = logging.getLogger("fsmem.skills")


def skill_folders(agent_folder: str | None) -> list[str]:
    """The skills folders a scope may use: the project's, then its agent's (a routine uses its agent's)."""
    folders = [layout.SKILLS_DIR]
    if agent_folder:
        folders.append(f"{agent_folder}/{layout.SKILLS_DIR}")
    return folders


def head_of(path: str, text: str) -> SkillHead:
    """The checked front matter of the ``SKILL.md`` at ``path`` holding ``text`` (:class:`BadSkill`)."""
    found = layout.skill_of(path)
    assert found is not None, path
    from fsmem._index.front_matter import fields, split  # YAML: loaded only once a skill is read

    return check_head(path, found[1], fields(split(text)[0]))


def skills_in(drive: Store, folder: str) -> Iterator[tuple[str, SkillHead]]:
    """``(SKILL.md path, head)`` of each skill of one skills folder, by name; a skill whose
    ``SKILL.md`` is missing or broken (saved by hand) is left out."""
    if not drive.is_dir(folder):
        return
    for entry in drive.entries(folder):
        if not entry.is_dir:
            continue
        path = f"{entry.path}/{layout.SKILL_FILE}"
        data = drive.read(path)
        if data is None:
            continue
        head = _checked_head(path, entry.path.rsplit("/", 1)[-1], data)  # named by its own folder
        if head is not None:
            yield path, head


@functools.lru_cache(maxsize=512)
def _checked_head(path: str, folder_name: str, data: bytes) -> SkillHead | None:
    """The checked head of a ``SKILL.md`` holding ``data``, ``None`` when broken. Kept by its bytes:
    every turn lists the scope's skills, and only a changed file is parsed again."""
    from fsmem._index.front_matter import fields, split  # YAML: loaded only once there is a skill

    try:
        return check_head(path, folder_name, fields(split(data.decode("utf-8", errors="replace"))[0]))
    except BadSkill:
        return None


def listing_documents(run: Any) -> list[Document]:
    """The scope's skills listing as one document (empty when there are none: nothing is sent)."""
    found = [skill for folder in skill_folders(run.agent_folder) for skill in skills_in(run.drive, folder)]
    key = run.scope.agent_id or "project"
    return [Document("skills", key, listing(found))]


def _skill_file(path: str) -> str | None:
    found = layout.skill_of(path)
    return None if found is None else f"{found[0]}/{found[1]}/{layout.SKILL_FILE}"


def check_write(run: Any, path: str, before: str | None, after: str) -> bool:
    """Check a write of ``path`` (``before`` → ``after``) that lands in a skill; False when it does not.

    Every run: a ``SKILL.md`` must hold a valid name and description. A review's run, whose change to a
    skill applies at once (versions keep what it replaced), must also have read the skill's ``SKILL.md``
    in this review, may add a support file only to a skill that exists, and marks a skill it creates
    ``origin: review`` (and keeps the origin of one it patches).
    """
    skill_file = _skill_file(path)
    if skill_file is None:
        return False
    head = head_of(path, after) if path == skill_file else None
    if not run.review:
        return True
    exists = before is not None if path == skill_file else run.drive.exists(skill_file)
    if not exists:
        if head is None:
            raise BadSkill(f"there is no skill at {skill_file}; create its SKILL.md first, then add {path}")
        if not head.by_review:
            raise BadSkill(f"a skill the review creates says origin: review in its front matter; add it to {path}")
        return True
    if skill_file not in run.seen:
        raise BadSkill(
            f"read {skill_file} in this review before changing the skill (what the conversation showed "
            "does not count); nothing was written"
        )
    if head is not None and before is not None and head.origin != _origin(path, before):
        raise BadSkill(f"a review keeps a skill's origin as it is; leave origin in {path} unchanged")
    return True


def _origin(path: str, text: str) -> str | None:
    try:
        return head_of(path, text).origin
    except BadSkill:  # broken by hand: the review may mend it, and its origin was none
        return None


def refuse_removal(run: Any, path: str) -> None:
    """A review deletes and renames no skill: not its ``SKILL.md``, its folder, nor a folder holding skills."""
    if not run.review:
        return
    skill_file = _skill_file(path)
    holds = path == skill_file or (skill_file is not None and path == skill_file.rsplit("/", 1)[0])
    if not holds and run.drive.is_dir(path):
        holds = any(e.path.endswith("/" + layout.SKILL_FILE) for e in run.drive.walk_files(path))
    if holds:
        raise Protected(f"a review never deletes or renames a skill ({path}); patch it instead, or leave it")


def note_use(run: Any, path: str) -> None:
    """Record that a run read a skill's file (the review's reads count too): the curator's clock."""
    found = layout.skill_of(path)
    if found is not None:
        record_use(run.drive.state, f"{found[0]}/{found[1]}", now_iso())


def record_use(state: Path, skill_folder: str, time: str) -> None:
    """Append one use of the skill in ``skill_folder`` (a restore counts as one)."""
    try:
        append_line(state / USES_FILE, {"time": time, "skill": skill_folder})
    except OSError as error:  # a read-only root is still read: the use goes unrecorded
        _log.warning("a skill's use could not be recorded in %s: %s", state / USES_FILE, error)


def read_uses(state: Path) -> dict[str, str]:
    """``{skill folder: time of its last recorded use}``."""
    uses: dict[str, str] = {}
    for record in json_lines(state / USES_FILE):
        try:
            skill, time = str(record["skill"]), str(record["time"])  # type: ignore[index]
        except (KeyError, TypeError):
            continue
        uses[skill] = max(uses.get(skill, ""), time)
    return uses
