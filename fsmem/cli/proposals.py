"""``fsmem proposals [show ID | approve ID | discard ID]``: changes a reviewer left for a person."""

from __future__ import annotations

import dataclasses

import click

from fsmem._memory.render import when_iso
from fsmem.cli.options import echo_json, json_option, open_root, root_option
from fsmem.cli.style import diff, table


def _memory(root: str | None):

    return open_root(root)


@click.group(invoke_without_command=True)
@root_option
@json_option
@click.pass_context
def proposals(ctx: click.Context, root: str | None, as_json: bool) -> None:
    """List the changes a reviewer proposed, each marked if it can still apply (or is broken)."""
    if ctx.invoked_subcommand is not None:
        return
    from fsmem._memory.proposals import stale_paths
    from fsmem._store.types import BrokenProposal

    memory = _memory(root)
    listed = memory.proposals()
    readable = [(p, stale_paths(memory, p)) for p in listed if not isinstance(p, BrokenProposal)]
    broken = [p for p in listed if isinstance(p, BrokenProposal)]
    if as_json:
        echo_json(
            [{**dataclasses.asdict(p), "stale": stale} for p, stale in readable]
            + [{"id": p.id, "broken": p.problem} for p in broken]
        )
        return
    if not listed:
        click.echo("No proposals.")
    rows = [
        [p.id, when_iso(p.made_at), p.summary, "[can apply]" if not stale else f"[stale ({', '.join(stale)} changed)]"]
        for p, stale in readable
    ] + [[p.id, "-", "-", f"[broken: {p.problem}]"] for p in broken]
    for line in table(rows):
        click.echo(line)


@proposals.command()
@click.argument("proposal_id", metavar="ID")
@root_option
@json_option
def show(proposal_id: str, root: str | None, as_json: bool) -> None:
    """Show one proposal with its diff (ID or its first characters)."""
    from fsmem._memory.proposals import load, resolve_id, stale_paths

    memory = _memory(root)
    proposal = load(memory, resolve_id(memory, proposal_id))
    if as_json:
        echo_json({**dataclasses.asdict(proposal), "stale": stale_paths(memory, proposal)})
        return
    click.echo(
        f"{proposal.id}: {proposal.summary}\nfrom thread {proposal.thread or '-'} ({proposal.scope}), "
        f"{when_iso(proposal.made_at)}"
    )
    if proposal.diff:
        click.echo(diff(proposal.diff))


@proposals.command()
@click.argument("proposal_id", metavar="ID")
@root_option
@json_option
def approve(proposal_id: str, root: str | None, as_json: bool) -> None:
    """Apply a proposal (ID or its first characters), only if the files it changes are as they were.

    Prints what the change did, as the memory tool reports it.
    """
    from fsmem._memory.proposals import load, resolve_id

    memory = _memory(root)
    full_id = resolve_id(memory, proposal_id)
    proposal = load(memory, full_id)
    result = memory.approve(full_id)
    if as_json:
        echo_json({"id": full_id, "summary": proposal.summary, "result": result})
        return
    click.echo(f"Applied {full_id}: {proposal.summary}.")
    click.echo(result["text"])


@proposals.command()
@click.argument("proposal_id", metavar="ID")
@root_option
@json_option
def discard(proposal_id: str, root: str | None, as_json: bool) -> None:
    """Drop a proposal (ID or its first characters) without applying it; a broken one too."""
    from fsmem._errors import BadProposal
    from fsmem._memory.proposals import load, resolve_id

    memory = _memory(root)
    full_id = resolve_id(memory, proposal_id)
    summary: str | None = None
    problem = ""
    try:
        summary = load(memory, full_id).summary
    except BadProposal as error:  # a file that is not a proposal: the person chose to drop it
        problem = str(error.details["problem"])
    memory.discard(full_id)
    if as_json:
        echo_json({"id": full_id, "summary": summary, "discarded": True})
    elif summary is None:
        click.echo(f"Discarded {full_id} (it could not be used: {problem}).")
    else:
        click.echo(f"Discarded {full_id}: {summary}.")
