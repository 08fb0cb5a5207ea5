"""Waiting for the check after a cold answer (:mod:`fsmem._memory.facts.recheck`) to be done."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from fsmem._core.layout import STATE_DIR
from fsmem._memory.facts.recheck import ASKED_FILE, RUNNING_FILE


def settle(root: Path, timeout: float = 60.0) -> None:
    """Return once no check is owed and none runs (the checkers a cold answer started are done)."""
    state = root / STATE_DIR
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not (state / ASKED_FILE).exists() and _free(state / RUNNING_FILE):
            return
        time.sleep(0.02)
    raise AssertionError(f"the facts check of {root} did not finish in {timeout:g} s")


def _free(lock: Path) -> bool:
    try:
        fd = os.open(lock, os.O_RDWR)
    except FileNotFoundError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True
