"""What one fact file held when read (``Read``, keyed by the store's stamp of the file), and the derived
parse cache ``.fsmem/cache/facts.json`` that saves a new process the parsing: one row a file, anything
odd in it means no cache (every file is parsed again)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from fsmem._core import facts as rules
from fsmem._core.facts import Fact
from fsmem._store.types import FactStamp

__all__ = ["CACHE_FILE", "CACHE_FORMAT", "Read", "read_cache", "write_cache"]

CACHE_FILE = "cache/facts.json"  # under .fsmem/: derived, deletable, saves a new process the parsing
CACHE_FORMAT = 2  # one row a file: path, stamp, then the fact's fields in the order of Fact's


@dataclass(frozen=True)
class Read:
    stamp: FactStamp  # the store's: (size, mtime_ns, inode) on the folder, the version on PostgreSQL
    location: rules.Location | None = None
    fact: Fact | None = None
    problem: str | None = None  # why the file is no usable fact; then:
    mended: Fact | None = None  # the fact it holds once its id is taken from its name (fsmem check --repair)
    subject: str | None = None  # the subject its front matter names, where it can be read


def read_cache(cache_file: Path) -> dict[str, Read]:
    """Parsed facts a previous process saved, keyed by file stamp; anything odd means no cache."""
    try:
        data = json.loads(cache_file.read_bytes())
        if data.get("format") != CACHE_FORMAT:
            return {}
        when = datetime.fromisoformat
        found: dict[str, Read] = {}
        for path, stamp, fid, subject, attribute, text, source, said, kept, edited, replaces, by, until in data[
            "files"
        ]:
            place = rules.fact_id_of_path(path)
            if place is None or place[0] != fid:
                return {}
            if isinstance(stamp, list) and len(stamp) == 3:
                stamp = tuple(stamp)  # the folder's (size, mtime_ns, inode)
            elif not isinstance(stamp, str):  # PostgreSQL's: the version
                return {}
            fact = Fact(
                fid,
                subject,
                attribute,
                text,
                source,
                when(said),
                when(kept),
                when(edited) if edited else None,
                tuple(replaces),
                by,
                when(until) if until else None,
            )
            found[path] = Read(stamp, place[1], fact)
        return found
    except Exception:  # noqa: BLE001 - a missing, old or damaged cache is simply not used
        return {}


def write_cache(cache_file: Path, files: Mapping[str, Read]) -> None:
    rows = []
    for path, read in files.items():
        fact = read.fact
        if fact is None:
            continue
        rows.append(
            [
                path,
                list(read.stamp) if isinstance(read.stamp, tuple) else read.stamp,
                fact.id,
                fact.subject,
                fact.attribute,
                fact.text,
                fact.source,
                fact.said.isoformat(),
                fact.kept.isoformat(),
                fact.edited.isoformat() if fact.edited else None,
                list(fact.replaces),
                fact.replaced_by,
                fact.until.isoformat() if fact.until else None,
            ]
        )
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        # pid in the name: the debris of a dead writer can be told from a live one's file
        fd, temp = tempfile.mkstemp(prefix=f".facts.{os.getpid()}.", suffix=".tmp", dir=cache_file.parent)
        with os.fdopen(fd, "wb") as handle:
            # one dumps then one write: json.dump to a file runs the encoder in Python, 10x slower
            text = json.dumps({"format": CACHE_FORMAT, "files": rows}, ensure_ascii=False, separators=(",", ":"))
            handle.write(text.encode("utf-8"))
        os.replace(temp, cache_file)
    except OSError:
        pass  # a cache we cannot write only costs the next process some parsing
