"""Level folders parked by a ``deleting_*`` block: moved aside into ``.fsmem/deleting-<pid>-…/``.

A block that deletes a level folder first moves it aside (``folder`` there, and ``from`` saying where
it came from), so the block sees it gone; when the block succeeds it is deleted with its versions kept,
when it fails it goes back. A process that dies inside the block leaves it parked; the next open puts
it back (``restore_parked``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from fsmem._core.layout import LEVEL_IDENTITY_FILE
from fsmem._errors import LevelParked
from fsmem._store.atomic import pid_alive

if TYPE_CHECKING:  # types only: every open asks parking, a read never needs the change (nor a parked record)
    from fsmem._store.folder.change import Change
    from fsmem._store.types import Parked

PARKED_PREFIX = "deleting-"  # under .fsmem/: a level folder moved aside by a ``deleting_*`` block


class Folder(Protocol):
    """What parking needs of the folder (``Drive``): where it is, its lock, a change."""

    root: Path
    state: Path

    def locked(self, command: str = "lock") -> AbstractContextManager[None]: ...
    def change(self, command: str, thread: str | None = None) -> AbstractContextManager[Change]: ...


def parked(state: Path) -> list[Parked]:
    """Each folder moved aside by a ``deleting_*`` block now (of any process)."""
    from fsmem._store.types import Parked  # every open asks; a folder is rarely parked

    found = []
    for aside in sorted(state.glob(f"{PARKED_PREFIX}*")):
        try:
            origin = (aside / "from").read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # a block between making its place and writing where the folder came from
        try:
            identity: bytes | None = (aside / "folder" / LEVEL_IDENTITY_FILE).read_bytes()
        except OSError:
            identity = None
        found.append(Parked(origin, identity, str(aside / "folder")))
    return found


@contextlib.contextmanager
def deleting(drive: Folder, folder: str, command: str) -> Iterator[None]:
    """Move the folder aside for the block; delete it (versions kept, logged as ``command``) if the
    block succeeds, put it back if not.

    The place aside is removed only once the folder is really back, or really deleted with its
    versions kept; a folder that cannot go back stays there, whole, and ``LevelParked`` says where.
    """
    import shutil  # a level's delete is rare; every open asks parking (``restore_parked``), so only here
    import tempfile

    aside = Path(tempfile.mkdtemp(prefix=f"{PARKED_PREFIX}{os.getpid()}-", dir=drive.state))
    (aside / "from").write_text(folder, encoding="utf-8")
    parked = aside / "folder"
    try:
        with drive.locked():
            (drive.root / folder).rename(parked)
        try:
            yield
        except BaseException:
            with drive.locked():
                _put_back(drive.root, parked, folder)
            raise
        with drive.change(command) as tx:
            _put_back(drive.root, parked, folder)
            tx.delete(folder)
    finally:
        if not os.path.lexists(parked):  # back in place, or deleted with its versions: nothing left to keep
            shutil.rmtree(aside, ignore_errors=True)


def _put_back(root: Path, parked: Path, folder: str) -> None:
    """Move a parked folder back where it came from (the lock held); on failure it stays parked."""
    try:
        parked.rename(root / folder)
    except OSError as error:
        raise LevelParked(
            f"could not put {folder} back ({error.strerror or error}): something now stands at {folder}; "
            f"its content is kept, whole, at {parked}; move it back by hand (or merge the two) and delete again",
            folder=folder,
            kept_at=str(parked),
        ) from error


def restore_parked(drive: Folder) -> list[str]:
    """Put back folders parked by a ``deleting_*`` block whose process died before the block ended.

    A folder whose place is taken stays parked (never dropped): fsmem never makes a folder there for
    the same id while it is parked, so only a person's hand can take it, and a person can move it back.
    """
    restored = []
    for aside in drive.state.glob(f"{PARKED_PREFIX}*"):
        pid = aside.name[len(PARKED_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and pid_alive(int(pid)):
            continue
        parked, origin = aside / "folder", aside / "from"
        if parked.is_dir() and origin.is_file():
            folder = origin.read_text(encoding="utf-8")
            with drive.locked():
                if not (drive.root / folder).exists():
                    try:
                        parked.rename(drive.root / folder)
                        restored.append(folder)
                    except OSError:
                        pass  # its parent gone, the disk failing: it stays parked for a person
        if not os.path.lexists(parked):
            import shutil  # only once a dead block left something parked

            shutil.rmtree(aside, ignore_errors=True)
    return restored
