"""Ids as people type them: the one full id an unambiguous prefix stands for (facts, proposals)."""

from __future__ import annotations

from collections.abc import Iterable

from fsmem._errors import NotUnique

SHOWN_CANDIDATES = 10


def resolve_prefix(typed: str, ids: Iterable[str], what: str, listing: str) -> str:
    """The id in ``ids`` that is ``typed`` or starts with it.

    A full id always wins (it may also be the prefix of a longer one). With no match ``typed`` comes
    back as it was, so the caller's own lookup says it is missing in its words; two or more matches are
    ``NOT_UNIQUE``, naming the candidates. ``what`` names the kind ("fact"), ``listing`` the command
    that lists them, for the message.

    >>> resolve_prefix("2026", ["20261130T010203-a1", "20251130T010203-b2"], "fact", "fsmem facts list")
    '20261130T010203-a1'
    """
    typed = typed.strip()
    known = set(ids)
    if typed in known:
        return typed
    found = sorted(i for i in known if typed and i.startswith(typed))
    if len(found) == 1:
        return found[0]
    if not found:
        return typed
    shown = ", ".join(found[:SHOWN_CANDIDATES]) + (
        f" and {len(found) - SHOWN_CANDIDATES} more" if len(found) > SHOWN_CANDIDATES else ""
    )
    raise NotUnique(
        f"{what} id {typed!r} is the start of {len(found)} ids: {shown}; type more of it (`{listing}` lists them)"
    )
