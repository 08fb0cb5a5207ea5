"""Facts kept as markdown files with YAML front matter under ``notes/memory/`` (see :mod:`.facts`).

The parts, each on the one below it: :mod:`.facts` (``Facts``: reads, keep, edit, forget, repair),
:mod:`.extraction` (facts proposed from a conversation), :mod:`.view` (the parsed files, the resolved
chains, the looks before each call), :mod:`.cold` (a new process's listing from the kept view alone),
:mod:`.problems`, :mod:`.journal` and :mod:`.kept` (derived files under ``.fsmem/cache/``: the journal
of changes, the kept view), :mod:`.files` (the file format).

Callers import each name from the module that defines it, so a new process's `fsmem facts list`
loads the kept view and nothing of the rest (no YAML, no chains, no model client).
"""
