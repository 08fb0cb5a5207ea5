"""``fsmem review``: a model rereads a conversation and keeps what it taught (adds at once, the rest proposed)."""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from fsmem._errors import BadRequest, ModelError
from fsmem.cli import exit_code_for
from fsmem.cli.model_options import conversation_option, make_model, model_options, read_conversation
from fsmem.cli.options import echo_json, json_option, open_root, root_option, shell_scope

if TYPE_CHECKING:
    from fsmem._llm.model import ModelSettings


@click.command()
@functools.partial(conversation_option, required=False)
@click.option(
    "--consolidate",
    "level",
    metavar="project|agent:ID|routine:A/R",
    help="Instead of a conversation, reread this level's files and propose merging duplicated or "
    "outdated notes (proposals only).",
)
@click.option(
    "--scope",
    "scope_text",
    default="chat",
    show_default=True,
    metavar="chat|agent:ID|routine:A/R",
    help="Whose memory the review loads and keeps to: the chat, an agent, or an agent's routine.",
)
@model_options
@click.option(
    "--max-calls",
    default=16,
    show_default=True,
    type=click.IntRange(min=1),
    help="At most this many model calls; what was written before the budget ran out stays.",
)
@root_option
@json_option
def review(
    conversation_file: Path | None,
    level: str | None,
    scope_text: str,
    model_settings: ModelSettings,
    max_calls: int,
    root: str | None,
    as_json: bool,
) -> None:
    """Reread a conversation through a model and keep what it taught in memory.

    Additions apply at once; a change that replaces or removes what is written becomes a proposal
    (`fsmem proposals`). With --consolidate LEVEL, rereads that level's files instead and only
    proposes merging duplicated or outdated notes. Prints one line per change and per proposal; when
    nothing changed, one line that says whether the model found nothing worth keeping, answered
    without proposing anything, or sent nothing usable (exit 2).
    """
    from fsmem._memory.review import consolidate
    from fsmem._memory.review import review as run_review

    if (conversation_file is None) == (level is None):
        raise click.UsageError("give a conversation (--from FILE) or a level to consolidate (--consolidate LEVEL)")
    memory = open_root(root)
    if level is not None:
        scope = shell_scope(memory, "chat" if level == "project" else level)
        model = make_model(model_settings)
        result = consolidate(memory, model, scope, max_calls=max_calls, window=model_settings.context_window)
    else:
        assert conversation_file is not None
        scope = shell_scope(memory, scope_text)
        conversation = read_conversation(conversation_file, error=BadRequest)
        model = make_model(model_settings)
        result = run_review(
            memory, conversation, model, scope, max_calls=max_calls, window=model_settings.context_window
        )
    outcome = result.outcome()
    failure = None
    if result.error is not None:
        failure = ModelError(f"the review stopped early: {result.error}")
    elif result.unusable and outcome:
        failure = ModelError(outcome)  # exit 2, like any model that could not do the job
    if as_json:  # one JSON document, the error inside it: what was kept before the stop stays listed
        echo_json(result.to_dict())
        if failure is not None:
            click.echo(f"Error: [{failure.code}] {failure.message}", err=True)
            sys.exit(exit_code_for(failure))
        return
    for line in result.lines():
        click.echo(line)
    if failure is not None:
        raise failure
    if outcome:
        click.echo(outcome)
