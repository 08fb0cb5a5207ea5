"""Where a worker keeps what it derives from a project in PostgreSQL (its search index, parse caches,
its resident's socket), and the server a URL names as messages show it: the standard library only,
so the shell finds a project's resident without loading the driver.

    default_cache("postgresql://me:secret@db.internal/fsmem", "rye")   # ~/.cache/fsmem/rye-<hash>
    redacted("postgresql://me:secret@db.internal/fsmem")               # postgresql://db.internal/fsmem

A connection string is read as libpq reads one, in either of its forms: a URI
(``postgresql://user:password@host:port/dbname?param=value``, percent-encoded, several hosts with
commas, IPv6 in brackets, a parameter overriding what the URI said) or ``key=value`` words (values
in single quotes with backslash escapes). Only the server and the database are kept.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from urllib.parse import unquote

_SCHEMES = ("postgresql://", "postgres://")


class _Unreadable(ValueError):
    pass


def redacted(url: str) -> str:
    """The URL without its user or password: ``postgresql://host[:port]/dbname``, for messages and
    cache names (a string that is no connection string: what follows its last ``@``)."""
    try:
        parts = _conninfo(url)
    except _Unreadable:
        return url.split("@")[-1]
    host, dbname = parts.get("host") or "localhost", parts.get("dbname") or ""
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql://{host}{port}/{dbname}"


def default_cache(url: str, project: str) -> Path:
    """``$XDG_CACHE_HOME/fsmem/<project>-<hash of server, database and project>``: one per project per
    user on this machine, whichever way the URL is spelled or its password changes."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    key = hashlib.sha256(f"{redacted(url)}\0{project}".encode()).hexdigest()[:12]
    slug = "".join(char if char.isalnum() or char in "-_" else "-" for char in project)[:40]
    return base / "fsmem" / f"{slug}-{key}"


def _conninfo(text: str) -> dict[str, str]:
    return _uri(text) if text.startswith(_SCHEMES) else _words(text)


def _uri(text: str) -> dict[str, str]:
    rest = text.split("://", 1)[1]
    rest, _, query = rest.partition("?")
    netloc, slash, path = rest.partition("/")
    parts: dict[str, str] = {}
    if slash and path:
        parts["dbname"] = unquote(path)
    hostspec = netloc.rsplit("@", 1)[-1]
    hosts, ports = [], []
    for entry in hostspec.split(","):
        if entry.startswith("["):
            host, bracket, after = entry[1:].partition("]")
            if not bracket or (after and not after.startswith(":")):
                raise _Unreadable(text)
            port = after[1:]
        else:
            host, _, port = entry.partition(":")
        hosts.append(unquote(host))
        ports.append(port)
    if any(hosts):
        parts["host"] = ",".join(hosts)
    if any(ports):
        parts["port"] = ",".join(ports)
    for pair in query.split("&") if query else ():
        key, equals, value = pair.partition("=")
        if not equals:
            raise _Unreadable(text)
        parts[unquote(key)] = unquote(value)
    return parts


def _words(text: str) -> dict[str, str]:
    parts: dict[str, str] = {}
    at, end = 0, len(text)
    while True:
        while at < end and text[at].isspace():
            at += 1
        if at == end:
            return parts
        start = at
        while at < end and text[at] != "=" and not text[at].isspace():
            at += 1
        key = text[start:at]
        while at < end and text[at].isspace():
            at += 1
        if not key or at == end or text[at] != "=":
            raise _Unreadable(text)
        at += 1
        while at < end and text[at].isspace():
            at += 1
        value: list[str] = []
        quoted = at < end and text[at] == "'"
        at += quoted
        while at < end and (quoted or not text[at].isspace()):
            char = text[at]
            if char == "\\" and at + 1 < end:
                value.append(text[at + 1])
                at += 2
                continue
            if quoted and char == "'":
                break
            value.append(char)
            at += 1
        if quoted:
            if at == end:
                raise _Unreadable(text)
            at += 1
        parts[key] = "".join(value)
