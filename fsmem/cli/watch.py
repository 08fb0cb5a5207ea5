"""``fsmem watch``: the resident of a root (or of one worker's cache of a project in PostgreSQL) — it
keeps the index current and answers the shell's questions over the state folder's socket, until
Ctrl-C, SIGTERM, or (``--idle-exit``) a time with no question."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

from fsmem.cli.options import open_root, root_option

if TYPE_CHECKING:
    from fsmem._memory.memory import Memory


@click.command()
@root_option
@click.option(
    "--debounce",
    type=click.FloatRange(min=0.01),
    default=0.15,
    show_default=True,
    help="Seconds of quiet before a batch of changes is indexed.",
)
@click.option(
    "--idle-exit",
    type=click.FloatRange(min=0.01),
    default=None,
    metavar="SECONDS",
    help="Stop after SECONDS with no question from the shell (one started on first use takes the "
    "watch_idle setting); without it, run until stopped.",
)
def watch(root: str | None, debounce: float, idle_exit: float | None) -> None:
    """Keep the index current as files change and run the shell's searches and reads, until Ctrl-C
    (searches then skip their own check, and a cold `fsmem search`, `read` or `facts list` is run by
    this process instead of starting up).

    One serves a root: when another process already does, this one says so and exits 0. On
    PostgreSQL (--store/--project) it serves this worker's cache of the project."""
    from fsmem._memory.resident import Resident
    from fsmem.cli.search import _warnings_to_stderr
    from fsmem.cli.served import answer

    memory = open_root(root)
    try:
        # the signals are heard from the start: one while it starts up ends it cleanly too
        with (
            _stopped_by_signals() as stop,
            _warnings_to_stderr(),
            Resident(memory, answer, idle_exit=idle_exit) as resident,
        ):
            if not resident.serving and (resident.why_not or "").startswith("another"):
                click.echo(f"Not watching {memory.drive.label}: {resident.why_not}.", err=True)
                return
            serves = "serving searches" if resident.serving else f"not serving searches ({resident.why_not})"
            click.echo(f"Watching {memory.drive.label}, {serves} (Ctrl-C to stop).", err=True)
            watcher = memory.watch(debounce=debounce)  # the process's one watcher: the searches it serves use it
            memory.start_embedding()  # recall by meaning, when set up: passages embedded as files change
            try:
                _until_stopped(stop, resident.idle, watcher)
            finally:
                watcher.stop()
            if resident.idle.is_set():
                click.echo(f"Stopped: no question for {idle_exit:g} s.", err=True)
    finally:
        memory.close()


@contextmanager
def _stopped_by_signals() -> Iterator[threading.Event]:
    """An event set by SIGINT or SIGTERM (in the main thread; the handlers before are put back after).
    SIGINT too, whatever this process inherited: one started from a background shell (or by a command
    that was) begins with SIGINT ignored, and `kill -INT` must still stop it."""
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    before = {each: signal.signal(each, lambda *_: stop.set()) for each in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for each, handler in before.items():
            signal.signal(each, handler)


def _until_stopped(stop: threading.Event, idle: threading.Event, watcher: object) -> None:
    """Block until ``stop`` (a signal) or ``idle``; a folder's watcher whose worker died is ``INDEX_ERROR``."""
    from fsmem._errors import IndexError_
    from fsmem._index.watch import Watcher

    try:
        while not (stop.wait(0.5) or idle.is_set()):
            if isinstance(watcher, Watcher) and not watcher.running:
                raise IndexError_(
                    "the watcher stopped unexpectedly (" + "; ".join(watcher.errors[-3:]) + "); start it again"
                )
    except KeyboardInterrupt:  # under a test runner that put SIGINT back to Python's own
        pass


def serve_while_running(memory: Memory) -> None:
    """A long-lived command's part (``fsmem mcp``, ``chat``, ``ui``): answer the shell's questions about
    ``memory`` from this process while the command runs and no other process does; stopped with it."""
    from fsmem._memory.resident import serve
    from fsmem.cli.served import answer

    click.get_current_context().call_on_close(serve(memory, answer).stop)
