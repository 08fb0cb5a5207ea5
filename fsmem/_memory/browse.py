"""What a person's page reads of a project beyond the tool's five commands, once for both stores.

    tree = levels_tree(memory)                  # the project, each agent by name, each routine
    loads(memory, Scope.agent(agent_id))        # the top files that scope loads, with their sizes
    changes(memory, path="MEMORY.md", thread="t-1", limit=50)   # the log, newest first
    kept_text(memory, "MEMORY.md", "ab12cd34ef56")              # a kept version's text
    against_now(memory, proposal)               # a proposal beside the files as they are now

Files themselves are read, written, renamed and deleted through the tool (its path rules, its
version checks); this module answers what the tool does not: the levels' names, the log, kept
versions' text, and what a proposal would change now.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from fsmem._core import layout
from fsmem._core.paths import normalize_path
from fsmem._core.review import unified_diff
from fsmem._core.versions import version_of
from fsmem._errors import NotFound
from fsmem._memory import levels
from fsmem._memory.proposals import all_proposals, stale_paths
from fsmem._store.types import BrokenProposal, ChangeProposal, LogEntry

if TYPE_CHECKING:
    from fsmem._memory.project import Project


@dataclass(frozen=True)
class Level:
    """A level of the project: its kind, its id and name (for agents and routines), where it lives."""

    kind: str  # "project", "agent", "routine"
    name: str
    id: str | None
    folder: str  # "" for the project
    top_file: str
    routines: tuple[Level, ...] = ()


@dataclass(frozen=True)
class Loaded:
    """A top file a scope loads, and how big it is now (0: empty or not there yet)."""

    path: str
    size: int


@dataclass(frozen=True)
class ProposalNow:
    """A proposal beside the files as they are now. ``diff`` is its change against them when it can
    still apply; when it cannot, ``since`` is what changed in each stale file since it was made."""

    proposal: ChangeProposal
    stale: list[str]
    diff: str
    since: dict[str, str | None]  # stale path -> diff from what the proposal saw to now (None: that text is gone)

    @property
    def applies(self) -> bool:
        return not self.stale


def levels_tree(memory: Project) -> Level:
    """The project level, its agents by name and each agent's routines (names as the harness gave them)."""
    agents = []
    for agent in sorted(levels.describe_agents(memory), key=lambda level: level.name.casefold()):
        routines = tuple(
            Level("routine", routine.name, routine.id, routine.folder, layout.routine_top_file(routine.folder))
            for routine in sorted(levels.describe_routines(memory, agent.folder), key=lambda r: r.name.casefold())
        )
        agents.append(Level("agent", agent.name, agent.id, agent.folder, layout.agent_top_file(agent.folder), routines))
    return Level("project", memory.name, None, "", layout.PROJECT_FILE, tuple(agents))


def loads(memory: Project, scope: levels.Scope) -> list[Loaded]:
    """The top files ``scope`` loads into every thread, in order, with their sizes now."""
    found = []
    for path in levels.scope_files(memory, scope):
        info = memory.drive.info(path)
        found.append(Loaded(path, info.size if info is not None and not info.is_dir else 0))
    return found


def changes(memory: Project, *, path: str | None = None, thread: str | None = None, limit: int = 100) -> list[LogEntry]:
    """The newest ``limit`` log entries, newest first, of one path (either end of a rename) and one thread."""
    wanted = normalize_path(path) if path else None
    found = [
        entry
        for entry in memory.drive.log()
        if (wanted is None or wanted in (entry.path, entry.new_path)) and (not thread or entry.thread == thread)
    ]
    return found[::-1][:limit]


def last_change(memory: Project, path: str) -> LogEntry | None:
    return memory.drive.last_change(normalize_path(path))


def kept_text(memory: Project, path: str, version: str) -> str:
    """The text of a version of ``path``: one kept in its history, or the file's own when it holds it now."""
    path = normalize_path(path)
    current = memory.drive.read(path)
    if current is not None and version_of(current) == version:
        return current.decode("utf-8", errors="replace")
    for kept in memory.drive.versions(path):
        if kept.version == version:
            return memory.drive.read_version(kept).decode("utf-8", errors="replace")
    raise NotFound(f"{path} has no version {version} kept; its history lists the versions there are")


def against_now(memory: Project, proposal: ChangeProposal) -> ProposalNow:
    """What ``proposal`` changes against the files now: its own diff while they hold what it saw
    (the diff was made against exactly that), else, for each file that changed, what changed since."""
    stale = stale_paths(memory, proposal)
    since: dict[str, str | None] = {}
    for path in stale:
        base = proposal.base.get(path)
        now = memory.drive.read(path)
        now_text = "" if now is None else now.decode("utf-8", errors="replace")
        try:
            then = "" if base is None else kept_text(memory, path, base)
        except NotFound:
            since[path] = None
            continue
        since[path] = unified_diff(path, then, now_text)
    return ProposalNow(proposal, stale, proposal.diff, since)


def open_proposals(memory: Project) -> tuple[list[ChangeProposal], list[BrokenProposal]]:
    """The proposals waiting for a person, and apart from them the files that cannot be read as one
    (shown with their problem: a person mends or discards them)."""
    found = all_proposals(memory)
    return (
        [proposal for proposal in found if isinstance(proposal, ChangeProposal)],
        [proposal for proposal in found if isinstance(proposal, BrokenProposal)],
    )
