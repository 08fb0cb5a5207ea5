"""``fsmem links PATH``: what a memory file links to, and which files link to it."""

from __future__ import annotations

import click

from fsmem.cli.options import echo_json, json_option, open_root, root_option, shell_path


@click.command()
@click.argument("path")
@root_option
@json_option
def links(path: str, root: str | None, as_json: bool) -> None:
    """List the links of PATH (markdown links and [[wiki links]]) and its backlinks.

    A link that leads to no file is shown as such; a rename through fsmem rewrites the links that
    led to the old path, so they lead to the new one.
    """
    from fsmem._memory.links import links_of

    memory = open_root(root, path)
    found = links_of(memory, shell_path(path, memory.root))
    if as_json:
        echo_json(found.to_dict())
        return
    click.echo(f"{found.path} links to:" if found.links else f"{found.path} links to nothing.")
    for link in found.links:
        click.echo(f"  {link.target or '(no such file)'}  line {link.line}: {_written(link.kind, link.written)}")
    click.echo("Linked from:" if found.backlinks else "No file links to it.")
    for link in found.backlinks:
        click.echo(f"  {link.source}  line {link.line}: {_written(link.kind, link.written)}")


def _written(kind: str, written: str) -> str:
    return f"[[{written}]]" if kind == "wiki" else f"({written})"
