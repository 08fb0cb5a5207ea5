"""``fsmem agents …`` and ``fsmem routines …``: the level folders, as the harness sees them."""

from __future__ import annotations

from typing import Any

import click

from fsmem.cli.options import echo_json, find_root, json_option, root_option
from fsmem.cli.style import table


def _memory(root: str | None):
    import fsmem

    return fsmem.open(find_root(root))


def _level(folder: str) -> dict[str, str]:
    """A level folder as people read it. The folder name holds the slug of the name the level had at
    creation and the first 8 characters of its id (the full id is not stored in the folder yet)."""
    name, _, prefix = folder.rsplit("/", 1)[-1].rpartition("-")
    return {"folder": folder, "slug": name or folder, "id_prefix": prefix}


def describe_levels(memory: Any) -> list[dict[str, Any]]:
    """Every agent with its routines: folder, name slug, id prefix."""
    from fsmem import levels

    return [{**_level(agent), "routines": [_level(r) for r in levels.list_routines(memory, agent)]}
            for agent in levels.list_agents(memory)]


@click.group()
def agents() -> None:
    """List, create and delete agent folders."""


@agents.command("list")
@root_option
@json_option
def list_agents(root: str | None, as_json: bool) -> None:
    """Every agent with its routines: name, id (the first 8 characters) and folder."""
    listing = describe_levels(_memory(root))
    if as_json:
        echo_json(listing)
        return
    if not listing:
        click.echo("No agents. `fsmem agents create ID NAME` makes one.")
    rows = []
    for agent in listing:
        rows.append([agent["slug"], agent["id_prefix"], agent["folder"]])
        rows += [["  " + r["slug"], r["id_prefix"], r["folder"]] for r in agent["routines"]]
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
    """Delete agent AGENT_ID's whole folder (its files stay in `fsmem versions`)."""
    held = _memory(root).delete_agent(agent_id)
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
def create_routine(agent_id: str, routine_id: str, name: str, exist_ok: bool, root: str | None,
                   as_json: bool) -> None:
    """Make the folder of routine ROUTINE_ID of agent AGENT_ID, with an empty NOTES.md."""
    folder = _memory(root).create_routine(agent_id, routine_id, name, exist_ok=exist_ok)
    if as_json:
        echo_json({"id": routine_id, "agent_id": agent_id, "name": name, "folder": folder})
    else:
        click.echo(folder)


@routines.command("delete")
@click.argument("routine_id")
@root_option
@json_option
def delete_routine(routine_id: str, root: str | None, as_json: bool) -> None:
    """Delete routine ROUTINE_ID's folder; prints what its files held."""
    held = _memory(root).delete_routine(routine_id)
    if as_json:
        echo_json(held)
        return
    for path, content in held.items():
        click.echo(f"--- {path}\n{content}")
    click.echo(f"Deleted routine {routine_id}: {len(held)} files.")
