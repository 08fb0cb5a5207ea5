"""``fsmem agents …`` and ``fsmem routines …``: the level folders, as the harness sees them."""

from __future__ import annotations

import click

from fsmem.cli.options import echo_json, find_root, json_option, root_option


def _memory(root: str | None):
    import fsmem

    return fsmem.open(find_root(root))


@click.group()
def agents() -> None:
    """List, create and delete agent folders."""


@agents.command("list")
@root_option
@json_option
def list_agents(root: str | None, as_json: bool) -> None:
    """Every agent folder, with its routines."""
    from fsmem import levels

    memory = _memory(root)
    listing = {folder: levels.list_routines(memory, folder) for folder in levels.list_agents(memory)}
    if as_json:
        echo_json(listing)
        return
    if not listing:
        click.echo("No agents.")
    for agent in levels.describe_agents(memory):  # people read names and full ids, not only folders
        click.echo(f"{agent.folder}  {agent.name} (id {agent.id or '? (made before ids were kept)'})")
        for routine in levels.describe_routines(memory, agent.folder):
            click.echo(f"  {routine.folder}  {routine.name} (id {routine.id or '?'})")


@agents.command("create")
@click.argument("agent_id")
@click.argument("name")
@root_option
def create_agent(agent_id: str, name: str, root: str | None) -> None:
    """Make the folder of agent AGENT_ID, named NAME, with an empty MEMORY.md."""
    click.echo(_memory(root).create_agent(agent_id, name))


@agents.command("delete")
@click.argument("agent_id")
@root_option
@json_option
def delete_agent(agent_id: str, root: str | None, as_json: bool) -> None:
    """Delete agent AGENT_ID's whole folder (its files stay in `fsmem versions`); an unambiguous
    start of the id is enough."""
    from fsmem import levels

    memory = _memory(root)
    agent_id = levels.match_id(memory, agent_id, "agent")
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
@root_option
def create_routine(agent_id: str, routine_id: str, name: str, root: str | None) -> None:
    """Make the folder of routine ROUTINE_ID of agent AGENT_ID (an unambiguous start of the agent's id
    is enough), with an empty NOTES.md."""
    from fsmem import levels

    memory = _memory(root)
    click.echo(memory.create_routine(levels.match_id(memory, agent_id, "agent"), routine_id, name))


@routines.command("delete")
@click.argument("routine_id")
@root_option
@json_option
def delete_routine(routine_id: str, root: str | None, as_json: bool) -> None:
    """Delete routine ROUTINE_ID's folder (an unambiguous start of the id is enough); prints what its
    files held."""
    from fsmem import levels

    memory = _memory(root)
    routine_id = levels.match_id(memory, routine_id, "routine")
    held = memory.delete_routine(routine_id)
    if as_json:
        echo_json(held)
        return
    for path, content in held.items():
        click.echo(f"--- {path}\n{content}")
    click.echo(f"Deleted routine {routine_id}: {len(held)} files.")
