"""fsmem over MCP: the ``memory`` tool and the scope's top files, served on stdio.

    fsmem mcp --root ~/notes/site --scope agent:3f9a1c2e-77

One connection is one session and gets one :class:`fsmem.tool.Run`, so the versions a session has
read are its own: a change to a file this session never read (or that changed since) is refused with
``NOT_READ`` / ``CONFLICT``, exactly as for any other run. Callers that keep no session may pass
``expected_version``. Refusals come back as tool errors (``isError``) whose text starts with
``Error [CODE]:`` and whose structured content carries ``{"ok": false, "error": {"code", "message"}}``.

Resources are the top files of the scope (``fsmem:///MEMORY.md``, …); reading one counts as a read
for the version check, because a client that reads a resource puts it in front of the model.

The core is synchronous; each call runs in a worker thread (``anyio.to_thread.run_sync``), one at a
time per session. This module is the only one that imports ``mcp`` (the ``mcp`` extra).
"""

from __future__ import annotations

import uuid
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, AsyncIterator
from urllib.parse import quote, unquote

import anyio
import anyio.to_thread
from mcp import types
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from fsmem.core import layout
from fsmem.core.versions import version_of
from fsmem.errors import FsmemError
from fsmem.levels import Scope
from fsmem.memory import Memory
from fsmem.tool import Run
from fsmem.tool_forms import load_source, mcp_tool, tool_description

__all__ = ["build_server", "serve_stdio", "resource_uri", "path_of_uri", "SERVER_NAME"]

SERVER_NAME = "fsmem"
URI_PREFIX = "fsmem:///"
MARKDOWN = "text/markdown"
_READ_ATTEMPTS = 3


@dataclass
class Connection:
    """What one connection keeps: its run (read versions) and a lock so its calls run one at a time."""

    run: Run
    lock: anyio.Lock = field(default_factory=anyio.Lock)


def resource_uri(path: str) -> str:
    return URI_PREFIX + quote(path, safe="/")


def path_of_uri(uri: str) -> str:
    if not uri.startswith(URI_PREFIX):
        raise MCPError(types.INVALID_PARAMS, f"unknown resource {uri!r}; fsmem resources start with {URI_PREFIX}")
    return unquote(uri[len(URI_PREFIX):])


def _describe(path: str) -> str:
    role = layout.role_of(path)
    return {
        "project": "Project memory: loaded in every chat, agent and routine of this project.",
        "agent": "Agent memory: loaded in this agent's chat and in its routines' runs.",
        "routine": "Routine notes: loaded in this routine's runs.",
    }[role.level]


def _tool_error(code: str, message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"Error [{code}]: {message}")],
        structured_content={"ok": False, "error": {"code": code, "message": message}},
        is_error=True,
    )


def build_server(memory: Memory, scope: Scope, thread_prefix: str = "mcp") -> Server[Connection]:
    """The MCP server for one root and scope; each connection it serves gets its own run."""
    source = load_source()
    tool = mcp_tool(source, tool_description(source))
    memory.run(scope)  # resolve the scope now: a bad one fails before any client connects

    @asynccontextmanager
    async def session(_: Server[Connection]) -> AsyncIterator[Connection]:
        thread_id = f"{thread_prefix}-{uuid.uuid4().hex[:8]}"
        run = await anyio.to_thread.run_sync(lambda: memory.run(scope, thread_id=thread_id))
        yield Connection(run)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(
            name=tool["name"], description=tool["description"], input_schema=tool["inputSchema"],
            annotations=types.ToolAnnotations(title="Memory", read_only_hint=False, destructive_hint=True,
                                              idempotent_hint=False, open_world_hint=False),
        )])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name != tool["name"]:
            return _tool_error("BAD_REQUEST", f"there is no tool {params.name!r}; the one tool is \"memory\"")
        state: Connection = ctx.lifespan_context
        async with state.lock:
            try:
                result = await anyio.to_thread.run_sync(state.run.call, dict(params.arguments or {}))
            except FsmemError as error:  # a setup problem (the index, the root): still the model's to read
                return _tool_error(error.code, error.message)
        structured = {key: value for key, value in result.items() if key != "text"}
        return types.CallToolResult(content=[types.TextContent(type="text", text=result["text"])],
                                    structured_content=structured, is_error=not result["ok"])

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        state: Connection = ctx.lifespan_context
        files = await anyio.to_thread.run_sync(memory.scope_files, state.run.scope)
        resources = []
        for path in files:
            info = await anyio.to_thread.run_sync(memory.drive.stat, path)
            resources.append(types.Resource(name=path, uri=resource_uri(path), description=_describe(path),
                                            mime_type=MARKDOWN, size=info.st_size if info else 0))
        return types.ListResourcesResult(resources=resources)

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        state: Connection = ctx.lifespan_context
        path = path_of_uri(params.uri)
        async with state.lock:
            text, version = await anyio.to_thread.run_sync(_read_file, state.run, path)
        return types.ReadResourceResult(contents=[types.TextResourceContents(
            uri=params.uri, mime_type=MARKDOWN, text=text, meta={"fsmem/version": version})])

    return Server(
        SERVER_NAME,
        version=_version(),
        instructions=("Memory for this project: markdown files shared by every chat, agent and routine. "
                      "Use the memory tool to read, write, rename, delete and search them."),
        lifespan=session,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


def _read_file(run: Run, path: str) -> tuple[str, str]:
    """A file's text and version, read through the run (guards, and it counts as seen)."""
    for _ in range(_READ_ATTEMPTS):
        result = run.call({"command": "read", "path": path})
        if not result["ok"]:
            raise MCPError(types.INVALID_PARAMS, result["text"], data=result["error"])
        if "version" not in result:
            raise MCPError(types.INVALID_PARAMS, f"{path or '/'} is a folder, not a memory file",
                           data={"code": "BAD_REQUEST"})
        data = run.drive.read(result["path"])
        if data is not None and version_of(data) == result["version"]:
            return data.decode("utf-8"), result["version"]
    raise MCPError(types.INVALID_PARAMS, f"{path} kept changing while it was read; try again",
                   data={"code": "BUSY"})


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fsmem")
    except PackageNotFoundError:  # run from a checkout
        return "0"


async def serve_stdio(memory: Memory, scope: Scope, thread_prefix: str = "mcp") -> None:
    server = build_server(memory, scope, thread_prefix)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def serve(memory: Memory, scope: Scope, thread_prefix: str = "mcp") -> None:
    """Serve on stdin/stdout until the client closes the connection."""
    anyio.run(serve_stdio, memory, scope, thread_prefix)
