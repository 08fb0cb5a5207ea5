"""``fsmem chat`` (talk to a model with the project's memory) and ``fsmem demo``."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import click

from fsmem._errors import ModelError, ScopeError, SetupError
from fsmem._store.atomic import write_atomic
from fsmem.cli.model_options import make_model, model_options
from fsmem.cli.options import echo_json, json_option, open_memory, root_option


def _scope(
    agent_id: str | None, agent_name: str | None, routine_id: str | None, routine_name: str | None
) -> tuple[Any, str]:
    from fsmem import Scope

    if routine_id:
        if not agent_id:
            raise ScopeError("--routine needs --agent: a routine's run loads its agent's memory too")
        return (
            Scope.routine(agent_id, routine_id, agent_name=agent_name, routine_name=routine_name),
            f"routine:{agent_id}:{routine_id}",
        )
    if agent_id:
        return Scope.agent(agent_id, name=agent_name), f"agent:{agent_id}"
    return Scope.chat(), "chat"


def _load_thread(path: Path | None, scope_key: str) -> tuple[str | None, list[dict[str, Any]]]:
    if path is None or not path.exists():
        return None, []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        thread_id, scope, messages = data["thread_id"], data["scope"], data["messages"]
    except (ValueError, KeyError, TypeError) as error:
        raise SetupError(f"{path} is not a thread file fsmem wrote ({error}); pass another --thread file") from None
    if scope != scope_key:
        raise ScopeError(
            f"{path} holds a thread of {scope}, not {scope_key}; pass the same --agent/--routine "
            "as when it was started, or another --thread file"
        )
    return thread_id, messages


def _save_thread(path: Path, thread_id: str, scope_key: str, messages: list[dict[str, Any]]) -> None:
    """Write the thread file whole or not at all."""
    data = json.dumps(
        {"thread_id": thread_id, "scope": scope_key, "messages": messages}, ensure_ascii=False, indent=1
    ).encode("utf-8")
    write_atomic(path.resolve(), data)


def _print_turn(turn: Any, show_context: bool) -> None:
    from fsmem._core.context import message_text, parse_header

    if show_context:
        for message in turn.given:
            header = parse_header(message_text(message))
            if header is not None:
                tag, attributes = header
                name = attributes.get("path") or attributes.get("id") or attributes.get("query", "")
                click.echo(f"[{tag} {name} {attributes.get('version', '')}]".replace(" ]", "]"))
    for step in turn.steps:
        arguments = step.arguments or {}
        target = arguments.get("path") or arguments.get("query") or ""
        outcome = "ok" if step.ok else step.text.split("\n", 1)[0]
        click.echo(f"[memory {arguments.get('command', '?')} {target}: {outcome}]".replace("  ", " "))
    click.echo(turn.answer)


@click.command()
@root_option
@model_options
@click.option("--agent", "agent_id", metavar="ID", help="Talk as this agent (its chat loads its memory).")
@click.option("--agent-name", metavar="NAME", help="The agent's name, shown to the model.")
@click.option("--routine", "routine_id", metavar="ID", help="Run this routine of --agent (loads its notes).")
@click.option("--routine-name", metavar="NAME", help="The routine's name, shown to the model.")
@click.option(
    "-m",
    "--message",
    "messages",
    multiple=True,
    metavar="TEXT",
    help="Send this message (repeat for several turns) instead of reading lines from stdin.",
)
@click.option(
    "--thread",
    "thread_file",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Keep the thread in this JSON file and continue it next time.",
)
@click.option(
    "--recall/--no-recall",
    default=False,
    show_default=True,
    help="Add the top memory matches for each message (under a token cap).",
)
@click.option("--show-context", is_flag=True, help="Show which memory copies each turn appended.")
@json_option
def chat(
    root: str | None,
    model_settings: Any,
    agent_id: str | None,
    agent_name: str | None,
    routine_id: str | None,
    routine_name: str | None,
    messages: tuple[str, ...],
    thread_file: Path | None,
    recall: bool,
    show_context: bool,
    as_json: bool,
) -> None:
    """Talk to a model that uses this project's memory: a chat, an agent's chat or a routine's run.

    Reads one message a line from stdin (or takes -m). `/compact` compacts the thread; `/quit` ends.
    After the turn that makes the conversation due, a review keeps what it taught in the background
    and says what it did in one `[review] …` line.
    """
    from fsmem.harness import Session

    if not model_settings.url:
        raise ModelError(
            "fsmem chat talks to a real model: pass --model-url URL and --model NAME (or set "
            "$FSMEM_MODEL_URL and $FSMEM_MODEL); try `fsmem demo` for the scripted one"
        )
    model = make_model(model_settings)
    memory = open_memory(root)
    from fsmem.cli.watch import serve_while_running

    serve_while_running(memory)  # the shell's searches answered here while the chat lasts
    scope, scope_key = _scope(agent_id, agent_name, routine_id, routine_name)
    thread_id, history = _load_thread(thread_file, scope_key)
    session = Session(
        memory, scope, model, thread_id=thread_id, recall=recall, messages=history, window=model_settings.context_window
    )
    interactive = not messages and sys.stdin.isatty()
    lines = iter(messages) if messages else (line.rstrip("\n") for line in sys.stdin)
    turns = []
    notices: list[str] = []
    while True:
        if interactive:
            click.echo("you> ", nl=False)
        try:
            text = next(lines)
        except StopIteration:
            break
        if not text.strip():
            continue
        if text.strip() in {"/quit", "/exit"}:
            break
        if text.strip() == "/compact":
            summary = session.compact()
            if not as_json:
                click.echo(f"[compacted: {summary.splitlines()[0] if summary else 'no summary'}]")
        else:
            try:
                turn = session.turn(text)
            except ModelError as error:
                if not interactive:
                    raise
                # a person at the prompt keeps the conversation; the failed message can be sent again
                click.echo(f"Error: [{error.code}] {error.message}", err=True)
                continue
            turns.append(
                {
                    "message": text,
                    "given": turn.given,
                    "steps": [{"arguments": s.arguments, "result": s.result} for s in turn.steps],
                    "answer": turn.answer,
                }
            )
            if not as_json:
                _print_turn(turn, show_context)
        if thread_file is not None:
            _save_thread(thread_file, session.thread_id, scope_key, session.messages)
        notices += _print_notices(session, as_json)
    session.wait_for_reviews()  # a review that started keeps its work: the process waits for it
    notices += _print_notices(session, as_json)
    if as_json:
        echo_json({"thread_id": session.thread_id, "turns": turns, "reviews": notices})


def _print_notices(session: Any, as_json: bool) -> list[str]:
    """What finished background reviews did, one line each, outside the thread."""
    lines = session.review_notices()
    if not as_json:
        for line in lines:
            click.echo(f"[review] {line}")
    return lines


EXIT_DEMO_FAILED = 1  # ran, and a check failed (the README's "refused" code); 2 stays "could not run"


@click.command()
@model_options
@click.option(
    "--project",
    "source",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    metavar="DIR",
    help="The memory root to copy (default: the repository's sample_project/).",
)
@click.option(
    "--keep",
    type=click.Path(path_type=Path),
    metavar="DIR",
    help="Make the copy here and keep it (default: a temporary folder, removed at the end).",
)
@click.option("--show-system", is_flag=True, help="Print the whole system prompt once.")
@json_option
def demo(model_settings: Any, source: Path | None, keep: Path | None, show_system: bool, as_json: bool) -> None:
    """Show memory at work on a copy of the sample project, run by run.

    A rule told in one chat is followed in a new chat; a routine records a change its sibling then
    respects; a routine compares with what it kept last run. Uses a scripted model (no network, no
    key) unless --model-url is given. Prints what the model was given and what it wrote.
    """
    from fsmem._env.sample import copy_sample
    from fsmem.cli.demo import AGENT_MEMORY, run_demo

    model_url = model_settings.url
    model = make_model(model_settings) if model_url else None
    echo = (lambda text: None) if as_json else click.echo
    if keep is not None:
        if keep.exists():
            raise click.UsageError(f"{keep} already exists; --keep makes a new folder")
        root = copy_sample(keep, source)
        records = _run(run_demo, root, model, echo, show_system, model_url)
        echo(
            f"The copy is kept in {root}: open its files in an editor, or run "
            f"`fsmem read --root {root} {AGENT_MEMORY}`."
        )
    else:
        with tempfile.TemporaryDirectory(prefix="fsmem-demo-") as folder:
            root = copy_sample(Path(folder) / "rye-and-ember", source)
            records = _run(run_demo, root, model, echo, show_system, model_url)
            if not as_json:
                click.echo("(The copy was temporary and is now removed; pass --keep DIR to keep it.)")
    if as_json:
        echo_json(records)
    failed = [label for record in records for label, ok in record["checks"].items() if not ok]
    if failed:
        # the demo is a check too: a script (or bin/smoke-local-model) must see that it did not hold
        total = sum(len(record["checks"]) for record in records)
        click.echo(
            f"Error: {len(failed)} of {total} demo checks failed (marked ✗ above): memory did "
            "not reach the model as the runs expect",
            err=True,
        )
        click.get_current_context().exit(EXIT_DEMO_FAILED)


def _run(run_demo: Any, root: Path, model: Any, echo: Any, show_system: bool, model_url: str | None) -> Any:
    who = f"the model at {model_url}" if model else "the scripted model (answers written in advance; its input is real)"
    echo(f"fsmem demo on a copy of the sample project at {root}\nAnswers come from {who}.")
    return run_demo(root, model, echo=echo, show_system=show_system)
