"""``fsmem facts keep|list|show|history|edit|forget|known`` and ``fsmem check``: no model code (``fsmem
remember``, which asks a model, is ``fsmem.cli.remember``), so a cold ``fsmem facts list`` loads none."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from fsmem._core.facts import DEFAULT_SOURCE, Fact, format_when
from fsmem._core.layout import STATE_DIR
from fsmem.cli.options import chosen_store, echo_json, find_root, json_option, open_root, root_option, serving_a_shell

if TYPE_CHECKING:
    from fsmem._memory.facts.kept import Listing

THREAD = "cli"


def open_facts(root: str | None):  # the memory's facts (``fsmem remember`` keeps through it too)
    return open_root(root).facts


def _kept_listing(root: str | None, subject: str | None) -> Listing | None:
    """A folder's listing as its kept view has it, where the view vouches for the files (no memory
    opened: a new process loads sqlite3 and the view, nothing else); None otherwise, and in a resident
    running the command for a shell (its open memory answers, by its watcher's word)."""
    if serving_a_shell() or chosen_store(folder_given=bool(root))[0] is not None:
        return None
    folder = find_root(root)
    if not (folder / STATE_DIR).is_dir():
        return None  # not a root: the memory's opening says so
    from fsmem._memory.facts.cold import kept_listing
    from fsmem._memory.facts.recheck import ask_recheck

    listing = kept_listing(folder, subject)
    if listing is not None:
        # What the view's mark cannot tell (a save in place) shows from the next answer on. The check
        # starts once the command is done, its lines written: it stats every file, and on a busy
        # machine would take the core that writes 25,000 lines.
        click.get_current_context().call_on_close(lambda: ask_recheck(folder))
    return listing


def _line(fact: Fact) -> str:
    """One fact on one line: id, thing, sentence, when."""
    if fact.holds:
        when = f"said {format_when(fact.said)}"
    else:
        until = format_when(fact.until) if fact.until else "?"
        when = f"held {format_when(fact.said)} to {until}"
    return f"{fact.id}  {fact.subject} / {fact.attribute}: {fact.text} ({when})"


@click.group()
def facts() -> None:
    """Dated facts: what holds now about a subject, and what held before."""


@facts.command()
@click.argument("subject")
@click.argument("attribute")
@click.argument("fact")
@click.option("--source", default=DEFAULT_SOURCE, show_default=True, help="Where the fact came from.")
@click.option(
    "--said",
    metavar="DATE",
    help="When it was said (YYYY-MM-DD or ISO time; default now; a future date is taken as now).",
)
@root_option
@json_option
def keep(
    subject: str, attribute: str, fact: str, source: str, said: str | None, root: str | None, as_json: bool
) -> None:
    """Keep FACT about SUBJECT's ATTRIBUTE. A later fact about the same thing replaces the one that
    holds (which moves to the history); an earlier one goes to the history at once."""
    kept = open_facts(root).keep(subject, attribute, fact, source=source, said=said, thread=THREAD)
    if as_json:
        echo_json(kept.to_dict())
        return
    echo_kept(kept)


def echo_kept(kept: Any, prefix: str = "") -> None:
    fact = kept.fact
    if kept.outcome == "known":
        click.echo(f"{prefix}Already known as {fact.id}: {fact.text} Nothing was kept.")
    elif kept.outcome == "history" or not fact.holds and kept.replaced is None:
        until = format_when(fact.until) if fact.until else "?"
        click.echo(
            f"{prefix}Kept {fact.id} in the history at once: {fact.subject} / {fact.attribute}: "
            f"{fact.text} (held {format_when(fact.said)} to {until}; {fact.replaced_by} was said later)"
        )
    else:
        click.echo(f"{prefix}Kept {fact.id}: {fact.subject} / {fact.attribute}: {fact.text}")
        if kept.replaced is not None:
            old = kept.replaced
            click.echo(
                f"{prefix}It replaces {old.id}, now in the history: {old.text} "
                f"(held {format_when(old.said)} to {format_when(old.until) if old.until else '?'})"
            )


@facts.command(name="list")
@click.argument("subject", required=False)
@click.option("--all", "everything", is_flag=True, help="Replaced facts too, after those that hold.")
@root_option
@json_option
def list_(subject: str | None, everything: bool, root: str | None, as_json: bool) -> None:
    """The facts that hold now (about SUBJECT, ignoring case), oldest said first."""
    listing = None if everything else _kept_listing(root, subject)
    if listing is None:
        store = open_facts(root)
        listing = store.listing(subject)
    shown, broken = listing.facts, listing.broken
    if everything:
        wanted = None if subject is None else " ".join(subject.split()).casefold()
        shown += [f for f in store.all() if not f.holds and (wanted is None or f.key[0] == wanted)]
    if as_json:  # a broken file is an entry of its own: its path, its problem, what --repair would do
        echo_json([f.to_dict() for f in shown] + [{**p.to_dict(), "broken": True} for p in broken])
        return
    if not shown and not broken:
        about = f" about {subject}" if subject else ""
        click.echo(f"No facts hold{about}. Keep one with `fsmem facts keep SUBJECT ATTRIBUTE FACT`.")
        return
    lines = [_line(fact) for fact in shown]
    lines += [f"BROKEN  {p.path}: {p.message}{_repair_note(p)}" for p in broken]
    click.echo("\n".join(lines))  # one write: a line each costs more than the lines


def _repair_note(problem: Any) -> str:
    if problem.repair is None:
        return " (a person must mend this)"
    return f" (`fsmem check --repair` {problem.repair})"


@facts.command()
@click.argument("fact_id", metavar="ID")
@root_option
@json_option
def show(fact_id: str, root: str | None, as_json: bool) -> None:
    """One fact with everything it records."""
    store = open_facts(root)
    fact = store.get(store.resolve_id(fact_id))
    if as_json:
        echo_json(fact.to_dict())
        return
    click.echo(f"{fact.subject} / {fact.attribute}: {fact.text}")
    if fact.holds:
        click.echo("holds: yes")
    else:
        until = format_when(fact.until) if fact.until else "?"
        click.echo(f"holds: no, replaced by {fact.replaced_by} on {until}")
    click.echo(f"said: {format_when(fact.said)}")
    click.echo(f"source: {fact.source}")
    click.echo(f"kept: {format_when(fact.kept)}")
    if fact.edited:
        click.echo(f"edited: {format_when(fact.edited)}")
    if fact.replaces:
        click.echo(f"replaces: {', '.join(fact.replaces)}")
    click.echo(f"file: {fact.path}")


@facts.command()
@click.argument("fact_id", metavar="ID")
@root_option
@json_option
def history(fact_id: str, root: str | None, as_json: bool) -> None:
    """The chain ID belongs to, newest first: what holds now, then what it replaced."""
    store = open_facts(root)
    chain = store.history(store.resolve_id(fact_id))
    if as_json:
        echo_json([f.to_dict() for f in chain])
        return
    for fact in chain:
        click.echo(_line(fact))


@facts.command()
@click.argument("fact_id", metavar="ID")
@click.option("--fact", "text", help="The corrected sentence.")
@click.option("--subject", help="The corrected subject.")
@click.option("--attribute", help="The corrected attribute.")
@root_option
@json_option
def edit(
    fact_id: str, text: str | None, subject: str | None, attribute: str | None, root: str | None, as_json: bool
) -> None:
    """Correct a fact's words, subject or attribute. It keeps its id and history and replaces nothing."""
    store = open_facts(root)
    fact = store.edit(store.resolve_id(fact_id), fact=text, subject=subject, attribute=attribute, thread=THREAD)
    if as_json:
        echo_json(fact.to_dict())
        return
    click.echo(f"Edited {fact.id}: {fact.subject} / {fact.attribute}: {fact.text}")


@facts.command()
@click.argument("fact_id", metavar="ID")
@root_option
@json_option
def forget(fact_id: str, root: str | None, as_json: bool) -> None:
    """Delete a fact and the facts it replaced, back to the first (their files stay in versions/)."""
    store = open_facts(root)
    deleted = store.forget(store.resolve_id(fact_id), thread=THREAD)
    if as_json:
        echo_json([f.to_dict() for f in deleted])
        return
    click.echo(f"Forgot {len(deleted)} fact{'s' if len(deleted) != 1 else ''}:")
    for fact in deleted:
        click.echo(f"  {_line(fact)}")


@facts.command()
@root_option
@json_option
def known(root: str | None, as_json: bool) -> None:
    """The subjects and attributes in use, so new facts can name things the same way."""
    pairs = open_facts(root).known()
    if as_json:
        echo_json([{"subject": s, "attribute": a} for s, a in pairs])
        return
    if not pairs:
        click.echo("No facts hold yet.")
        return
    grouped: dict[str, list[str]] = {}
    for subject, attribute in pairs:
        grouped.setdefault(subject, []).append(attribute)
    for subject, attributes in grouped.items():
        click.echo(f"{subject}: {', '.join(attributes)}")


# --------------------------------------------------------------------------- check


@click.command()
@click.option(
    "--repair",
    is_flag=True,
    help="Mend what needs no guess (ids from file names, changes cut short, links to facts gone); "
    "each repair is a change whose previous content is kept as a version.",
)
@root_option
@json_option
def check(repair: bool, root: str | None, as_json: bool) -> None:
    """Report fact files fsmem cannot use as they are (broken front matter, rule breaks, broken
    chains), each with what `--repair` would do about it or that a person must mend it."""
    store = open_facts(root)
    repaired = store.repair(thread=THREAD) if repair else []
    problems = store.check()
    if as_json:
        echo_json({"repaired": repaired, "problems": [p.to_dict() for p in problems], "facts": len(store.all())})
    else:
        for path in repaired:
            click.echo(f"Repaired {path}")
        for problem in problems:
            click.echo(f"{problem.path}: {problem.message}{_repair_note(problem)}")
        if not problems:
            click.echo(f"No problems in {len(store.all())} facts.")
    if problems:
        sys.exit(1)
