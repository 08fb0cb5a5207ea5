"""Faults under the index's writes: what a commit cut short leaves behind.

A tantivy commit writes each touched segment's tombstones as ``<segment>.<opstamp>.del`` at the
commit's opstamp, then ``meta.json`` naming them. Cut short between the two (a kill, a full disk), it
leaves ``.del`` files past ``meta.json``'s opstamp; the next writer starts from that opstamp, so its
commits take those same names and fail with ``FileAlreadyExists``, and tantivy's garbage collection,
which runs only after a commit succeeds, never removes them. ``sweep_strays`` does, under the writer's
lock, before a batch writes anything.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

_TOMBSTONE = re.compile(r"[0-9a-f]{32}\.(\d+)\.del")


def sweep_strays(folder: Path) -> int:
    """Delete the ``.del`` files past ``meta.json``'s opstamp in one generation; returns how many.

    Only while holding the generation's writer lock: the one writer is the only process that makes
    them, so under its lock none is being made, and no ``meta.json`` ever named one (a reader cannot
    be about to open it).
    """
    try:
        opstamp = json.loads((folder / "meta.json").read_bytes())["opstamp"]
        names = os.listdir(folder)
    except (OSError, ValueError, KeyError, TypeError):
        return 0  # an unreadable meta.json: opening or committing fails, and the index is rebuilt
    swept = 0
    for name in names:
        found = _TOMBSTONE.fullmatch(name)
        if found is not None and int(found.group(1)) > opstamp:
            try:
                os.unlink(folder / name)
                swept += 1
            except FileNotFoundError:
                pass
    return swept
