"""What a cold shell command loads (issue 24): the group imports a command's module only when that
command runs, so `fsmem facts list` loads the facts commands and nothing of any other command (nor a
model client); and `fsmem --help`, which loads every command for its short help, prints exactly what
click prints for the same commands loaded up front."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import fsmem
from fsmem.cli.group import COMMANDS
from tests.conftest import REPO, run_fsmem
from tests.memory.facts_checks import settle

# The modules of the shell itself: the entry point, the group, the options every command shares.
SHELL_MODULES = {"fsmem.cli", "fsmem.cli.group", "fsmem.cli.options"}
COMMAND_MODULES = {target.split(":")[0] for target in COMMANDS.values()}  # each command's own module


def _checkout_env() -> dict[str, str]:
    """The environment of a new process that imports this checkout's fsmem, with a user's defaults."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _run_loading(*args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """``fsmem ARGS`` in a new process, as ``run_fsmem`` runs one, and the fsmem modules it loaded (by
    ``sys.modules``: ``-X importtime`` does not list what ``importlib.import_module`` loads, as the
    group loads a command's module)."""
    probe = (
        "import sys\n"
        "from fsmem.cli import main\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "finally:\n"
        "    print('\\n@@loaded', *sorted(m for m in sys.modules if m.startswith('fsmem')))\n"
    )
    env = _checkout_env()
    done = subprocess.run(
        [sys.executable, "-c", probe, *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    output, _, loaded = done.stdout.rpartition("\n@@loaded")
    return subprocess.CompletedProcess(done.args, done.returncode, output, done.stderr), set(loaded.split())


@pytest.fixture
def kept_root(tmp_path, monkeypatch) -> Path:
    """A root with facts kept long ago (past the racy window, as the stamps see it) and its view written:
    the steady state a person's shell meets, answered from the kept view."""
    from fsmem._store.folder import stamps

    later = time.time_ns() + 10_000_000_000
    monkeypatch.setattr(stamps, "_now_ns", lambda: later)
    memory = fsmem.open(tmp_path / "root", create=True)
    memory.facts.keep("Ana", "role", "Ana works in research.")
    memory.facts.keep("Bo", "team", "Bo is on the platform team.")
    memory.facts.current()
    return memory.root


@pytest.mark.parametrize("subject", [("ana",), ()], ids=["SUBJECT", "all"])
def test_facts_list_loads_no_other_commands_module_and_no_model(kept_root, subject) -> None:
    done, loaded = _run_loading("facts", "list", *subject, "--root", str(kept_root))
    settle(kept_root)
    assert done.returncode == 0, done.stderr
    assert "Ana works in research." in done.stdout
    assert loaded & COMMAND_MODULES == {"fsmem.cli.facts"}
    assert {name for name in loaded if name.startswith("fsmem.cli.")} <= SHELL_MODULES | {"fsmem.cli.facts"}
    assert not {name for name in loaded if name.startswith("fsmem._llm") or name == "fsmem.cli.model_options"}


def test_a_command_named_loads_only_its_own_module() -> None:
    """Each command's module is imported when it runs, not before: `fsmem remember --help` loads the
    remember command's module (which prints a kept fact as the facts commands do), no other."""
    done, loaded = _run_loading("remember", "--help")
    assert done.returncode == 0, done.stderr
    assert loaded & COMMAND_MODULES == {"fsmem.cli.remember", "fsmem.cli.facts"}


def test_help_lists_every_command_as_click_would_with_all_of_them_loaded() -> None:
    """`fsmem --help`, byte for byte the help of a plain click group holding every command up front
    (same options, same text), each printed by a new process: loading lazily changes nothing a person
    reads."""
    eager = (
        "import click\n"
        "from fsmem.cli.group import COMMANDS, group\n"
        "ctx = click.Context(group)\n"
        "commands = {name: group.get_command(ctx, name) for name in COMMANDS}\n"
        "click.Group(name=group.name, commands=commands, params=group.params, help=group.help,\n"
        "            context_settings=group.context_settings).main(['--help'], prog_name='fsmem')\n"
    )
    env = _checkout_env()
    expected = subprocess.run(
        [sys.executable, "-c", eager], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    shown = run_fsmem("--help")
    assert expected.returncode == 0 and shown.returncode == 0, expected.stderr + shown.stderr
    assert shown.stdout == expected.stdout
    listed = re.findall(r"^  (\S+)", shown.stdout.split("Commands:\n", 1)[1], flags=re.MULTILINE)
    assert listed == sorted(COMMANDS)


def test_help_of_the_facts_commands_names_each_of_them() -> None:
    shown = run_fsmem("facts", "--help")
    assert shown.returncode == 0, shown.stderr
    listed = re.findall(r"^  (\S+)", shown.stdout.split("Commands:\n", 1)[1], flags=re.MULTILINE)
    assert listed == ["edit", "forget", "history", "keep", "known", "list", "show"]
    assert "remember" not in shown.stdout
