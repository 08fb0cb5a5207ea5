"""``fsmem proposals [show ID | approve ID | discard ID]``: changes a reviewer left for a person."""

from __future__ import annotations

import dataclasses

import click

from fsmem.cli.options import echo_json, find_root, json_option, root_option


def _memory(root: str | None):
    import fsmem

    return fsmem.open(find_root(root))


@click.group(invoke_without_command=True)
@root_option
@json_option
@click.pass_context
def proposals(ctx: click.Context, root: str | None, as_json: bool) -> None:
    """List the changes a reviewer proposed, each marked if it can still apply."""
    if ctx.invoked_subcommand is not None:
        return
    from fsmem.proposals import stale_paths

    memory = _memory(root)
    listed = [(p, stale_paths(memory, p)) for p in memory.proposals()]
    if as_json:
        echo_json([{**dataclasses.asdict(p), "stale": stale} for p, stale in listed])
        return
    if not listed:
        click.echo("No proposals.")
    for proposal, stale in listed:
        state = "can apply" if not stale else f"stale ({', '.join(stale)} changed)"
        click.echo(f"{proposal.id}  {proposal.made_at[:16]}  {proposal.summary}  [{state}]")


@proposals.command()
@click.argument("proposal_id")
@root_option
def show(proposal_id: str, root: str | None) -> None:
    """Show one proposal with its diff."""
    from fsmem.proposals import load

    proposal = load(_memory(root), proposal_id)
    click.echo(f"{proposal.id}: {proposal.summary}\nfrom thread {proposal.thread or '-'} ({proposal.scope}), "
               f"{proposal.made_at}")
    if proposal.diff:
        click.echo(proposal.diff)


@proposals.command()
@click.argument("proposal_id")
@root_option
def approve(proposal_id: str, root: str | None) -> None:
    """Apply a proposal, only if the files it changes are as they were."""
    result = _memory(root).approve(proposal_id)
    click.echo(f"Applied {proposal_id}. {result['text'].splitlines()[0]}")


@proposals.command()
@click.argument("proposal_id")
@root_option
def discard(proposal_id: str, root: str | None) -> None:
    """Drop a proposal without applying it."""
    _memory(root).discard(proposal_id)
    click.echo(f"Discarded {proposal_id}.")
