"""Facts kept as markdown files with YAML front matter under ``notes/memory/`` (see :mod:`.facts`).

The parts, each on the one below it: :mod:`.facts` (``Facts``: reads, keep, edit, forget, repair),
:mod:`.extraction` (facts proposed from a conversation), :mod:`.view` (the parsed files, the resolved
chains, the looks before each call), :mod:`.problems`, :mod:`.journal` and :mod:`.kept` (derived
files under ``.fsmem/cache/``: the journal of changes, the kept view), :mod:`.files` (the file format).
"""

from fsmem._memory.facts.extraction import PROMPT_FILE, Extraction
from fsmem._memory.facts.facts import Facts, Kept
from fsmem._memory.facts.kept import Listing
from fsmem._memory.facts.problems import Problem

__all__ = ["Facts", "Kept", "Listing", "Problem", "Extraction", "render", "parse", "PROMPT_FILE"]


def __getattr__(name: str) -> object:
    """``parse`` and ``render`` (the file format) bound on first use: PyYAML is not for a listing."""
    if name in ("parse", "render"):
        from fsmem._memory.facts import files

        return getattr(files, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
