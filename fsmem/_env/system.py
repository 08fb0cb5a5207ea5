"""The systems fsmem runs on: Linux and macOS. Elsewhere it says plainly what does not work.

fsmem's promises rest on POSIX file-system calls: opening a file without following a symlink
(``O_NOFOLLOW``, the symlink guard), fsync of a folder after a rename (a crash keeps the old file or the
new one), and private modes (folders 0700, files 0600). Windows lacks them, so ``fsmem.open`` refuses
there with what is missing rather than failing, or guarding less, deep inside a write.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from fsmem._errors import Unsupported

SUPPORTED = "Linux and macOS"


def missing_features(os_name: str | None = None) -> list[str]:
    """What this system (or one whose ``os.name`` is ``os_name``) lacks of what fsmem relies on."""
    missing = []
    if not hasattr(os, "O_NOFOLLOW"):
        missing.append(
            "opening a file without following symlinks (O_NOFOLLOW), which keeps symlinks from leading out of the root"
        )
    if (os_name or os.name) != "posix":
        missing.append("fsync of a folder, which makes a rename survive a crash, and private file modes (0600/0700)")
    return missing


def check_system() -> None:
    """Raise :class:`Unsupported` naming what is missing, when fsmem cannot keep its promises here."""
    missing = missing_features()
    if missing:
        raise Unsupported(
            f"fsmem runs on {SUPPORTED}; this system ({sys.platform}) lacks "
            + "; and ".join(missing)
            + ". Use fsmem from Linux, macOS or WSL"
        )


def release_heap() -> None:
    """Give memory the process freed back to the system (glibc's ``malloc_trim``; elsewhere nothing).
    glibc keeps freed memory in its arenas, so a long-lived process's size would keep the peak of each
    big transient piece of work (a writer's heap, a full comparison's stamps); this costs microseconds
    to a few milliseconds."""
    global _libc
    if _libc is None:
        import ctypes

        try:
            libc = ctypes.CDLL("libc.so.6")  # by name: find_library would run ldconfig
            _libc = libc if hasattr(libc, "malloc_trim") else False  # glibc only
        except OSError:
            _libc = False
    if _libc:
        _libc.malloc_trim(0)


_libc: Any = None  # loaded on the first release_heap (False: not glibc)
