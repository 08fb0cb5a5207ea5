"""``fsmem agents …`` and ``fsmem routines …``: the level folders, as the harness sees them."""

from __future__ import annotations

from typing import Any

import click

from fsmem.cli.options import echo_json, json_option, open_root, root_option
from fsmem.cli.style import table


def _memory(root: str | None):

    return open_root(root)


def describe_levels(memory: Any) -> list[dict[str, Any]]:
    """Every agent with its routines: name, full id (None for a folder made before ids were kept, not
    claimed yet) and folder."""
    from fsmem._memory import levels as _levels

    def row(level: _levels.LevelFolder) -> dict[str, Any]:
        return {"name": level.name, "id": level.id, "folder": level.folder}

    return [
        {**row(agent), "routines": [row(r) for r in _levels.describe_routines(memory, agent.folder)]}
        for agent in _levels.describe_agents(memory)
    ]


@click.group()
def agents() -> None:
    """List, create and delete agent folders."""


@agents.command("list")
@root_option
@json_option
def list_agents(root: str | None, as_json: bool) -> None:
    """Every agent with its routines: name, full id and folder."""
    listing = describe_levels(_memory(root))
    if as_json:
        echo_json(listing)
        return
    if not listing:
        click.echo("No agents. `fsmem agents create ID NAME` makes one.")
    rows = []
    for agent in listing:
        rows.append([agent["name"], agent["id"] or "?", agent["folder"]])
        rows += [["  " + r["name"], r["id"] or "?", r["folder"]] for r in agent["routines"]]
    for line in table(rows):
        click.echo(line)


@agents.command("create")
@click.argument("agent_id")
@click.argument("name")
@click.option("--exist-ok", is_flag=True, help="An agent that has a folder keeps it (get-or-create).")
@root_option
@json_option
def create_agent(agent_id: str, name: str, exist_ok: bool, root: str | None, as_json: bool) -> None:
    """Make the folder of agent AGENT_ID, named NAME, with an empty MEMORY.md."""
    folder = _memory(root).create_agent(agent_id, name, exist_ok=exist_ok)
    if as_json:
        echo_json({"id": agent_id, "name": name, "folder": folder})
    else:
        click.echo(folder)


@agents.command("delete")
@click.argument("agent_id")
@root_option
@json_option
def delete_agent(agent_id: str, root: str | None, as_json: bool) -> None:
    """Delete agent AGENT_ID's whole folder (its files stay in `fsmem versions`); an unambiguous
    start of the id is enough."""
    from fsmem._memory import levels as _levels

    memory = _memory(root)
    agent_id = _levels.match_id(memory, agent_id, "agent")
    held = memory.delete_agent(agent_id)
    if as_json:
        echo_json(held)
    else:
        click.echo(f"Deleted agent {agent_id}: {len(held)} files.")


@click.group()
def routines() -> None:
    """Create and delete routine folders."""


@routines.command("create")
@click.argument("agent_id")
@click.argument("routine_id")
@click.argument("name")
@click.option("--exist-ok", is_flag=True, help="A routine of this agent that has a folder keeps it (get-or-create).")
@root_option
@json_option
def create_routine(agent_id: str, routine_id: str, name: str, exist_ok: bool, root: str | None, as_json: bool) -> None:
    """Make the folder of routine ROUTINE_ID of agent AGENT_ID (an unambiguous start of the agent's id
    is enough), with an empty NOTES.md."""
    from fsmem._memory import levels as _levels

    memory = _memory(root)
    agent_id = _levels.match_id(memory, agent_id, "agent")
    folder = memory.create_routine(agent_id, routine_id, name, exist_ok=exist_ok)
    if as_json:
        echo_json({"id": routine_id, "agent_id": agent_id, "name": name, "folder": folder})
    else:
        click.echo(folder)


@routines.command("delete")
@click.argument("routine_id")
@root_option
@json_option
def delete_routine(routine_id: str, root: str | None, as_json: bool) -> None:
    """Delete routine ROUTINE_ID's folder (an unambiguous start of the id is enough); prints what its
    files held."""
    from fsmem._memory import levels as _levels

    memory = _memory(root)
    routine_id = _levels.match_id(memory, routine_id, "routine")
    held = memory.delete_routine(routine_id)
    if as_json:
        echo_json(held)
        return
    for path, content in held.items():
        click.echo(f"--- {path}\n{content}")
    click.echo(f"Deleted routine {routine_id}: {len(held)} files.")
