"""Search filters: ``since`` (how far back) and include/exclude globs (which paths).

``parse_since`` takes an age or a moment and returns the moment, aware and in UTC:

    >>> from datetime import datetime, timezone
    >>> now = datetime(2026, 8, 31, 12, 0, tzinfo=timezone.utc)
    >>> parse_since("30d", now).isoformat()
    '2026-08-01T12:00:00+00:00'
    >>> parse_since("2026-08-01", now).isoformat()
    '2026-08-01T00:00:00+00:00'

Ages are a whole number and a unit: ``h`` hours, ``d`` days, ``w`` weeks, ``m`` months, where a
month is 30 days (so ``6m`` is 180 days; there are no minutes). Moments are ISO dates
(``2026-08-01``, midnight UTC) or date-times (``2026-08-01T09:30``, ``2026-08-01 09:30:00+02:00``;
without an offset, UTC).

``compile_globs`` turns include/exclude patterns into a test of a root-relative path, with the
rules of ``.gitignore``:

- ``*`` matches any characters but ``/``, ``?`` one such character, ``[abc]``/``[a-z]``/``[!a]`` a
  class; ``**`` as a whole segment matches zero or more folders; ``\\`` escapes the next character;
- a pattern with no ``/`` (a trailing one aside) matches a name at any depth (``*.md``,
  ``MEMORY.md``); any other is anchored at the root, where a leading ``/`` is allowed
  (``seo/*.md``, ``/brand.md``);
- a pattern that matches a folder matches everything under it (``agents/seo-*`` covers
  ``agents/seo-3f9a1c2e/MEMORY.md``); a pattern ending in ``/`` matches only folders, so
  ``history/`` is everything under any folder named ``history``.

A path is kept when it matches some include (or there is none) and no exclude.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from fsmem._errors import BadRequest

__all__ = [
    "DAYS_PER_MONTH",
    "EARLIEST",
    "LATEST",
    "parse_since",
    "check_moment",
    "compile_globs",
    "glob_regex",
    "spoken_date",
]

DAYS_PER_MONTH = 30
_UNITS = {"h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1), "m": timedelta(days=DAYS_PER_MONTH)}
_AGE = re.compile(r"(\d{1,7})\s*([hdwm])", re.IGNORECASE)
_MOMENT = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:?\d{2})?)?",
    re.IGNORECASE,
)
# The index keeps times as nanoseconds in a signed 64-bit number (1677-09-21 to 2262-04-11); a moment
# outside it cannot be searched, so it is refused here, with round years a person can remember.
EARLIEST = datetime(1700, 1, 1, tzinfo=UTC)
LATEST = datetime(2261, 12, 31, 23, 59, 59, tzinfo=UTC)
_SINCE_HELP = (
    'Write an age like "12h", "30d", "8w" or "6m" (a month is 30 days), or a date like '
    '"2026-08-01" or "2026-08-01T09:30".'
)


def parse_since(text: str, now: datetime) -> datetime:
    """The moment ``text`` names, counting ages back from ``now``; ``BadRequest`` otherwise.

    >>> parse_since("9999-12-31", datetime(2026, 8, 31, tzinfo=timezone.utc))
    Traceback (most recent call last):
    fsmem._errors.BadRequest: since "9999-12-31" is outside the dates search knows (1700-01-01 to 2261-12-31). ...
    """
    return check_moment(_parse_since(text, now), text)


def check_moment(moment: datetime, text: str | None = None) -> datetime:
    """``moment`` in UTC if search can filter by it (``EARLIEST`` to ``LATEST``); ``BadRequest`` otherwise."""
    if not isinstance(moment, datetime):
        raise BadRequest(f"since must be text or a datetime, not {type(moment).__name__}. {_SINCE_HELP}")
    try:
        moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except OverflowError:
        moment = datetime.min.replace(tzinfo=UTC)
    if EARLIEST <= moment <= LATEST:
        return moment
    shown = moment.date().isoformat() if text is None else (text if len(text) <= 40 else text[:37] + "...")
    raise BadRequest(
        f'since "{shown}" is outside the dates search knows ({EARLIEST.date()} to {LATEST.date()}). {_SINCE_HELP}'
    )


def _parse_since(text: str, now: datetime) -> datetime:
    if not isinstance(text, str):
        raise BadRequest(f"since must be text, not {type(text).__name__}. {_SINCE_HELP}")
    now = now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)
    cleaned = text.strip()
    age = _AGE.fullmatch(cleaned)
    if age:
        count, unit = int(age.group(1)), age.group(2).lower()
        try:
            return now - count * _UNITS[unit]
        except OverflowError:
            raise BadRequest(f'since "{cleaned}" reaches too far back. {_SINCE_HELP}') from None
    if _MOMENT.fullmatch(cleaned):
        try:
            moment = datetime.fromisoformat(cleaned.upper().replace("Z", "+00:00"))
        except ValueError:
            raise BadRequest(f'since "{cleaned}" is not a real date. {_SINCE_HELP}') from None
        if moment.tzinfo is None:
            return moment.replace(tzinfo=UTC)
        try:
            return moment.astimezone(UTC)
        except OverflowError:  # "0001-01-01T00:00+02:00" is before the first year Python knows
            return datetime.min.replace(tzinfo=UTC)
    shown = cleaned if len(cleaned) <= 40 else cleaned[:37] + "..."
    raise BadRequest(f'since "{shown}" is not an age or a date. {_SINCE_HELP}')


Patterns = str | Sequence[str] | None


MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def spoken_date(moment: datetime) -> str:
    """A date as words are searched for it, whatever the locale: ``1 September 2026``."""
    return f"{moment.day} {MONTHS[moment.month - 1]} {moment.year}"


def compile_globs(include: Patterns = None, exclude: Patterns = None) -> Callable[[str], bool]:
    """A test of a normalized root-relative path: kept by ``include`` and not by ``exclude``.

    >>> keep = compile_globs("*.md", exclude="history/")
    >>> keep("seo/titles.md"), keep("notes/memory/history/f1.md")
    (True, False)
    """
    wanted = _compile_all(include, "include")
    unwanted = _compile_all(exclude, "exclude")

    def matches(path: str) -> bool:
        if wanted is not None and not wanted.fullmatch(path):
            return False
        return unwanted is None or not unwanted.fullmatch(path)

    return matches


def _compile_all(patterns: Patterns, name: str) -> re.Pattern[str] | None:
    if patterns is None:
        return None
    if isinstance(patterns, str):
        patterns = [patterns]
    if not isinstance(patterns, Sequence) or not all(isinstance(p, str) for p in patterns):
        raise BadRequest(f'{name} must be a glob or a list of globs, like "*.md" or ["seo/**", "brand.md"].')
    if not patterns:
        return None
    sources = [glob_regex(pattern, name) for pattern in patterns]
    return re.compile("|".join(f"(?:{source})" for source in sources), re.DOTALL)


def glob_regex(pattern: str, name: str = "include") -> str:
    """The regular expression (for ``fullmatch``) of one glob; ``name`` is the option named in errors."""
    glob = unicodedata.normalize("NFC", pattern.strip())
    if glob.startswith("./"):  # "./seo/*.md" is the root's seo folder, as "/seo/*.md" is
        glob = glob[1:]
    folders_only = glob.endswith("/") and not glob.endswith("\\/")
    body = glob.strip("/") if folders_only else glob.lstrip("/")
    if not body:
        raise _bad(pattern, name, "is empty")
    anchored = "/" in body or glob.startswith("/")
    segments = body.split("/")
    if "" in segments:
        raise _bad(pattern, name, 'has an empty folder name ("//")')
    out = [] if anchored else ["(?:[^/]+/)*"]
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
        else:
            out.append(_segment(segment, pattern, name) + ("" if last else "/"))
    # A match of a folder covers what is under it; a folders-only pattern needs something under it.
    out.append("/.+" if folders_only else "(?:/.+)?")
    source = "".join(out)
    try:
        re.compile(source)
    except re.error:
        raise _bad(pattern, name, "is not a valid glob") from None
    return source


def _segment(segment: str, pattern: str, name: str) -> str:
    out = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            while i < len(segment) and segment[i] == "*":
                i += 1
            out.append("[^/]*")
            continue
        if char == "?":
            out.append("[^/]")
        elif char == "\\":
            if i + 1 >= len(segment):
                raise _bad(pattern, name, "ends with a lone backslash")
            i += 1
            out.append(re.escape(segment[i]))
        elif char == "[":
            end, source = _char_class(segment, i, pattern, name)
            out.append(source)
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _char_class(segment: str, start: int, pattern: str, name: str) -> tuple[int, str]:
    """(index of the closing ``]``, regex) of the class opening at ``start``."""
    i = start + 1
    negate = i < len(segment) and segment[i] in "!^"
    if negate:
        i += 1
    items: list[str] = []
    first = True
    while i < len(segment) and (segment[i] != "]" or first):
        char = segment[i]
        if char == "\\" and i + 1 < len(segment):
            i += 1
            items.append(re.escape(segment[i]))
        elif char == "-" and not first and i + 1 < len(segment) and segment[i + 1] != "]":
            items.append("-")
        else:
            items.append(re.escape(char))
        first = False
        i += 1
    if i >= len(segment):
        raise _bad(pattern, name, 'has a "[" with no closing "]"')
    body = "".join(items)
    try:
        re.compile(f"[{body}]")
    except re.error:
        raise _bad(pattern, name, f'has an invalid class "{segment[start : i + 1]}"') from None
    return i, (f"[^/{body}]" if negate else f"(?!/)[{body}]")


def _bad(pattern: str, name: str, problem: str) -> BadRequest:
    shown = pattern if len(pattern) <= 60 else pattern[:57] + "..."
    return BadRequest(
        f'The {name} glob "{shown}" {problem}. Use globs like "*.md", "seo/**", "agents/*/MEMORY.md" '
        f'or "history/" (everything under a folder).'
    )
