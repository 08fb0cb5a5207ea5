"""A fault of the disk (full, over quota, read-only, failing) as the coded refusal every store and the
search index give: what failed, and whether anything changed."""

from __future__ import annotations

import errno

from fsmem._errors import Storage


def storage_error(doing: str, error: OSError, *, changed: bool | str) -> Storage:
    """The coded refusal for a disk fault: what failed, and whether anything changed."""
    what = {
        errno.ENOSPC: "no space is left on the device",
        errno.EDQUOT: "the disk quota is used up",
        errno.EROFS: "the file system is read-only",
        errno.EIO: "the disk reported an input/output error",
    }.get(error.errno or 0, error.strerror or str(error))
    if changed is False:
        outcome = "nothing was changed"
    elif changed is True:
        outcome = "the change was made, but its log line could not be written"
    else:
        outcome = changed
    problem = Storage(f"{doing} failed: {what}; {outcome}. Free some space or fix the disk, then try again")
    problem.disk_errno = error.errno
    return problem
