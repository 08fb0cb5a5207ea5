"""The README's Python examples run as written: the first one twice in a row against the same folder,
the OpenAI snippet against a real local chat-completions server; docs load tool forms from the package."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import fsmem
from fsmem._llm.model import tool_call
from tests.chat_server import ChatServer, Reply
from tests.conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def python_block(after_heading: str, starting: str = "") -> str:
    """The first ```python block after ``after_heading`` (whose text starts with ``starting``)."""
    rest = README[README.index(after_heading):]
    for block in re.findall(r"```python\n(.*?)```", rest, flags=re.DOTALL):
        if block.startswith(starting):
            return block
    raise AssertionError(f"no python block after {after_heading!r}")


def run_python(code: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("FSMEM_", "OPENAI_"))}
    full_env["PYTHONPATH"] = str(REPO)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=full_env, capture_output=True,
                          text=True, timeout=120, check=False)


def test_the_python_example_runs_twice_in_a_row(tmp_path):
    code = python_block("## From Python")
    first = run_python(code, tmp_path)
    assert first.returncode == 0, first.stderr
    second = run_python(code, tmp_path)
    assert second.returncode == 0, second.stderr
    assert "MEMORY.md" in second.stdout and "Page titles stay under 60 characters" in second.stdout
    memory = fsmem.open(tmp_path / "memory")
    assert [e.path for e in memory.log() if e.command == "create_agent"] == ["agents/seo-3f9a1c2e/MEMORY.md"]


def test_create_with_exist_ok_is_get_or_create(root):
    memory = fsmem.open(root)
    folder = memory.create_agent("3f9a1c2e-7d41", "SEO")
    assert memory.create_agent("3f9a1c2e-7d41", "Renamed", exist_ok=True) == folder
    routine = memory.create_routine("3f9a1c2e-7d41", "9b7d4e10", "Meta", exist_ok=True)
    assert memory.create_routine("3f9a1c2e-7d41", "9b7d4e10", "Meta", exist_ok=True) == routine
    memory.create_agent("aa11bb22", "Other")
    try:
        memory.create_routine("aa11bb22", "9b7d4e10", "Meta", exist_ok=True)  # another agent's routine
    except fsmem._errors.Exists:
        pass
    else:
        raise AssertionError("a routine of another agent was taken as this agent's")
    try:
        memory.create_agent("3f9a1c2e-7d41", "SEO")
    except fsmem._errors.Exists:
        pass
    else:
        raise AssertionError("a second create without exist_ok succeeded")


def test_the_openai_snippet_runs_against_a_chat_server(tmp_path):
    code = python_block("**OpenAI-style function calling**", "import json")
    write = {"command": "write", "path": "MEMORY.md", "content": "- Page titles end with | Field Notes.\n"}
    with ChatServer([Reply(tool_calls=[tool_call("memory", {"command": "read", "path": "MEMORY.md"})]),
                     Reply(tool_calls=[tool_call("memory", write)]),
                     "Noted: titles end with | Field Notes."]) as server:
        done = run_python(code, tmp_path, {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test"})
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Noted: titles end with | Field Notes.\n"
    assert (tmp_path / "memory" / "MEMORY.md").read_text() == write["content"]
    sent = server.requests[0].body
    assert sent["tools"] == [json.loads((REPO / "tool_schema" / "openai_function_grammar_safe.json").read_text())]
    assert server.requests[2].messages[-1]["role"] == "tool"


def test_docs_load_tool_forms_from_the_installed_package():
    faces = (REPO / "docs" / "faces.md").read_text(encoding="utf-8")
    assert 'open("tool_schema/' not in faces and 'open("tool_schema/' not in README
    assert "fsmem.harness.memory_tool_spec()" in faces
