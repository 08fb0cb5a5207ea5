"""Options every command shares (``--root``, ``--json``) and how the root is found."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

import click

from fsmem.core.layout import STATE_DIR
from fsmem.errors import RootNotFound


def find_root(explicit: str | None) -> Path:
    """``--root``, else ``FSMEM_ROOT``, else the nearest folder upward that holds ``.fsmem/``."""
    if explicit:
        return Path(explicit).expanduser().resolve()
    from_env = os.environ.get("FSMEM_ROOT")
    if from_env:
        return Path(from_env).expanduser().resolve()
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / STATE_DIR).is_dir():
            return folder
    raise RootNotFound(
        "no fsmem root here: pass --root DIR, set FSMEM_ROOT, or run `fsmem init` to make one"
    )


def root_option(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--root",
        "root",
        metavar="DIR",
        default=None,
        help="The memory root (default: $FSMEM_ROOT, else the nearest folder upward with .fsmem/).",
    )(command)


def json_option(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--json", "as_json", is_flag=True, help="Print the result as JSON (stable, for scripts)."
    )(command)


def expect_option(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--expect", "expected_version", metavar="VERSION", default=None,
        help="Refuse unless the file is still at VERSION (as `fsmem read` shows it).",
    )(command)


def echo_json(value: Any) -> None:
    click.echo(json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True))
