"""The values every store and every caller share: what a listing, a kept version, the log and a
change's findings look like, a whole project's copy and a proposal record. Plain frozen dataclasses,
no I/O (a store makes them; the layers above read them).
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# What tells a file changed without reading it: (size, mtime_ns, inode) here, its version on PostgreSQL.
FactStamp = Hashable


@dataclass(frozen=True)
class Entry:
    """One file or folder as listed for the model."""

    path: str
    is_dir: bool
    size: int
    modified: float


@dataclass(frozen=True)
class VersionInfo:
    """An earlier content of a file, kept when a change replaced or deleted it."""

    path: str
    version: str
    kept_at: str  # ISO time the content was replaced
    command: str  # what replaced it: write, delete, rename, revert, ...
    size: int
    file: Path | None = None  # where a folder keeps it (None in a database: ``store.read_version``)


@dataclass(frozen=True)
class Parked:
    """A level folder a ``deleting_*`` block moved aside: where it came from, its kept identity, where it is."""

    origin: str
    identity: bytes | None
    kept_at: str


@dataclass(frozen=True)
class HandEdit:
    """A person's save that landed while a change was being made: kept in versions/, never lost."""

    path: str
    version: str | None  # the hash of what the person saved, the name it is kept under (None: removed)
    replaced: str | None  # the version their save replaced

    def to_dict(self) -> dict[str, str | None]:
        return {"path": self.path, "version": self.version, "replaced": self.replaced}


@dataclass(frozen=True)
class LogEntry:
    time: str
    command: str
    path: str
    before: str | None
    after: str | None
    thread: str | None
    new_path: str | None = None

    @classmethod
    def from_json(cls, line: str) -> LogEntry:
        data = json.loads(line)
        return cls(
            time=data["time"],
            command=data["command"],
            path=data["path"],
            before=data.get("before"),
            after=data.get("after"),
            thread=data.get("thread"),
            new_path=data.get("new_path"),
        )


def log_line(entry: LogEntry) -> str:
    """An entry as its line of log.jsonl (``LogEntry.from_json`` reads it back)."""
    line: dict[str, str | bool | None] = {
        "time": entry.time,
        "command": entry.command,
        "path": entry.path,
        "before": entry.before,
        "after": entry.after,
        "thread": entry.thread,
    }
    if entry.command == "hand":
        line["hand"] = True  # a person's save found under a change; kept in versions/
    if entry.new_path is not None:
        line["new_path"] = entry.new_path
    return json.dumps(line, ensure_ascii=False)


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class ChangeProposal:
    """A change a review-mode run left for a person, and what each file held when it was made."""

    id: str
    made_at: str
    thread: str | None
    scope: str
    request: dict[str, Any]
    base: dict[str, str | None]  # path -> version it held (None: did not exist)
    summary: str
    diff: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BrokenProposal:
    """A kept proposal that cannot be read as one (cut short, edited by hand, a link, …): listed with
    what is wrong, never applied, left as it is until a person mends or discards it."""

    id: str
    problem: str  # "it is not JSON (Expecting value at line 1, column 1)", said for a person


# ---- copy -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CopiedFile:
    path: str
    data: bytes
    modified: float  # seconds since the epoch


@dataclass(frozen=True)
class CopiedVersion:
    """A kept version with its bytes, as ``export_project`` reads it."""

    path: str
    version: str
    kept_at: str  # ISO time, as ``VersionInfo.kept_at``
    command: str
    data: bytes


@dataclass(frozen=True)
class ProjectCopy:
    """Everything a project holds, read at one moment: ``Store.export_project`` gives it,
    ``Store.import_project`` writes it (all or nothing, into a store that holds no memory yet).

    ``versions`` are oldest first (per path, the order ``versions()`` shows reversed); ``log`` in its
    order. ``skipped`` names what the source held that is not memory (not copied)."""

    files: list[CopiedFile]
    versions: list[CopiedVersion]
    log: list[LogEntry]
    proposals: list[dict[str, Any]]  # records, as ``save_proposal`` takes them
    skipped: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.files or self.versions or self.log or self.proposals)
