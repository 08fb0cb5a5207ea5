"""Waiting for the check after a cold answer (:mod:`fsmem._memory.facts.recheck`) to be done."""

from __future__ import annotations

import time
from pathlib import Path

from fsmem._memory.facts.recheck import settled


def settle(root: Path, timeout: float = 60.0) -> None:
    """Return once no check is owed and none runs (the checkers a cold answer started are done)."""
    deadline = time.monotonic() + timeout
    while not settled(root):
        if time.monotonic() > deadline:
            raise AssertionError(f"the facts check of {root} did not finish in {timeout:g} s")
        time.sleep(0.02)
