"""The fact itself: what one fact holds, the same thing, limits and secrets, dates, ids, front matter.

A fact says one thing about a *thing* — a subject and an attribute, compared ignoring case and extra
spaces (``Ana / role`` and ``ana /  Role`` are one thing). What replaces what, and how the facts about
one thing stay a whole chain, is :mod:`fsmem._core.chains`. Everything here is pure.

>>> now = parse_moment("2026-11-30T10:00:00Z")
>>> check_draft("ana  ", "Role", "Ana leads the data team.", said="2031-01-01", now=now).said == now
True
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from functools import cached_property, lru_cache
from typing import Literal

from fsmem._core.layout import FACTS_DIR, HISTORY_DIR
from fsmem._errors import BadFact, FactSensitive

__all__ = [
    "SUBJECT_LIMIT",
    "ATTRIBUTE_LIMIT",
    "FACT_LIMIT",
    "SOURCE_LIMIT",
    "limit_problem",
    "NOT_A_FACT_NAME",
    "DEFAULT_SOURCE",
    "FIELD_ORDER",
    "Fact",
    "Draft",
    "clean_name",
    "clean_sentence",
    "thing_key",
    "same_sentence",
    "parse_moment",
    "format_when",
    "new_fact_id",
    "is_fact_id",
    "fact_path",
    "fact_id_of_path",
    "check_draft",
    "fact_from_fields",
    "fields_of",
]

SUBJECT_LIMIT = 120
ATTRIBUTE_LIMIT = 120
FACT_LIMIT = 2000
SOURCE_LIMIT = 200
NOT_A_FACT_NAME = (
    "not a fact file: facts are named <id>.md (letters, digits, - and _); keep notes "
    "elsewhere, or keep the fact with `fsmem facts keep`"
)
DEFAULT_SOURCE = "added by hand"

FIELD_ORDER = (
    "id",
    "subject",
    "attribute",
    "source",
    "said",
    "kept",
    "edited",
    "replaces",
    "replaced_by",
    "until",
)

Location = Literal["current", "history"]
Outcome = Literal["current", "history", "known"]

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,79}$")
_SPACES = re.compile(r"\s+")
_FACT_PATH = re.compile(
    re.escape(FACTS_DIR)
    + "/("
    + re.escape(HISTORY_DIR[len(FACTS_DIR) + 1 :])
    + "/)?([A-Za-z0-9][A-Za-z0-9_-]{0,79})\\.md"
)


# --------------------------------------------------------------------------- names and sentences


def clean_name(text: str) -> str:
    """A subject or attribute as stored: NFC, trimmed, runs of whitespace made one space."""
    return _SPACES.sub(" ", unicodedata.normalize("NFC", text)).strip()


def clean_sentence(text: str) -> str:
    """A fact's sentence as stored: NFC, trimmed, one line (runs of whitespace made one space)."""
    return _SPACES.sub(" ", unicodedata.normalize("NFC", text)).strip()


@lru_cache(maxsize=65_536)  # subjects and attributes repeat across thousands of facts
def thing_key(subject: str, attribute: str) -> tuple[str, str]:
    """What decides replacement: subject and attribute, ignoring case and extra spaces."""
    return (clean_name(subject).casefold(), clean_name(attribute).casefold())


def same_sentence(a: str, b: str) -> bool:
    """Two sentences say the same when they differ only in case and spacing."""
    return clean_sentence(a).casefold() == clean_sentence(b).casefold()


# --------------------------------------------------------------------------- time


def parse_moment(value: object, now: datetime | None = None) -> datetime:
    """A moment in UTC from a date, a datetime or an ISO 8601 string (a date alone is midnight UTC).

    When ``now`` is given, a moment after it is taken as ``now``: a fact cannot be said in the future.

    >>> parse_moment("2026-10-12")
    datetime.datetime(2026, 10, 12, 0, 0, tzinfo=datetime.timezone.utc)
    """
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        moment = datetime.combine(value, time(0, 0))
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise BadFact(
                f"{value!r} is not a date: write it as YYYY-MM-DD or an ISO 8601 time such as 2026-10-12T09:30:00Z"
            ) from None
    else:
        raise BadFact(f"{value!r} is not a date: write it as YYYY-MM-DD")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC).replace(microsecond=0)
    if now is not None and moment > now:
        moment = now.astimezone(UTC).replace(microsecond=0)
    return moment


@lru_cache(maxsize=4_096)  # a listing formats thousands of facts said on a few hundred days
def format_when(moment: datetime) -> str:
    """``2026-10-12`` for midnight UTC, else ``2026-10-12T09:30:00Z``."""
    moment = moment.astimezone(UTC)
    if moment.time() == time(0, 0):
        return moment.date().isoformat()
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


# --------------------------------------------------------------------------- ids and paths


def new_fact_id(now: datetime, random_hex: str) -> str:
    """Ids sort by the time they were kept: ``20261130T100000-3fa9c1d2``.

    The ``T`` matters: without it the date and time read as one 14-digit number, which passes the
    Luhn check one time in ten and would make any text quoting the id look like a card number.
    """
    if not re.fullmatch(r"[0-9a-f]{8}", random_hex):
        raise ValueError("random_hex must be 8 lowercase hex digits")
    return now.astimezone(UTC).strftime("%Y%m%dT%H%M%S-") + random_hex


def is_fact_id(text: str) -> bool:
    return bool(_ID.match(text))


def fact_path(fact_id: str, location: Location) -> str:
    folder = FACTS_DIR if location == "current" else HISTORY_DIR
    return f"{folder}/{fact_id}.md"


def fact_id_of_path(path: str) -> tuple[str, Location] | None:
    """``("<id>", "current")`` for ``notes/memory/<id>.md``, ``"history"`` under history/, else None."""
    found = _FACT_PATH.fullmatch(path)
    if found is None:
        return None
    return found.group(2), "history" if found.group(1) else "current"


# --------------------------------------------------------------------------- the fact


@dataclass(frozen=True)
class Fact:
    """One dated fact. ``replaces`` / ``replaced_by`` / ``until`` are its links in its chain."""

    id: str
    subject: str
    attribute: str
    text: str
    source: str
    said: datetime
    kept: datetime
    edited: datetime | None = None
    replaces: tuple[str, ...] = ()
    replaced_by: str | None = None
    until: datetime | None = None

    @cached_property
    def key(self) -> tuple[str, str]:
        return thing_key(self.subject, self.attribute)

    @property
    def holds(self) -> bool:
        return self.replaced_by is None

    @property
    def location(self) -> Location:
        return "current" if self.replaced_by is None else "history"

    @property
    def path(self) -> str:
        return fact_path(self.id, self.location)

    def order(self) -> tuple[datetime, datetime, str]:
        """Place in its chain: said, then kept, then id (ids sort by time)."""
        return (self.said, self.kept, self.id)

    def to_dict(self) -> dict[str, object]:
        """Plain data for ``--json`` and results: the front matter fields plus ``fact`` and ``path``."""
        data: dict[str, object] = dict(fields_of(self))
        data["fact"] = self.text
        data["holds"] = self.holds
        data["path"] = self.path
        return data


@dataclass(frozen=True)
class Draft:
    """A fact checked and cleaned, not yet placed: what :func:`plan_keep` takes."""

    subject: str
    attribute: str
    text: str
    source: str
    said: datetime

    @property
    def key(self) -> tuple[str, str]:
        return thing_key(self.subject, self.attribute)


_PARTS = {  # what each part of a fact is, its limit, and what to give instead
    "subject": (SUBJECT_LIMIT, "who or what the fact is about, by name"),
    "attribute": (ATTRIBUTE_LIMIT, "what about the subject, in a word or two (role, employer, deadline)"),
    "fact": (FACT_LIMIT, "one sentence that names its subject"),
    "source": (SOURCE_LIMIT, "where the fact came from (a conversation, a file, 'added by hand')"),
}


def limit_problem(fact: Fact) -> str | None:
    """What a fact read from a file breaks of the limits (a person may write a longer sentence by
    hand), as the refusal of keeping it would say; None when it keeps them. No secret check: that
    costs more and is ``fsmem check``'s."""
    for name, value in (
        ("subject", fact.subject),
        ("attribute", fact.attribute),
        ("fact", fact.text),
        ("source", fact.source),
    ):
        limit, what = _PARTS[name]
        try:
            _check_part(name, value, limit, what)
        except BadFact as error:
            return error.message
    return None


def _check_part(name: str, value: object, limit: int, what: str) -> str:
    if not isinstance(value, str):
        raise BadFact(f"the {name} must be text; got {type(value).__name__}")
    cleaned = clean_sentence(value) if name == "fact" else clean_name(value)
    if not cleaned:
        raise BadFact(f"the {name} is empty: give {what}")
    if len(cleaned) > limit:
        raise BadFact(f"the {name} is {len(cleaned):,} characters; the limit is {limit:,}. Shorten it to {what}")
    return cleaned


def _secret_check(parts: Mapping[str, str]) -> None:
    from fsmem._core.secrets import find_fact_secret  # its patterns take ~20 ms to build: not for `--help`

    for name, value in parts.items():
        kind = find_fact_secret(value)
        if kind:
            error = FactSensitive(
                f"the {name} looks like a secret: {kind}. Nothing was kept; keep secrets in a "
                "secret manager and refer to them by name"
            )
            error.kind = kind  # for notes that must not repeat it
            raise error


def check_draft(
    subject: object,
    attribute: object,
    fact: object,
    source: object = DEFAULT_SOURCE,
    said: object = None,
    *,
    now: datetime,
) -> Draft:
    """Validate and clean a fact to keep: limits, secrets, the date (default ``now``; never later)."""
    draft = Draft(
        subject=_check_part("subject", subject, *_PARTS["subject"]),
        attribute=_check_part("attribute", attribute, *_PARTS["attribute"]),
        text=_check_part("fact", fact, *_PARTS["fact"]),
        source=_check_part("source", DEFAULT_SOURCE if source is None else source, *_PARTS["source"]),
        said=parse_moment(now if said is None or said == "" else said, now),
    )
    _secret_check({"subject": draft.subject, "attribute": draft.attribute, "fact": draft.text, "source": draft.source})
    return draft


# --------------------------------------------------------------------------- front matter


def fields_of(fact: Fact) -> dict[str, object]:
    """The front matter, in its fixed order, as plain values (times as text, links as a list)."""
    return {
        "id": fact.id,
        "subject": fact.subject,
        "attribute": fact.attribute,
        "source": fact.source,
        "said": format_when(fact.said),
        "kept": format_when(fact.kept),
        "edited": format_when(fact.edited) if fact.edited else None,
        "replaces": list(fact.replaces),
        "replaced_by": fact.replaced_by,
        "until": format_when(fact.until) if fact.until else None,
    }


def _optional_id(value: object, name: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not is_fact_id(value):
        raise BadFact(f"{name} must be a fact id or empty; got {value!r}")
    return value


def fact_from_fields(fields: Mapping[str, object], body: str, file_id: str) -> Fact:
    """A fact from parsed front matter and body, as a person may have edited it.

    Raises :class:`BadFact` naming the field to fix. Limits and secrets are not checked here: a file
    on disk is read as it is (``fsmem check`` reports what breaks the rules).
    """
    if not isinstance(fields, Mapping):
        raise BadFact("the front matter is not a list of `name: value` lines")
    missing = [name for name in ("id", "subject", "attribute", "said") if fields.get(name) in (None, "")]
    if missing:
        raise BadFact(f"the front matter lacks {', '.join(missing)}")
    fact_id = str(fields["id"])
    if fact_id != file_id:
        raise BadFact(f"the front matter says id {fact_id!r} but the file is named {file_id}.md; make them the same")
    for name in ("subject", "attribute"):
        if not isinstance(fields[name], (str, int, float)):
            raise BadFact(f"{name} must be text")
    text = clean_sentence(body)
    if not text:
        raise BadFact("the body is empty: it should hold the fact's sentence")
    said = parse_moment(fields["said"])
    kept_raw = fields.get("kept")
    kept = parse_moment(kept_raw) if kept_raw not in (None, "") else said
    edited_raw = fields.get("edited")
    edited = parse_moment(edited_raw) if edited_raw not in (None, "") else None
    until_raw = fields.get("until")
    until = parse_moment(until_raw) if until_raw not in (None, "") else None
    replaces_raw = fields.get("replaces")
    if replaces_raw in (None, ""):
        replaces: tuple[str, ...] = ()
    elif isinstance(replaces_raw, str):
        replaces = (_optional_id(replaces_raw, "replaces") or "",)
    elif isinstance(replaces_raw, (list, tuple)):
        replaces = tuple(_optional_id(item, "each id in replaces") or "" for item in replaces_raw)
        replaces = tuple(item for item in replaces if item)
    else:
        raise BadFact(f"replaces must be a list of fact ids; got {replaces_raw!r}")
    source = fields.get("source")
    return Fact(
        id=fact_id,
        subject=clean_name(str(fields["subject"])),
        attribute=clean_name(str(fields["attribute"])),
        text=text,
        source=clean_name(str(source)) if source not in (None, "") else DEFAULT_SOURCE,
        said=said,
        kept=kept,
        edited=edited,
        replaces=replaces,
        replaced_by=_optional_id(fields.get("replaced_by"), "replaced_by"),
        until=until,
    )
