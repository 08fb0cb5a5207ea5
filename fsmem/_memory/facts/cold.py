"""A new process's ``fsmem facts list [SUBJECT]`` on a folder, answered from the kept view
(:mod:`.kept`) with nothing loaded but sqlite3, the fact rules and ``stat``: no store, no ``Memory``,
no YAML, no index.

    listing = kept_listing(Path("memory"), "ana")   # None: the view cannot vouch; open the memory

It answers only where the kept view vouches for the files as they are now (``KeptView.peek``: about
one subject, the facts folders' mark and the stamps of that subject's files; about every subject,
every file's stamp, one ``stat`` each in one ``scandir`` pass), and only where the facts folders are
plain folders of the root (a link on the way is the store's guard to judge: then None). None sends
the caller to the full path, which looks at the files, brings the view up to them and answers.
"""

from __future__ import annotations

import contextlib
import gc
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from fsmem._core.layout import FACTS_DIR, HISTORY_DIR, STATE_DIR
from fsmem._memory.facts.kept import VIEW_FILE, KeptView, Listing
from fsmem._store.folder import stamps

__all__ = ["kept_listing"]

_FOLDERS = (FACTS_DIR, HISTORY_DIR)


def _plain_folders(root: Path) -> bool:
    """Whether every folder on the way to the facts folders is a folder, not a link (or missing)."""
    parts = HISTORY_DIR.split("/")
    for end in range(1, len(parts) + 1):
        try:
            info = os.lstat(root.joinpath(*parts[:end]))
        except FileNotFoundError:
            return True  # nothing below: no facts there, which the view's mark says too
        except OSError:
            return False
        if not stat.S_ISDIR(info.st_mode):
            return False
    return True


def kept_listing(root: Path, subject: str | None) -> Listing | None:
    """``fsmem facts list [SUBJECT]`` of the folder ``root`` as the kept view has it, if it vouches."""
    if not _plain_folders(root):
        return None
    view = KeptView(root / STATE_DIR / VIEW_FILE)
    with _collector_paused():
        return view.peek(
            subject,
            lambda: stamps.folders_mark(root, _FOLDERS),
            lambda path: stamps.stamp(root, path),
            version=lambda path: _version(root, path),
        )


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """The cycle collector paused while the view's rows become facts: a listing of every subject
    makes 25,000 of them, none in a cycle, and each collection on the way would walk them all again
    (~5% of the command's instructions at 50,000 facts). Resumed as it was after, and nothing frozen:
    the caller may be a process that lives (a test's runner, a harness calling the shell's main)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _version(root: Path, path: str) -> str | None:
    """The version of what the file holds now (a file kept within its racy window is read and hashed)."""
    from fsmem._core.versions import version_of  # hashlib: only for a file kept a moment ago

    found = stamps.read_stamped(root, [path]).get(path)
    return None if found is None else version_of(found[0])
