"""``fsmem search`` and ``fsmem index status|rebuild|embed``: through ``Memory``, with the root's
settings, like every other command (``fsmem watch``: ``fsmem.cli.watch``)."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

from fsmem._errors import BadPattern
from fsmem._memory import render as _render
from fsmem.cli import EXIT_NO_MATCH
from fsmem.cli.options import echo_json, json_option, open_root, root_option

if TYPE_CHECKING:
    from fsmem._core.search import SearchHit


@contextmanager
def _warnings_to_stderr() -> Iterator[None]:
    """Index warnings (rebuilt from the files, …) reach the person as one ``Warning:`` line."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            for item in caught:
                click.echo(f"Warning: {item.message}", err=True)


@click.command()
@click.argument("query", nargs=-1, required=True)
@click.option("--regex", "use_regex", is_flag=True, help="Treat QUERY as a regular expression; print path:line: text.")
@click.option("--include", multiple=True, metavar="GLOB", help="Only paths matching GLOB (repeatable), e.g. 'seo/**'.")
@click.option("--exclude", multiple=True, metavar="GLOB", help="Leave out paths matching GLOB (repeatable).")
@click.option("--since", metavar="WHEN", help="Only files changed since WHEN: 8w, 30d, 12h or 2026-08-01.")
@click.option("--limit", type=click.IntRange(min=1), default=10, show_default=True, help="At most this many results.")
@click.option(
    "--mode",
    type=click.Choice(["words", "meaning", "both"]),
    help="Rank by words, by meaning (an embedding model), or both fused (default: the search_mode setting).",
)
@root_option
@json_option
def search(
    query: tuple[str, ...],
    use_regex: bool,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    since: str | None,
    limit: int,
    mode: str | None,
    root: str | None,
    as_json: bool,
) -> None:
    """Search the memory: ranked files with snippets (or regex lines with --regex).

    Files with any of the words, ranked by BM25 (more of them, and rarer ones, first); a question's
    stop words are left out and word forms match alike. The last word also matches as a prefix; put
    phrases in "double quotes". Facts that hold come before replaced ones. Exits 1 when nothing
    matched, as grep does (with --json, prints [] and exits 0).
    """
    text = " ".join(query)
    with _warnings_to_stderr():
        # In regex mode a few more than shown, to say how many more there are (capped: a pattern may
        # match everywhere).
        found = open_root(root).search(
            text,
            regex=use_regex,
            include=list(include),
            exclude=list(exclude),
            since=since,
            limit=limit + MORE_COUNTED if use_regex else limit,
            mode=mode,
        )
    hits, more = found[:limit], len(found) - limit
    if found.meaning == "partial" and not as_json:
        click.echo("Note: some files are not embedded yet; they were found by words alone.", err=True)
    if as_json:
        echo_json([hit.to_dict() for hit in hits])
    elif hits and hits[0].text is not None:  # lines: regex mode, or the scan of a read-only root
        _echo_lines(hits, text, more)
    else:
        _echo_ranked(_render.hits(hits, text), text)
    if not hits and not as_json:  # as grep; under --json, [] is the answer
        sys.exit(EXIT_NO_MATCH)


MORE_COUNTED = 1000


def _echo_lines(hits: list[SearchHit], pattern: str, more: int) -> None:
    """``path:line: text``, the matches painted; then how many more matching lines were not shown."""
    from fsmem._index.grep import compile_pattern
    from fsmem.cli.style import colour_on, paint

    compiled = None
    if colour_on() and hits:
        try:
            compiled = compile_pattern(pattern)
        except BadPattern:  # the words of a read-only root's scan, not a pattern: shown unpainted
            compiled = None
    for hit in hits:
        shown = hit.text or ""
        if compiled is not None:
            try:
                shown = compiled.sub(lambda m: click.style(m.group(0), fg="yellow", bold=True), shown, timeout=0.1)
            except TimeoutError:  # painting is a nicety: a pattern too slow for it leaves the line plain
                pass
        click.echo(f"{paint(f'{hit.path}:{hit.line}', fg='magenta')}: {shown}")
    if not hits:
        click.echo(f"No matches for {pattern!r}.")
    elif more > 0:
        count = f"{more}+" if more >= MORE_COUNTED else str(more)
        click.echo(f"… and {count} more matching line{'s' if more != 1 else ''} not shown (raise --limit to see them).")


def _echo_ranked(rendered: str, query: str) -> None:
    """Ranked hits as render.hits words them, with the path bold and the query's words painted."""
    from fsmem.cli.style import highlight, paint

    words = [w.strip('"').rstrip("*") for w in query.split() if len(w.strip('"')) > 1]
    for line in rendered.splitlines():
        if line.startswith("    "):
            click.echo(highlight(line, words))
        elif line.startswith("No matches"):
            click.echo(line)
        else:
            path, sep, rest = line.partition("  ")
            click.echo(paint(path, bold=True) + sep + rest)


@click.group()
def index() -> None:
    """The full-text index: how fresh it is, and rebuilding it."""


@index.command()
@root_option
@json_option
def status(root: str | None, as_json: bool) -> None:
    """Documents, files, how many are stale, whether a watcher keeps the index current, and how many
    files wait for their passages to be embedded (recall by meaning)."""
    with _warnings_to_stderr():
        memory = open_root(root)
        info = memory.index.status()
        info["meaning"] = memory.meaning_status()
    if as_json:
        echo_json(info)
        return
    from fsmem._memory.render import size

    watcher = f"running (pid {info['watcher_pid']})" if info["watcher"] else "not running"
    click.echo(
        f"documents: {info['documents']}\n"
        f"files:     {info['files']}\n"
        f"stale:     {info['stale']}\n"
        f"watcher:   {watcher}\n"
        f"size:      {size(info['index_bytes'])}\n"
        f"meaning:   {_meaning_line(info['meaning'])}"
    )


def _meaning_line(meaning: dict) -> str:
    if meaning["meaning"] == "off":
        return "off"
    line = f"{meaning['meaning']} ({meaning['embedded']} of {meaning['files']} files embedded"
    line += f", backlog {meaning['backlog']})"
    return line + (f"; paused: {meaning['failure']}" if meaning.get("failure") else "")


@index.command()
@root_option
@json_option
def rebuild(root: str | None, as_json: bool) -> None:
    """Rebuild the index from the files, beside the live one; searches keep working meanwhile."""
    target = open_root(root).index
    with _warnings_to_stderr():
        count = _with_progress("Indexing", target.rebuild, shown=not as_json)
    if as_json:
        echo_json({"files": count})
    else:
        click.echo(f"Rebuilt the index from {count} files.")


def _with_progress(label: str, work: Callable[[Callable[[int, int], None] | None], int], shown: bool) -> int:
    """``work(progress)`` with a progress bar on stderr (``shown``), else ``work(None)``."""
    if not shown:
        return work(None)
    with click.progressbar(length=1, label=label, file=sys.stderr) as bar:

        def progress(done: int, total: int) -> None:
            bar.length = max(total, 1)
            bar.update(done - bar.pos)

        return work(progress)


@index.command()
@root_option
@json_option
def embed(root: str | None, as_json: bool) -> None:
    """Embed now every file waiting for its passages (recall by meaning), with a progress bar."""
    memory = open_root(root)
    with _warnings_to_stderr():
        if memory.meaning_status()["meaning"] == "off":
            from fsmem._errors import ModelError

            raise ModelError("recall by meaning is off: install the meaning extra and `fsmem model install`")
        count = _with_progress("Embedding", memory.embed_pending, shown=not as_json)
    if as_json:
        echo_json({"embedded": count})
    else:
        click.echo(f"Embedded {count} files.")
