"""``fsmem remember``: a conversation's durable facts proposed through a model, kept as chosen (the
model options and the conversation's reading live here, not with ``fsmem facts``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from fsmem._errors import BadFact
from fsmem.cli.facts import THREAD, echo_kept, open_facts
from fsmem.cli.model_options import conversation_option, make_model, model_options, read_conversation
from fsmem.cli.options import echo_json, json_option, root_option


def _choice(text: str, count: int) -> list[int]:
    text = text.strip().lower()
    if text == "all":
        return list(range(1, count + 1))
    if text in ("", "none"):
        return []
    chosen: list[int] = []
    for part in text.replace(" ", "").split(","):
        if "-" in part:
            low, _, high = part.partition("-")
            numbers = list(range(int(low), int(high) + 1)) if low.isdigit() and high.isdigit() else []
        else:
            numbers = [int(part)] if part.isdigit() else []
        if not numbers or any(n < 1 or n > count for n in numbers):
            raise BadFact(
                f"--keep {text!r}: give proposal numbers between 1 and {count} (like 1,3 or 2-4), `all`, or `none`"
            )
        chosen += [n for n in numbers if n not in chosen]
    return chosen


@click.command()
@conversation_option
@model_options
@click.option(
    "--keep",
    "keep_choice",
    metavar="1,3|all|none",
    help="Which proposals to keep; without it you are asked one by one (at a terminal).",
)
@click.option("--ask", is_flag=True, help="Ask about each proposal, even when stdin is not a terminal.")
@click.option("--source", help="Where the facts came from (default: `chat: TITLE` or `a conversation`).")
@click.option("--said", metavar="DATE", help="When the conversation took place (default: its `date`, else now).")
@root_option
@json_option
def remember(
    conversation_file: Path,
    model_settings: Any,
    keep_choice: str | None,
    ask: bool,
    source: str | None,
    said: str | None,
    root: str | None,
    as_json: bool,
) -> None:
    """Propose the durable facts of a conversation through a model; keep the ones you choose."""
    store = open_facts(root)
    conversation = read_conversation(conversation_file)
    model = make_model(model_settings)
    extraction = store.propose(conversation, model, source=source, said=said)
    proposals = extraction.proposals
    keepable = [p for p in proposals if p.status != "known"]
    if keep_choice is not None:
        numbers = _choice(keep_choice, len(proposals))
        chosen = [p for p in proposals if p.number in numbers and p.status != "known"]
    elif not ask and (as_json or not sys.stdin.isatty()):
        chosen = []
    else:
        _echo_proposals(extraction, conversation_file)
        chosen = [
            p
            for p in keepable
            if click.confirm(f"Keep {p.number}. {p.draft.subject} / {p.draft.attribute}: {p.draft.text}", default=False)
        ]
        if not chosen:
            click.echo("Nothing was kept.")
            return
        _echo_kept_all(store.keep_drafts([p.draft for p in chosen], thread=THREAD))
        return
    kept = store.keep_drafts([p.draft for p in chosen], thread=THREAD) if chosen else []
    if as_json:
        echo_json({**extraction.to_dict(), "kept": [k.to_dict() for k in kept]})
        return
    _echo_proposals(extraction, conversation_file)
    if kept:
        _echo_kept_all(kept)
    elif keepable and keep_choice is None:
        click.echo("Nothing was kept. Choose with --keep 1,3 or --keep all.")
    else:
        click.echo("Nothing was kept.")


def _echo_proposals(extraction: Any, conversation_file: Path) -> None:
    proposals = extraction.proposals
    name = "stdin" if str(conversation_file) == "-" else conversation_file.name
    count = len(proposals)
    click.echo(
        f"{count} fact{'s' if count != 1 else ''} proposed from {name}:" if count else f"No facts proposed from {name}."
    )
    for p in proposals:
        click.echo(f"  {p.number}. {p.draft.subject} / {p.draft.attribute}: {p.draft.text}")
        click.echo(f"     {p.describe()}")
    for note in extraction.notes:
        click.echo(f"Note: {note}")


def _echo_kept_all(kept: list[Any]) -> None:
    for result in kept:
        echo_kept(result)
