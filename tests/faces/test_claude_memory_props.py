"""Property: on any file, fsmem's Claude tool answers and edits exactly as the SDK's own tool does.

Both tools get the same calls on the same content, each in its own folder; their results (or error
texts) and the bytes left on disk must be equal. Contents that fsmem refuses by its own rules (a
secret) are left out: there the texts differ on purpose.
"""

from __future__ import annotations

import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

pytest.importorskip("anthropic")

from anthropic.lib.tools import ToolError  # noqa: E402
from anthropic.lib.tools._beta_builtin_memory_tool import BetaLocalFilesystemMemoryTool  # noqa: E402

from fsmem.claude_memory import FsmemMemoryTool  # noqa: E402
from fsmem._core.secrets import find_secret  # noqa: E402

LINE = st.text(alphabet="ab x#-<!>", max_size=10)
CONTENT = st.lists(LINE, max_size=8).map("\n".join).flatmap(
    lambda body: st.sampled_from([body, body + "\n"]))


def outcome(tool, tool_input):
    try:
        return ("ok", tool.call(tool_input))
    except ToolError as raised:
        return ("error", raised.content)


@contextmanager
def pair():
    with tempfile.TemporaryDirectory(prefix="fsmem-props-") as name:
        folder = Path(name)
        sdk = BetaLocalFilesystemMemoryTool(str(folder / "sdk"))
        ours = FsmemMemoryTool(folder / "ours")
        (folder / "ours" / "MEMORY.md").unlink()  # the SDK's folder starts empty
        yield folder, sdk, ours


def same(sdk, ours, folder, tool_input):
    expected, got = outcome(sdk, tool_input), outcome(ours, tool_input)
    assert got == expected, tool_input
    on_disk = {p.relative_to(folder / "sdk" / "memories").as_posix(): p.read_bytes()
               for p in (folder / "sdk" / "memories").rglob("*") if p.is_file()}
    ours_on_disk = {p.relative_to(folder / "ours").as_posix(): p.read_bytes()
                    for p in (folder / "ours").rglob("*") if p.is_file() and ".fsmem" not in p.parts}
    assert ours_on_disk == on_disk
    return got


PROPS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(content=CONTENT, line=st.integers(-1, 10), text=LINE, view=st.lists(st.integers(-1, 10), min_size=2,
                                                                              max_size=2))
def test_create_view_insert_match_the_sdk(content, line, text, view):
    assume(find_secret(content + "\n" + text) is None)
    with pair() as (folder, sdk, ours):
        path = "/memories/n.md"
        same(sdk, ours, folder, {"command": "create", "path": path, "file_text": content})
        same(sdk, ours, folder, {"command": "view", "path": path})
        same(sdk, ours, folder, {"command": "view", "path": path, "view_range": view})
        same(sdk, ours, folder, {"command": "insert", "path": path, "insert_line": line, "insert_text": text})
        same(sdk, ours, folder, {"command": "view", "path": path})


@PROPS
@given(content=CONTENT, start=st.integers(0, 60), length=st.integers(0, 8), new=LINE)
def test_str_replace_matches_the_sdk(content, start, length, new):
    old = content[start:start + length] or "absent"
    # fsmem counts overlapping occurrences ("aa" twice in "aaa") and refuses them as ambiguous, where
    # the SDK counts with str.count and replaces the first: a difference on purpose, tested apart.
    assume(content.count(old) == _overlapping(content, old))
    assume(find_secret(content + "\n" + new) is None and find_secret(old) is None)
    after = content.replace(old, new, 1)
    assume(find_secret(after) is None)
    with pair() as (folder, sdk, ours):
        path = "/memories/n.md"
        same(sdk, ours, folder, {"command": "create", "path": path, "file_text": content})
        same(sdk, ours, folder, {"command": "view", "path": path})
        same(sdk, ours, folder, {"command": "str_replace", "path": path, "old_str": old, "new_str": new})


def _overlapping(text: str, part: str) -> int:
    return sum(1 for i in range(len(text)) if text.startswith(part, i))


def test_overlapping_occurrences_are_ambiguous_for_fsmem():
    with pair() as (folder, sdk, ours):
        for tool in (sdk, ours):
            tool.call({"command": "create", "path": "/memories/n.md", "file_text": "aaa\n"})
            tool.call({"command": "view", "path": "/memories/n.md"})
        call = {"command": "str_replace", "path": "/memories/n.md", "old_str": "aa", "new_str": "b"}
        assert outcome(sdk, call) == ("ok", "The memory file has been edited. Here is the snippet showing "
                                            "the change (with line numbers):\n     1\tba\n     2\t")
        assert outcome(ours, call) == ("error", "No replacement was performed. Multiple occurrences of old_str "
                                                "`aa` in lines: 1, 1. Please ensure it is unique")
        assert (folder / "ours" / "n.md").read_text() == "aaa\n"
