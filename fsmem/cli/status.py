"""``fsmem status``: the page a person opens first — the root, its levels, counts, the index, what waits."""

from __future__ import annotations

from typing import Any

import click

from fsmem.cli.options import echo_json, json_option, open_root, root_option

LAST_CHANGES = 5


def gather(memory: Any) -> dict[str, Any]:
    """Everything ``fsmem status`` shows, as data (the ``--json`` form)."""
    from fsmem._memory.proposals import stale_paths
    from fsmem._store.types import BrokenProposal
    from fsmem.cli.levels import describe_levels

    files = list(memory.drive.walk_files(""))
    facts = memory.facts.all()
    holding = sum(1 for fact in facts if fact.holds)
    index = memory.index.status()
    pending = [
        {"id": p.id, "summary": None, "made_at": None, "stale": False, "broken": p.problem}
        if isinstance(p, BrokenProposal)
        else {"id": p.id, "summary": p.summary, "made_at": p.made_at, "stale": bool(stale_paths(memory, p))}
        | {"broken": None}
        for p in memory.proposals()
    ]
    changes = list(memory.log())[-LAST_CHANGES:]
    return {
        "root": memory.drive.label,
        "agents": describe_levels(memory),
        "files": len(files),
        "bytes": sum(entry.size for entry in files),
        "facts": {"current": holding, "replaced": len(facts) - holding},
        "index": {
            "documents": index["documents"],
            "stale": index["stale"],
            "bytes": index["index_bytes"],
            "watcher": index["watcher"],
            "watcher_pid": index["watcher_pid"],
        },
        "proposals": pending,
        "last_changes": [entry.__dict__ for entry in reversed(changes)],
    }


@click.command()
@root_option
@json_option
def status(root: str | None, as_json: bool) -> None:
    """The root at a glance: levels, file and fact counts, index freshness, watcher, proposals, last changes."""
    from fsmem._memory.render import size
    from fsmem._store.types import LogEntry
    from fsmem.cli.files import log_lines

    memory = open_root(root)
    info = gather(memory)
    if as_json:
        echo_json(info)
        return
    index = info["index"]
    fresh = "fresh" if index["stale"] == 0 else f"{index['stale']} files not indexed yet (the next search indexes them)"
    watcher = f"running (pid {index['watcher_pid']})" if index["watcher"] else f"not running ({_no_watcher(memory)})"
    facts = info["facts"]
    out = [
        f"root:      {info['root']}",
        f"files:     {info['files']} ({size(info['bytes'])})",
        f"facts:     {facts['current']} holding, {facts['replaced']} replaced",
        f"index:     {index['documents']} documents, {fresh} ({size(index['bytes'])})",
        f"watcher:   {watcher}",
    ]
    agents = info["agents"]
    out.append(f"agents:    {len(agents) or 'none'}")
    for agent in agents:
        out.append(f"  {agent['name']:<20} {agent['id'] or '?'}  {agent['folder']}")
        for routine in agent["routines"]:
            out.append(f"    {routine['name']:<18} {routine['id'] or '?'}  {routine['folder']}")
    pending = info["proposals"]
    out.append(f"proposals: {len(pending) or 'none waiting'}" + (" (`fsmem proposals` lists them)" if pending else ""))
    for proposal in pending:
        if proposal["broken"]:
            out.append(f"  {proposal['id']}  [broken: {proposal['broken']}]")
        else:
            out.append(f"  {proposal['id']}  {proposal['summary']}" + ("  [stale]" if proposal["stale"] else ""))
    changes = info["last_changes"]
    out.append("last changes:" if changes else "last changes: none yet")
    out += ["  " + line for line in log_lines([LogEntry(**entry) for entry in changes])]
    click.echo("\n".join(out))


def _no_watcher(memory: Any) -> str:
    """What to do about no watcher, per store: a folder has `fsmem watch`; PostgreSQL needs none."""
    from fsmem._store.folder.drive import Drive

    if isinstance(memory.drive, Drive):
        return "`fsmem watch` starts one"
    return "none is needed on PostgreSQL: each search catches up from the log first"
