"""Where a worker keeps what it derives from a project in PostgreSQL (its search index, parse caches),
and the server a URL names as messages show it, read by libpq's own parser (psycopg's
``conninfo_to_dict``):

    default_cache("postgresql://me:secret@db.internal/fsmem", "rye")   # ~/.cache/fsmem/rye-<hash>
    redacted("postgresql://me:secret@db.internal/fsmem")               # postgresql://db.internal/fsmem

Only the server and the database are kept: every spelling of a URL (another user, a new password)
shares one cache. A worker's resident lives elsewhere, in a folder the shell finds from the URL's
exact string (``fsmem._index.resident.pg_home``), so the shell reads no URL.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

from fsmem._env.roots import cache_base


def redacted(url: str) -> str:
    """The URL without its user or password: ``postgresql://host[:port]/dbname``, for messages and
    cache names (a string that is no connection string: what follows its last ``@``)."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return url.split("@")[-1]
    host, dbname = parts.get("host") or "localhost", parts.get("dbname") or ""
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql://{host}{port}/{dbname}"


def default_cache(url: str, project: str) -> Path:
    """``$XDG_CACHE_HOME/fsmem/<project>-<hash of server, database and project>``: one per project per
    user on this machine, whichever way the URL is spelled or its password changes."""
    key = hashlib.sha256(f"{redacted(url)}\0{project}".encode()).hexdigest()[:12]
    slug = "".join(char if char.isalnum() or char in "-_" else "-" for char in project)[:40]
    return Path(cache_base(os.environ)) / "fsmem" / f"{slug}-{key}"
