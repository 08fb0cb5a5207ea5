"""The README's MCP config, pasted into an official MCP client as a host would run it.

The config block is parsed out of README.md; only its placeholder root is replaced (by a folder that
does not exist yet) and this venv stands for ``/path/to/fsmem/.venv``; the host's PATH has no venv on it.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

import fsmem
from fsmem._memory.levels import Scope
from tests.conftest import REPO

pytestmark = pytest.mark.slow

PLACEHOLDER_ROOT = "/path/to/memory"
PLACEHOLDER_VENV = "/path/to/fsmem/.venv"  # the venv bin/demo makes in the checkout


def readme_config() -> dict:
    """The first JSON block of README.md that holds "mcpServers"."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```json\n(.*?)```", readme, re.DOTALL) if "mcpServers" in b]
    assert blocks, "README.md has no MCP config block"
    return json.loads(blocks[0])["mcpServers"]["memory"]


def pasted(root: Path, args: list[str] | None = None) -> StdioServerParameters:
    config = readme_config()
    # "command" names fsmem in the checkout's venv; the suite runs in that venv (or one like it).
    assert config["command"].startswith(f"{PLACEHOLDER_VENV}/"), config["command"]
    command = sys.prefix + config["command"][len(PLACEHOLDER_VENV):]
    args = [str(root) if a == PLACEHOLDER_ROOT else a for a in (args or config["args"])]
    # A host starts the command with a small environment of its own: its PATH knows nothing of a venv.
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "HOME": os.environ.get("HOME", "/tmp")}
    return StdioServerParameters(command=command, args=args, env=env)


def test_readme_config_works_as_pasted_and_the_next_session_sees_what_the_first_wrote(tmp_path):
    root = tmp_path / "memory"  # not made yet: --create makes it
    config = readme_config()
    scope = Scope.parse(config["args"][config["args"].index("--scope") + 1])
    assert scope.agent_name, "the README's scope carries the agent's name, so its folder is made"
    seen: dict = {}

    async def first_session():
        async with Client(pasted(root)) as client:
            seen["tools"] = (await client.list_tools()).tools
            seen["folder"] = await client.call_tool("memory", {"command": "read", "path": "agents"})
            agent_memory = seen["folder"].content[0].text.split("\n")[1].strip().split()[0].rstrip("/")
            seen["agent_memory"] = f"agents/{agent_memory}/MEMORY.md"
            seen["write"] = await client.call_tool("memory", {
                "command": "write", "path": seen["agent_memory"],
                "content": "# SEO bot\n- Titles end with | Field Notes\n"})

    async def second_session():
        async with Client(pasted(root)) as client:
            seen["instructions"] = client.instructions
            seen["description"] = (await client.list_tools()).tools[0].description
            # The loaded files count as read: the model may edit what it was shown.
            seen["edit"] = await client.call_tool("memory", {
                "command": "write", "path": seen["agent_memory"],
                "old_text": "| Field Notes", "new_text": "| Field Notes (max 60 chars)"})

    anyio.run(first_session)
    assert [tool.name for tool in seen["tools"]] == ["memory"]
    assert not seen["folder"].is_error, seen["folder"].content[0].text
    assert not seen["write"].is_error, seen["write"].content[0].text
    memory = fsmem.open(root)
    assert memory.run(scope).agent_folder == seen["agent_memory"].rsplit("/", 1)[0]

    anyio.run(second_session)
    for text in (seen["instructions"], seen["description"]):
        assert "- Titles end with | Field Notes" in text
        assert f'<memory path="{seen["agent_memory"]}"' in text
    assert not seen["edit"].is_error, seen["edit"].content[0].text
    assert (root / seen["agent_memory"]).read_text() == "# SEO bot\n- Titles end with | Field Notes (max 60 chars)\n"


def _first_call(params: StdioServerParameters, classic: bool = False) -> dict:
    seen: dict = {}

    async def script():
        if classic:
            async with stdio_client(params) as (read_stream, write_stream), \
                    ClientSession(read_stream, write_stream) as session:
                seen["instructions"] = (await session.initialize()).instructions
                seen["result"] = await session.call_tool("memory", {"command": "read", "path": "/"})
                seen["again"] = await session.call_tool("memory", {"command": "search", "query": "x"})
            return
        async with Client(params) as client:
            seen["instructions"] = client.instructions
            seen["description"] = (await client.list_tools()).tools[0].description
            seen["result"] = await client.call_tool("memory", {"command": "read", "path": "/"})
            seen["again"] = await client.call_tool("memory", {"command": "search", "query": "x"})

    anyio.run(script)
    return seen


@pytest.mark.parametrize("classic", [False, True])
def test_a_missing_root_without_create_starts_and_says_what_to_fix(tmp_path, classic):
    args = [a for a in readme_config()["args"] if a != "--create"]
    seen = _first_call(pasted(tmp_path / "nowhere", args), classic)
    for result in (seen["result"], seen["again"]):
        assert result.is_error
        assert result.structured_content["error"]["code"] == "NO_ROOT"
        assert "--create" in result.content[0].text
    assert "cannot serve" in seen["instructions"] and "--create" in seen["instructions"]
    assert not (tmp_path / "nowhere").exists()


def test_a_scope_without_a_name_for_a_missing_folder_starts_and_says_what_to_fix(tmp_path):
    fsmem.open(tmp_path / "memory", create=True)
    args = readme_config()["args"]
    args = [*args[:args.index("--scope")], "--scope", "agent:3f9a1c2e-77"]
    seen = _first_call(pasted(tmp_path / "memory", args))
    assert seen["result"].is_error and seen["result"].structured_content["error"]["code"] == "BAD_SCOPE"
    assert "pass its name in the scope" in seen["result"].content[0].text
    assert "cannot serve" in seen["description"]


def test_a_malformed_scope_starts_and_says_what_to_fix(tmp_path):
    args = [*readme_config()["args"][:-1], "team:x"]
    seen = _first_call(pasted(tmp_path / "memory", args))
    assert seen["result"].is_error and seen["result"].structured_content["error"]["code"] == "BAD_SCOPE"
    assert "agent:ID" in seen["result"].content[0].text
