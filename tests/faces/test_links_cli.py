"""`fsmem links PATH`: a file's links and backlinks, as text and as JSON; `fsmem rename` keeps them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import fsmem
from tests.conftest import invoke, write


FILES = {
    "MEMORY.md": "# Project\n\nSee [titles](seo/titles.md).\n",
    "seo/titles.md": "# Titles\n\nBack [home](../MEMORY.md) and [[nowhere]].\n",
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    fsmem.open(tmp_path, create=True)
    for path, text in FILES.items():  # by hand, as a person keeps notes
        write(tmp_path, path, text)
    return tmp_path


def test_links_prints_links_and_backlinks(root: Path) -> None:
    done = invoke(root, "links", "seo/titles.md")
    assert done.exit_code == 0, done.output
    assert done.output == (
        "seo/titles.md links to:\n"
        "  MEMORY.md  line 3: (../MEMORY.md)\n"
        "  (no such file)  line 3: [[nowhere]]\n"
        "Linked from:\n"
        "  MEMORY.md  line 3: (seo/titles.md)\n"
    )


def test_links_as_json(root: Path) -> None:
    done = invoke(root, "links", "MEMORY.md", "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.output) == {
        "path": "MEMORY.md",
        "links": [{"source": "MEMORY.md", "line": 3, "kind": "markdown", "written": "seo/titles.md",
                   "target": "seo/titles.md"}],
        "backlinks": [{"source": "seo/titles.md", "line": 3, "kind": "markdown", "written": "../MEMORY.md",
                       "target": "MEMORY.md"}],
    }


def test_links_of_a_missing_file_is_one_error_line(root: Path) -> None:
    done = invoke(root, "links", "nope.md")
    assert done.exit_code == 1
    assert done.output.startswith("Error: [NOT_FOUND] there is no file 'nope.md'")


def test_a_rename_at_the_shell_keeps_the_links(root: Path) -> None:
    done = invoke(root, "rename", "seo", "web/seo")
    assert done.exit_code == 0, done.output
    assert (root / "MEMORY.md").read_text() == "# Project\n\nSee [titles](web/seo/titles.md).\n"
    assert (root / "web/seo/titles.md").read_text() == "# Titles\n\nBack [home](../../MEMORY.md) and [[nowhere]].\n"
    listed = invoke(root, "links", "web/seo/titles.md").output
    assert "Linked from:\n  MEMORY.md  line 3: (web/seo/titles.md)\n" in listed
