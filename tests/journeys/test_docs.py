"""Every CLI command has help and is named in the README; the README's set-up commands exist."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from fsmem.cli import COMMANDS, main

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")


def _commands():
    context = click.Context(main)
    for name in sorted(COMMANDS):
        command = main.get_command(context, name)
        yield (name,), command
        if isinstance(command, click.Group):
            for sub in sorted(command.list_commands(context)):
                yield (name, sub), command.get_command(context, sub)


@pytest.mark.parametrize("words,command", list(_commands()), ids=lambda v: " ".join(v) if isinstance(v, tuple) else "")
def test_every_command_has_help(words, command):
    assert command.help, f"fsmem {' '.join(words)} has no help text"
    result = CliRunner().invoke(main, [*words, "--help"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Usage: ")


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_is_in_the_readme(name):
    assert re.search(rf"`fsmem {name}\b", README), f"README.md does not mention `fsmem {name}`"


def test_readme_setup_commands_exist_and_ci_runs_the_test_command():
    assert "bin/demo" in README and "bin/test" in README
    for script in ("bin/demo", "bin/test"):
        assert (REPO / script).stat().st_mode & 0o111, f"{script} is not executable"
    assert "bin/test" in (REPO / ".ci/run").read_text(encoding="utf-8")


# fsmem is on no package index: `pip install fsmem…` / `pip install 'fsmem[…]'` fails as pasted.
_INDEX_INSTALL = re.compile(r"""pip install\s+['"]?fsmem\b""")


def test_no_doc_or_message_installs_fsmem_from_an_index():
    texts = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "fsmem").rglob("*.py"))]
    found = [f"{path.relative_to(REPO)}: {match.group(0)}" for path in texts
             for match in _INDEX_INSTALL.finditer(path.read_text(encoding="utf-8"))]
    assert not found, "\n".join(found)


def test_the_install_hint_names_this_checkout_and_this_python():
    import sys

    from fsmem._env.resources import install_command

    assert install_command("postgres") == f"{sys.executable} -m pip install -e '{REPO}[postgres]'"


def test_the_test_command_says_what_it_shows_and_the_long_soaks_are_bin_soak_runs():
    development = README[README.index("## Development"):]
    assert "one line per test file" in development and "--durations=30" in development
    assert "under 10 min" in README[README.index("## Quick start"):README.index("## A project's memory folder")]
    soak = (REPO / "bin" / "soak").read_text(encoding="utf-8")
    for mode in ("bin/soak 60", "bin/soak --postgres 60", "bin/soak --crash"):
        assert mode in development, mode
    assert '"--crash" ]' in soak and "FSMEM_CRASH_ROUNDS" in soak
    from tests.journeys import test_crash_loop

    assert test_crash_loop.SUITE_ROUNDS < test_crash_loop.FULL_ROUNDS
