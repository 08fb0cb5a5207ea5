"""Faults under the index's writes: what a commit cut short leaves behind, and which errors are the disk's.

A tantivy commit writes each touched segment's tombstones as ``<segment>.<opstamp>.del`` at the
commit's opstamp, then ``meta.json`` naming them. Cut short between the two (a kill, a full disk), it
leaves ``.del`` files past ``meta.json``'s opstamp; the next writer starts from that opstamp, so its
commits take those same names and fail with ``FileAlreadyExists``, and tantivy's garbage collection,
which runs only after a commit succeeds, never removes them. ``sweep_strays`` does, under the writer's
lock, before a batch writes anything.

A disk fault (no space, no quota, an I/O error) reaches the index as an ``OSError`` from Python's side
or as a tantivy ``ValueError`` naming the system's error; ``disk_fault`` words either as the stores
word theirs (``STORAGE``), so a search can answer from the last commit or refuse with a code.
"""

from __future__ import annotations

import errno
import json
import os
import re
from pathlib import Path

from fsmem._errors import Storage
from fsmem._store.disk_faults import storage_error

# No space, no quota, a failing disk. A read-only root is not here: it is searched without the index
# (``Memory.search``), from the store's own refusal.
DISK_FAULTS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO})

_TOMBSTONE = re.compile(r"[0-9a-f]{32}\.(\d+)\.del")
_OS_ERROR = re.compile(r"\(os error (\d+)\)")  # how tantivy's errors carry the system's


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


def disk_fault(error: BaseException, doing: str) -> Storage | None:
    """``error`` as the coded refusal for a disk fault (``doing`` says what failed), or ``None`` when
    it is no disk fault: the store's own ``Storage`` for its disk (not a read-only root's), an
    ``OSError``, or a tantivy error carrying one. A store that did not answer (a database down or
    restarting, a folder gone) is no disk fault: what changed since the last commit is unknown, so a
    search is refused, never answered from that commit."""
    if isinstance(error, Storage):
        return error if error.disk_errno in DISK_FAULTS else None
    if isinstance(error, OSError):
        return storage_error(doing, error, changed=False) if error.errno in DISK_FAULTS else None
    if isinstance(error, ValueError):
        found = _OS_ERROR.search(str(error))
        if found is not None and int(found.group(1)) in DISK_FAULTS:
            number = int(found.group(1))
            return storage_error(doing, OSError(number, os.strerror(number)), changed=False)
    return None
