"""One regex search: the tool, ``Memory.search(regex=True)`` and ``fsmem search --regex`` give the same
hits, through the same walk as the index (regular memory files only)."""

from __future__ import annotations

from pathlib import Path

import pytest

import fsmem
from tests.conftest import invoke, write


@pytest.fixture
def memory(tmp_path: Path) -> fsmem.Memory:
    memory = fsmem.open(tmp_path / "root", create=True)
    write(memory.root, "MEMORY.md", "# Project\n\nWe deploy to staging every Friday.\nDeploy notes below.\n")
    write(memory.root, "seo/titles.md", "# Titles\n\nDeploy titles under 60 characters.\n")
    write(memory.root, "seo/logo.svg.png", "Deploy: not a memory file (an image name).\n")
    return memory


def test_the_tool_the_library_and_the_shell_share_one_regex_search(memory: fsmem.Memory) -> None:
    found = memory.search("[Dd]eploy", regex=True, include="**", limit=10)
    assert [(hit.path, hit.line, hit.text) for hit in found] == [
        ("MEMORY.md", 3, "We deploy to staging every Friday."), ("MEMORY.md", 4, "Deploy notes below."),
        ("seo/titles.md", 3, "Deploy titles under 60 characters.")]
    result = memory.run().call({"command": "search", "query": "[Dd]eploy", "regex": True})
    assert result["hits"] == [hit.to_dict() for hit in found]
    shell = invoke(memory.root, "search", "--regex", "[Dd]eploy")
    assert shell.exit_code == 0 and shell.output == result["text"] + "\n"
    assert result["text"].splitlines()[0] == "MEMORY.md:3: We deploy to staging every Friday."


def test_no_match_reads_the_same_everywhere(memory: fsmem.Memory) -> None:
    result = memory.run().call({"command": "search", "query": "zebra+", "regex": True})
    assert result["text"] == "No matches for 'zebra+'."
    assert invoke(memory.root, "search", "--regex", "zebra+").output == "No matches for 'zebra+'.\n"


def test_the_shell_search_reads_the_root_s_settings(memory: fsmem.Memory) -> None:
    (memory.root / ".fsmem" / "config.toml").write_text("no_such_setting = 1\n", encoding="utf-8")
    result = invoke(memory.root, "search", "deploy")
    assert result.exit_code != 0 and "no_such_setting" in result.output


def test_a_regex_search_loads_no_tantivy(tmp_path):
    """Regex mode reads the files themselves: the index (and tantivy) is not loaded for it."""
    import subprocess
    import sys

    from tests.conftest import REPO

    code = (
        "import sys, fsmem\nfrom fsmem._env.config import Settings\n"
        "m = fsmem.open(sys.argv[1], create=True, settings=Settings(watch=False))\n"
        "m.run().call({'command': 'write', 'path': 'a.md', 'content': 'deploy on friday\\n'})\n"
        "print([h.path for h in m.search('depl.y', regex=True)], 'tantivy' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "r")], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["['a.md']", "False"]
