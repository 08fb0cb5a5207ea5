"""The ``fsmem`` command. ``main`` first asks a resident of the root (``fsmem watch``) to run the
command line (the standard library alone, no click: ``fsmem._index.resident``); when none does, it
runs the click group here (``fsmem.cli.group``), which prints the same bytes.

``main`` is also the click group to a caller that treats it as one (``CliRunner().invoke(main, …)``,
``main.get_command``): every attribute but the call is the group's, and that runs only here.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing itself costs a cold shell 2 ms
if TYPE_CHECKING:
    from typing import Any

    from fsmem.cli.group import (
        COMMANDS,
        EXIT_CONFLICT,
        EXIT_NO_MATCH,
        EXIT_REQUEST_REFUSED,
        EXIT_SETUP,
        LazyGroup,
        echo_error,
        exit_code_for,
        for_the_shell,
    )

__all__ = [
    "COMMANDS",
    "EXIT_CONFLICT",
    "EXIT_NO_MATCH",
    "EXIT_REQUEST_REFUSED",
    "EXIT_SETUP",
    "LazyGroup",
    "echo_error",
    "exit_code_for",
    "for_the_shell",
    "main",
]


class Shell:
    """The console script: ``main()`` (or ``main(args)``) runs a command line and exits."""

    def __call__(self, args: list[str] | None = None, prog_name: str | None = None, **extra: Any) -> Any:
        argv = sys.argv[1:] if args is None else list(args)
        prog = prog_name or os.path.basename(sys.argv[0])  # what click names a console script
        if not extra:
            from fsmem._index.resident import served

            done = served(argv, prog)
            if done is not None:
                _print_and_exit(*done)
        from fsmem.cli.group import group

        return group.main(argv, prog_name=prog, **extra)

    def __getattr__(self, name: str) -> Any:
        from fsmem.cli.group import group

        return getattr(group, name)


def _print_and_exit(out: bytes, err: bytes, code: int) -> None:
    """A served command's output; stderr first, as a shell's own run shows it where both streams meet:
    the commands served say their notes and errors before their output, or instead of it (and a pipe's
    stdout is written when the process ends)."""
    try:
        for stream, data in ((sys.stderr, err), (sys.stdout, out)):
            stream.flush()
            stream.buffer.write(data)
            stream.flush()
    except BrokenPipeError:  # as click takes a reader gone: quietly, and 1
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    sys.exit(code)


main = Shell()

if not TYPE_CHECKING:  # type checkers see the imports above, so a misspelt name stays an error

    def __getattr__(name: str) -> object:
        if name not in __all__:  # bound on first use, so a shell a resident answers loads no click
            raise AttributeError(f"module 'fsmem.cli' has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module("fsmem.cli.group"), name)
        globals()[name] = value
        return value
