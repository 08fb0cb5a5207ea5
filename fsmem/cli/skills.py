"""``fsmem skills``: the skills of a project — list, versions, revert, restore, curate (docs/skills.md)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import click

from fsmem.cli.options import echo_json, json_option, open_root, root_option

_agent_option = click.option(
    "--agent",
    "agent",
    metavar="ID",
    help="The agent whose skill it is (an id prefix or its name); default: the project's.",
)


def _skill_file(memory: Any, name: str, agent: str | None) -> tuple[str | None, str]:
    """The agent folder (None: the project's) and the SKILL.md path of skill NAME."""
    from fsmem._core import layout
    from fsmem._core.paths import normalize_path
    from fsmem._memory.levels import Scope, match_id, scope_folders

    agent_folder = scope_folders(memory, Scope.agent(match_id(memory, agent, "agent")))[0] if agent else None
    parent = f"{agent_folder}/{layout.SKILLS_DIR}" if agent_folder else layout.SKILLS_DIR
    return agent_folder, normalize_path(f"{parent}/{name}/{layout.SKILL_FILE}")


@click.group()
def skills() -> None:
    """The skills of the project: how to do a kind of task, kept as skills/<name>/SKILL.md."""


@skills.command("list")
@root_option
@json_option
def list_(root: str | None, as_json: bool) -> None:
    """Every skill: who made it (review or person), when, its last use; archived ones marked."""
    from fsmem._memory.curator import archived_skills, skills_of

    memory = open_root(root)
    found = skills_of(memory) + archived_skills(memory)
    if as_json:
        echo_json({"skills": [asdict(skill) for skill in found]})
        return
    if not found:
        click.echo("No skills yet.")
    for skill in found:
        used = f"last used {skill.last_used[:10]}" if skill.last_used else "never used"
        mark = "  (archived: `fsmem skills restore`)" if skill.archived else ""
        click.echo(f"{skill.name}  {skill.path}  by {skill.origin}, {used}{mark}\n  {skill.description}")


@skills.command()
@click.argument("name")
@_agent_option
@root_option
@json_option
def versions(name: str, agent: str | None, root: str | None, as_json: bool) -> None:
    """The versions kept of skill NAME's SKILL.md, newest first."""
    from fsmem.cli.files import echo_versions

    memory = open_root(root)
    echo_versions(memory, _skill_file(memory, name, agent)[1], as_json)


@skills.command()
@click.argument("name")
@click.option("--version", "version", metavar="V", help="This kept version (default: the newest one).")
@_agent_option
@root_option
@json_option
def revert(name: str, version: str | None, agent: str | None, root: str | None, as_json: bool) -> None:
    """Put skill NAME's SKILL.md back as it was before its last change (or as VERSION)."""
    from fsmem.cli.files import echo_revert

    memory = open_root(root)
    echo_revert(memory, _skill_file(memory, name, agent)[1], version, as_json)


@skills.command()
@click.argument("name")
@_agent_option
@root_option
@json_option
def restore(name: str, agent: str | None, root: str | None, as_json: bool) -> None:
    """Bring an archived skill back into the list (counts as a use, so the curator leaves it)."""
    from fsmem._memory.curator import restore as restore_skill

    memory = open_root(root)
    path = restore_skill(memory, name, _skill_file(memory, name, agent)[0])
    if as_json:
        echo_json({"path": path})
    else:
        click.echo(f"Restored {path}.")


@skills.command()
@root_option
@json_option
def curate(root: str | None, as_json: bool) -> None:
    """Run the curator's pass if one is due (idle 2 hours, last pass 7 days old): for a scheduler."""
    from fsmem._memory.curator import curate as run_pass

    memory = open_root(root)
    result = run_pass(memory)
    if as_json:
        echo_json(asdict(result))
        return
    said = {
        "first": "First pass: recorded; nothing archived (the next one comes in 7 days).",
        "recent": "No pass: the last one is under 7 days old.",
        "busy": "No pass: the memory was used in the last 2 hours.",
        "due": f"Pass done: {len(result.archived)} skills archived.",
    }[result.ran]
    click.echo(said)
    for folder in result.archived:
        click.echo(f"Archived {folder} (`fsmem skills restore {folder.rsplit('/', 1)[-1]}`)")
