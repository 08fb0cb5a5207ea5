"""Skills' pure rules: what a ``SKILL.md`` must say, and the listing a scope's context carries.

A skill is a folder of memory: ``skills/<name>/SKILL.md`` (the project's: every chat, agent and
routine) or ``agents/<agent>/skills/<name>/SKILL.md`` (one agent's, shared by its routines), with
support files beside it (``references/``, ``templates/``, ``scripts/``). Its ``SKILL.md`` opens with
YAML front matter holding ``name`` (the folder's name) and ``description`` (when to use it); a skill
the review made also says ``origin: review``, which makes it the curator's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fsmem._core.layout import SKILL_FILE, skill_of
from fsmem._core.requests import memory_call_arguments
from fsmem._errors import BadSkill

__all__ = [
    "MAX_DESCRIPTION",
    "MAX_LISTED",
    "MAX_NAME",
    "REVIEW_ORIGIN",
    "SkillHead",
    "check_head",
    "listing",
    "skills_read",
]

MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_LISTED = 40  # skills named in a context listing; the rest are found by reading skills/
LISTED_DESCRIPTION = 240  # characters of a description the listing shows
REVIEW_ORIGIN = "review"
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


@dataclass(frozen=True)
class SkillHead:
    """What a ``SKILL.md``'s front matter says."""

    name: str
    description: str
    origin: str | None = None

    @property
    def by_review(self) -> bool:
        return self.origin == REVIEW_ORIGIN


def check_head(path: str, folder_name: str, fields: Mapping[str, Any] | None) -> SkillHead:
    """The front matter of the ``SKILL.md`` at ``path``, checked; :class:`BadSkill` says what to fix.

    >>> check_head("skills/weekly-report/SKILL.md", "weekly-report",
    ...            {"name": "weekly-report", "description": "Writing the weekly report."}).name
    'weekly-report'
    """
    example = (
        f"start {path} with front matter such as\n---\nname: {folder_name}\n"
        "description: When to use this skill, in one sentence.\n---"
    )
    if not fields:
        raise BadSkill(f"{path} has no YAML front matter with name and description; {example}")
    name, description, origin = fields.get("name"), fields.get("description"), fields.get("origin")
    if not isinstance(name, str) or not name.strip():
        raise BadSkill(f"{path} has no name in its front matter; {example}")
    if name != folder_name:
        raise BadSkill(
            f"{path} is named {name!r} but its folder is {folder_name!r}; a skill's name is its folder's: "
            f"write name: {folder_name}, or put the skill in a folder of that name"
        )
    if len(name) > MAX_NAME or not _NAME.fullmatch(name):
        raise BadSkill(
            f"the skill name {name[:80]!r} is not lowercase words of letters and digits joined by '-' "
            f"(at most {MAX_NAME} characters), e.g. weekly-report; rename the folder to such a name"
        )
    if not isinstance(description, str) or not description.strip():
        raise BadSkill(f"{path} has no description in its front matter (when to use this skill); {example}")
    if len(description) > MAX_DESCRIPTION:
        raise BadSkill(
            f"the description in {path} is {len(description):,} characters; keep it under "
            f"{MAX_DESCRIPTION:,} (when to use the skill) and put the detail in the body"
        )
    if origin is not None and not isinstance(origin, str):
        raise BadSkill(f"origin in {path} must be text (origin: review for a skill the review made)")
    return SkillHead(name, " ".join(description.split()), origin)


def listing(skills: Sequence[tuple[str, SkillHead]], max_listed: int = MAX_LISTED) -> str:
    """The body of a scope's ``<skills>`` message: one line per skill, ``(path, head)`` given in the
    order they are listed; byte-identical for the same skills, so a thread's cached prefix survives.
    Empty when there are none (the message is then not sent)."""
    if not skills:
        return ""
    lines = [
        "Skills you may use: how to do a kind of task, kept in memory. Before such a task, read the "
        "skill's SKILL.md with the memory tool and follow it."
    ]
    for path, head in skills[:max_listed]:
        description = head.description
        if len(description) > LISTED_DESCRIPTION:
            description = description[: LISTED_DESCRIPTION - 1].rstrip() + "…"
        lines.append(f"- {head.name} ({path}): {description}")
    if len(skills) > max_listed:
        lines.append(f"- … and {len(skills) - max_listed} more: read the skills/ folders to see them.")
    return "\n".join(lines) + "\n"


def skills_read(conversation: Iterable[Mapping[str, Any]]) -> list[str]:
    """The ``SKILL.md`` paths the conversation's memory-tool calls read, in first-read order: the
    skills a review patches first.

    >>> call = {"function": {"name": "memory", "arguments": '{"command": "read", "path": "/skills/a/SKILL.md"}'}}
    >>> skills_read([{"role": "assistant", "tool_calls": [call]}])
    ['skills/a/SKILL.md']
    """
    found: list[str] = []
    for message in conversation:
        if not isinstance(message, Mapping) or message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            arguments = memory_call_arguments(call)
            if arguments is None or arguments.get("command") != "read":
                continue
            path = str(arguments.get("path") or "").strip("/")
            where = skill_of(path)
            if where is not None:
                skill_file = f"{where[0]}/{where[1]}/{SKILL_FILE}"
                if skill_file not in found:
                    found.append(skill_file)
    return found
