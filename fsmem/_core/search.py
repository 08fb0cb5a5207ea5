"""Pure rules of search: what a file becomes in the index, what a query means, what is stale.

Nothing here touches the disk or tantivy; ``fsmem._index.index`` feeds these functions and carries out
their answers.

    >>> split_query('deploy "release notes" stag')
    QueryParts(words=('deploy', 'stag'), phrases=('release notes',), last_is_prefix=True)
    >>> content_words(split_query("what did we decide about Ana's budget?"))
    QueryParts(words=('decide', 'Ana', 'budget'), phrases=(), last_is_prefix=False)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Any, NamedTuple

from fsmem._core.layout import role_of, title_of
from fsmem._core.links import link_keys
from fsmem._core.paths import is_memory_file_name
from fsmem._core.when import glob_regex, parse_since, spoken_date

__all__ = [
    "SCHEMA_VERSION",
    "FileDoc",
    "Indexed",
    "Plan",
    "QueryParts",
    "STOP_WORDS",
    "SearchHit",
    "Stamp",
    "file_doc",
    "racy",
    "fact_note",
    "glob_to_regex",
    "is_indexable_name",
    "parse_since",
    "plan_reconcile",
    "content_words",
    "split_query",
]

# A change of any rule below that alters what is stored in the index bumps this number; an index
# built with another number is rebuilt from the files.
# 9: words stemmed (English), links kept, a broken fact file's problem stored; 7: the manifest starts with a
# marshalled base; 6: front matter split by fsmem._index.front_matter
SCHEMA_VERSION = 9

# Files whose stat is this close to the moment they were indexed may have changed again within the
# same timestamp tick: their content hash is checked on the next comparison ("racy" entries).
RACY_WINDOW_NS = 2_000_000_000


def racy(changed_ns: int, read_ns: int) -> bool:
    """Did a file last changed at ``changed_ns`` (its mtime or ctime, the later) change within one
    timestamp tick of being read at ``read_ns``? Then a later save of the same size may keep its
    stamp, and only its content can tell."""
    return changed_ns + RACY_WINDOW_NS > read_ns


# --- what a file becomes -------------------------------------------------------------------------


class FileDoc(NamedTuple):
    """The fields of one file's index document. (Records of this module are named tuples, not frozen
    dataclasses: every search's process imports them, and a dataclass costs its start ~0.7 ms to build.)"""

    path: str
    folder: str
    level: str
    kind: str
    title: str
    body: str  # the text after any front matter: what snippets are cut from
    body_line: int  # line number (1-based) of the first line of ``body`` in the file
    meta: str  # searchable text that is not the body: a fact's subject, source, dates
    said: datetime | None = None
    until: datetime | None = None
    links: tuple[str, ...] = ()  # what core.links.link_keys finds in the body: backlinks are looked up by it
    problem: str | None = None  # a fact file fsmem cannot use as a fact: what is wrong with it


def parse_when(value: object) -> datetime | None:
    """A front-matter date or datetime (as YAML reads it, or as text) as an aware UTC datetime;
    ``None`` when absent or unreadable."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        return datetime.combine(value, datetime.min.time(), UTC)
    elif isinstance(value, str) and value.strip():
        text = value.strip().replace("Z", "+00:00")
        try:
            if len(text) == 10:
                return datetime.combine(date.fromisoformat(text), datetime.min.time(), UTC)
            moment = datetime.fromisoformat(text.replace(" ", "T", 1))
        except ValueError:
            return None
    else:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def file_doc(path: str, head: str, body: str, fields: Mapping[str, object], problem: str | None = None) -> FileDoc:
    """What ``path`` becomes in the index, its text split into front matter ``head`` (with its ``---``
    lines; empty when none) and ``body``; ``fields`` are a fact's front matter as read (only a fact's
    are used; ``problem`` says why a fact file is no usable fact). The split and the fields come from
    :mod:`fsmem._index.front_matter`, the one reader."""
    role = role_of(path)
    folder = path.rsplit("/", 1)[0] if "/" in path else ""
    said = until = None
    if role.kind in ("fact", "replaced_fact"):
        said = parse_when(fields.get("said"))
        until = parse_when(fields.get("until"))
        subject, attribute, source = (_text(fields.get(name)) for name in ("subject", "attribute", "source"))
        title = " · ".join(part for part in (subject, attribute) if part) or title_of(body, path)
        meta_parts = [subject, attribute, source]
        if said:  # in words too: "what was Ana's role in September?"
            meta_parts.append(f"said {said.date().isoformat()} ({spoken_date(said)})")
        if role.kind == "replaced_fact":
            meta_parts.append(f"held until {until.date().isoformat()} ({spoken_date(until)})" if until else "replaced")
        meta = "\n".join(part for part in meta_parts if part)
    else:
        title = title_of(body, path)
        meta = head
    return FileDoc(
        path=path,
        folder=folder,
        level=role.level,
        kind=role.kind,
        title=title,
        body=body,
        body_line=head.count("\n") + 1,
        meta=meta,
        said=said,
        until=until,
        links=link_keys(path, body) if "[" in body else (),
        problem=problem,
    )


def _text(value: object) -> str:
    """A scalar field as text (YAML may read a subject as a number); anything else as nothing."""
    return "" if value is None or isinstance(value, (dict, list)) else str(value)


def fact_note(kind: str, said: datetime | None, until: datetime | None) -> str:
    """What a snippet of a fact adds so the reader knows whether it still holds."""
    if kind == "replaced_fact":
        held = f"held until {until.date().isoformat()}" if until else "replaced"
        return f" (said {said.date().isoformat()}; {held})" if said else f" ({held})"
    if kind == "fact" and said:
        return f" (said {said.date().isoformat()})"
    return ""


class SearchHit(NamedTuple):
    """One search result. ``line``/``text`` are set in regex mode (and ``line`` for snippets).

    A named tuple: immutable, and cheap to make ten of per search.
    """

    path: str
    title: str
    kind: str
    level: str
    score: float
    snippet: str
    modified: datetime | None
    line: int | None = None
    text: str | None = None
    problem: str | None = None  # a broken fact file: why fsmem cannot use it (`fsmem check` says more)

    def to_dict(self) -> dict[str, Any]:
        value = self._asdict()
        value["modified"] = self.modified.isoformat() if self.modified else None
        return value


# --- what a query means --------------------------------------------------------------------------


class QueryParts(NamedTuple):
    """A text query split the way a person typed it: loose words and quoted phrases."""

    words: tuple[str, ...]
    phrases: tuple[str, ...]
    last_is_prefix: bool  # the query ends inside a loose word: match it as a prefix too


_QUOTED = re.compile(r'"([^"]*)"?')


def split_query(query: str) -> QueryParts:
    """Split ``query`` into words and quoted phrases; an unclosed quote runs to the end."""
    words: list[str] = []
    phrases: list[str] = []
    last_is_prefix = False
    position = 0
    for match in _QUOTED.finditer(query):
        loose = query[position : match.start()].split()
        words.extend(loose)
        if match.group(1).strip():
            phrases.append(match.group(1).strip())
        position = match.end()
    tail = query[position:]
    words.extend(tail.split())
    if tail.strip() and tail[-1].isalnum():  # "stag" is being typed; "group?" and "stag " are finished
        last_is_prefix = True
    return QueryParts(tuple(words), tuple(phrases), last_is_prefix)


# Words that carry no subject in a question or a sentence: asked for, they match nearly every file
# and rank nothing. They stay in the index (a phrase still finds "to be or not to be").
STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be been before being below between
    both but by can could did do does doing done down during each few for from further get got had has
    have having he her here hers herself him himself his how i if in into is it its itself just me more
    most my myself no nor not now of off on once only or other our ours ourselves out over own same she
    should so some such than that the their theirs them themselves then there these they this those
    through to too under until up us very was we were what when where which while who whom whose why
    will with would you your yours yourself yourselves ever also much many because please yes yet let
    must""".split()
)
_POSSESSIVE = re.compile(r"['\u2019]s?$", re.IGNORECASE)
_EDGES = re.compile(r"^\W+|\W+$")


def content_words(parts: QueryParts) -> QueryParts:
    """The loose words of a query that say what it is about, edge punctuation and a possessive's ``'s``
    cut (``Ana's?`` asks about Ana), stop words left out — all kept when every word is one, so ``the
    who`` still searches. The last word stays a prefix only if it was kept. Phrases are kept whole."""
    kept = []
    for word in parts.words:
        bare = _POSSESSIVE.sub("", _EDGES.sub("", word))
        if bare and bare.lower() not in STOP_WORDS:
            kept.append(bare)
    if not kept:
        return parts
    last_kept = _POSSESSIVE.sub("", _EDGES.sub("", parts.words[-1])) == kept[-1]
    return QueryParts(tuple(kept), parts.phrases, parts.last_is_prefix and last_kept)


def glob_to_regex(pattern: str, name: str = "include") -> str:
    """A glob (the rules of ``core.when.compile_globs``) as a regex tantivy can run on the path field.

    The translation is ``core.when``'s, so regex mode and text mode filter alike; tantivy's regex
    dialect (Rust's) has no look-ahead, so a class that must not match ``/`` becomes an intersection.

    >>> glob_to_regex("seo/*.md")
    'seo/[^/]*\\.md(?:/.+)?'
    """
    return _without_lookahead(glob_regex(pattern, name))


def _without_lookahead(source: str) -> str:
    out: list[str] = []
    i = 0
    marker = "(?!/)["
    while True:
        found = source.find(marker, i)
        if found == -1:
            out.append(source[i:])
            return "".join(out)
        out.append(source[i:found])
        j = found + len(marker)
        while source[j] != "]":  # every literal "]" inside the class is escaped
            j += 2 if source[j] == "\\" else 1
        out.append("[" + source[found + len(marker) : j] + "&&[^/]]")
        i = j + 1


# --- what is stale -------------------------------------------------------------------------------


class Stamp(NamedTuple):
    """What a cheap stat says about a file: any edit, save-by-rename or touch changes it.

    A plain tuple compares equal to it: the walk over thousands of files builds bare tuples.
    """

    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int


class Indexed(NamedTuple):
    """What the index holds for one path: the stamp it was read with, its hash, and when."""

    stamp: tuple[int, int, int, int]
    version: str
    indexed_ns: int

    def racy(self) -> bool:
        """Changed again within one timestamp tick of being read? Then the stamp alone cannot tell."""
        return racy(max(self.stamp[1], self.stamp[2]), self.indexed_ns)


class Plan(NamedTuple):
    """What a comparison found: paths to (re)index, paths to remove, racy paths to hash."""

    changed: tuple[str, ...]
    removed: tuple[str, ...]
    racy: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.changed or self.removed)


def plan_reconcile(on_disk: dict[str, Stamp], indexed: dict[str, Indexed]) -> Plan:
    """Compare the files with what the index holds."""
    changed: list[str] = []
    racy: list[str] = []
    window = RACY_WINDOW_NS
    for path, stamp in on_disk.items():
        entry = indexed.get(path)  # an Indexed, or a plain tuple of the same shape
        if entry is None or entry[0] != stamp:
            changed.append(path)
        elif max(stamp[1], stamp[2]) + window > entry[2]:  # Indexed.racy(), inlined: hot loop
            racy.append(path)
    removed = [path for path in indexed if path not in on_disk]
    return Plan(tuple(sorted(changed)), tuple(sorted(removed)), tuple(sorted(racy)))


def is_indexable_name(name: str) -> bool:
    """Memory files only (``core.paths.is_memory_file_name``): plain text, no editor's temp files."""
    return is_memory_file_name(name)
