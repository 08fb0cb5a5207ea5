"""``fsmem mcp``: the memory tool for MCP clients (Claude Desktop, IDEs, agent frameworks), over stdio."""

from __future__ import annotations

import click

from fsmem._errors import FsmemError, RootNotFound
from fsmem.cli import for_the_shell
from fsmem.cli.options import open_memory, root_option


@click.command()
@root_option
@click.option(
    "--scope",
    "scope_text",
    default="chat",
    show_default=True,
    metavar="SCOPE",
    help="Which levels the session's run belongs to: chat, agent:ID[:NAME] or "
    "routine:AGENT_ID/ROUTINE_ID[:AGENT_NAME/ROUTINE_NAME]. With a name, a missing "
    "folder is made on first use.",
)
@click.option("--create", is_flag=True, help="Make the root (and its .fsmem/) if it does not exist yet.")
@click.option(
    "--thread-prefix",
    default="mcp",
    show_default=True,
    help="Each session logs its changes as thread PREFIX-<8 hex digits>.",
)
def mcp(root: str | None, scope_text: str, create: bool, thread_prefix: str) -> None:
    """Serve the memory tool and the scope's top files over MCP on stdin/stdout.

    Each connection is one session with its own read versions. Point an MCP client at
    `fsmem mcp --root DIR`; it speaks JSON-RPC on stdout, so nothing else is printed there.
    A configuration that cannot serve (no root, a bad scope) still starts: every call is answered
    with a tool error that says what to fix, and the reason goes to stderr.
    """
    from fsmem._memory.levels import Scope

    try:
        from fsmem import mcp_server
    except ImportError as error:  # the optional extra is missing
        from fsmem._env.resources import install_command

        raise click.ClickException(
            f"the MCP server needs the mcp package ({error}); install it with: {install_command('mcp')}"
        ) from error
    try:
        scope = Scope.parse(scope_text)
        memory = open_memory(root, create=create)
    except RootNotFound as error:
        hint = "" if create else "; or add --create to the server's args to make it"
        mcp_server.serve(None, None, thread_prefix, problem=RootNotFound(for_the_shell(error).message + hint))
        return
    except FsmemError as error:
        mcp_server.serve(None, None, thread_prefix, problem=error)
        return
    from fsmem.cli.watch import serve_while_running

    serve_while_running(memory)  # the shell's searches answered here while the session lasts
    mcp_server.serve(memory, scope, thread_prefix)
