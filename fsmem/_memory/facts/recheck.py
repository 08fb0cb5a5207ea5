"""The check after a new process's answer from the kept view: what the facts folders' mark cannot
tell (a person's save in place of a fact file the answer did not stat) is looked for by a detached
process, so it shows from the next answer on and never lasts.

    ask_recheck(root)                      # the answering process, after its answer: about 1 ms
    python -m fsmem._memory.facts.recheck ROOT   # the check: every file's stamp against the view

The check compares every fact file's stamp with the view (one ``scandir`` pass); where they differ,
it looks at the files as any process would (parsing only what changed, resolving only the chains that
changed) and brings the view up to them. Every answer is followed by a check that starts after it:
an answering process marks ``.fsmem/cache/facts.recheck`` ("asked") and starts a checker unless one
runs; a running checker sees the mark and checks again before it stops. So a burst of answers costs
one checker at a time, and a person's save shows in the answers that follow the check after it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from fsmem._core.layout import STATE_DIR

__all__ = ["ask_recheck", "recheck", "settled", "ASKED_FILE", "RUNNING_FILE"]

ASKED_FILE = "cache/facts.recheck"  # under .fsmem/: exists while a check is owed
RUNNING_FILE = "cache/facts.recheck.lock"  # locked (flock) while a checker runs


def _own(file: Path, flags: int) -> int:
    """``file`` opened (made where missing), never through a link: a link or anything else in its
    place is removed first, so nothing planted there can turn the checks off."""
    try:
        return os.open(file, flags | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError:
        os.unlink(file)
        return os.open(file, flags | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)


def _asked(state: Path) -> None:
    os.close(_own(state / ASKED_FILE, os.O_WRONLY))


def _lock(state: Path) -> int | None:
    """The checker's lock, taken without waiting; None where another checker holds it."""
    import fcntl

    fd = _own(state / RUNNING_FILE, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def ask_recheck(root: Path) -> None:
    """After an answer from the kept view of the folder ``root``: owe a check, and start a checker
    unless one runs (it then checks again before it stops). Never raises: the answer stands."""
    state = root / STATE_DIR
    try:
        _asked(state)  # first: a checker that stops after this sees it
        fd = _lock(state)
        if fd is None:
            return  # a checker runs: it sees the mark before it stops
        os.close(fd)  # the checker takes it itself
        _start_checker(root)
    except OSError:
        pass


def settled(root: Path) -> bool:
    """Whether no check is owed and none runs (every answer's check is done): for tests and the bench."""
    state = root / STATE_DIR
    if (state / ASKED_FILE).exists():
        return False
    fd = _lock(state)
    if fd is None:
        return False
    os.close(fd)
    return True


def _start_checker(root: Path) -> None:
    """A checker in a session of its own, its output nowhere, not waited for (it may outlive this
    process)."""
    from fsmem._env.system import python_module, start_detached

    start_detached(python_module("fsmem._memory.facts.recheck", str(root)), os.environ)


def recheck(root: Path) -> None:
    """Check the kept view of the folder ``root`` against every file while a check is owed: where it
    disagrees, look at the files and bring it up to them. Returns at once where another checker runs."""
    from fsmem._env.config import load_settings
    from fsmem._memory.facts.view import FactView
    from fsmem._store.folder.drive import Drive

    state = root / STATE_DIR
    while True:
        fd = _lock(state)
        if fd is None:
            return
        try:
            while (state / ASKED_FILE).exists():
                os.unlink(state / ASKED_FILE)  # before the look: an answer after this asks again
                FactView(Drive(root, load_settings(root))).listing(None)  # every file's stamp; a look where they differ
        finally:
            os.close(fd)
        if not (state / ASKED_FILE).exists():
            return  # nothing asked between the last look and the lock let go


if __name__ == "__main__":
    try:
        recheck(Path(sys.argv[1]))
    except Exception:  # noqa: BLE001 - a check that cannot run leaves the view as it was: the next answer asks again
        sys.exit(1)
