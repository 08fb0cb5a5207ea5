"""``fsmem mcp``: the memory tool for MCP clients (Claude Desktop, IDEs, agent frameworks), over stdio."""

from __future__ import annotations

import click

from fsmem.cli.options import find_root, root_option


@click.command()
@root_option
@click.option("--scope", "scope_text", default="chat", show_default=True, metavar="SCOPE",
              help="Which levels the session's run belongs to: chat, agent:ID or routine:AGENT_ID/ROUTINE_ID.")
@click.option("--thread-prefix", default="mcp", show_default=True,
              help="Each session logs its changes as thread PREFIX-<8 hex digits>.")
def mcp(root: str | None, scope_text: str, thread_prefix: str) -> None:
    """Serve the memory tool and the scope's top files over MCP on stdin/stdout.

    Each connection is one session with its own read versions. Point an MCP client at
    `fsmem mcp --root DIR`; it speaks JSON-RPC on stdout, so nothing else is printed there.
    """
    import fsmem
    from fsmem.levels import Scope

    memory = fsmem.open(find_root(root))
    scope = Scope.parse(scope_text)
    try:
        from fsmem import mcp_server
    except ImportError as error:  # the optional extra is missing
        raise click.ClickException(
            f"the MCP server needs the mcp package ({error}); install it with: pip install 'fsmem[mcp]'"
        ) from error
    mcp_server.serve(memory, scope, thread_prefix)
