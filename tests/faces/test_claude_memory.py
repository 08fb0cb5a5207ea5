"""Claude's memory tool backed by fsmem, driven through the SDK's own entry point (``tool.call``).

The expected texts are those of the SDK's ``BetaLocalFilesystemMemoryTool``; a test below runs the
same calls through both tools and compares, so a drift in the SDK shows up here.
"""

from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("anthropic")

from anthropic.lib.tools import ToolError  # noqa: E402
from anthropic.lib.tools._beta_builtin_memory_tool import BetaLocalFilesystemMemoryTool  # noqa: E402

import fsmem  # noqa: E402
from fsmem import Scope  # noqa: E402
from fsmem.claude_memory import FsmemMemoryTool  # noqa: E402
from fsmem._core.versions import version_of  # noqa: E402


@pytest.fixture
def memory(tmp_path):
    return fsmem.open(tmp_path / "root", create=True)


@pytest.fixture
def tool(memory):
    return FsmemMemoryTool(memory, thread_id="claude-1")


def call(tool, **tool_input):
    """One call exactly as the SDK's tool runner makes it."""
    return tool.call(tool_input)


def error(tool, **tool_input) -> str:
    with pytest.raises(ToolError) as raised:
        tool.call(tool_input)
    assert isinstance(raised.value.content, str)
    return raised.value.content


def log_lines(memory):
    path = memory.root / ".fsmem" / "log.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


# ---- view -----------------------------------------------------------------------------------


def test_view_of_a_file_numbers_its_lines_like_the_sdk(memory, tool):
    (memory.root / "notes.md").write_text("# Notes\n- tea, not coffee\n")
    assert call(tool, command="view", path="/memories/notes.md") == (
        "Here's the content of /memories/notes.md with line numbers:\n"
        "     1\t# Notes\n"
        "     2\t- tea, not coffee\n"
        "     3\t"
    )


def test_view_range_shows_only_those_lines_and_minus_one_means_to_the_end(memory, tool):
    (memory.root / "n.md").write_text("a\nb\nc\nd\n")
    assert call(tool, command="view", path="/memories/n.md", view_range=[2, 3]) == (
        "Here's the content of /memories/n.md with line numbers:\n     2\tb\n     3\tc"
    )
    assert call(tool, command="view", path="/memories/n.md", view_range=[3, -1]).splitlines()[1:] == [
        "     3\tc", "     4\td", "     5\t"]


def test_view_of_the_root_lists_two_levels_without_hidden_items(memory, tool):
    memory.create_agent("3f9a1c2e-0001", "SEO")
    (memory.root / "seo").mkdir()
    (memory.root / "seo" / "titles.md").write_text("x" * 1536)
    (memory.root / "seo" / "deep").mkdir()
    (memory.root / "seo" / "deep" / "hidden-by-depth.md").write_text("x")
    folder_size = os.stat(memory.root).st_size
    listing = call(tool, command="view", path="/memories")
    lines = listing.splitlines()
    assert lines[0] == "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:"
    assert lines[1].endswith("\t/memories") and lines[1].startswith(_sdk_size(folder_size))
    paths = [line.split("\t")[1] for line in lines[1:]]
    assert paths == ["/memories", "/memories/MEMORY.md", "/memories/agents/", "/memories/agents/seo-3f9a1c2e/",
                     "/memories/seo/", "/memories/seo/deep/", "/memories/seo/titles.md"]
    assert "1.5K\t/memories/seo/titles.md" in lines
    assert "0B\t/memories/MEMORY.md" in lines
    assert ".fsmem" not in listing


def test_view_of_a_missing_path(tool):
    assert error(tool, command="view", path="/memories/nope.md") == (
        "The path /memories/nope.md does not exist. Please provide a valid path.")


def test_view_marks_the_version_as_seen(memory, tool):
    (memory.root / "n.md").write_text("a\n")
    call(tool, command="view", path="/memories/n.md")
    assert tool.run.seen == {"n.md": version_of(b"a\n")}


# ---- create ---------------------------------------------------------------------------------


def test_create_writes_the_text_as_is_even_with_marker_lines(memory, tool):
    text = "# Notes\n<!-- keep this comment -->\n- a\n"
    assert call(tool, command="create", path="/memories/topics/notes.md", file_text=text) == (
        "File created successfully at: /memories/topics/notes.md")
    assert (memory.root / "topics" / "notes.md").read_text() == text
    assert [entry["command"] for entry in log_lines(memory)] == ["write"]
    assert log_lines(memory)[0]["thread"] == "claude-1"


def test_create_never_overwrites(memory, tool):
    (memory.root / "n.md").write_text("mine\n")
    assert error(tool, command="create", path="/memories/n.md", file_text="theirs\n") == (
        "File /memories/n.md already exists")
    assert (memory.root / "n.md").read_text() == "mine\n"


def test_create_over_a_folder_is_refused_as_existing(memory, tool):
    (memory.root / "seo.md").mkdir()
    assert error(tool, command="create", path="/memories/seo.md", file_text="x") == (
        "File /memories/seo.md already exists")


def test_create_refuses_a_secret_without_repeating_it(memory, tool):
    secret = "sk-" + "a1b2c3d4" * 4
    message = error(tool, command="create", path="/memories/keys.md", file_text=f"openai: {secret}\n")
    assert "secret" in message and secret not in message
    assert not (memory.root / "keys.md").exists()


def test_create_of_a_file_that_is_not_text_is_refused(memory, tool):
    message = error(tool, command="create", path="/memories/photo.png", file_text="x")
    assert message.startswith('Path /memories/photo.png is not a memory file')
    assert not (memory.root / "photo.png").exists()


def test_create_in_fsmem_state_is_refused(memory, tool):
    message = error(tool, command="create", path="/memories/.fsmem/x.md", file_text="x")
    assert 'name starting with "."' in message and 'Use a path under /memories' in message
    assert not (memory.root / ".fsmem" / "x.md").exists()


# ---- str_replace ----------------------------------------------------------------------------


def test_str_replace_shows_the_sdk_snippet(memory, tool):
    (memory.root / "n.md").write_text("1\n2\n3\n4 old\n5\n6\n7\n")
    call(tool, command="view", path="/memories/n.md")
    assert call(tool, command="str_replace", path="/memories/n.md", old_str="4 old", new_str="4 new") == (
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
        "     2\t2\n     3\t3\n     4\t4 new\n     5\t5\n     6\t6"
    )
    assert (memory.root / "n.md").read_text() == "1\n2\n3\n4 new\n5\n6\n7\n"


def test_str_replace_of_text_not_in_the_file(memory, tool):
    (memory.root / "n.md").write_text("a\n")
    call(tool, command="view", path="/memories/n.md")
    assert error(tool, command="str_replace", path="/memories/n.md", old_str="zzz", new_str="y") == (
        "No replacement was performed, old_str `zzz` did not appear verbatim in /memories/n.md.")


def test_str_replace_of_text_that_occurs_twice_names_the_lines(memory, tool):
    (memory.root / "n.md").write_text("- a\nb\n- c\n")
    call(tool, command="view", path="/memories/n.md")
    assert error(tool, command="str_replace", path="/memories/n.md", old_str="- ", new_str="* ") == (
        "No replacement was performed. Multiple occurrences of old_str `- ` in lines: 1, 3. "
        "Please ensure it is unique")
    assert (memory.root / "n.md").read_text() == "- a\nb\n- c\n"


def test_str_replace_on_a_missing_file_and_on_a_folder(memory, tool):
    (memory.root / "seo").mkdir()
    assert error(tool, command="str_replace", path="/memories/x.md", old_str="a", new_str="b") == (
        "The path /memories/x.md does not exist. Please provide a valid path.")
    assert error(tool, command="str_replace", path="/memories/seo", old_str="a", new_str="b") == (
        "The path /memories/seo is not a file.")


def test_str_replace_without_a_view_is_refused_by_the_read_version_rule(memory, tool):
    (memory.root / "n.md").write_text("a\n")
    message = error(tool, command="str_replace", path="/memories/n.md", old_str="a", new_str="b")
    assert message == ("The file /memories/n.md has content you have not viewed in this conversation. Nothing "
                       "was changed: view it first, then make your change with what it holds in mind.")
    assert (memory.root / "n.md").read_text() == "a\n"


def test_str_replace_after_another_conversation_changed_the_file_is_a_conflict(memory, tool):
    (memory.root / "n.md").write_text("a\n")
    other = FsmemMemoryTool(memory, thread_id="claude-2")
    call(tool, command="view", path="/memories/n.md")
    call(other, command="view", path="/memories/n.md")
    call(other, command="str_replace", path="/memories/n.md", old_str="a", new_str="b")
    message = error(tool, command="str_replace", path="/memories/n.md", old_str="b", new_str="c")
    assert message.startswith("The file /memories/n.md changed since you viewed it (you saw version ")
    assert "by thread claude-2 (write, " in message and "view it again" in message
    assert (memory.root / "n.md").read_text() == "b\n"


def test_str_replace_never_echoes_a_secret_it_was_given(memory, tool):
    (memory.root / "n.md").write_text("a\n")
    call(tool, command="view", path="/memories/n.md")
    secret = "ghp_" + "x9y8z7w6" * 3
    message = error(tool, command="str_replace", path="/memories/n.md", old_str=secret, new_str="b")
    assert secret not in message and message.startswith("No replacement was performed, old_str did not appear")


# ---- insert ---------------------------------------------------------------------------------


def test_insert_after_line_n_and_zero_means_the_top(memory, tool):
    (memory.root / "n.md").write_text("a\n<!-- a comment -->\nb\n")
    call(tool, command="view", path="/memories/n.md")
    assert call(tool, command="insert", path="/memories/n.md", insert_line=0, insert_text="top\n") == (
        "The file /memories/n.md has been edited.")
    assert call(tool, command="insert", path="/memories/n.md", insert_line=4, insert_text="end") == (
        "The file /memories/n.md has been edited.")
    assert call(tool, command="insert", path="/memories/n.md", insert_line=2, insert_text="after a") == (
        "The file /memories/n.md has been edited.")
    assert (memory.root / "n.md").read_text() == "top\na\nafter a\n<!-- a comment -->\nb\nend\n"


def test_insert_out_of_range(memory, tool):
    (memory.root / "n.md").write_text("a\nb\n")
    call(tool, command="view", path="/memories/n.md")
    assert error(tool, command="insert", path="/memories/n.md", insert_line=3, insert_text="x") == (
        "Invalid `insert_line` parameter: 3. It should be within the range [0, 2].")
    assert error(tool, command="insert", path="/memories/n.md", insert_line=-1, insert_text="x") == (
        "Invalid `insert_line` parameter: -1. It should be within the range [0, 2].")


def test_insert_into_an_empty_top_file_needs_no_view(memory, tool):
    assert call(tool, command="insert", path="/memories/MEMORY.md", insert_line=0, insert_text="- rule") == (
        "The file /memories/MEMORY.md has been edited.")
    assert (memory.root / "MEMORY.md").read_text() == "- rule\n"


def test_insert_without_a_view_and_after_a_change_by_hand(memory, tool):
    (memory.root / "n.md").write_text("a\n")
    assert "you have not viewed" in error(tool, command="insert", path="/memories/n.md", insert_line=0,
                                          insert_text="x")
    call(tool, command="view", path="/memories/n.md")
    (memory.root / "n.md").write_text("a\nby hand\n")
    message = error(tool, command="insert", path="/memories/n.md", insert_line=0, insert_text="x")
    assert message.startswith("The file /memories/n.md changed since you viewed it (you saw version ")
    assert (memory.root / "n.md").read_text() == "a\nby hand\n"


def test_insert_on_a_missing_file(tool):
    assert error(tool, command="insert", path="/memories/x.md", insert_line=0, insert_text="x") == (
        "The path /memories/x.md does not exist. Please provide a valid path.")


def test_insert_and_str_replace_refuse_a_secret_split_across_a_kept_line_and_a_new_one(memory, tool):
    card_head, key_head = "- card 4111 " + "1111", "- deploy key sk-" + "proj-Zq8xW2"  # harmless alone
    before = f"{card_head}\n{key_head}\n- last\n"
    (memory.root / "n.md").write_text(before)
    call(tool, command="view", path="/memories/n.md")
    for tool_input in (
        {"command": "insert", "path": "/memories/n.md", "insert_line": 1, "insert_text": "1111 " + "1111"},
        {"command": "insert", "path": "/memories/n.md", "insert_line": 2, "insert_text": "mN4pL7" + "rT9v"},
        {"command": "str_replace", "path": "/memories/n.md", "old_str": f"{key_head}\n",
         "new_str": f"{key_head}\nmN4pL7" + "rT9v\n"},
    ):
        message = error(tool, **tool_input)
        assert "secret" in message and "rT9v" not in message and "1111 1111" not in message, message
    assert (memory.root / "n.md").read_text() == before


# ---- delete ---------------------------------------------------------------------------------


def test_delete_keeps_the_content_in_versions(memory, tool):
    (memory.root / "n.md").write_text("a\n")
    call(tool, command="view", path="/memories/n.md")
    assert call(tool, command="delete", path="/memories/n.md") == "Successfully deleted /memories/n.md"
    assert not (memory.root / "n.md").exists()
    assert [v.version for v in memory.versions("n.md")] == [version_of(b"a\n")]


def test_delete_a_folder(memory, tool):
    (memory.root / "old").mkdir()
    (memory.root / "old" / "a.md").write_text("")
    assert call(tool, command="delete", path="/memories/old") == "Successfully deleted /memories/old"
    assert not (memory.root / "old").exists()


def test_delete_of_a_top_file_empties_it(memory, tool):
    (memory.root / "MEMORY.md").write_text("- rule\n")
    call(tool, command="view", path="/memories/MEMORY.md")
    assert call(tool, command="delete", path="/memories/MEMORY.md") == (
        "/memories/MEMORY.md is a top memory file, loaded in every conversation of its level, so it was "
        "emptied instead of deleted.")
    assert (memory.root / "MEMORY.md").read_text() == ""


def test_delete_errors(memory, tool):
    memory.create_agent("3f9a1c2e-0001", "SEO")
    assert error(tool, command="delete", path="/memories/nope.md") == "The path /memories/nope.md does not exist"
    assert error(tool, command="delete", path="/memories") == "Cannot delete the /memories directory itself"
    message = error(tool, command="delete", path="/memories/agents/seo-3f9a1c2e")
    assert "level folder" in message and (memory.root / "agents" / "seo-3f9a1c2e").is_dir()


# ---- rename ---------------------------------------------------------------------------------


def test_rename_moves_the_file_into_new_folders(memory, tool):
    (memory.root / "n.md").write_text("a\n")
    call(tool, command="view", path="/memories/n.md")
    assert call(tool, command="rename", old_path="/memories/n.md", new_path="/memories/topics/m.md") == (
        "Successfully renamed /memories/n.md to /memories/topics/m.md")
    assert (memory.root / "topics" / "m.md").read_text() == "a\n"
    assert tool.run.seen == {"topics/m.md": version_of(b"a\n")}


def test_rename_never_overwrites(memory, tool):
    (memory.root / "a.md").write_text("a\n")
    (memory.root / "b.md").write_text("b\n")
    call(tool, command="view", path="/memories/a.md")
    assert error(tool, command="rename", old_path="/memories/a.md", new_path="/memories/b.md") == (
        "The destination /memories/b.md already exists")
    assert (memory.root / "a.md").read_text() == "a\n" and (memory.root / "b.md").read_text() == "b\n"


def test_rename_errors(memory, tool):
    assert error(tool, command="rename", old_path="/memories/nope.md", new_path="/memories/x.md") == (
        "The path /memories/nope.md does not exist")
    assert error(tool, command="rename", old_path="/memories", new_path="/memories/x") == (
        "Cannot rename the /memories directory itself")
    message = error(tool, command="rename", old_path="/memories/MEMORY.md", new_path="/memories/x.md")
    assert "top file" in message


# ---- paths ----------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [
    {"command": "view", "path": "/memories/../secret.md"},
    {"command": "create", "path": "/memories/a/../../secret.md", "file_text": "x"},
    {"command": "str_replace", "path": "/memories/../secret.md", "old_str": "a", "new_str": "b"},
    {"command": "insert", "path": "/memories/../secret.md", "insert_line": 0, "insert_text": "x"},
    {"command": "delete", "path": "/memories/../secret.md"},
])
def test_path_traversal_is_refused_with_the_sdk_text(tmp_path, tool, command):
    (tmp_path / "secret.md").write_text("outside\n")
    with pytest.raises(ToolError) as raised:
        tool.call(command)
    assert raised.value.content == f"Path {command['path']} would escape /memories directory"
    assert (tmp_path / "secret.md").read_text() == "outside\n"


def test_rename_out_of_the_root_is_refused(tmp_path, memory, tool):
    (memory.root / "a.md").write_text("")
    assert error(tool, command="rename", old_path="/memories/a.md", new_path="/memories/../a.md") == (
        "Path /memories/../a.md would escape /memories directory")
    assert (memory.root / "a.md").exists() and not (tmp_path / "a.md").exists()


def test_paths_outside_memories_are_refused(tool):
    assert error(tool, command="view", path="/etc/passwd") == "Path must start with /memories, got: /etc/passwd"
    assert error(tool, command="view", path="/memoriesX/a.md") == (
        "Path must start with /memories, got: /memoriesX/a.md")


def test_a_symlink_out_of_the_root_is_refused_for_every_command(tmp_path, memory, tool):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.md").write_text("outside\n")
    os.symlink(outside, memory.root / "link")
    os.symlink(outside / "a.md", memory.root / "file-link.md")
    escape = "Path would escape /memories directory via symlink"
    assert error(tool, command="view", path="/memories/link/a.md") == escape
    assert error(tool, command="view", path="/memories/file-link.md") == escape
    assert error(tool, command="create", path="/memories/link/new.md", file_text="x") == escape
    assert error(tool, command="str_replace", path="/memories/file-link.md", old_str="o", new_str="x") == escape
    assert error(tool, command="insert", path="/memories/link/a.md", insert_line=0, insert_text="x") == escape
    assert error(tool, command="delete", path="/memories/link") == escape
    assert error(tool, command="rename", old_path="/memories/link/a.md", new_path="/memories/b.md") == escape
    assert (outside / "a.md").read_text() == "outside\n" and not (outside / "new.md").exists()
    assert "link" not in call(tool, command="view", path="/memories")


def test_a_missing_parameter_is_a_tool_error(tool):
    assert error(tool, command="view") == "The `path` parameter is missing or is not a string."
    assert error(tool, command="insert", path="/memories/MEMORY.md", insert_text="x") == (
        "The `insert_line` parameter is missing or is not an integer.")


# ---- one set of rules -----------------------------------------------------------------------


def test_changes_are_logged_versioned_and_seen_by_fsmem_runs(memory, tool):
    call(tool, command="create", path="/memories/rules.md", file_text="- a\n")
    call(tool, command="str_replace", path="/memories/rules.md", old_str="- a", new_str="- b")
    assert [(e["command"], e["path"]) for e in log_lines(memory)] == [("write", "rules.md"), ("write", "rules.md")]
    assert [v.version for v in memory.versions("rules.md")] == [version_of(b"- a\n")]
    read = memory.run(Scope.chat()).call({"command": "read", "path": "rules.md"})
    assert read["version"] == version_of(b"- b\n")


def test_a_shared_run_counts_context_injection_as_a_view(memory):
    (memory.root / "MEMORY.md").write_text("- rule\n")
    run = memory.run(Scope.chat(), thread_id="t")
    run.mark_seen("MEMORY.md", version_of(b"- rule\n"))
    tool = FsmemMemoryTool(run=run)
    call(tool, command="str_replace", path="/memories/MEMORY.md", old_str="- rule", new_str="- rule 2")
    assert (memory.root / "MEMORY.md").read_text() == "- rule 2\n"


def test_a_folder_becomes_a_root(tmp_path):
    tool = FsmemMemoryTool(tmp_path / "fresh")
    assert (tmp_path / "fresh" / ".fsmem").is_dir()
    assert call(tool, command="create", path="/memories/a.md", file_text="x\n").startswith("File created")
    [entry] = fsmem.open(tmp_path / "fresh").log()
    assert entry.thread.startswith("claude-") and len(entry.thread) == len("claude-") + 8
    with pytest.raises(fsmem._errors.RootNotFound):
        FsmemMemoryTool(tmp_path / "other", create=False)


def test_to_dict_is_the_builtin_memory_tool(tool):
    assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}
    assert tool.name == "memory"


# ---- the same texts as the SDK's own local-filesystem tool ------------------------------------


def test_texts_match_the_sdk_local_filesystem_tool(tmp_path):
    """The same calls on the SDK's tool and on fsmem's give the same results and errors."""
    sdk = BetaLocalFilesystemMemoryTool(str(tmp_path / "sdk"))
    ours = FsmemMemoryTool(tmp_path / "ours")
    (tmp_path / "ours" / "MEMORY.md").unlink()  # the SDK's folder starts empty
    calls = [
        {"command": "create", "path": "/memories/n.md", "file_text": "one\ntwo\nthree\nfour\nfive\nsix\n"},
        {"command": "create", "path": "/memories/n.md", "file_text": "again"},
        {"command": "view", "path": "/memories/n.md"},
        {"command": "view", "path": "/memories/n.md", "view_range": [2, 4]},
        {"command": "view", "path": "/memories/missing.md"},
        {"command": "str_replace", "path": "/memories/n.md", "old_str": "four", "new_str": "4"},
        {"command": "str_replace", "path": "/memories/n.md", "old_str": "o", "new_str": "0"},
        {"command": "str_replace", "path": "/memories/n.md", "old_str": "seven", "new_str": "7"},
        {"command": "insert", "path": "/memories/n.md", "insert_line": 2, "insert_text": "2.5\n"},
        {"command": "insert", "path": "/memories/n.md", "insert_line": 99, "insert_text": "x"},
        {"command": "view", "path": "/memories/n.md"},
        {"command": "rename", "old_path": "/memories/n.md", "new_path": "/memories/sub/m.md"},
        {"command": "create", "path": "/memories/o.md", "file_text": "o\n"},
        {"command": "rename", "old_path": "/memories/o.md", "new_path": "/memories/sub/m.md"},
        {"command": "rename", "old_path": "/memories/gone.md", "new_path": "/memories/x.md"},
        {"command": "delete", "path": "/memories/sub/m.md"},
        {"command": "delete", "path": "/memories/sub/m.md"},
        {"command": "delete", "path": "/memories"},
        {"command": "view", "path": "/memories/../x.md"},
        {"command": "view", "path": "/elsewhere"},
    ]
    for tool_input in calls:
        assert _outcome(ours, tool_input) == _outcome(sdk, tool_input), tool_input
    for tool in (sdk, ours):
        tool.call({"command": "create", "path": "/memories/a/b/c/deep.md", "file_text": "deep\n"})
        tool.call({"command": "create", "path": "/memories/a/top.md", "file_text": "x" * 2000})
    listings = [_without_folder_sizes(tool.call({"command": "view", "path": "/memories/a"})) for tool in (sdk, ours)]
    assert listings[0] == listings[1]
    assert listings[1].splitlines()[1:] == ["-\t/memories/a", "-\t/memories/a/b/", "-\t/memories/a/b/c/",
                                            "2.0K\t/memories/a/top.md"]


def _without_folder_sizes(listing: str) -> str:
    """Folder sizes are the file system's (and ours holds .fsmem/), so only file sizes are compared."""
    lines = listing.splitlines()
    return "\n".join(lines[:1] + [("-\t" + line.split("\t")[1]) if line.endswith("/") or line.endswith("/a")
                                   else line for line in lines[1:]])


def _outcome(tool, tool_input):
    try:
        return ("ok", tool.call(tool_input))
    except ToolError as raised:
        return ("error", raised.content)


def _sdk_size(size: int) -> str:
    from anthropic.lib.tools._beta_builtin_memory_tool import _format_file_size

    return _format_file_size(size)


def test_a_review_run_holds_a_replacement_for_a_person(memory):
    (memory.root / "MEMORY.md").write_text("- a\n")
    tool = FsmemMemoryTool(run=memory.run(Scope.chat(), thread_id="reviewer", review=True))
    call(tool, command="view", path="/memories/MEMORY.md")
    added = call(tool, command="insert", path="/memories/MEMORY.md", insert_line=1, insert_text="- b")
    assert added == "The file /memories/MEMORY.md has been edited."
    held = call(tool, command="str_replace", path="/memories/MEMORY.md", old_str="- a", new_str="- z")
    assert held.startswith("Proposed ") and "nothing changed yet" in held
    assert (memory.root / "MEMORY.md").read_text() == "- a\n- b\n"
    [proposal] = memory.proposals()
    memory.approve(proposal.id)
    assert (memory.root / "MEMORY.md").read_text() == "- z\n- b\n"


def test_concurrent_conversations_lose_no_insert(memory):
    """Eight conversations add lines at once; each retries after a conflict; every line lands."""
    import threading

    def conversation(number: int) -> None:
        tool = FsmemMemoryTool(memory, thread_id=f"c{number}")
        for item in range(5):
            while True:
                tool.call({"command": "view", "path": "/memories/MEMORY.md"})
                try:
                    tool.call({"command": "insert", "path": "/memories/MEMORY.md", "insert_line": 0,
                               "insert_text": f"- c{number} item {item}"})
                    break
                except ToolError as refused:
                    assert "changed since you viewed it" in refused.content, refused.content

    threads = [threading.Thread(target=conversation, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = (memory.root / "MEMORY.md").read_text().splitlines()
    assert sorted(lines) == sorted(f"- c{n} item {i}" for n in range(8) for i in range(5))


def test_a_database_url_is_not_taken_for_a_folder(tmp_path, monkeypatch) -> None:
    """A ``postgresql://`` URL names a database of many projects, never a folder to make."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TypeError, match="fsmem.open"):
        FsmemMemoryTool("postgresql://fsmem@db.internal/fsmem")
    assert list(tmp_path.iterdir()) == []
