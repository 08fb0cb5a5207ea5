"""docs/start.md, top to bottom: every shell command in it runs in one bash session in a temp folder,
with the exit code the page says (0 unless the line ends ``# exits N``) and the output it shows
(``…`` stands for what differs from run to run)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fsmem._llm.model import tool_call
from tests.chat_server import ChatServer, Reply
from tests.conftest import REPO

START = REPO / "docs" / "start.md"
MARK = "@@fsmem-start-doc@@"


@dataclass
class Step:
    command: str
    expected: list[str] = field(default_factory=list)
    exit_code: int = 0


def steps(text: str) -> list[Step]:
    """The ``$ command`` lines (with their ``> `` continuation lines) of every console block, in order."""
    found: list[Step] = []
    for block in re.findall(r"```console\n(.*?)```", text, flags=re.DOTALL):
        for line in block.splitlines():
            if line.startswith("$ "):
                code = re.search(r"#\s*exits (\d+)\s*$", line)
                found.append(Step(line[2:], exit_code=int(code.group(1)) if code else 0))
            elif line.startswith("> ") or line == ">":
                found[-1].command += "\n" + line[2:]
            elif line.strip():
                found[-1].expected.append(line)
    return found


def _pattern(expected: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in expected.rstrip().split("…")))


def _run(tmp_path: Path, all_steps: list[Step], env: dict[str, str]) -> list[tuple[str, int]]:
    script = ["exec 2>&1"]
    for number, step in enumerate(all_steps):
        script += [f"echo '{MARK} {number}'", step.command, f"echo \"{MARK} exit $?\""]
    done = subprocess.run(["bash", "-c", "\n".join(script)], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=300, check=False)
    results: list[tuple[str, int]] = []
    for chunk in done.stdout.split(f"{MARK} ")[1:]:
        head, _, body = chunk.partition("\n")
        if head.startswith("exit "):
            output = results.pop()[0] if results else ""
            results.append((output, int(head[5:])))
        else:
            results.append((body, -1))
    return results


def test_docs_start_runs_top_to_bottom(tmp_path):
    all_steps = steps(START.read_text(encoding="utf-8"))
    commands = "\n".join(step.command for step in all_steps)
    for needed in ("fsmem init", "fsmem write", "fsmem search", "fsmem edit", "fsmem versions", "fsmem revert",
                   "fsmem facts keep", "fsmem review", "fsmem proposals approve", "fsmem mcp", "FsmemMemoryTool"):
        assert needed in commands, f"docs/start.md no longer shows {needed}"
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nprintf "Roll back with bin/rollback.\\n" >> "$1"\n')
    editor.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FSMEM_", "NO_COLOR", "VISUAL"))}
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}", HOME=str(home),
               PYTHONPATH=str(REPO), EDITOR=str(editor), FSMEM_MODEL="scripted")
    change = {"command": "write", "path": "MEMORY.md", "old_text": "- Deploys happen on Fridays.",
              "new_text": "- Deploys happen on Tuesdays."}
    with ChatServer([Reply(tool_calls=[tool_call("memory", change)]), "Deploys move to Tuesdays."]) as server:
        env["FSMEM_MODEL_URL"] = server.base_url
        results = _run(tmp_path, all_steps, env)
    assert len(results) == len(all_steps), results[-1:]
    for step, (output, code) in zip(all_steps, results):
        shown = f"$ {step.command}\n{output}"
        assert code == step.exit_code, shown
        lines = output.splitlines()
        position = 0
        for expected in step.expected:
            pattern = _pattern(expected)
            while position < len(lines) and not pattern.fullmatch(lines[position].rstrip()):
                position += 1
            assert position < len(lines), f"{expected!r} not in the output of\n{shown}"
            position += 1
    assert (tmp_path / "notes" / "MEMORY.md").read_text().startswith("# Project rules\n- Deploys happen on Tuesdays.")


def _quick_start_lines() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Quick start"):]
    block = re.search(r"```sh\n(.*?)```", section, flags=re.DOTALL)
    assert block, "README.md's Quick start has no sh block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_readme_quick_start_leaves_fsmem_runnable_in_a_fresh_shell(tmp_path):
    """After the README's quick start, pasted as is into a new shell, `fsmem …` lines work.

    Its `bin/demo` / `bin/test` lines made the venv this suite runs in (running them here would run
    the suite inside itself); every other line of the block runs as pasted, in a shell whose PATH
    knows nothing of that venv."""
    if Path(sys.prefix).resolve() != (REPO / ".venv").resolve():
        pytest.skip("the quick start installs into the checkout's .venv; this suite runs elsewhere")
    lines = _quick_start_lines()
    assert lines[0].startswith("bin/demo"), lines
    rest = [line for line in lines if not line.startswith(("bin/demo", "bin/test"))]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": os.environ.get("LANG", "C.UTF-8")}
    script = "\n".join([*rest, f"cd {tmp_path}", "fsmem --version", "fsmem init notes", "fsmem --root notes status"])
    done = subprocess.run(["bash", "-c", script], cwd=REPO, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"{script}\n{done.stdout}{done.stderr}"
    assert "Made an fsmem root" in done.stdout
