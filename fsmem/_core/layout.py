"""Where things live in a root, and what each path is.

    MEMORY.md                                       project top file   (level project, kind memory)
    brand.md, seo/titles.md                         project topics     (level project, kind topic)
    agents/<slug>-<id8>/MEMORY.md                   agent top file     (level agent,   kind memory)
    agents/<slug>-<id8>/routines/<slug>-<id8>/NOTES.md   routine top   (level routine, kind notes)
    notes/memory/<fact-id>.md                       a fact that holds  (kind fact)
    notes/memory/history/<fact-id>.md               a replaced fact    (kind replaced_fact)
    .fsmem/                                         fsmem's own state, never shown to the model

Agent and routine folders are found by their id suffix, never by name.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal, NamedTuple

STATE_DIR = ".fsmem"
PROJECT_FILE = "MEMORY.md"
AGENT_FILE = "MEMORY.md"
ROUTINE_FILE = "NOTES.md"
AGENTS_DIR = "agents"
ROUTINES_DIR = "routines"
FACTS_DIR = "notes/memory"
HISTORY_DIR = "notes/memory/history"
ID_PREFIX_LENGTH = 8
LEVEL_IDENTITY_FILE = ".fsmem-level"  # inside a level folder: its kind, full id and name (hidden)
SKILLS_DIR = "skills"  # skills/<name>/SKILL.md (project), agents/<agent>/skills/<name>/SKILL.md (an agent)
SKILL_FILE = "SKILL.md"
SKILLS_ARCHIVE = ".archive"  # the curator's: <skills folder>/.archive/<name>, hidden as every dot name is

Level = Literal["project", "agent", "routine"]
Kind = Literal["memory", "notes", "topic", "fact", "replaced_fact"]


def slug(name: str) -> str:
    """A folder-safe form of a name: lowercase ASCII words joined by ``-``.

    >>> slug("SEO Agent — Titles!")
    'seo-agent-titles'
    """
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    words = re.findall(r"[a-z0-9]+", ascii_name.lower())
    return "-".join(words)[:40].strip("-") or "unnamed"


def id_suffix(entity_id: str) -> str:
    """The part of an id that names its folder: its first 8 characters, folder-safe."""
    cleaned = re.sub(r"[^A-Za-z0-9_]", "", str(entity_id))
    if not cleaned:
        raise ValueError(f"id {entity_id!r} has no letters or digits to name a folder by")
    return cleaned[:ID_PREFIX_LENGTH].lower()


def level_folder_name(name: str, entity_id: str) -> str:
    return f"{slug(name)}-{id_suffix(entity_id)}"


def folder_matches_id(folder_name: str, entity_id: str) -> bool:
    return folder_name.endswith("-" + id_suffix(entity_id))


class PathRole(NamedTuple):
    """What a normalized root-relative path is, by its place in the layout alone. (A named tuple: every
    shell imports this module for its names, and a frozen dataclass's methods cost it ~0.5 ms to compile.)"""

    level: Level
    kind: Kind
    agent_folder: str | None = None  # "agents/seo-3f9a1c2e"
    routine_folder: str | None = None  # "agents/seo-3f9a1c2e/routines/meta-9b7d4e10"
    is_top_file: bool = False
    is_level_folder: bool = False


def role_of(path: str) -> PathRole:
    """Classify a normalized path ("" is the root) by where it sits.

    >>> role_of("agents/seo-3f9a1c2e/MEMORY.md").is_top_file
    True
    """
    parts = path.split("/") if path else []
    if len(parts) >= 2 and parts[0] == AGENTS_DIR:
        agent_folder = "/".join(parts[:2])
        rest = parts[2:]
        if len(rest) >= 2 and rest[0] == ROUTINES_DIR:
            routine_folder = "/".join(parts[:4])
            inner = rest[2:]
            return PathRole(
                level="routine",
                kind="notes" if inner == [ROUTINE_FILE] else "topic",
                agent_folder=agent_folder,
                routine_folder=routine_folder,
                is_top_file=inner == [ROUTINE_FILE],
                is_level_folder=not inner,
            )
        return PathRole(
            level="agent",
            kind="memory" if rest == [AGENT_FILE] else "topic",
            agent_folder=agent_folder,
            is_top_file=rest == [AGENT_FILE],
            is_level_folder=not rest,
        )
    if path == PROJECT_FILE:
        return PathRole(level="project", kind="memory", is_top_file=True)
    if len(parts) == 4 and path.startswith(HISTORY_DIR + "/"):
        return PathRole(level="project", kind="replaced_fact")
    if len(parts) == 3 and path.startswith(FACTS_DIR + "/") and path.endswith(".md"):
        return PathRole(level="project", kind="fact")
    return PathRole(level="project", kind="topic")


def is_fact_path(path: str) -> bool:
    return path == FACTS_DIR or path.startswith(FACTS_DIR + "/")


def skill_of(path: str) -> tuple[str, str] | None:
    """``(skills folder, skill name)`` of a path inside a skill, else None.

    >>> skill_of("agents/seo-3f9a1c2e/skills/weekly-report/references/tone.md")
    ('agents/seo-3f9a1c2e/skills', 'weekly-report')
    >>> skill_of("skills") is None
    True
    """
    parts = path.split("/") if path else []
    if len(parts) >= 2 and parts[0] == SKILLS_DIR:
        return SKILLS_DIR, parts[1]
    if len(parts) >= 4 and parts[0] == AGENTS_DIR and parts[2] == SKILLS_DIR:
        return "/".join(parts[:3]), parts[3]
    return None


def without_archive(path: str) -> str:
    """``path`` with a skills folder's archive spelled as a visible name: what a store checks it as.

    >>> without_archive("agents/seo-1/skills/.archive/a/SKILL.md")
    'agents/seo-1/skills/archive/a/SKILL.md'
    """
    parts = path.split("/")
    for index in range(1, len(parts)):
        if parts[index] == SKILLS_ARCHIVE and parts[index - 1] == SKILLS_DIR:
            parts[index] = SKILLS_ARCHIVE[1:]
    return "/".join(parts)


def is_state_path(path: str) -> bool:
    return path == STATE_DIR or path.startswith(STATE_DIR + "/")


def agent_top_file(agent_folder: str) -> str:
    return f"{agent_folder}/{AGENT_FILE}"


def routine_top_file(routine_folder: str) -> str:
    return f"{routine_folder}/{ROUTINE_FILE}"


def title_of(text: str, path: str) -> str:
    """The first markdown heading of a file, else its file name without ``.md``."""
    for line in text.splitlines():
        match = re.match(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match and match.group(1):
            return match.group(1)
    name = path.rsplit("/", 1)[-1]
    return name[:-3] if name.endswith(".md") else name
