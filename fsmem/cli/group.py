"""The ``fsmem`` click group, its exit codes and its one ``Error:`` line. Subcommands load lazily, so
``fsmem search`` imports only what search needs. The console script is ``fsmem.cli:main``, which asks
a resident first (``fsmem.cli.served`` runs this same group there)."""

from __future__ import annotations

import importlib
import os
import sys

import click

from fsmem._errors import BadFact, Conflict, FsmemError, NotRead, SetupError
from fsmem.cli.options import echo_json, json_option, root_option, wants_json

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
    "watch": "fsmem.cli.watch:watch",
    "mcp": "fsmem.cli.mcp:mcp",
    "proposals": "fsmem.cli.proposals:proposals",
    "facts": "fsmem.cli.facts:facts",
    "remember": "fsmem.cli.remember:remember",
    "review": "fsmem.cli.review:review",
    "check": "fsmem.cli.facts:check",
    "chat": "fsmem.cli.chat:chat",
    "demo": "fsmem.cli.chat:demo",
    "edit": "fsmem.cli.files:edit",
    "status": "fsmem.cli.status:status",
}
COMMANDS["copy"] = "fsmem.cli.copy:copy"  # issue 12: a project between stores
COMMANDS["sync"] = "fsmem.cli.sync:sync"  # issue 12: a folder people edit, mirrored from PostgreSQL
COMMANDS["usage"] = "fsmem.cli.usage:usage"  # issue 22: model calls and tokens by purpose and day
COMMANDS["skills"] = "fsmem.cli.skills:skills"  # issue 22: skills kept like memory, and the curator
COMMANDS["links"] = "fsmem.cli.links:links"  # issue 21: links and backlinks
COMMANDS["model"] = "fsmem.cli.model:model"  # issue 21: the local embedding model
COMMANDS["ui"] = "fsmem.cli.ui:ui"  # issue 23: a page for people

# Exit codes by error family; one place, so scripts can rely on them (the README's table).
EXIT_REQUEST_REFUSED = 1
EXIT_NO_MATCH = 1  # `fsmem search` found nothing, as grep says it
EXIT_SETUP = 2  # also click's own code for a command line it cannot parse
EXIT_CONFLICT = 3


def exit_code_for(error: FsmemError) -> int:
    """By the error's place in the tree: a stale version 3, something to set up 2, any refusal 1."""
    if isinstance(error, (Conflict, NotRead)):
        return EXIT_CONFLICT
    if isinstance(error, SetupError) and not isinstance(error, BadFact):  # a fact that breaks a rule is refused
        return EXIT_SETUP
    return EXIT_REQUEST_REFUSED


def for_the_shell(error: FsmemError) -> FsmemError:
    """The error worded for a shell: what Python callers are told to call (``create=True``,
    ``create_agent``) becomes the command to type, from the error's fields (never its text)."""
    details = error.details
    missing = details.get("missing")
    if missing == "root":
        message = (
            f"{details['root']} is not an fsmem root (no .fsmem/ folder); run `fsmem init {details['root']}` to make it"
        )
    elif missing == "agent":
        agent = details["agent_id"]
        message = (
            f"agent {agent!r} has no folder; make it with `fsmem agents create {agent} NAME`, or name it in "
            f"the scope (--scope agent:{agent}:NAME) so the folder is made on first use"
        )
    elif missing == "routine":
        agent, routine = details["agent_id"], details["routine_id"]
        message = (
            f"routine {routine!r} has no folder; make it with `fsmem routines create {agent} {routine} NAME`, "
            f"or name it in the scope (--scope routine:{agent}/{routine}:AGENT_NAME/NAME) so the folder is "
            "made on first use"
        )
    else:
        return error
    return type(error)(message, **details)


def echo_error(error: FsmemError, as_json: bool) -> None:
    """One ``Error: [CODE] …`` line on stderr, or the tool's error shape on stdout under ``--json``."""
    error = for_the_shell(error)
    if as_json:
        echo_json({"ok": False, "error": error.to_dict()})
    else:
        click.echo(f"Error: [{error.code}] {error.message}", err=True)


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
            echo_error(error, wants_json(ctx))
            ctx.exit(exit_code_for(error))
        except (click.exceptions.Exit, click.exceptions.Abort):
            raise
        except BrokenPipeError:  # the reader went away (`| head`): click's main takes it quietly, exit 1
            raise
        except click.ClickException as error:  # a command line click cannot parse: JSON too, when asked
            if not wants_json(ctx):
                raise
            echo_json({"ok": False, "error": {"code": "USAGE", "message": error.format_message()}})
            ctx.exit(error.exit_code)
        except Exception as error:  # noqa: BLE001 - the shell gets one line; tests get the traceback
            if os.environ.get("FSMEM_RAISE") or "pytest" in sys.modules:
                raise
            click.echo(f"Error: {type(error).__name__}: {error}", err=True)
            ctx.exit(EXIT_SETUP)


@click.group(cls=LazyGroup, name="fsmem", context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fsmem")
@root_option
@json_option
def group(root: str | None, as_json: bool) -> None:
    """Memory for LLM agents, kept as markdown files in a plain folder.

    --root and --json may come before the command or after it. Exit codes: 0 done, 1 refused (or
    `search` found nothing, as grep), 2 setup or usage, 3 conflict (the file changed since read).
    """
