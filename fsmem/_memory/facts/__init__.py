"""Facts kept as markdown files with YAML front matter under ``notes/memory/`` (see :mod:`.facts`).

The parts, each on the one below it: :mod:`.facts` (``Facts``: reads, keep, edit, forget, repair),
:mod:`.extraction` (facts proposed from a conversation), :mod:`.view` (the parsed files, the resolved
chains, the looks before each call), :mod:`.cold` (a new process's listing from the kept view alone),
:mod:`.problems`, :mod:`.journal` and :mod:`.kept` (derived files under ``.fsmem/cache/``: the journal
of changes, the kept view), :mod:`.files` (the file format).

Every name here is bound on first use, from the module that defines it: a new process's `fsmem facts
list` loads the kept view and nothing of the rest (no YAML, no chains, no model client).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fsmem._memory.facts.extraction import PROMPT_FILE, Extraction
    from fsmem._memory.facts.facts import Facts, Kept
    from fsmem._memory.facts.files import parse, render
    from fsmem._memory.facts.kept import Listing
    from fsmem._memory.facts.problems import Problem

__all__ = ["Facts", "Kept", "Listing", "Problem", "Extraction", "render", "parse", "PROMPT_FILE"]

_DEFINED_IN = {
    "Facts": "facts",
    "Kept": "facts",
    "Listing": "kept",
    "Problem": "problems",
    "Extraction": "extraction",
    "PROMPT_FILE": "extraction",
    "parse": "files",
    "render": "files",
}

if not TYPE_CHECKING:  # type checkers see the imports above, so a misspelt name stays an error

    def __getattr__(name: str) -> object:
        if name not in _DEFINED_IN:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{__name__}.{_DEFINED_IN[name]}"), name)
        globals()[name] = value
        return value
