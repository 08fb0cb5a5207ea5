"""The shell's side of the wire: which command lines it asks a resident about, and which socket it finds
(the root the CLI would find: --root, FSMEM_ROOT, the nearest folder upward holding .fsmem/)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fsmem._env.roots import chosen_root
from fsmem._index.resident import SERVED_COMMANDS, command_words, given_root, pg_home, socket_for, socket_path


@pytest.mark.parametrize(
    "argv,words",
    [
        (["search", "okapi"], ("search",)),
        (["--root", "x", "--json", "search", "okapi"], ("search",)),
        (["--root=x", "read", "a.md"], ("read",)),
        (["facts", "list", "okapi"], ("facts", "list")),
        (["--json", "facts", "list"], ("facts", "list")),
        (["facts", "forget", "f1"], ("facts", "forget")),
        (["facts"], ("facts",)),
        (["write", "a.md"], ("write",)),
        (["search", "--help"], None),
        (["-h"], None),
        (["--version"], None),
        (["--verbose", "search", "x"], None),  # an option the group lacks: click says so, not the resident
        ([], ()),
    ],
)
def test_the_command_a_command_line_names(argv: list[str], words: tuple[str, ...] | None) -> None:
    assert command_words(argv) == words


def test_only_the_read_only_commands_are_asked() -> None:
    assert SERVED_COMMANDS == {("search",), ("read",), ("facts", "list")}
    assert command_words(["facts", "forget", "x"]) not in SERVED_COMMANDS


def test_the_root_given_on_the_command_line_is_the_last_before_a_double_dash() -> None:
    assert given_root(["search", "x", "--root", "a"]) == "a"
    assert given_root(["--root", "a", "search", "--root=b", "x"]) == "b"
    assert given_root(["search", "--", "--root", "a"]) is None
    assert given_root(["search", "--root"]) is None


def test_the_socket_is_the_roots_the_cli_would_find(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / ".fsmem").mkdir(parents=True)
    (root / "deep" / "er").mkdir(parents=True)
    here = str(root / "deep" / "er")
    expected = str(socket_path(root / ".fsmem"))
    assert str(socket_for(["search", "x"], {}, here)) == expected  # the nearest folder upward
    assert str(socket_for(["search", "x", "--root", "../.."], {}, here)) == expected  # from where it was typed
    assert str(socket_for(["search", "x"], {"FSMEM_ROOT": str(root)}, str(tmp_path))) == expected
    assert socket_for(["search", "x"], {}, str(tmp_path)) is None  # no root here
    assert str(socket_for(["search", "x", "--root", str(root)], {"FSMEM_STORE": "postgresql://x"}, here)) == expected


def test_a_project_in_postgresql_is_served_from_the_folder_of_its_url_and_project(tmp_path: Path) -> None:
    """Found as the CLI finds the store: options, else variables, never beside --root; the socket in
    the folder named by the URL and the project as written (the resident answers only those), under
    the user's cache: the shell reads nothing in the URL."""
    xdg = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    url, here = "postgresql://me:secret@db.internal/fsmem", str(tmp_path)
    expected = os.path.join(pg_home(url, "rye", xdg), "resident.sock")
    assert os.path.dirname(os.path.dirname(expected)) == str(tmp_path / "xdg" / "fsmem" / "residents")
    assert "secret" not in expected and "db.internal" not in expected  # a hash: the URL is nowhere on disk
    assert socket_for(["search", "x", "--store", url, "--project", "rye"], xdg, here) == expected
    assert socket_for(["--store=" + url, "--project=rye", "search", "x"], xdg, here) == expected
    assert socket_for(["search", "x"], {**xdg, "FSMEM_STORE": url, "FSMEM_PROJECT": "rye"}, here) == expected
    assert socket_for(["search", "x", "--project", "rye"], {**xdg, "FSMEM_STORE": url}, here) == expected
    other_spelling = "postgresql://you:other@db.internal/fsmem"  # another resident's, if any
    assert socket_for(["search", "x"], {**xdg, "FSMEM_STORE": other_spelling, "FSMEM_PROJECT": "rye"}, here) != expected
    assert socket_for(["search", "x", "--store", url, "--project", "oat"], xdg, here) != expected
    home = os.path.expanduser("~")
    assert pg_home(url, "rye", {}) == os.path.join(
        home, ".cache", "fsmem", "residents", os.path.basename(pg_home(url, "rye", xdg))
    )
    # what the CLI refuses, the shell asks no resident about: it runs the command and says why
    assert socket_for(["search", "x", "--store", url], {}, here) is None  # no project
    assert socket_for(["search", "x"], {"FSMEM_PROJECT": "rye"}, here) is None  # no store
    assert socket_for(["search", "x", "--root", here, "--store", url, "--project", "rye"], {}, here) is None


def test_a_root_found_through_a_link_is_the_real_folder(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / ".fsmem").mkdir(parents=True)
    os.symlink(root, tmp_path / "link")
    assert str(chosen_root(None, {}, str(tmp_path / "link"))) == str(root.resolve())
    assert str(chosen_root(str(tmp_path / "link"), {}, "/")) == str(root.resolve())
    assert str(chosen_root(None, {}, "/", near=str(tmp_path / "link" / "a.md"))) == str(root.resolve())
