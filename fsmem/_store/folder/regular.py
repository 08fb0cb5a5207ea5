"""Only regular files are memory: reading one without ever blocking on a FIFO, and refusing the rest.

A FIFO, a character or block device or a socket at a memory path is neither read nor changed: opening
a FIFO for reading would wait for a writer, forever (and the write path reads under the root's lock).
"""

from __future__ import annotations

import os
import stat as stat_module
from pathlib import Path

from fsmem._errors import BadPath, TooLarge

_SPECIAL_KINDS = (
    (stat_module.S_ISFIFO, "a FIFO (named pipe)"),
    (stat_module.S_ISCHR, "a character device"),
    (stat_module.S_ISBLK, "a block device"),
    (stat_module.S_ISSOCK, "a socket"),
)


def not_regular(path: str, mode: int) -> BadPath:
    """The refusal of a path that holds something other than a regular file or a folder."""
    kind = next((name for test, name in _SPECIAL_KINDS if test(mode)), "not a regular file")
    return BadPath(
        f"{path} is {kind}, not a regular file; only regular files are memory, so fsmem neither reads "
        "nor changes it. Use another path (a person can remove it by hand)"
    )


def read_regular(real: Path, path: str, limit: int | None = None) -> bytes | None:
    """``Drive.read`` of a path already resolved (and so guarded) by ``Drive.resolve``: the bytes, or
    None for nothing there (or a folder); ``BadPath`` for what is not a regular file, ``TooLarge`` for
    more than ``limit`` bytes (after reading at most ``limit + 1`` of them)."""
    try:
        # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever, and
        # with the root's lock held (the write path reads the old content under it).
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        return None
    except OSError as error:
        raise BadPath(f"{path!r} cannot be read ({error.strerror}); use a plain file path") from error
    mode = os.fstat(fd).st_mode
    if not stat_module.S_ISREG(mode):
        os.close(fd)
        if stat_module.S_ISDIR(mode):  # os.fdopen would raise on a folder
            return None
        raise not_regular(path, mode)
    with os.fdopen(fd, "rb") as handle:
        if limit is None:
            return handle.read()
        data = handle.read(limit + 1)
        if len(data) > limit:
            size = os.fstat(handle.fileno()).st_size
            raise TooLarge(
                f"{path} is {size:,} bytes, more than the {limit:,} a read shows whole (it was put "
                "there by hand); read part of it with start_line and end_line (say lines 1-200), "
                "or search it"
            )
        return data
