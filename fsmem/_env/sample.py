"""The sample project: a small bakery website's memory root, with the records a harness keeps for it.

``sample_project/`` holds only the memory files. A harness builds scopes from its own records (never
from anything a model says); these are the records the demo, the eval and the tests use for it.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from fsmem._env.resources import data_dir
from fsmem._errors import RootNotFound

__all__ = ["RoutineRecord", "AgentRecord", "SAMPLE_DIR", "PROJECT", "SEO", "TITLE_TUNING", "RANK_CHECK", "copy_sample"]

SAMPLE_DIR = data_dir("sample_project")
PROJECT = "Rye & Ember website"


@dataclass(frozen=True)
class RoutineRecord:
    id: str
    name: str


@dataclass(frozen=True)
class AgentRecord:
    id: str
    name: str
    routines: tuple[RoutineRecord, ...] = ()

    def routine(self, name: str) -> RoutineRecord:
        for routine in self.routines:
            if routine.name.lower() == name.lower():
                return routine
        raise KeyError(name)


TITLE_TUNING = RoutineRecord("a27f3b90-1c4d-4e8a-b5f2-6d9e0c3a7b14", "Title tuning")
RANK_CHECK = RoutineRecord("e04c6d15-8b3f-4a27-9c61-f5d2a8e4b093", "Rank check")
SEO = AgentRecord("5c81d0e4-7f2a-4b6e-9d13-2a8c4e6f0b71", "SEO", (TITLE_TUNING, RANK_CHECK))


def copy_sample(destination: Path, source: Path | None = None) -> Path:
    """Copy the sample memory root (without any ``.fsmem`` state) to ``destination``; return it."""
    source = source or SAMPLE_DIR
    if not (source / "MEMORY.md").is_file():
        raise RootNotFound(
            f"no memory root to copy at {source} (it has no MEMORY.md): run from fsmem's source tree, "
            "or pass a memory root with --project"
        )
    shutil.copytree(source, destination, ignore=shutil.ignore_patterns(".fsmem"))
    return destination
