"""Which folder a command means as its root: ``--root``, else ``$FSMEM_ROOT``, else the root holding a
path typed (``near``), else the nearest folder upward from the current one that holds ``.fsmem/``.

The standard library only: the shell asks it before it knows whether a resident answers
(``fsmem._index.resident``), and the CLI's ``find_root`` (``fsmem.cli.options``) names its refusal.
Every relative path is taken from ``here``, the folder the command was typed in (a resident runs
the commands of shells in other folders).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

STATE_FOLDER = ".fsmem"  # fsmem._core.layout.STATE_DIR; that module's imports cost a cold shell 14 ms


def chosen_root(explicit: str | None, environ: Mapping[str, str], here: str, near: str | None = None) -> Path | None:
    """The root's folder (resolved), or ``None`` when neither is named and none holds ``here``."""
    if explicit:
        return _absolute(explicit, here)
    from_env = environ.get("FSMEM_ROOT")
    if from_env:
        return _absolute(from_env, here)
    starts = [Path(here).resolve()]
    if near and os.path.isabs(near):
        starts.insert(0, with_real_folder(Path(near)).parent)
    for start in starts:
        for folder in (start, *start.parents):
            if (folder / STATE_FOLDER).is_dir():
                return folder
    return None


def with_real_folder(path: Path) -> Path:
    """``path`` with ``..`` folded and its folder's symlinks resolved (not the last name's own)."""
    folded = Path(os.path.normpath(path))
    return Path(os.path.realpath(folded.parent)) / folded.name if folded.name else folded


def _absolute(typed: str, here: str) -> Path:
    return (Path(here) / Path(typed).expanduser()).resolve()
