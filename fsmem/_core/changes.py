"""What a change brings into a file, seen with its neighbours: the text the secret guard checks.

    >>> [region.after for region in changed_regions("a\\nb\\nc\\n", "a\\nb\\nB\\nc\\n", context=1)]
    ['b\\nB\\nc\\n']

The guard cannot check only the new lines: a card number or a key cut over a line break may have
one half on a line the file already holds and the other on a new one. Nor the whole file: a file a
person made may hold text the guard refuses, and that must not block every later edit of it. So each
change is checked with up to ``CONTEXT_LINES`` unchanged lines on either side, as the file will hold
them (``after``), and as it held them (``before``).

Why five: the guard's widest reach over lines (``fsmem._core.secrets``) is a card number, at most 19
digits in groups of at least 3, so at most 6 lines, 5 of them on one side of a changed line; a
credential's value may stand up to 4 lines below its ``password:``. A key cut over more than five
lines beside a change is not seen whole (a key of 16 to 200 characters cut at 80 columns takes three).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from fsmem._core.secrets import find_secret

__all__ = ["CONTEXT_LINES", "Region", "changed_regions", "find_brought_secret"]

CONTEXT_LINES = 5


@dataclass(frozen=True)
class Region:
    """One change (or a few close together) with the same unchanged neighbours before and after it."""

    added: str  # the new lines alone ("" for a deletion)
    after: str  # the new lines with their neighbours: what the file will hold here
    before: str  # the lines they replace with the same neighbours: what the file held here


def changed_regions(before: str, after: str, context: int = CONTEXT_LINES) -> list[Region]:
    """Each place where ``after`` differs from ``before``, by lines, with ``context`` lines around.

    Changes whose neighbourhoods meet are one region, so no text between two changes is cut.
    """
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    # The common head and tail first: the usual edit changes a few lines of a long file, and
    # difflib then only aligns the middle.
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    matcher = difflib.SequenceMatcher(None, old[head : len(old) - tail], new[head : len(new) - tail], autojunk=False)
    changes = [
        (i1 + head, i2 + head, j1 + head, j2 + head) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"
    ]
    groups: list[list[tuple[int, int, int, int]]] = []
    for change in changes:
        if groups and change[2] - groups[-1][-1][3] <= 2 * context:
            groups[-1].append(change)
        else:
            groups.append([change])
    regions = []
    for group in groups:
        i1, i2, j1, j2 = group[0][0], group[-1][1], group[0][2], group[-1][3]
        # Lines before the first change and after the last are the same in both texts.
        lead, trail = min(context, j1), min(context, len(new) - j2)
        regions.append(
            Region(
                added="".join(line for _, _, c1, c2 in group for line in new[c1:c2]),
                after="".join(new[j1 - lead : j2 + trail]),
                before="".join(old[i1 - lead : i2 + trail]),
            )
        )
    return regions


def find_brought_secret(before: str, after: str) -> str | None:
    """The kind of secret that changing ``before`` into ``after`` brings into the file, or None.

    A region is refused when what the file will hold there looks like a secret, and either the new
    lines alone do or the same place did not before: text a person left beside a change does not
    block it, a change that completes a secret with a line already there does.

    >>> find_brought_secret("- card 4111 1111\\n", "- card 4111 1111\\n1111 1111\\n")
    'a card number'
    """
    for region in changed_regions(before, after):
        kind = find_secret(region.after)
        if kind is None:
            continue
        if region.added == region.after:
            return kind
        own = find_secret(region.added)  # named first: the kind this change brings, not its neighbours'
        if own is not None:
            return own
        if find_secret(region.before) is None:
            return kind
    return None
