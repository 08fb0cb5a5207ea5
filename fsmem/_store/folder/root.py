"""Making a root: the folder a project's memory lives in, with its ``.fsmem/`` state folder."""

from __future__ import annotations

import os
from pathlib import Path

from fsmem._core.layout import PROJECT_FILE, STATE_DIR
from fsmem._store.atomic import make_dirs


def init_root(root: Path) -> None:
    """Make a root: folders 0700 and files 0600 whatever the umask (its state is the owner's alone, as
    for an SSH or GnuPG home); a folder that already exists keeps its mode, ``.fsmem/`` excepted."""
    make_dirs(root / STATE_DIR)
    os.chmod(root / STATE_DIR, 0o700)
    gitignore = root / STATE_DIR / ".gitignore"
    if not gitignore.exists():
        _create(gitignore, b"index/\nindex.built\nindex.pending\nwatch.json\ncache/\nlock\nlock.queue\ncrashed\n")
    top = root / PROJECT_FILE
    if not top.exists():
        _create(top, b"")


def _create(file: Path, data: bytes) -> None:
    fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
    finally:
        os.close(fd)
