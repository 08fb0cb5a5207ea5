"""fsmem over MCP: the ``memory`` tool and the scope's top files, served on stdio.

    fsmem mcp --root ~/notes/site --create --scope "agent:3f9a1c2e-77:SEO bot"

One connection is one session and gets one :class:`fsmem._memory.tool.Run`, so the versions a session has
read are its own: a change to a file this session never read (or that changed since) is refused with
``NOT_READ`` / ``CONFLICT``, exactly as for any other run. Callers that keep no session may pass
``expected_version``. Refusals come back as tool errors (``isError``) whose text starts with
``Error [CODE]:`` and whose structured content carries ``{"ok": false, "error": {"code", "message"}}``.

Most hosts never attach resources, so the scope's top files reach the model in what every host shows
it: the server's ``instructions`` and the tool's description, read afresh for each session and capped
at :data:`LOADED_CAP` bytes with a pointer to read the rest. Files shown whole count as read by the
session, as context injection does. They are resources too (``fsmem:///MEMORY.md``, …).

A server that cannot serve (no root, a scope that cannot be resolved) still starts and answers every
call with a tool error saying what to fix: a host only shows "Connection closed" for a server that exits.

The core is synchronous; each call runs in a worker thread (``anyio.to_thread.run_sync``), one at a
time per session. This module is the only one that imports ``mcp`` (the ``mcp`` extra).
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

import anyio
import anyio.to_thread
from mcp import types
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from fsmem._core import layout
from fsmem._core.context import Document, render_copy
from fsmem._errors import FsmemError
from fsmem._memory.levels import Scope
from fsmem._memory.memory import Memory
from fsmem._memory.tool import Run
from fsmem._memory.tool_forms import load_source, mcp_tool, tool_description

__all__ = [
    "LOADED_CAP",
    "SERVER_NAME",
    "build_server",
    "loaded_memory",
    "path_of_uri",
    "resource_uri",
    "serve_stdio",
    "unavailable_server",
]

SERVER_NAME = "fsmem"
URI_PREFIX = "fsmem:///"
MARKDOWN = "text/markdown"
LOADED_CAP = 8 * 1024  # bytes of top files put in front of the model per session; the rest is a read away
INSTRUCTIONS = (
    "Memory for this project: plain-text files (markdown first) shared by every chat, agent and "
    "routine. Use the memory tool to read, write, rename, delete and search them."
)


@dataclass
class Connection:
    """What one connection keeps: its run (or why there is none), what it was shown, and a lock so
    its calls run one at a time."""

    run: Run | None
    problem: FsmemError | None = None
    loaded: str = ""
    lock: anyio.Lock = field(default_factory=anyio.Lock)


def resource_uri(path: str) -> str:
    return URI_PREFIX + quote(path, safe="/")


def path_of_uri(uri: str) -> str:
    if not uri.startswith(URI_PREFIX):
        raise MCPError(types.INVALID_PARAMS, f"unknown resource {uri!r}; fsmem resources start with {URI_PREFIX}")
    return unquote(uri[len(URI_PREFIX) :])


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


def _cannot_serve(problem: FsmemError) -> str:
    return (
        f"The memory server cannot serve: [{problem.code}] {problem.message}. Nothing can be read or "
        "written until its configuration is fixed (the args of `fsmem mcp` in the MCP host's config); "
        "tell the user, then restart the server."
    )


def loaded_memory(documents: Sequence[Document], cap: int = LOADED_CAP) -> tuple[str, dict[str, str]]:
    """The scope's top files as the model is shown them at a session's start, at most ``cap`` bytes of
    copies, and the files shown whole (``path -> version``: they count as read).

    A file that does not fit is cut at a line, and the text says how to read the rest; later files
    get only that pointer.

    >>> text, seen = loaded_memory([Document("memory", "MEMORY.md", "- Titles end with | Field Notes\\n")])
    >>> "- Titles end with | Field Notes" in text, list(seen)
    (True, ['MEMORY.md'])
    """
    parts, seen, room = [], {}, cap
    for document in documents:
        if document.is_empty:
            continue
        copy = render_copy(document)
        size = len(copy.encode("utf-8"))
        if size <= room:
            parts.append(copy)
            room -= size
            if document.tag == "memory":
                seen[document.key] = document.version
            continue
        where = document.key if document.tag == "memory" else "the top files above"
        pointer = f"[Cut here: read {where} with the memory tool (command read) for the rest.]"
        body = document.body.encode("utf-8")[: max(0, room - len(pointer) - 200)].decode("utf-8", "ignore")
        body = body[: body.rfind("\n") + 1] if "\n" in body else ""
        if body.strip():
            parts.append(
                render_copy(
                    Document(
                        document.tag,
                        document.key,
                        body + pointer + "\n",
                        version=document.version,
                        attributes=(("cut", "true"),),
                    )
                )
            )
        else:
            parts.append(pointer)
        room = 0
    if not parts:
        return (
            "Nothing is remembered yet: the top files of this scope are empty. Write what should be "
            "kept with the memory tool (a short index in MEMORY.md, details in topic files)."
        ), seen
    return (
        "Memory loaded for this session: the scope's top files as they were when it started (read "
        "them with the memory tool to see later changes).\n\n" + "\n\n".join(parts)
    ), seen


class _Server(Server[Connection]):
    """``instructions`` computed when a connection starts, so each session sees the files as they are."""

    def __init__(self, *args: Any, instructions_of: Callable[[], str], **kwargs: Any) -> None:
        self._instructions_of = instructions_of
        super().__init__(*args, **kwargs)

    @property
    def instructions(self) -> str:
        return self._instructions_of()

    @instructions.setter
    def instructions(self, _: str | None) -> None:  # Server.__init__ sets it; ours is computed
        pass


def build_server(memory: Memory, scope: Scope, thread_prefix: str = "mcp") -> Server[Connection]:
    """The MCP server for one root and scope; each connection it serves gets its own run.

    A scope that cannot be resolved does not stop the server: each call answers with the reason.
    """

    def open_session() -> Connection:
        try:
            run = memory.run(scope, thread_id=f"{thread_prefix}-{uuid.uuid4().hex[:8]}")
            text, seen = _loaded(run)
        except FsmemError as problem:
            return Connection(None, problem=problem, loaded=_cannot_serve(problem))
        for path, version in seen.items():
            run.mark_seen(path, version)
        return Connection(run, loaded=text)

    def instructions() -> str:
        try:
            return INSTRUCTIONS + "\n\n" + _loaded(memory.run(scope))[0]
        except FsmemError as problem:
            return _cannot_serve(problem)

    return _serve(open_session, instructions, memory)


def unavailable_server(problem: FsmemError) -> Server[Connection]:
    """A server for a configuration that cannot serve: it starts, lists the tool, and answers every
    call with ``problem`` and what to fix (so the host shows that, not "Connection closed")."""
    text = _cannot_serve(problem)
    return _serve(lambda: Connection(None, problem=problem, loaded=text), lambda: text, None)


def _loaded(run: Run) -> tuple[str, dict[str, str]]:
    from fsmem._memory.context import documents

    return loaded_memory(documents(run))


def _serve(
    open_session: Callable[[], Connection], instructions: Callable[[], str], memory: Memory | None
) -> Server[Connection]:
    source = load_source()
    tool = mcp_tool(source, tool_description(source))

    @asynccontextmanager
    async def session(_: Server[Connection]) -> AsyncIterator[Connection]:
        yield await anyio.to_thread.run_sync(open_session)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        state: Connection = ctx.lifespan_context
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=tool["name"],
                    description=f"{tool['description']}\n\n{state.loaded}",
                    input_schema=tool["inputSchema"],
                    annotations=types.ToolAnnotations(
                        title="Memory",
                        read_only_hint=False,
                        destructive_hint=True,
                        idempotent_hint=False,
                        open_world_hint=False,
                    ),
                )
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        state: Connection = ctx.lifespan_context
        if state.run is None:
            problem = state.problem or FsmemError("no session")
            return _tool_error(problem.code, _cannot_serve(problem))
        if params.name != tool["name"]:
            return _tool_error("BAD_REQUEST", f'there is no tool {params.name!r}; the one tool is "memory"')
        run = state.run
        async with state.lock:
            try:
                result = await anyio.to_thread.run_sync(run.call, dict(params.arguments or {}))
            except FsmemError as error:  # a setup problem (the index, the root): still the model's to read
                return _tool_error(error.code, error.message)
        # The file's text is already the content the model reads: hosts that forward structured
        # content too would show it twice.
        structured = {key: value for key, value in result.items() if key not in ("text", "content")}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result["text"])],
            structured_content=structured,
            is_error=not result["ok"],
        )

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        state: Connection = ctx.lifespan_context
        if state.run is None or memory is None:
            return types.ListResourcesResult(resources=[])
        files = await anyio.to_thread.run_sync(memory.scope_files, state.run.scope)
        resources = []
        for path in files:
            info = await anyio.to_thread.run_sync(memory.drive.info, path)
            resources.append(
                types.Resource(
                    name=path,
                    uri=resource_uri(path),
                    description=_describe(path),
                    mime_type=MARKDOWN,
                    size=info.size if info else 0,
                )
            )
        return types.ListResourcesResult(resources=resources)

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        state: Connection = ctx.lifespan_context
        if state.run is None:
            problem = state.problem or FsmemError("no session")
            raise MCPError(types.INVALID_PARAMS, _cannot_serve(problem), data={"code": problem.code})
        run = state.run
        path = path_of_uri(params.uri)
        async with state.lock:
            text, version = await anyio.to_thread.run_sync(_read_file, run, path)
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(
                    uri=params.uri, mime_type=MARKDOWN, text=text, meta={"fsmem/version": version}
                )
            ]
        )

    return _Server(
        SERVER_NAME,
        version=_version(),
        instructions_of=instructions,
        lifespan=session,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


def _read_file(run: Run, path: str) -> tuple[str, str]:
    """A file's text and version, read through the run (guards, and it counts as seen)."""
    result = run.call({"command": "read", "path": path})
    if not result["ok"]:
        raise MCPError(types.INVALID_PARAMS, result["text"], data=result["error"])
    if "content" not in result:
        raise MCPError(
            types.INVALID_PARAMS, f"{path or '/'} is a folder, not a memory file", data={"code": "BAD_REQUEST"}
        )
    return result["content"], result["version"]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fsmem")
    except PackageNotFoundError:  # run from a checkout
        return "0"


async def serve_stdio(
    memory: Memory | None, scope: Scope | None, thread_prefix: str = "mcp", problem: FsmemError | None = None
) -> None:
    if memory is None or scope is None:
        server = unavailable_server(problem or FsmemError("no memory root or scope was given"))
    else:
        server = build_server(memory, scope, thread_prefix)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def serve(
    memory: Memory | None, scope: Scope | None, thread_prefix: str = "mcp", problem: FsmemError | None = None
) -> None:
    """Serve on stdin/stdout until the client closes the connection. Without a memory and scope, serve
    ``problem`` to every call (the host shows the model what to fix)."""
    if problem is not None:
        print(f"Error: [{problem.code}] {problem.message}", file=sys.stderr)  # the host's server log
    anyio.run(serve_stdio, memory, scope, thread_prefix, problem)
