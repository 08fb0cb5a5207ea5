"""The pages that only read: the levels, a folder, a file (rendered and as source), a scope, facts, search.

A folder lists what the tool's read of it lists (names, sizes, dates: no file is opened); a file is
the tool's read of it, so the tool's path rules (no ``..``, no symlink out of the root, never
``.fsmem/``) hold here as they hold for a model.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from fsmem._memory import browse
from fsmem._memory.levels import Scope
from fsmem.cli.ui.site import Site, arg
from fsmem.cli.ui.text import numbered, render_markdown

SEARCH_LIMIT = 20


def home(site: Site, request: Request) -> Response:
    tree = browse.levels_tree(site.memory)
    loads = {"": browse.loads(site.memory, Scope.chat())}
    for agent in tree.routines:
        if agent.id is None:
            continue  # a folder made before identities were kept: no scope names it yet
        loads[agent.folder] = browse.loads(site.memory, Scope.agent(agent.id))
        for routine in agent.routines:
            if routine.id is not None:
                loads[routine.folder] = browse.loads(site.memory, Scope.routine(agent.id, routine.id))
    totals = {folder: sum(item.size for item in loaded) for folder, loaded in loads.items()}
    topics = {level.folder: _topics(site, level) for level in _levels(tree)}
    proposals = len(site.memory.proposals())
    return site.page("home.html", tree=tree, loads=loads, totals=totals, topics=topics, proposals=proposals)


def _levels(tree: browse.Level) -> list[browse.Level]:
    return [tree, *tree.routines, *(routine for agent in tree.routines for routine in agent.routines)]


def _topics(site: Site, level: browse.Level) -> list[dict[str, Any]]:
    """What a level's folder holds beside its top file and the levels under it: its topic files and
    folders (the project's facts among them), as the tool lists them (names and sizes, nothing read)."""
    entries = site.call({"command": "read", "path": level.folder})["entries"]
    inside = {"project": "agents", "agent": f"{level.folder}/routines", "routine": None}[level.kind]
    return [entry for entry in entries if entry["path"] not in (level.top_file, inside)]


def files(site: Site, request: Request) -> Response:
    shown = site.call({"command": "read", "path": arg(request, "path")})
    if "entries" in shown:
        return site.page("folder.html", path=shown["path"], entries=shown["entries"], parents=_parents(shown["path"]))
    content = shown["content"]
    last = browse.last_change(site.memory, shown["path"])
    return site.page(
        "file.html",
        path=shown["path"],
        version=shown["version"],
        lines=numbered(content),
        rendered=render_markdown(content, shown["path"]) if shown["path"].endswith(".md") else None,
        last=last,
        parents=_parents(shown["path"]),
        size=len(content.encode("utf-8")),
        notice=_notice(request),
    )


def _notice(request: Request) -> str | None:
    """What the change that led here did, as the page after it says (from its address: data, not HTML)."""
    if arg(request, "saved"):
        return f"Saved: it is now version {arg(request, 'saved')}."
    if arg(request, "reverted"):
        return f"Reverted to version {arg(request, 'reverted')}; what it held before is kept in its versions."
    if arg(request, "kept"):
        return (
            f"Saved. Someone saved this file by hand while your change was made: their text is kept as "
            f"version {arg(request, 'kept')} in its versions, not in the file."
        )
    return None


def _parents(path: str) -> list[tuple[str, str]]:
    """Each folder on the way to ``path`` as (name, path), for the breadcrumb."""
    parts = path.split("/") if path else []
    return [(name, "/".join(parts[: i + 1])) for i, name in enumerate(parts[:-1])]


def scope(site: Site, request: Request) -> Response:
    """What a chat, an agent's chat or a routine's run loads before its first turn."""
    agent, routine = arg(request, "agent"), arg(request, "routine")
    chosen = Scope.routine(agent, routine) if routine else Scope.agent(agent) if agent else Scope.chat()
    loaded = browse.loads(site.memory, chosen)
    return site.page("scope.html", scope=chosen.to_text(), loaded=loaded, total=sum(item.size for item in loaded))


def search(site: Site, request: Request) -> Response:
    query = arg(request, "q").strip()
    hits: list[Any] = []
    if query:
        hits = site.memory.search(query, limit=SEARCH_LIMIT)
    return site.page("search.html", query=query, hits=hits)


def facts(site: Site, request: Request) -> Response:
    """The facts that hold, by subject; each with the chain of what it replaced and until when that held."""
    subject = arg(request, "subject").strip() or None
    current = site.memory.facts.current(subject)
    by_subject: dict[str, list[Any]] = {}
    for fact in sorted(current, key=lambda f: (f.subject.casefold(), f.attribute.casefold())):
        chain = site.memory.facts.history(fact.id)[1:] if fact.replaces else []
        by_subject.setdefault(fact.subject, []).append((fact, chain))
    return site.page("facts.html", subject=subject or "", by_subject=by_subject)
