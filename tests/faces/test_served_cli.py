"""A cold `fsmem search`, `read` or `facts list` run by a resident prints exactly what the shell prints
alone (stdout, stderr, exit code; in a pipe and on a terminal), and the shell a resident answers loads
the standard library and the wire alone."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import fsmem
from fsmem._env.config import load_settings
from fsmem._memory.memory import Memory
from fsmem._memory.resident import Resident
from fsmem.cli.served import answer
from tests.conftest import REPO, okapi_root, run_fsmem

COMMANDS = [
    ["search", "okapi"],
    ["search", "launch", "plan", "--limit", "1"],
    ["search", "okapi", "--json"],
    ["--json", "search", "okapi", "--include", "seo/**"],
    ["search", "--regex", "ok[a-z]+i"],
    ["search", "--regex", "o", "--limit", "2"],  # more lines than shown
    ["search", "nothingmatcheshere"],  # exit 1, as grep
    ["search", "nothingmatcheshere", "--json"],
    ["search", "--regex", "(unclosed"],  # a bad pattern: its Error line and exit code
    ["search", "--limit", "0", "okapi"],  # click's usage error
    ["read", "MEMORY.md"],
    ["read", "seo/plan.md", "--start", "2", "--end", "3"],
    ["read"],
    ["read", "seo", "--json"],
    ["read", "missing.md"],  # Error: [NOT_FOUND] …
    ["read", "missing.md", "--json"],
    ["facts", "list"],
    ["facts", "list", "--json"],
    ["facts", "list", "okapi"],
    ["facts", "list", "nobody"],
]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = okapi_root(tmp_path / "root")
    kept = run_fsmem("facts", "keep", "okapi", "habitat", "The okapi lives in the Ituri forest.", "--root", str(folder))
    assert kept.returncode == 0, kept.stderr
    return folder


class Recording:
    def __init__(self) -> None:
        self.served = 0

    def __call__(self, memory: Memory, question: Any) -> dict[str, Any]:
        reply = answer(memory, question)
        self.served += reply["ok"]
        return reply


def runs(root: Path, commands: list[list[str]], cwd: Path | None = None) -> list[tuple[int, str, str]]:
    out = []
    for command in commands:
        done = run_fsmem(*command, cwd=cwd or root)
        out.append((done.returncode, done.stdout, done.stderr))
    return out


def test_served_commands_print_the_same_bytes_and_exit_codes_as_the_shell_alone(root: Path) -> None:
    inside = [["read", "plan.md"], ["--root", "..", "search", "okapi"], ["read", "../MEMORY.md", "--json"]]
    alone, alone_inside = runs(root, COMMANDS), runs(root, inside, cwd=root / "seo")
    codes = [code for code, _, _ in alone]
    assert codes[6] == 1 and codes[8] == 1 and codes[9] == 2 and codes[14] == 1 and codes[15] == 1
    assert alone[14][2].startswith("Error: [NOT_FOUND]") and alone[8][2].startswith("Error: [BAD_PATTERN]")
    assert "Ituri" in alone[16][1] and "more matching line" in alone[5][1]
    memory = fsmem.open(root, settings=load_settings(root, {}))
    recording = Recording()
    with Resident(memory, recording) as resident:
        assert resident.serving
        served = runs(root, COMMANDS)
        assert recording.served == len(COMMANDS)
        for command, one, other in zip(COMMANDS, alone, served, strict=True):
            assert one == other, command
        # typed in a folder of the root: paths and --root are taken from there
        assert runs(root, inside, cwd=root / "seo") == alone_inside
        assert recording.served == len(COMMANDS) + len(inside)
    memory.close()
    assert alone_inside[0][0] == 0 and "Launch plan" in alone_inside[0][1] and alone_inside[1] == alone[0]


def test_on_a_terminal_the_served_output_is_painted_as_the_shells_own(root: Path) -> None:
    """Colour follows the asker's terminal and NO_COLOR, not the resident's (which has none)."""
    commands = [["search", "okapi"], ["search", "--regex", "ok.pi"], ["read", "MEMORY.md"]]
    alone = [on_a_terminal(root, command) for command in commands]
    assert "\x1b[" in alone[0] and "\x1b[" in alone[1]
    plain = on_a_terminal(root, commands[0], NO_COLOR="1")
    assert "\x1b[" not in plain
    memory = fsmem.open(root, settings=load_settings(root, {}))
    recording = Recording()
    with Resident(memory, recording):
        assert [on_a_terminal(root, command) for command in commands] == alone
        assert on_a_terminal(root, commands[0], NO_COLOR="1") == plain
        assert recording.served == len(commands) + 1
    memory.close()


def on_a_terminal(root: Path, command: list[str], **variables: str) -> str:
    """What `fsmem COMMAND` shows on a terminal (stdout and stderr both the terminal)."""
    leader, follower = pty.openpty()
    environ = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_") and k != "NO_COLOR"}
    environ.update(PYTHONPATH=str(REPO), TERM="xterm", COLUMNS="100", **variables)
    process = subprocess.Popen(
        [sys.executable, "-m", "fsmem", *command], stdout=follower, stderr=follower, cwd=root, env=environ
    )
    os.close(follower)
    chunks = []
    while True:
        ready, _, _ = select.select([leader], [], [], 30)
        assert ready, "fsmem never finished on its terminal"
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert process.wait(timeout=30) in (0, 1)
    return b"".join(chunks).decode("utf-8")


def test_a_served_search_loads_the_standard_library_and_the_wire_alone(root: Path) -> None:
    memory = fsmem.open(root, settings=load_settings(root, {}))
    recording = Recording()
    with Resident(memory, recording):
        environ = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
        environ["PYTHONPATH"] = str(REPO)
        done = importing(root, environ, "-m", "fsmem", "search", "okapi")
        assert recording.served == 1
    memory.close()
    assert done.returncode == 0 and "MEMORY.md" in done.stdout, done.stderr
    imported = imports(done) - imports(importing(root, environ, "-c", "pass"))  # less what any start loads
    assert "fsmem._index.resident" in imported
    fsmem_modules = {name for name in imported if name.startswith("fsmem")}
    assert fsmem_modules <= {"fsmem", "fsmem.__main__", "fsmem.cli", "fsmem._index", "fsmem._index.resident",
                             "fsmem._env", "fsmem._env.roots"}, fsmem_modules
    heavy = {"click", "tantivy", "watchdog", "jsonschema", "frontmatter", "yaml", "regex", "typing", "dataclasses"}
    heavy |= {"pathlib"}  # an installed package's site loads none (an editable one's does, and is left out)
    assert not heavy & {name.split(".")[0] for name in imported}
    assert {name.split(".")[0] for name in imported} <= set(sys.stdlib_module_names) | {"fsmem"}, imported


def importing(root: Path, environ: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-X", "importtime", *args], cwd=root, env=environ, capture_output=True, text=True
    )


def imports(done: subprocess.CompletedProcess[str]) -> set[str]:
    lines = [line.rsplit("|", 1) for line in done.stderr.splitlines() if line.startswith("import time:")]
    return {name.strip() for _, name in lines[1:]}  # past the header
