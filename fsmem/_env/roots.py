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

STATE_FOLDER = ".fsmem"  # fsmem._core.layout.STATE_DIR; that module's imports cost a cold shell 14 ms


def chosen_root(explicit: str | None, environ: Mapping[str, str], here: str, near: str | None = None) -> str | None:
    """The root's folder (resolved), or ``None`` when neither is named and none holds ``here``. Paths
    as strings: pathlib costs a cold shell a few ms."""
    if explicit:
        return _absolute(explicit, here)
    from_env = environ.get("FSMEM_ROOT")
    if from_env:
        return _absolute(from_env, here)
    starts = [os.path.realpath(here)]
    if near and os.path.isabs(near):
        starts.insert(0, os.path.dirname(with_real_folder(near)))
    for folder in starts:
        while True:
            if os.path.isdir(os.path.join(folder, STATE_FOLDER)):
                return folder
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            folder = parent
    return None


def cache_base(environ: Mapping[str, str]) -> str:
    """This user's cache folder: ``$XDG_CACHE_HOME``, else ``~/.cache`` (a PostgreSQL worker's caches and
    its residents' folders lie in its ``fsmem`` folder)."""
    return environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")


def with_real_folder(path: str) -> str:
    """``path`` with ``..`` folded and its folder's symlinks resolved (not the last name's own)."""
    folded = os.path.normpath(path)
    folder, name = os.path.split(folded)
    return os.path.join(os.path.realpath(folder), name) if name else folded


def _absolute(typed: str, here: str) -> str:
    return os.path.realpath(os.path.join(here, os.path.expanduser(typed)))
