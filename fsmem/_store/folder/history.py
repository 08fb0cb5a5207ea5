"""What a folder remembers of its changes: kept versions and the log, as they lie under ``.fsmem/``.

``versions/<path>/<time>-<version>-<command>.md`` holds a file's earlier contents (``<time>`` is a
``new_stamp()``: sortable, strictly increasing within a process; ``<command>`` the change that replaced
it); ``log.jsonl`` holds one line a change (``fsmem._store.types.LogEntry``). ``Change`` writes both;
this module reads them.

Beside them, ``<time>-<version>-live.md`` is the file's live copy: what fsmem last wrote there, kept
as it wrote it, so a content fsmem acknowledged is never the file's alone. While the file still holds
it, it is the file and is not listed; when the next change replaces it, it is renamed to the kept
version that change makes; when a person saved over it unseen (or removed the file), it is listed as
a version replaced by hand.
"""

from __future__ import annotations

import json
import os
import re
import stat as stat_module
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from fsmem._errors import NotFound
from fsmem._store.folder.ondisk import is_utf8
from fsmem._store.folder.regular import read_regular
from fsmem._store.types import LogEntry, VersionInfo

VERSIONS_DIR = "versions"
VERSION_NAME = re.compile(r"(\d{8}T\d{12}Z)-([0-9a-f]+)-([^/\0]+)\.md")  # "<time>-<version>-<command>.md" (_keep)
LIVE = "live"  # the command part of a live copy's name
LOG_FILE = "log.jsonl"
LOG_TAIL_BLOCK = 1 << 16


def kept_name(name: str) -> tuple[str, str, str] | None:
    """``(kept_at, version, command)`` of a name ``Change`` gives a kept version or a live copy; None for
    any other name (a crash's temp file, a file a person or a tool put there, a name that is not UTF-8)."""
    match = VERSION_NAME.fullmatch(name)
    if match is None or not is_utf8(name):
        return None
    stamp, version, command = match.groups()
    kept_at = stamp_to_iso(stamp)
    return None if kept_at == stamp else (kept_at, version, command)


def versions_folder(state: Path, path: str) -> Path | None:
    """The folder holding the kept versions of ``path``, or None if there is none: a link on the way
    there (planted by hand) is no folder fsmem made, and is never followed out of ``state``."""
    top = state / VERSIONS_DIR
    folder = top / path
    try:
        if not folder.is_dir() or folder.resolve() != top.resolve() / path:
            return None
    except (OSError, RuntimeError):  # a link loop, a part that cannot be read
        return None
    return folder


def versions(state: Path, path: str, current: str | None) -> list[VersionInfo]:
    """Earlier contents of a file kept under ``state``, newest first: only regular files named as fsmem
    names them (a folder's files keep their own versions; anything else there is not a kept version).
    ``current`` is the version the file holds now (``None``: no file), whose live copy is the file
    itself, not an earlier content."""
    folder = versions_folder(state, path)
    if folder is None:
        return []
    kept = []
    for item in sorted(folder.iterdir(), reverse=True):
        parsed = kept_name(item.name)
        try:
            info = item.lstat()
        except OSError:
            continue  # trimmed by another change since the listing
        if parsed is None or not stat_module.S_ISREG(info.st_mode):
            continue
        kept_at, version, command = parsed
        listed = listed_command(command, version, current)
        if listed is not None:
            kept.append(VersionInfo(path, version, kept_at, listed, info.st_size, item))
    return kept


def listed_command(command: str, version: str, current: str | None) -> str | None:
    """The command a kept file is listed under, or ``None`` when it is no earlier content: a live copy
    the file still holds (``current``) is the file itself; one it no longer holds was replaced by hand
    (a person saved over it, or removed the file, unseen since)."""
    if command != LIVE:
        return command
    return None if version == current else "hand"


def live_name(version: str) -> str:
    """The name of a new live copy of ``version``."""
    return f"{new_stamp()}-{version}-{LIVE}.md"


def live_copies(folder: Path) -> list[tuple[str, str]]:
    """The live copies in a file's versions folder, as (name, version): one, or none (more only
    after a crash between two steps of a change)."""
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [(name, parsed[1]) for name in names if (parsed := kept_name(name)) and parsed[2] == LIVE]


def read_version(kept: VersionInfo) -> bytes:
    data = None if kept.file is None else read_regular(kept.file, f"{VERSIONS_DIR}/{kept.path}/{kept.file.name}")
    if data is None:
        raise NotFound(f"version {kept.version} of {kept.path} is not kept in this folder")
    return data


def log(state: Path) -> Iterator[LogEntry]:
    """Every entry of the log, oldest first; a line torn by a crash is skipped."""
    log_file = state / LOG_FILE
    if not log_file.exists():
        return
    with open(log_file, encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                yield LogEntry.from_json(line)
            except (ValueError, KeyError, TypeError):
                continue  # a line torn by a crash in the middle of its append


def last_change(state: Path, path: str) -> LogEntry | None:
    """The newest log entry that changed ``path``, read from the end of the log."""
    needle = json.dumps(path, ensure_ascii=False)  # as the log writes it
    for line in _lines_from_end(state / LOG_FILE):
        if needle not in line:
            continue
        try:
            entry = LogEntry.from_json(line)
        except (ValueError, KeyError, TypeError):
            continue  # a line torn by a crash in the middle of its append
        if path in (entry.path, entry.new_path):
            return entry
    return None


def _lines_from_end(file: Path) -> Iterator[str]:
    """The lines of a UTF-8 file, last first, reading it backwards a block at a time."""
    block = LOG_TAIL_BLOCK
    try:
        handle = open(file, "rb")
    except FileNotFoundError:
        return
    with handle:
        end = handle.seek(0, os.SEEK_END)
        rest = b""
        while end > 0:
            start = max(0, end - block)
            handle.seek(start)
            chunk = handle.read(end - start) + rest
            end = start
            lines = chunk.split(b"\n")
            rest = lines.pop(0) if start > 0 else b""  # may continue in the block before
            for line in reversed(lines):
                if line.strip():
                    yield line.decode("utf-8", "replace")
        if rest.strip():
            yield rest.decode("utf-8", "replace")


# ---- the stamps in kept versions' names -------------------------------------------------------------

_last_stamp = 0


def new_stamp() -> str:
    """A sortable UTC time to the microsecond, strictly increasing within this process."""
    global _last_stamp
    micros = max(time.time_ns() // 1000, _last_stamp + 1)
    _last_stamp = micros
    return format_stamp(micros)


def format_stamp(micros: int) -> str:
    moment = datetime.fromtimestamp(micros / 1_000_000, UTC)
    return moment.strftime("%Y%m%dT%H%M%S") + f"{micros % 1_000_000:06d}Z"


def stamp_to_iso(stamp: str) -> str:
    try:
        moment = datetime.strptime(stamp[:15], "%Y%m%dT%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        return stamp
    return moment.isoformat().replace("+00:00", "") + f".{stamp[15:21]}Z"
