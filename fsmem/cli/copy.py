"""``fsmem copy SRC DST``: a whole project from one store to another (``fsmem._memory.copy``)."""

from __future__ import annotations

import click

from fsmem.cli.options import echo_json, json_option


@click.command()
@click.argument("source", metavar="SRC")
@click.argument("destination", metavar="DST")
@click.option(
    "--project",
    metavar="NAME",
    default=None,
    envvar="FSMEM_PROJECT",
    help="The project of a postgresql:// side that does not name one as #NAME (default: $FSMEM_PROJECT).",
)
@json_option
def copy(source: str, destination: str, project: str | None, as_json: bool) -> None:
    """Copy a whole project: its files, kept versions, log and proposals.

    SRC and DST are each a folder or a PostgreSQL URL with the project after #
    (postgresql://host/db#rye-and-ember), or --project NAME for a URL without one:

    \b
      fsmem copy notes/ 'postgresql://db/fsmem#rye-and-ember'   import a folder
      fsmem copy 'postgresql://db/fsmem#rye-and-ember' backup/  export (a backup)
      fsmem copy notes/ notes-copy/                             folder to folder

    All or nothing: one transaction on PostgreSQL; a folder is written beside DST and renamed
    into place. Exit 1 (EXISTS) when DST already holds memory (a folder that is not empty, a
    project with any file, version, log entry or proposal), exit 2 (NO_ROOT) when SRC does not
    exist; either way nothing is written. Files that are not memory are left out and listed.
    """
    from fsmem._memory.copy import copy as copy_project
    from fsmem._memory.copy import place

    copied = copy_project(source, destination, project)
    if as_json:
        echo_json({"ok": True, **copied.__dict__})
        return
    click.echo(
        f"Copied {copied.files} files, {copied.versions} kept versions, {copied.log} log entries "
        f"and {copied.proposals} proposals to {place(destination, project)}."
    )
    if copied.skipped:
        click.echo(f"Left out, not memory: {', '.join(copied.skipped)}")
