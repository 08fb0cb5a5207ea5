"""The ``fsmem`` command. Subcommands load lazily, so ``fsmem search`` imports only what search needs."""

from __future__ import annotations

import importlib
import os
import sys

import click

from fsmem.errors import FsmemError

# name -> "module:attribute"; each module is imported only when its command runs (or for --help).
COMMANDS: dict[str, str] = {
    "init": "fsmem.cli.files:init",
    "read": "fsmem.cli.files:read",
    "write": "fsmem.cli.files:write",
    "rename": "fsmem.cli.files:rename",
    "delete": "fsmem.cli.files:delete",
    "tool": "fsmem.cli.files:tool",
    "versions": "fsmem.cli.files:versions",
    "revert": "fsmem.cli.files:revert",
    "log": "fsmem.cli.files:log",
    "agents": "fsmem.cli.levels:agents",
    "routines": "fsmem.cli.levels:routines",
    "search": "fsmem.cli.search:search",
    "index": "fsmem.cli.search:index",
    "watch": "fsmem.cli.search:watch",
    "mcp": "fsmem.cli.mcp:mcp",
    "proposals": "fsmem.cli.proposals:proposals",
    "facts": "fsmem.cli.facts:facts",
    "remember": "fsmem.cli.facts:remember",
    "review": "fsmem.cli.review:review",
    "check": "fsmem.cli.facts:check",
    "chat": "fsmem.cli.chat:chat",
    "demo": "fsmem.cli.chat:demo",
}

# Exit codes by error family; one place, so scripts can rely on them.
EXIT_REQUEST_REFUSED = 1
EXIT_SETUP = 2
EXIT_CONFLICT = 3


def exit_code_for(error: FsmemError) -> int:
    if error.code in {"CONFLICT", "NOT_READ"}:
        return EXIT_CONFLICT
    if error.code in {"NO_ROOT", "BAD_SCOPE", "MODEL_ERROR", "INDEX_ERROR"}:
        return EXIT_SETUP
    return EXIT_REQUEST_REFUSED


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = COMMANDS.get(name)
        if target is None:
            return None
        module_name, attribute = target.split(":")
        return getattr(importlib.import_module(module_name), attribute)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except FsmemError as error:
            click.echo(f"Error: [{error.code}] {error.message}", err=True)
            ctx.exit(exit_code_for(error))
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except Exception as error:  # noqa: BLE001 - the shell gets one line; tests get the traceback
            if os.environ.get("FSMEM_RAISE") or "pytest" in sys.modules:
                raise
            click.echo(f"Error: {type(error).__name__}: {error}", err=True)
            ctx.exit(EXIT_SETUP)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fsmem")
def main() -> None:
    """Memory for LLM agents, kept as markdown files in a plain folder."""
