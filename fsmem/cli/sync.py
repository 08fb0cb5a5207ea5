"""``fsmem sync DIR``: a folder people edit, mirrored from a project in PostgreSQL (``fsmem._memory.sync``)."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import click

from fsmem.cli import EXIT_CONFLICT  # a pass left a conflict note to read
from fsmem.cli.options import chosen_store, echo_json, json_line, json_option, store_option

if TYPE_CHECKING:
    from fsmem._memory.sync import Report

EXIT_NOT_SYNCED = 1  # a path could not be synced (the errors say which)


@click.command()
@click.argument("folder", metavar="DIR", type=click.Path(file_okay=False))
@store_option
@click.option("--once", is_flag=True, help="One pull and push pass, then exit (for cron and scripts).")
@json_option
def sync(folder: str, once: bool, as_json: bool) -> None:
    """Mirror a project from PostgreSQL into DIR, and each hand edit in DIR back.

    Pulls every change of the project into DIR; pushes each file saved or deleted in DIR as a
    change conditional on the version it was pulled at. When both sides changed a file, the
    database keeps its version, your text is kept as a version of the file (`fsmem versions`)
    and written into a note beside it, FILE.conflict, which says how to take it back. DIR's own
    bookkeeping lives in DIR/.fsmem-sync/.

    Runs until Ctrl-C or SIGTERM, printing what each pass did; with --once, one pass: exit 0
    done, 1 some path could not be synced (listed), 3 a conflict note was written.
    """
    from fsmem._env.config import load_settings
    from fsmem._errors import BadStore, RootNotFound
    from fsmem._memory.sync import Sync
    from fsmem._store.postgres.store import PgStore

    url, project = chosen_store()
    if url is None or project is None:
        raise BadStore("fsmem sync mirrors a project in PostgreSQL: give --store URL --project NAME")
    try:
        settings = load_settings(None)  # FSMEM_VERSIONS_KEPT, FSMEM_LOCK_TIMEOUT, as every worker takes them
        store = PgStore.open(
            url, project, create=False, lock_timeout=settings.lock_timeout, versions_kept=settings.versions_kept
        )
    except RootNotFound as error:
        raise RootNotFound(
            f"{error.message.split(';')[0]}; make it with `fsmem init --store URL --project {project}`, "
            "or fill it from a folder with `fsmem copy`"
        ) from error
    Path(folder).mkdir(parents=True, exist_ok=True)
    with store, Sync.open(Path(folder), store) as mirror:
        if once:
            report = mirror.run_once(None)
            _show(report, as_json)
            if report.errors or report.conflicts:
                click.get_current_context().exit(EXIT_NOT_SYNCED if report.errors else EXIT_CONFLICT)
            return
        stop = threading.Event()

        def stopping(*_: object) -> None:
            stop.set()
            mirror.stop_waiting()

        signal.signal(signal.SIGTERM, stopping)
        signal.signal(signal.SIGINT, stopping)  # Ctrl-C too: the pass under way ends whole, its state saved
        mirror.run(stop, on_pass=lambda report: _show(report, as_json, line=True))


def _show(report: Report, as_json: bool, line: bool = False) -> None:
    data = {
        "pulled": report.pulled,
        "pushed": report.pushed,
        "conflicts": report.conflicts,
        "errors": report.errors,
        "seq": report.seq,
    }
    if as_json and line:
        click.echo(json_line(data))
        return
    if as_json:
        echo_json(data)
        return
    click.echo(
        f"Pulled {len(report.pulled)}, pushed {len(report.pushed)}, {len(report.conflicts)} conflicts "
        f"(up to change {report.seq})."
    )
    for path in report.pushed:
        click.echo(f"  pushed {path}")
    for note in report.conflicts:
        click.echo(f"  conflict: read {note}")
    for error in report.errors:
        click.echo(f"  not synced: {error}", err=True)
