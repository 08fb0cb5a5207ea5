"""The docs of the shell: every command and subcommand named in the README or docs/, every setting in
docs/config.md, and the config file doing what docs/config.md says."""

from __future__ import annotations

import dataclasses
import re

import click
import pytest

from fsmem._env.config import Settings
from tests.conftest import REPO, invoke, run_fsmem
from tests.journeys.test_docs import _commands

DOCS = "\n".join(path.read_text(encoding="utf-8") for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))])
CONFIG_DOC = (REPO / "docs" / "config.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("words", [words for words, _ in _commands()], ids=" ".join)
def test_every_command_and_subcommand_is_in_the_docs(words):
    name = " ".join(words)
    if len(words) == 1:
        assert re.search(rf"`fsmem {name}\b", DOCS), f"no doc names `fsmem {name}`"
    else:  # `fsmem facts keep …`, or a row like `fsmem facts keep|list|…`
        group, sub = words
        assert re.search(rf"fsmem {group} (\S*[|\\]+)?{sub}\b", DOCS), f"no doc names `fsmem {name}`"


def test_every_command_has_help_that_names_its_options():
    for words, command in _commands():
        if isinstance(command, click.Group):
            continue
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                assert param.help, f"fsmem {' '.join(words)} {param.opts[0]} has no help"


@pytest.mark.parametrize("setting", [f.name for f in dataclasses.fields(Settings)])
def test_every_setting_is_in_docs_config(setting):
    default = getattr(Settings(), setting)
    row = re.search(rf"^\| `{setting}` \| `([^`]+)`", CONFIG_DOC, flags=re.MULTILINE)
    assert row, f"docs/config.md has no row for {setting}"
    shown = str(default).lower() if isinstance(default, bool) else str(default) or '""'  # "" is shown as `""`
    assert row.group(1) == shown


def test_raising_the_cap_as_docs_config_says(root):
    big = "x" * 40_000 + "\n"
    refused = invoke(root, "write", "big.md", input=big)
    assert refused.exit_code == 1 and refused.output.startswith("Error: [TOO_LARGE]")
    from_env = run_fsmem("write", "env.md", "--root", str(root), input=big, env={"FSMEM_MAX_FILE_BYTES": "131072"})
    assert from_env.returncode == 0, from_env.stderr
    (root / ".fsmem" / "config.toml").write_text("max_file_bytes = 131072   # allow memory files up to 128 KiB\n")
    done = invoke(root, "write", "big.md", input=big)
    assert done.exit_code == 0, done.output
    (root / ".fsmem" / "config.toml").write_text("max_file_byte = 1\n")
    typo = invoke(root, "read", "/")
    assert typo.exit_code == 2 and typo.output.startswith("Error: [FSMEM_ERROR] unknown settings max_file_byte")
