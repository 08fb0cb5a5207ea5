"""The MCP server in-process, driven by the official client (``mcp.Client`` connected to the server).

Each ``Client(server)`` is its own connection, so its own session with its own read versions. The same
server is driven as a real ``fsmem mcp`` subprocess in ``test_mcp_stdio.py``.
"""

from __future__ import annotations

import anyio
import pytest

pytest.importorskip("mcp")

from click.testing import CliRunner  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

import fsmem  # noqa: E402
from fsmem import Scope  # noqa: E402
from fsmem.cli import main  # noqa: E402
from fsmem._core.versions import version_of  # noqa: E402
from fsmem.mcp_server import build_server, path_of_uri, resource_uri  # noqa: E402
from fsmem._memory.tool_forms import load_source, portable_input_schema, tool_description  # noqa: E402

AGENT = "3f9a1c2e-1111"
ROUTINE = "9b7d4e10-2222"


@pytest.fixture
def memory(tmp_path):
    memory = fsmem.open(tmp_path / "root", create=True)
    (memory.root / "MEMORY.md").write_text("# Project\n- Titles end with | Field Notes\n")
    return memory


def serve(memory, scope=None):
    return build_server(memory, scope or Scope.chat())


def drive(server, script):
    """Run ``script(client_a, client_b)`` with two sessions on one server."""
    async def both():
        async with Client(server) as first, Client(server) as second:
            return await script(first, second)
    return anyio.run(both)


def text(result) -> str:
    assert len(result.content) == 1
    return result.content[0].text


def test_lists_the_memory_tool_with_the_portable_schema(memory):
    async def script(client, _):
        return (await client.list_tools()).tools

    [tool] = drive(serve(memory), script)
    source = load_source()
    assert tool.name == "memory"
    # The tool's own description, then the scope's top files as the session starts (hosts show it).
    assert tool.description.startswith(tool_description(source) + "\n\nMemory loaded for this session")
    assert "- Titles end with | Field Notes" in tool.description
    assert tool.input_schema == portable_input_schema(source)
    assert "allOf" not in tool.input_schema  # refused at the top level by the Anthropic API
    assert tool.annotations.destructive_hint is True and tool.annotations.open_world_hint is False


def test_read_then_write_in_one_session(memory):
    async def script(client, _):
        read = await client.call_tool("memory", {"command": "read", "path": "MEMORY.md"})
        written = await client.call_tool("memory", {"command": "write", "path": "MEMORY.md",
                                                    "old_text": "Field Notes", "new_text": "FN"})
        return read, written

    read, written = drive(serve(memory), script)
    version = version_of(b"# Project\n- Titles end with | Field Notes\n")
    assert not read.is_error
    assert read.structured_content == {"ok": True, "path": "MEMORY.md", "version": version, "lines": 2}
    assert text(read).splitlines()[1:] == ["     1\t# Project", "     2\t- Titles end with | Field Notes"]
    assert not written.is_error and text(written).startswith("Wrote MEMORY.md (version ")
    assert (memory.root / "MEMORY.md").read_text() == "# Project\n- Titles end with | FN\n"


def test_read_versions_are_kept_per_session(memory):
    async def script(first, second):
        await first.call_tool("memory", {"command": "read", "path": "MEMORY.md"})
        await second.call_tool("memory", {"command": "read", "path": "MEMORY.md"})
        await first.call_tool("memory", {"command": "write", "path": "MEMORY.md", "content": "first\n"})
        stale = await second.call_tool("memory", {"command": "write", "path": "MEMORY.md", "content": "second\n"})
        again = await second.call_tool("memory", {"command": "read", "path": "MEMORY.md"})
        retried = await second.call_tool("memory", {"command": "write", "path": "MEMORY.md",
                                                    "content": "second\n"})
        return stale, again, retried

    stale, again, retried = drive(serve(memory), script)
    assert stale.is_error and stale.structured_content["error"]["code"] == "CONFLICT"
    assert text(stale).startswith("Error [CONFLICT]: MEMORY.md changed since you read it")
    assert "by thread mcp-" in text(stale)
    assert "first" in text(again) and not retried.is_error
    assert (memory.root / "MEMORY.md").read_text() == "second\n"


def test_a_session_that_never_read_gets_not_read(memory):
    (memory.root / "brand.md").write_text("# Brand\n- Voice: warm\n")  # not a top file: never loaded

    async def script(_, second):
        return await second.call_tool("memory", {"command": "delete", "path": "brand.md"})

    result = drive(serve(memory), script)
    assert result.is_error and result.structured_content["error"]["code"] == "NOT_READ"
    assert result.structured_content["error"]["path"] == "brand.md"
    assert (memory.root / "brand.md").read_text().startswith("# Brand")


def test_expected_version_serves_callers_without_a_session(memory):
    version = version_of((memory.root / "MEMORY.md").read_bytes())

    async def script(client, _):
        return await client.call_tool("memory", {"command": "write", "path": "MEMORY.md", "content": "new\n",
                                                 "expected_version": version})

    assert not drive(serve(memory), script).is_error
    assert (memory.root / "MEMORY.md").read_text() == "new\n"


def test_search_finds_lines(memory):
    (memory.root / "brand.md").write_text("# Brand\n- Voice: warm\n")

    async def script(client, _):
        ranked = await client.call_tool("memory", {"command": "search", "query": "Field Notes"})
        lines = await client.call_tool("memory", {"command": "search", "query": r"Field\s+Notes$", "regex": True})
        return ranked, lines

    ranked, lines = drive(serve(memory), script)
    assert not ranked.is_error and "MEMORY.md" in text(ranked) and "brand.md" not in text(ranked)
    assert [hit["path"] for hit in ranked.structured_content["hits"]] == ["MEMORY.md"]
    assert not lines.is_error
    assert text(lines) == "MEMORY.md:2: - Titles end with | Field Notes"


def test_a_pattern_that_does_not_compile_is_bad_pattern(memory):
    async def script(client, _):
        return await client.call_tool("memory", {"command": "search", "query": "(unclosed", "regex": True})

    result = drive(serve(memory), script)
    assert result.is_error and result.structured_content["error"]["code"] == "BAD_PATTERN"


@pytest.mark.parametrize(("arguments", "code"), [
    ({"command": "read", "path": "../outside.md"}, "BAD_PATH"),
    ({"command": "write", "path": ".fsmem/log.md", "content": "x"}, "BAD_PATH"),
    ({"command": "read", "path": "missing.md"}, "NOT_FOUND"),
    ({"command": "write", "path": "keys.md", "content": "token = abcdefgh12345678\n"}, "SENSITIVE"),
    ({"command": "fly", "path": "MEMORY.md"}, "BAD_REQUEST"),
    ({}, "BAD_REQUEST"),
])
def test_refusals_are_tool_errors_with_their_codes(memory, tmp_path, arguments, code):
    (tmp_path / "outside.md").write_text("outside\n")

    async def script(client, _):
        return await client.call_tool("memory", arguments)

    result = drive(serve(memory), script)
    assert result.is_error
    assert result.structured_content["ok"] is False
    assert result.structured_content["error"]["code"] == code
    assert text(result).startswith(f"Error [{code}]: ")
    assert not (memory.root / "keys.md").exists()


@pytest.mark.parametrize("arguments", [
    {"command": "write", "path": "MEMORY.md", "old_text": "- card 4111 1111\n",
     "new_text": "- card 4111 1111\n1111 1111\n"},
    {"command": "write", "path": "MEMORY.md", "content": "<!-- ... -->\n- card 4111 1111\n1111 1111\n"},
], ids=["old-new-text", "markers"])
def test_a_card_split_across_a_kept_line_and_a_new_one_is_sensitive(memory, arguments):
    before = "# Project\n- card 4111 " + "1111\n"  # half a card: harmless alone
    (memory.root / "MEMORY.md").write_text(before)

    async def script(client, _):
        await client.call_tool("memory", {"command": "read", "path": "MEMORY.md"})
        return await client.call_tool("memory", arguments)

    result = drive(serve(memory), script)
    assert result.is_error and result.structured_content["error"]["code"] == "SENSITIVE", text(result)
    assert "1111 1111" not in text(result)
    assert (memory.root / "MEMORY.md").read_text() == before


def test_a_symlink_out_of_the_root_is_a_bad_path(memory, tmp_path):
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "a.md").write_text("outside\n")
    (memory.root / "link").symlink_to(tmp_path / "outside")

    async def script(client, _):
        return await client.call_tool("memory", {"command": "read", "path": "link/a.md"})

    result = drive(serve(memory), script)
    assert result.is_error and result.structured_content["error"]["code"] == "BAD_PATH"
    assert "outside\n" not in text(result)


def test_an_unknown_tool_is_a_tool_error(memory):
    async def script(client, _):
        return await client.call_tool("remember", {"command": "read", "path": "/"})

    result = drive(serve(memory), script)
    assert result.is_error and text(result) == 'Error [BAD_REQUEST]: there is no tool \'remember\'; the one tool is "memory"'


def test_resources_are_the_scope_top_files_in_load_order(memory):
    memory.create_agent(AGENT, "SEO")
    memory.create_routine(AGENT, ROUTINE, "Meta tags")

    async def script(client, _):
        return (await client.list_resources()).resources

    resources = drive(serve(memory, Scope.routine(AGENT, ROUTINE)), script)
    assert [r.uri for r in resources] == [
        "fsmem:///MEMORY.md",
        "fsmem:///agents/seo-3f9a1c2e/MEMORY.md",
        "fsmem:///agents/seo-3f9a1c2e/routines/meta-tags-9b7d4e10/NOTES.md",
    ]
    assert [r.mime_type for r in resources] == ["text/markdown"] * 3
    assert resources[0].size == len((memory.root / "MEMORY.md").read_bytes())
    assert resources[1].description.startswith("Agent memory")
    assert resources[2].description.startswith("Routine notes")


def test_a_chat_lists_only_the_project_file(memory):
    memory.create_agent(AGENT, "SEO")

    async def script(client, _):
        return (await client.list_resources()).resources

    assert [r.name for r in drive(serve(memory), script)] == ["MEMORY.md"]


def test_reading_a_resource_gives_the_text_and_counts_as_a_read(memory):
    async def script(client, _):
        contents = (await client.read_resource("fsmem:///MEMORY.md")).contents
        written = await client.call_tool("memory", {"command": "write", "path": "MEMORY.md", "content": "x\n"})
        return contents, written

    [content], written = drive(serve(memory), script)
    assert content.text == "# Project\n- Titles end with | Field Notes\n"
    assert content.mime_type == "text/markdown"
    assert content.meta == {"fsmem/version": version_of(content.text.encode())}
    assert not written.is_error


@pytest.mark.parametrize("uri", ["fsmem:///missing.md", "fsmem:///../x.md", "https://example.com/x", "fsmem:///"])
def test_reading_a_bad_resource_is_an_error(memory, uri):
    async def script(client, _):
        with pytest.raises(MCPError) as raised:
            await client.read_resource(uri)
        return raised.value

    assert drive(serve(memory), script).message


def test_resource_uris_round_trip():
    for path in ["MEMORY.md", "agents/seo-3f9a1c2e/MEMORY.md", "notes/café menu.md"]:
        assert path_of_uri(resource_uri(path)) == path
    assert resource_uri("notes/café menu.md") == "fsmem:///notes/caf%C3%A9%20menu.md"


def test_a_bad_scope_serves_the_reason_to_every_call(memory):
    async def script(client, _):
        return client.instructions, await client.call_tool("memory", {"command": "read", "path": "/"})

    instructions, result = drive(build_server(memory, Scope.agent("no-such-agent")), script)
    assert result.is_error and result.structured_content["error"]["code"] == "BAD_SCOPE"
    assert "pass its name in the scope" in text(result) and "cannot serve" in instructions


def test_cli_help_names_the_scope_forms_and_create(tmp_path, memory):
    output = " ".join(CliRunner().invoke(main, ["mcp", "--help"]).output.split())
    assert "agent:ID[:NAME]" in output and "routine:AGENT_ID/ROUTINE_ID[:AGENT_NAME/ROUTINE_NAME]" in output
    assert "--create" in output and "still starts" in output


def test_a_write_over_mcp_is_what_every_other_face_sees(memory):
    claude_memory = pytest.importorskip("fsmem.claude_memory")

    async def script(client, _):
        return await client.call_tool("memory", {"command": "write", "path": "seo/titles.md",
                                                 "content": "# Titles\n- /stories on hold\n"})

    assert not drive(serve(memory), script).is_error
    claude = claude_memory.FsmemMemoryTool(memory)
    assert claude.call({"command": "view", "path": "/memories/seo/titles.md"}).splitlines()[1:] == [
        "     1\t# Titles", "     2\t- /stories on hold", "     3\t"]
    assert memory.run().call({"command": "search", "query": "on hold", "regex": True})["text"] == (
        "seo/titles.md:2: - /stories on hold")
    assert [(entry.command, entry.path, entry.thread[:4]) for entry in memory.log()] == [
        ("write", "seo/titles.md", "mcp-")]


def test_top_files_past_the_cap_are_cut_with_a_pointer_and_not_counted_as_read(memory):
    from fsmem.mcp_server import LOADED_CAP

    long_text = "# Project\n" + "".join(f"- rule {n}: keep titles short and plain\n" for n in range(600))
    (memory.root / "MEMORY.md").write_text(long_text)

    async def script(client, _):
        description = (await client.list_tools()).tools[0].description
        edit = await client.call_tool("memory", {"command": "write", "path": "MEMORY.md",
                                                 "old_text": "- rule 599:", "new_text": "- rule 600:"})
        return client.instructions, description, edit

    instructions, description, edit = drive(serve(memory), script)
    loaded = description[description.index("Memory loaded for this session"):]
    assert len(loaded.encode("utf-8")) <= LOADED_CAP + 400  # the cap counts the copies; plus one intro line
    assert "- rule 0: keep titles short" in loaded and "- rule 599:" not in loaded
    assert "read MEMORY.md with the memory tool (command read) for the rest" in loaded
    assert loaded in instructions
    assert edit.is_error and edit.structured_content["error"]["code"] == "NOT_READ"  # it saw only a part


def test_each_new_session_reads_the_top_files_afresh(memory):
    server = serve(memory)

    async def first():
        async with Client(server) as client:
            before = (await client.list_tools()).tools[0].description
            await client.call_tool("memory", {"command": "write", "path": "MEMORY.md",
                                              "old_text": "| Field Notes", "new_text": "| Field Notes Weekly"})
            during = (await client.list_tools()).tools[0].description  # one session: one snapshot
        async with Client(server) as client:
            return before, during, client.instructions, (await client.list_tools()).tools[0].description

    before, during, instructions, after = anyio.run(first)
    assert "Weekly" not in before and during == before
    assert "- Titles end with | Field Notes Weekly" in instructions and "Field Notes Weekly" in after
