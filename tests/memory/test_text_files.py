"""Plain-text files (``.txt``, ``.xml``, ``.json``, ``.yaml``, ``.csv``, ...) are memory files everywhere:
the tool, the index, versions and the shell. Top files stay ``MEMORY.md`` / ``NOTES.md``; binary
content stays refused."""

from __future__ import annotations

import json

import pytest

import fsmem
from fsmem import Scope
from tests.conftest import invoke, run_fsmem, write

TEXT_FILES = {
    "notes.txt": "Deploys happen on Fridays.\n",
    "progress.xml": "<progress><step done=\"true\">outline</step></progress>\n",
    "seo/data.json": "{\"titles\": \"under 60 characters\"}\n",
    "config.yaml": "voice: warm\n",
    "config.yml": "tone: plain\n",
    "tables/prices.csv": "plan,price\nbasic,9\n",
    "pyproject.toml": "[tool]\nname = \"x\"\n",
}


@pytest.fixture
def memory(tmp_path):
    return fsmem.open(tmp_path / "root", create=True)


@pytest.mark.parametrize("path", sorted(TEXT_FILES))
def test_the_tool_writes_reads_renames_and_deletes_text_files(memory, path):
    run = memory.run(Scope.chat(), thread_id="t-1")
    written = run.call({"command": "write", "path": path, "content": TEXT_FILES[path]})
    assert written["ok"], written["text"]
    read = run.call({"command": "read", "path": path})
    assert read["ok"] and read["content"] == TEXT_FILES[path] and read["lines"] == TEXT_FILES[path].count("\n")
    edited = run.call({"command": "write", "path": path, "content": TEXT_FILES[path] + "more\n"})
    assert edited["ok"], edited["text"]
    stem, dot, suffix = path.rpartition(".")
    moved = run.call({"command": "rename", "path": path, "new_path": f"{stem}-old{dot}{suffix}"})
    assert moved["ok"], moved["text"]
    deleted = run.call({"command": "delete", "path": f"{stem}-old{dot}{suffix}"})
    assert deleted["ok"] and deleted["held"] == {f"{stem}-old{dot}{suffix}": TEXT_FILES[path] + "more\n"}


def test_binary_content_and_other_kinds_of_files_stay_refused(memory):
    run = memory.run(Scope.chat())
    nul = run.call({"command": "write", "path": "notes.txt", "content": "a\x00b\n"})
    assert not nul["ok"] and nul["error"]["code"] == "BAD_REQUEST" and "NUL" in nul["text"]
    image = run.call({"command": "write", "path": "photo.png", "content": "x"})
    assert not image["ok"] and image["error"]["code"] == "BAD_PATH"
    write(memory.root, "notes.txt", "x")
    rename = run.call({"command": "rename", "path": "notes.txt", "new_path": "notes.exe"})
    assert not rename["ok"] and rename["error"]["code"] == "BAD_PATH"
    (memory.root / "raw.txt").write_bytes(b"\xff\xfe not utf-8\n")
    assert run.call({"command": "read", "path": "raw.txt"})["error"]["code"] == "BAD_REQUEST"
    assert not (memory.root / "photo.png").exists() and (memory.root / "notes.txt").read_text() == "x"


def test_top_files_stay_markdown(memory):
    memory.create_agent("3f9a1c2e-77", "SEO")
    run = memory.run(Scope.agent("3f9a1c2e-77"))
    assert run.call({"command": "write", "path": "agents/seo-3f9a1c2e/MEMORY.txt", "content": "x\n"})["ok"]
    # a .txt beside the top file is a topic file: the scope still loads only MEMORY.md
    assert memory.scope_files(Scope.agent("3f9a1c2e-77")) == ["MEMORY.md", "agents/seo-3f9a1c2e/MEMORY.md"]


def test_text_files_written_by_hand_are_searched_from_the_shell(memory):
    write(memory.root, "notes.txt", "The zebra crossing opens in May.\n")
    write(memory.root, "progress.xml", "<step>zebra survey</step>\n")
    write(memory.root, "photo.png", "zebra\n")
    ranked = run_fsmem("search", "zebra", "--json", "--root", str(memory.root))
    assert ranked.returncode == 0, ranked.stderr
    assert sorted(hit["path"] for hit in json.loads(ranked.stdout)) == ["notes.txt", "progress.xml"]
    lines = memory.run().call({"command": "search", "query": "zebra", "regex": True})
    assert lines["text"].splitlines() == ["notes.txt:1: The zebra crossing opens in May.",
                                          "progress.xml:1: <step>zebra survey</step>"]


def test_versions_and_revert_of_a_text_file_from_the_shell(memory):
    run = memory.run()
    assert run.call({"command": "write", "path": "notes.txt", "content": "first\n"})["ok"]
    assert run.call({"command": "write", "path": "notes.txt", "content": "second\n"})["ok"]
    listed = invoke(memory.root, "versions", "notes.txt", "--json")
    assert listed.exit_code == 0, listed.output
    assert [v["command"] for v in json.loads(listed.output)] == ["write"]
    reverted = invoke(memory.root, "revert", "notes.txt")
    assert reverted.exit_code == 0, reverted.output
    assert (memory.root / "notes.txt").read_text() == "first\n"
    shown = invoke(memory.root, "read", "notes.txt")
    assert shown.exit_code == 0 and "first" in shown.output


def test_a_folder_delete_keeps_every_text_file_in_versions(memory):
    run = memory.run()
    for path in ("plans/a.md", "plans/b.txt", "plans/c.json"):
        assert run.call({"command": "write", "path": path, "content": f"{path}\n"})["ok"]
    deleted = run.call({"command": "delete", "path": "plans"})
    assert deleted["ok"] and sorted(deleted["held"]) == ["plans/a.md", "plans/b.txt", "plans/c.json"]
    assert [v.version for v in memory.versions("plans/b.txt")]
