"""``fsmem mcp`` as a real subprocess, driven over stdio by the official MCP client.

Two clients mean two server processes, as when two MCP hosts use one root: each is its own session.
Both client APIs are used: the high-level ``mcp.Client`` and the classic ``stdio_client`` +
``ClientSession`` pair with the ``initialize`` handshake that older hosts still send.
"""

from __future__ import annotations

import sys

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client, ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

import fsmem  # noqa: E402
from fsmem._core.versions import version_of  # noqa: E402

from tests.conftest import REPO, run_fsmem  # noqa: E402

pytestmark = pytest.mark.slow

AGENT = "3f9a1c2e-1111"


def server(root, *extra: str) -> StdioServerParameters:
    # The client passes only a safe default environment plus this: no FSMEM_* from the caller leaks in.
    return StdioServerParameters(command=sys.executable, args=["-m", "fsmem", "mcp", "--root", str(root), *extra],
                                 env={"PYTHONPATH": str(REPO)})


@pytest.fixture
def memory(tmp_path):
    memory = fsmem.open(tmp_path / "root", create=True)
    (memory.root / "MEMORY.md").write_text("# Project\n- Titles end with | Field Notes\n")
    (memory.root / "seo").mkdir()
    (memory.root / "seo" / "titles.md").write_text("# Titles\n- /stories: on hold until Dec 9\n")
    return memory


def test_two_sessions_over_stdio(memory, tmp_path):
    (tmp_path / "outside.md").write_text("outside\n")
    (memory.root / "brand.md").write_text("# Brand\n")  # a topic file: not loaded, so never seen
    calls = {}

    async def script():
        async with Client(server(memory.root)) as first, Client(server(memory.root)) as second:
            calls["tools"] = (await first.list_tools()).tools
            calls["read"] = await first.call_tool("memory", {"command": "read", "path": "seo/titles.md"})
            await second.call_tool("memory", {"command": "read", "path": "seo/titles.md"})
            calls["write"] = await first.call_tool("memory", {
                "command": "write", "path": "seo/titles.md",
                "old_text": "on hold until Dec 9", "new_text": "on hold until Dec 16"})
            calls["stale"] = await second.call_tool("memory", {
                "command": "write", "path": "seo/titles.md", "content": "# Titles\n"})
            calls["unread"] = await second.call_tool("memory", {
                "command": "write", "path": "brand.md", "content": "# Project\n"})
            calls["search"] = await second.call_tool("memory", {"command": "search", "query": "Dec 1[0-9]", "regex": True})
            calls["bad_path"] = await second.call_tool("memory", {"command": "read", "path": "../outside.md"})

    anyio.run(script)

    assert [tool.name for tool in calls["tools"]] == ["memory"]
    assert calls["tools"][0].input_schema["properties"]["command"]["enum"] == [
        "read", "write", "rename", "delete", "search"]
    assert not calls["read"].is_error
    assert calls["read"].content[0].text.splitlines()[1:] == ["     1\t# Titles", "     2\t- /stories: on hold until Dec 9"]
    assert not calls["write"].is_error
    assert calls["stale"].is_error
    assert calls["stale"].structured_content["error"]["code"] == "CONFLICT"
    assert calls["stale"].content[0].text.startswith("Error [CONFLICT]: seo/titles.md changed since you read it")
    assert calls["unread"].is_error and calls["unread"].structured_content["error"]["code"] == "NOT_READ"
    assert calls["search"].content[0].text == "seo/titles.md:2: - /stories: on hold until Dec 16"
    assert calls["bad_path"].is_error and calls["bad_path"].structured_content["error"]["code"] == "BAD_PATH"
    assert "outside\n" not in calls["bad_path"].content[0].text
    assert (memory.root / "seo" / "titles.md").read_text() == "# Titles\n- /stories: on hold until Dec 16\n"
    threads = {entry.thread for entry in memory.log()}
    assert len(threads) == 1 and threads.pop().startswith("mcp-")


def test_classic_handshake_with_an_agent_scope_and_resources(memory):
    memory.create_agent(AGENT, "SEO")
    (memory.root / "agents" / "seo-3f9a1c2e" / "MEMORY.md").write_text("- /stories on hold\n")
    seen = {}

    async def script():
        async with stdio_client(server(memory.root, "--scope", f"agent:{AGENT}", "--thread-prefix", "desk")) as (
                read_stream, write_stream):
            async with ClientSession(read_stream, write_stream) as session:
                seen["init"] = await session.initialize()
                seen["resources"] = (await session.list_resources()).resources
                seen["agent"] = (await session.read_resource("fsmem:///agents/seo-3f9a1c2e/MEMORY.md")).contents
                seen["write"] = await session.call_tool("memory", {
                    "command": "write", "path": "agents/seo-3f9a1c2e/MEMORY.md",
                    "content": "- /stories on hold until Dec 16\n"})

    anyio.run(script)

    assert seen["init"].server_info.name == "fsmem"
    assert [r.uri for r in seen["resources"]] == ["fsmem:///MEMORY.md", "fsmem:///agents/seo-3f9a1c2e/MEMORY.md"]
    assert seen["agent"][0].text == "- /stories on hold\n"
    assert seen["agent"][0].meta == {"fsmem/version": version_of(b"- /stories on hold\n")}
    # The resource read counted as a read, so the write needed nothing more.
    assert not seen["write"].is_error, seen["write"].content[0].text
    assert [entry.thread for entry in memory.log()][-1].startswith("desk-")


def test_a_bad_root_still_serves_says_why_on_stderr_and_prints_nothing_but_json_rpc(tmp_path):
    result = run_fsmem("mcp", "--root", str(tmp_path / "nowhere"), input="")
    assert result.returncode == 0  # the client closed stdin: a clean end, not a crash
    assert result.stdout == ""
    assert result.stderr.startswith("Error: [NO_ROOT] ")
    assert "--create" in result.stderr
