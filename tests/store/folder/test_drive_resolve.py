"""The drive's symlink guard, and its fast path agreeing with os.path.realpath."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import fsmem
from fsmem._errors import BadPath


@pytest.fixture
def tree(tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("outside\n")
    memory = fsmem.open(tmp_path / "root", create=True)
    root = memory.root
    (root / "seo" / "deep").mkdir(parents=True)
    (root / "seo" / "titles.md").write_text("# Titles\n")
    (root / "seo" / "deep" / "k.md").write_text("k\n")
    os.symlink(root / "seo", root / "alias")                        # a link inside the root: allowed
    os.symlink("titles.md", root / "seo" / "same.md")               # relative link inside
    os.symlink(outside, root / "out")                               # a folder link leading out
    os.symlink(outside / "secret.md", root / "seo" / "leak.md")     # a file link leading out
    os.symlink(root / ".fsmem", root / "state")                     # a link into fsmem's state
    os.symlink(outside / "missing.md", root / "dangling.md")        # dangling, pointing out
    os.symlink(root / "loop2", root / "loop1")
    os.symlink(root / "loop1", root / "loop2")
    os.symlink(root / "alias", root / "chain")                      # link to a link, inside
    return memory


PATHS = ["", "seo", "seo/titles.md", "seo/deep/k.md", "seo/none.md", "none/at/all.md", "seo/titles.md/x",
         "alias", "alias/titles.md", "alias/deep/k.md", "seo/same.md", "chain/deep/k.md", "out", "out/secret.md",
         "seo/leak.md", "state", "state/log.jsonl", "dangling.md", "loop1", "loop1/x.md", ".fsmem", ".fsmem/lock",
         "a/../seo", "./seo", "seo//titles.md"]


@pytest.mark.parametrize("path", PATHS)
def test_fast_real_path_agrees_with_realpath(tree, path: str) -> None:
    root = tree.root
    assert tree.drive._jail.real(path) == Path(os.path.realpath(root / path if path else root))


@pytest.mark.parametrize("path", ["out", "out/secret.md", "seo/leak.md", "dangling.md", "state", "state/log.jsonl",
                                  ".fsmem", ".fsmem/lock", "a/../../outside/secret.md", "/etc/passwd"])
def test_links_out_of_the_root_or_into_state_are_refused(tree, path: str) -> None:
    with pytest.raises(BadPath):
        tree.drive.resolve(path)


@pytest.mark.parametrize(("path", "where"), [("alias/titles.md", "seo/titles.md"), ("seo/same.md", "seo/titles.md"),
                                             ("chain/deep/k.md", "seo/deep/k.md"), ("seo/new.md", "seo/new.md"),
                                             ("", "")])
def test_links_inside_the_root_resolve_to_where_they_lead(tree, path: str, where: str) -> None:
    assert tree.drive.canonical(path) == where


def test_the_tool_refuses_reading_and_writing_through_a_link_out(tree) -> None:
    run = tree.run()
    for request in ({"command": "read", "path": "seo/leak.md"},
                    {"command": "write", "path": "out/new.md", "content": "x\n"},
                    {"command": "read", "path": "state/log.jsonl"}):
        result = run.call(request)
        assert result["ok"] is False and result["error"]["code"] == "BAD_PATH", result
    assert sorted(p.name for p in (tree.root.parent / "outside").iterdir()) == ["secret.md"]
    assert (tree.root.parent / "outside" / "secret.md").read_text() == "outside\n"


def test_fast_real_path_agrees_with_realpath_on_random_paths(tree) -> None:
    import random

    rng = random.Random(7)
    names = ["seo", "alias", "chain", "out", "state", "deep", "titles.md", "same.md", "k.md", "loop1",
             "dangling.md", "nothing", ".fsmem", "..", "."]
    root = tree.root
    for _ in range(400):
        path = "/".join(rng.choice(names) for _ in range(rng.randint(1, 4)))
        assert tree.drive._jail.real(path) == Path(os.path.realpath(root / path)), path


def test_versions_of_a_file_named_like_an_old_folder_are_trimmed_safely(tmp_path) -> None:
    from fsmem._env.config import Settings

    fsmem.open(tmp_path / "root", create=True)
    memory = fsmem.open(tmp_path / "root", settings=Settings(durable=False, versions_kept=3))
    drive = memory.drive
    # "2024.md" is first a folder whose file gets versions, then (folder gone) a file of its own.
    for number in range(2):
        with drive.change("write") as tx:
            tx.write("2024.md/1.md", f"one {number}\n".encode())
    with drive.change("delete") as tx:
        tx.delete("2024.md")
    for number in range(6):
        with drive.change("write") as tx:
            tx.write("2024.md", f"year {number}\n".encode())
    kept = drive.versions("2024.md")
    assert [v.file.read_text() for v in kept] == ["year 4\n", "year 3\n", "year 2\n"]
    assert [v.file.read_text() for v in drive.versions("2024.md/1.md")] == ["one 1\n", "one 0\n"]
