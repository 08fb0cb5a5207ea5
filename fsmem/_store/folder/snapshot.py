"""A whole project out of a folder and into a new one (``fsmem/_memory/copy.py`` moves it between stores).

``export_project`` reads every memory file, level identity, kept version, log entry and proposal under
the root's lock; ``import_project`` makes a root from them in a temp folder beside it and renames it
into place at the end, so the new root is whole or absent, never half made; a copy killed before the
end leaves its temp folder, which the next copy into that root removes.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import stat as stat_module
import tempfile
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path

from fsmem._core.layout import LEVEL_IDENTITY_FILE, STATE_DIR
from fsmem._core.paths import is_memory_file_name
from fsmem._core.versions import version_of
from fsmem._env.config import Settings
from fsmem._errors import BadPath, BadProposal, BadRequest, Exists, RootNotFound
from fsmem._store.atomic import fsync_dir, make_dirs, place_new, write_atomic
from fsmem._store.disk_faults import storage_error
from fsmem._store.folder import history, proposals
from fsmem._store.folder.history import LOG_FILE, VERSIONS_DIR, format_stamp
from fsmem._store.folder.ondisk import is_utf8, nfc
from fsmem._store.folder.regular import read_regular
from fsmem._store.folder.root import init_root
from fsmem._store.types import CopiedFile, CopiedVersion, ProjectCopy, log_line


def export_project(root: Path, state: Path, locked: Callable[[str], AbstractContextManager[None]]) -> ProjectCopy:
    """Every memory file (and each level folder's identity file), kept version, log entry and
    proposal, read under the root's lock (``locked``, when the root has one) so no change lands halfway."""
    if not root.is_dir():
        raise RootNotFound(f"there is no folder {root} to copy; check the path")
    with locked("copy") if state.is_dir() else contextlib.nullcontext():
        files, skipped = _export_files(root)
        live = {file.path: version_of(file.data) for file in files}
        versions = _export_versions(state, live, skipped)
        return ProjectCopy(files, versions, list(history.log(state)), _export_proposals(state), sorted(skipped))


def _export_versions(state: Path, live: dict[str, str], skipped: list[str]) -> list[CopiedVersion]:
    """Every kept version, oldest first, as `fsmem versions` lists them: a live copy the file still holds
    (``live``: each file's version now) is the file, not a version; one a person saved over is a
    version replaced by hand. What ``Change`` never makes (a link, a FIFO, a name that is not a kept
    version's or not UTF-8) is not copied and is named in ``skipped``; a dot-name is a crash's temp
    file, and left out unnamed."""
    versions: list[CopiedVersion] = []
    versions_root = state / VERSIONS_DIR
    if versions_root.is_symlink():
        skipped.append(f"{STATE_DIR}/{VERSIONS_DIR}")
        return versions
    for folder, folders, names in os.walk(versions_root):  # never into a link (followlinks is off)
        here = Path(folder)
        path = nfc(here.relative_to(versions_root).as_posix())
        for name in folders:
            if (here / name).is_symlink() or not is_utf8(name):
                skipped.append(_readable(f"{STATE_DIR}/{VERSIONS_DIR}/{path}/{name}".replace("/./", "/")))
        folders[:] = sorted(name for name in folders if not (here / name).is_symlink() and is_utf8(name))
        for name in sorted(names):
            parsed = history.kept_name(name)
            if name.startswith(".") and parsed is None:
                continue
            where = f"{STATE_DIR}/{VERSIONS_DIR}/{path}/{name}".replace("/./", "/")
            if parsed is None or not stat_module.S_ISREG(os.lstat(here / name).st_mode):
                skipped.append(_readable(where))
                continue
            kept_at, version, command = parsed
            listed = history.listed_command(command, version, live.get(path))
            if listed is None:
                continue
            try:
                data = read_regular(here / name, where)
            except BadPath as error:  # swapped for a FIFO since, or one fsmem may not read
                raise BadPath(f"{where} cannot be read; nothing was copied. {error.message}") from error
            if data is not None:
                versions.append(CopiedVersion(path, version, kept_at, listed, data))
    versions.sort(key=lambda kept: kept.kept_at)  # stable: each path's own order stays
    return versions


def _export_proposals(state: Path) -> list[dict[str, object]]:
    """Every proposal record; one that cannot be read as one stops the copy (``BAD_PROPOSAL``, naming
    its file), so a copy never leaves out or changes what a person may still want."""
    records = []
    for found in proposals.proposal_ids(state):
        try:
            record = proposals.load_proposal(state, found)
        except BadProposal as error:
            raise BadProposal(
                f"{state / proposals.PROPOSALS_DIR / found}.json is not a proposal fsmem can copy: "
                f"{error.details['problem']}; nothing was copied. Mend it, or drop it with "
                f"`fsmem proposals discard {found}`, then copy again",
                **error.details,
            ) from error
        if record is not None:
            records.append(record)
    return records


def _readable(path: str) -> str:
    """A path as a listing shows it, whatever bytes its name holds."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _export_files(root: Path) -> tuple[list[CopiedFile], list[str]]:
    files: list[CopiedFile] = []
    skipped: list[str] = []
    for folder, folders, names in os.walk(root):
        here = Path(folder)
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        for name in [name for name in folders if not is_utf8(name)]:
            folders.remove(name)
            skipped.append(
                (here / name).relative_to(root).as_posix().encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            )
        for name in list(folders):
            if (here / name).is_symlink():
                folders.remove(name)
                skipped.append(nfc((here / name).relative_to(root).as_posix()))
        for name in sorted(names):
            path = nfc((here / name).relative_to(root).as_posix())
            if not is_utf8(path):  # a name no store can hold (nor a tool call name): listed, shown readable
                skipped.append(path.encode("utf-8", "surrogateescape").decode("utf-8", "replace"))
                continue
            if name.startswith(".") and name != LEVEL_IDENTITY_FILE:
                continue  # an editor's swap file, a crash's temp file: never memory
            info = os.lstat(here / name)
            if not stat_module.S_ISREG(info.st_mode) or not (is_memory_file_name(name) or name == LEVEL_IDENTITY_FILE):
                skipped.append(path)
                continue
            data = read_regular(here / name, path)
            if data is not None:
                files.append(CopiedFile(path, data, info.st_mtime))
    return sorted(files, key=lambda file: file.path), sorted(skipped)


def import_project(root: Path, settings: Settings, copy: ProjectCopy) -> None:
    """Make ``root`` from ``copy``: written into a temp folder beside it and renamed into place at the
    end, so the root is whole or absent, never half made. Refuses (``EXISTS``) a root that is there and
    not empty."""
    if os.path.lexists(root) and (not root.is_dir() or any(os.scandir(root))):
        raise Exists(
            f"{root} already exists and is not empty; copy into a new folder (fsmem copy makes it: "
            "no `fsmem init` needed), or remove it first"
        )
    for file in copy.files:
        _check_copied_path(file.path)
    for kept in copy.versions:
        _check_copied_path(kept.path)
    try:
        root.parent.mkdir(parents=True, exist_ok=True)
        temp, held = _temp_beside(root)
    except OSError as error:
        raise storage_error(f"making {root}", error, changed=False) from error
    try:
        for file in copy.files:
            target = temp / file.path
            make_dirs(target.parent)
            write_atomic(target, file.data, durable=False)
            os.utime(target, (file.modified, file.modified))
        init_root(temp)  # .fsmem/ as `fsmem init` makes it (and MEMORY.md, if the copy had none)
        last: dict[str, int] = {}
        for kept in copy.versions:  # oldest first: each path's stamps must rise, as new_stamp() makes them
            micros = max(_iso_to_micros(kept.kept_at), last.get(kept.path, -1) + 1)
            last[kept.path] = micros
            folder = temp / STATE_DIR / VERSIONS_DIR / kept.path
            make_dirs(folder)
            write_atomic(folder / f"{format_stamp(micros)}-{kept.version}-{kept.command}.md", kept.data, durable=False)
        for record in copy.proposals:
            proposals.save_proposal(temp / STATE_DIR, record, durable=False)
        if copy.log:
            lines = "".join(log_line(entry) + "\n" for entry in copy.log)
            write_atomic(temp / STATE_DIR / LOG_FILE, lines.encode("utf-8"), durable=False)
        if settings.durable:
            os.sync()  # once for every file above, before the rename makes them the root
        if os.path.isdir(root) and not os.path.islink(root):
            os.rmdir(root)  # empty (checked above): the rename below never replaces
        if not place_new(temp, root):
            raise Exists(f"{root} appeared while copying; nothing was changed there")
        if settings.durable:
            fsync_dir(root.parent)
    except OSError as error:
        shutil.rmtree(temp, ignore_errors=True)
        raise storage_error(f"copying into {root}", error, changed=False) from error
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    finally:
        os.close(held)  # lets go of the temp folder's flock


def _temp_beside(root: Path) -> tuple[Path, int]:
    """A new temp folder ``.<root name>.copy-XXXXXXXX`` beside ``root``, flocked by this copy until it
    ends (the kernel lets go when a copy is killed), and the descriptor that holds it. Leftovers of
    killed copies into the same root go first: folders of that exact name whose flock is free. The
    parent's flock, held while sweeping and making, keeps a sweep from meeting a temp folder made
    but not yet locked."""
    parent = os.open(root.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(parent, fcntl.LOCK_EX)
        pattern = re.compile(rf"\.{re.escape(root.name)}\.copy-[a-z0-9_]{{8}}")  # tempfile.mkdtemp's names
        for entry in os.scandir(root.parent):
            if pattern.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False) and _free(entry.path):
                shutil.rmtree(entry.path, ignore_errors=True)
        temp = tempfile.mkdtemp(prefix=f".{root.name}.copy-", dir=root.parent)
        held = os.open(temp, os.O_RDONLY | os.O_DIRECTORY)
        fcntl.flock(held, fcntl.LOCK_EX)
        return Path(temp), held
    finally:
        os.close(parent)


def _free(folder: str) -> bool:
    """Whether no running copy holds ``folder`` (its flock is free)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def _iso_to_micros(moment: str) -> int:
    """Microseconds since the epoch of an ISO time as the log and kept versions write it."""
    try:
        parsed = datetime.fromisoformat(moment.replace("Z", "+00:00"))
    except ValueError as error:
        raise BadRequest(
            f"{moment!r} is not a time fsmem wrote (ISO 8601, e.g. 2026-12-01T17:06:21.000000Z)"
        ) from error
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    delta = parsed - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _check_copied_path(path: str) -> None:
    """Refuse a path from another store that could lead out of the root or into its state."""
    parts = path.split("/")
    if (
        not path
        or any(part in ("", ".", "..") or "\\" in part or "\0" in part for part in parts)
        or parts[0] == STATE_DIR
    ):
        raise BadPath(f"the source holds a path fsmem cannot place in a folder ({path!r}); nothing was copied")
