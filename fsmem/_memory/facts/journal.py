"""The journal of fact changes through fsmem, ``.fsmem/cache/facts.journal`` (derived, deletable): one
line a change, naming the fact files it touched and the facts folders' stamps before and after it.
A view that finds each change started from the stamps the one before left can follow the journal
instead of looking at every file; anything else (a hand edit between two changes, a torn line, a reset
journal) calls for the full look."""

from __future__ import annotations

import json
import os
from collections.abc import Hashable, Iterable
from pathlib import Path
from typing import Any

from fsmem._core import facts as rules
from fsmem._store.atomic import write_atomic

__all__ = ["JOURNAL_FILE", "JOURNAL_LIMIT", "journal_end", "journal_since", "append"]

JOURNAL_FILE = "cache/facts.journal"  # under .fsmem/: one line a change through fsmem (derived, deletable)
JOURNAL_LIMIT = 1 << 20  # bytes; a change finding the journal longer starts a new one


def journal_end(journal_file: Path) -> tuple[int, int]:
    """Which journal file (its inode: a reset makes a new one) and how long it is."""
    try:
        info = os.stat(journal_file)
    except OSError:
        return (0, 0)
    return (info.st_ino, info.st_size)


def journal_since(
    journal_file: Path, journal: tuple[int, int], read: tuple[int, int], folders: Hashable
) -> tuple[set[str], Hashable | None] | None:
    """The fact files changes through fsmem touched between ``read`` (the journal's inode and how far a
    view read it, when the folders' stamps were ``folders``) and ``journal`` (its end now), and the
    folders' stamps after them; None unless each change started from the stamps the one before left."""
    state, touched = folders, set[str]()
    (inode, end), (read_inode, start) = journal, read
    if inode != read_inode or end < start:
        return None  # the journal was reset since: start over
    if end == start:
        return touched, state
    try:
        with open(journal_file, "rb") as handle:
            if os.fstat(handle.fileno()).st_ino != inode:
                return None
            handle.seek(start)
            lines = handle.read(end - start).split(b"\n")
    except OSError:
        return None
    for line in lines:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            before = _mark(record["before"])
            after = _mark(record["after"])
            paths = record["paths"]
        except (ValueError, KeyError, TypeError):
            return None  # a line being appended, or torn by a crash
        if before != state:
            return None
        state = after
        touched.update(path for path in paths if isinstance(path, str) and rules.fact_id_of_path(path))
    return touched, state


def append(
    journal_file: Path, before: Hashable | None, after: Hashable, paths: Iterable[str]
) -> tuple[int, int] | None:
    """Add a change's line (under the root lock); the journal's inode and length after it, or None when
    it cannot be written (other views then fall back to the full look)."""
    line = json.dumps({"before": before, "after": after, "paths": sorted(paths)}) + "\n"
    try:
        journal_file.parent.mkdir(parents=True, exist_ok=True)
        if journal_end(journal_file)[1] > JOURNAL_LIMIT:  # start a new file: other views look at all once
            write_atomic(journal_file, b"", durable=False)
        fd = os.open(journal_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, line.encode("utf-8"))
            info = os.fstat(fd)
        finally:
            os.close(fd)
    except OSError:
        return None
    return (info.st_ino, info.st_size)


def _mark(value: Any) -> Hashable:
    """A folders' mark as the journal's JSON gave it back: its lists as tuples again."""
    return tuple(_mark(item) for item in value) if isinstance(value, list) else value
