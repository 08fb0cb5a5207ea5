"""``fsmem._env.roots``: the shell's stdlib way to find a root, which the CLI's ``find_root`` uses too."""

from __future__ import annotations

from pathlib import Path

from fsmem._core.layout import STATE_DIR
from fsmem._env.roots import STATE_FOLDER, chosen_root


def test_its_state_folder_is_the_layouts() -> None:
    assert STATE_FOLDER == STATE_DIR  # a copy, so the cold shell need not import the layout


def test_the_nearest_root_upward_from_here_else_none(tmp_path: Path) -> None:
    (tmp_path / "root" / STATE_DIR).mkdir(parents=True)
    (tmp_path / "root" / "seo" / "deep").mkdir(parents=True)
    assert chosen_root(None, {}, str(tmp_path / "root" / "seo" / "deep")) == str((tmp_path / "root").resolve())
    assert chosen_root(None, {"FSMEM_ROOT": "elsewhere"}, str(tmp_path)) == str((tmp_path / "elsewhere").resolve())
    assert chosen_root("given", {"FSMEM_ROOT": "elsewhere"}, str(tmp_path)) == str((tmp_path / "given").resolve())
    assert chosen_root(None, {}, str(tmp_path)) is None  # no .fsmem/ here nor above
