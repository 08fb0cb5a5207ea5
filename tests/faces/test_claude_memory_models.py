"""Claude's memory tool as models use it, driven through the SDK's own command models.

Paths models are trained on (``/memories/notes.txt``, ``/memories/progress.xml``) work; refusals the
SDK's own tool makes are in its words with the path in them; fsmem's own refusals are worded from the
structured data of fsmem's errors (never by re-reading fsmem's text); no input raises anything but the
SDK's ``ToolError``.
"""

from __future__ import annotations

import pytest

pytest.importorskip("anthropic")

from anthropic.lib.tools import ToolError
from anthropic.types.beta import (
    BetaMemoryTool20250818CreateCommand as Create,
)
from anthropic.types.beta import (
    BetaMemoryTool20250818DeleteCommand as Delete,
)
from anthropic.types.beta import (
    BetaMemoryTool20250818InsertCommand as Insert,
)
from anthropic.types.beta import (
    BetaMemoryTool20250818RenameCommand as Rename,
)
from anthropic.types.beta import (
    BetaMemoryTool20250818StrReplaceCommand as StrReplace,
)
from anthropic.types.beta import (
    BetaMemoryTool20250818ViewCommand as View,
)

import fsmem
from fsmem.claude_memory import FsmemMemoryTool


@pytest.fixture
def memory(tmp_path):
    return fsmem.open(tmp_path / "root", create=True)


@pytest.fixture
def tool(memory):
    return FsmemMemoryTool(memory, thread_id="claude-1")


def refusal(tool, command) -> str:
    with pytest.raises(ToolError) as raised:
        tool.execute(command)
    return str(raised.value.content)


def snapshot(root):
    return sorted((p.relative_to(root).as_posix(), p.read_bytes() if p.is_file() else b"")
                  for p in root.rglob("*") if ".fsmem" not in p.parts)


def test_the_paths_models_use_work(memory, tool):
    assert tool.execute(Create(command="create", path="/memories/notes.txt", file_text="- deploy on Fridays\n")) == (
        "File created successfully at: /memories/notes.txt")
    assert tool.execute(Create(command="create", path="/memories/progress.xml",
                               file_text="<progress>\n  <step>outline</step>\n</progress>\n")).startswith("File created")
    assert tool.execute(View(command="view", path="/memories/notes.txt")) == (
        "Here's the content of /memories/notes.txt with line numbers:\n     1\t- deploy on Fridays\n     2\t")
    edited = tool.execute(StrReplace(command="str_replace", path="/memories/progress.xml",
                                     old_str="<step>outline</step>", new_str="<step>draft</step>"))
    assert edited == ("The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
                      "     1\t<progress>\n     2\t  <step>draft</step>\n     3\t</progress>\n     4\t")
    tool.execute(Insert(command="insert", path="/memories/notes.txt", insert_line=1, insert_text="- staging first"))
    assert (memory.root / "notes.txt").read_text() == "- deploy on Fridays\n- staging first\n"
    assert tool.execute(Rename(command="rename", old_path="/memories/notes.txt",
                               new_path="/memories/deploy.txt")) == (
        "Successfully renamed /memories/notes.txt to /memories/deploy.txt")
    assert tool.execute(Delete(command="delete", path="/memories/deploy.txt")) == "Successfully deleted /memories/deploy.txt"
    assert memory.search("draft")[0].path == "progress.xml"


@pytest.mark.parametrize("path", ["/memories/.", "/memories/sub/..", "/memories/./", "/memories/a/./.."])
def test_the_folder_itself_by_dots_is_the_sdks_refusal(memory, tool, path):
    (memory.root / "sub").mkdir()
    before = snapshot(memory.root)
    assert refusal(tool, Delete(command="delete", path=path)) == "Cannot delete the /memories directory itself"
    assert refusal(tool, Rename(command="rename", old_path=path, new_path="/memories/x")) == (
        "Cannot rename the /memories directory itself")
    assert tool.execute(View(command="view", path=path)).startswith(
        f"Here're the files and directories up to 2 levels deep in {path}")
    assert snapshot(memory.root) == before


@pytest.mark.parametrize("path", ["/memories/..", "/memories/../x.md", "/memories/a/../../x.md", "/memories/sub/../../.."])
def test_climbing_out_is_the_sdks_escape_with_the_path(tool, path):
    assert refusal(tool, View(command="view", path=path)) == f"Path {path} would escape /memories directory"
    assert refusal(tool, Create(command="create", path=path, file_text="x")) == (
        f"Path {path} would escape /memories directory")


def test_a_dotted_path_inside_is_resolved_as_the_sdk_does(memory, tool):
    tool.execute(Create(command="create", path="/memories/a/../notes.md", file_text="x\n"))
    assert (memory.root / "notes.md").read_text() == "x\n"


@pytest.mark.parametrize("path, words", [
    ("/memories/a\x00b.md", "contains a control character (U+0000)"),
    ("/memories/a\\b.md", "contains a backslash"),
    ("/memories/a\\g<0>.md", "contains a backslash"),
    ("/memories/\\1.md", "contains a backslash"),
    ("/memories/" + "n" * 300 + ".md", "longer than 255 bytes"),
    ("/memories/.hidden.md", 'name starting with "."'),
])
def test_hostile_paths_are_refused_in_fsmems_words_with_the_path_as_shown(memory, tool, path, words):
    before = snapshot(memory.root)
    for command in (View(command="view", path=path), Create(command="create", path=path, file_text="x"),
                    Delete(command="delete", path=path)):
        message = refusal(tool, command)
        assert words in message and 'Use a path under /memories, like "/memories/notes.md".' in message
        assert message.startswith("Path /memories/") and "\x00" not in message
    assert snapshot(memory.root) == before


def test_a_long_name_the_disk_can_hold_only_as_a_file_never_raises_past_the_tool(memory, tool):
    path = "/memories/" + "n" * 240 + ".md"  # fits a file name; fsmem's temp name beside it may not
    try:
        result = tool.execute(Create(command="create", path=path, file_text="x\n"))
    except ToolError as refused:
        assert "/memories/nnnn" in str(refused.content)
    else:
        assert result == f"File created successfully at: {path}"


def test_fsmems_own_refusals_are_worded_from_its_data(memory, tool):
    (memory.root / "n.txt").write_text("a\n")
    not_viewed = refusal(tool, StrReplace(command="str_replace", path="/memories/n.txt", old_str="a", new_str="b"))
    assert not_viewed == ("The file /memories/n.txt has content you have not viewed in this conversation. Nothing "
                          "was changed: view it first, then make your change with what it holds in mind.")
    tool.execute(View(command="view", path="/memories/n.txt"))
    (memory.root / "n.txt").write_text("a\nby hand\n")
    changed = refusal(tool, Insert(command="insert", path="/memories/n.txt", insert_line=0, insert_text="x"))
    assert changed.startswith("The file /memories/n.txt changed since you viewed it (you saw version ")
    assert "outside fsmem (edited by hand or by another program)" in changed
    other = FsmemMemoryTool(memory, thread_id="claude-2")
    other.execute(View(command="view", path="/memories/n.txt"))
    other.execute(StrReplace(command="str_replace", path="/memories/n.txt", old_str="by hand", new_str="by claude-2"))
    tool.execute(View(command="view", path="/memories/n.txt"))
    other.execute(StrReplace(command="str_replace", path="/memories/n.txt", old_str="claude-2", new_str="two"))
    conflict = refusal(tool, Delete(command="delete", path="/memories/n.txt"))
    assert "changed since you viewed it" in conflict and "by thread claude-2 (write, " in conflict
    secret = refusal(tool, Create(command="create", path="/memories/k.txt", file_text="token = " + "x9" * 20))
    assert "secret" in secret and "x9x9" not in secret
    assert (memory.root / "n.txt").read_text() == "a\nby two\n"


def test_tool_results_and_errors_carry_the_data_faces_word(memory):
    run = memory.run(thread_id="t-1")
    written = run.call({"command": "write", "path": "n.md", "content": "a\nb\n"})
    assert (written["content"], written["lines"], written["line"]) == ("a\nb\n", 2, 1)
    read = run.call({"command": "read", "path": "n.md", "start_line": 2})
    assert (read["content"], read["lines"], read["version"]) == ("a\nb\n", 2, written["version"])
    other = memory.run(thread_id="t-2")
    other.call({"command": "read", "path": "n.md"})
    changed = other.call({"command": "write", "path": "n.md", "old_text": "b", "new_text": "c"})
    conflict = run.call({"command": "delete", "path": "n.md"})["error"]
    assert conflict["code"] == "CONFLICT" and conflict["path"] == "n.md"
    assert conflict["seen_version"] == written["version"] and conflict["current_version"] == changed["version"]
    assert conflict["changed_by"]["thread"] == "t-2" and conflict["changed_by"]["command"] == "write"
    (memory.root / "m.md").write_text("x\n")
    not_read = memory.run().call({"command": "delete", "path": "m.md"})["error"]
    assert (not_read["code"], not_read["path"]) == ("NOT_READ", "m.md")
