"""Where a search hit's snippet is cut: the window of a body that shows the most of the query.

Pure: ``fsmem.index`` gives it the body it fetched and the query's terms (as the index analyzed
them), and prints what it answers.

    >>> terms = snippet_terms([Term("deploy"), Term("stag", frozenset({"staging"}))])
    >>> body = "# Notes\\n\\nWe deploy on Fridays. Never to staging before a deploy review."
    >>> cut_snippet(body, terms, 40)
    Snippet(start=31, text='Never to staging before a deploy')

It finds the words the index matched as the index finds them: runs of letters and digits, lowercased,
accents folded (``Café`` is found by ``cafe``), and for the last word of a query the longer words the
index searched for (``stag`` → ``staging``) and no others. The body is searched in a copy of the same
length, lowercased and with each accented letter replaced by its base letter, so offsets carry over.
A letter the index folds into two (``æ`` → ``ae``, ``ß`` → ``ss``) or into another letter (``ø`` →
``o``) is not folded here: when nothing is found in such a body, ``None`` lets the caller ask the
index's own snippet generator.
"""

from __future__ import annotations

import re
from typing import Iterable, NamedTuple

__all__ = ["Snippet", "Term", "cut_snippet", "snippet_terms"]

LEAD_SHARE = 4  # a quarter of the window shows what comes before the first word found
_NOT_ASCII = re.compile(r"[^\x00-\x7f]")
_FOLDED: dict[str, str] = {}  # a character -> itself folded, as found so far


class Snippet(NamedTuple):
    start: int  # offset of the window in the body, in characters
    text: str  # the window, cut at word boundaries


class Term(NamedTuple):
    token: str  # a word of the query, lowercased, as the index analyzed it
    longer: frozenset[str] = frozenset()  # for the last word: the longer words it found, which show too


def snippet_terms(terms: Iterable[Term]) -> tuple[Term, ...]:
    """The query's terms that can occur as words, once each."""
    return tuple(term for term in dict.fromkeys(terms) if term.token.isalnum())


def _searchable(body: str) -> str | None:
    """``body`` lowercased with accents folded, of the same length; ``None`` if lowercasing changes
    its length (``İ`` → ``i̇``), which would move every offset after it."""
    lowered = body.lower()
    if lowered.isascii():
        return lowered
    if len(lowered) != len(body):
        return None
    import unicodedata  # only for bodies that are not ASCII

    if unicodedata.is_normalized("NFKD", lowered):  # dashes, quotes, £: nothing that folds
        return lowered
    for char in set(_NOT_ASCII.findall(lowered)):  # a few distinct ones: accented letters among them
        folded = _fold(char)
        if folded != char:
            lowered = lowered.replace(char, folded)
    return lowered


def _fold(char: str) -> str:
    folded = _FOLDED.get(char)
    if folded is None:
        import unicodedata

        # Folded only to one ASCII letter or digit with nothing but accents beside it: é → e, ² → 2;
        # never ﬁ → f (the index reads "fi") or Ⅻ → x.
        base, *marks = unicodedata.normalize("NFKD", char)
        one = base.isascii() and base.isalnum() and all(unicodedata.combining(mark) for mark in marks)
        folded = _FOLDED[char] = base if one else char
    return folded


def _words_found(lowered: str, terms: tuple[Term, ...]) -> list[tuple[int, int, int]]:
    """``(start, end, term number)`` of every whole word of the searchable body a term finds, in order."""
    size = len(lowered)
    found = []
    for number, (token, longer) in enumerate(terms):
        length = len(token)
        position = lowered.find(token)
        while position >= 0:
            end = position + length
            if position and lowered[position - 1].isalnum():
                position = lowered.find(token, end)
                continue
            if longer:
                while end < size and lowered[end].isalnum():
                    end += 1
                if end - position > length and lowered[position:end] not in longer:
                    position = lowered.find(token, end)
                    continue
            if end == size or not lowered[end].isalnum():
                found.append((position, end, number))
            position = lowered.find(token, end)
    if len(terms) > 1:
        found.sort()
    return found


def cut_snippet(body: str, terms: tuple[Term, ...], chars: int) -> Snippet | None:
    """The ``chars``-long window of ``body`` holding the most different terms, then the most words
    found; the earliest such. ``None`` when no term is found in the body.

    Each window begins a little before a word found, so the reader sees what leads to it.
    """
    lowered = _searchable(body)
    if lowered is None:
        return None
    found = _words_found(lowered, terms)
    if not found:
        return None
    lead = chars // LEAD_SHARE
    window_start = max(0, found[0][0] - lead)
    if found[-1][1] <= window_start + chars:  # all in the first window: the usual case
        return Snippet(*_at_word_edges(body, chars, window_start, found[0][0], found[-1][1]))
    best: tuple[int, int] | None = None
    best_window = (window_start, found[0][0], found[0][1])  # start, its first word found, its last's end
    counts: dict[int, int] = {}
    first = last = 0  # the words inside the current window: found[first:last]
    for start, _, _ in found:
        window_start = max(0, start - lead)
        window_end = window_start + chars
        while last < len(found) and found[last][1] <= window_end:
            term = found[last][2]
            counts[term] = counts.get(term, 0) + 1
            last += 1
        while first < last and found[first][0] < window_start:
            term = found[first][2]
            counts[term] -= 1
            if not counts[term]:
                del counts[term]
            first += 1
        if last == first:  # the word is longer than the window: it cannot be shown whole
            continue
        score = (len(counts), last - first)
        if best is None or score > best:
            best, best_window = score, (window_start, found[first][0], found[last - 1][1])
    return Snippet(*_at_word_edges(body, chars, *best_window))


def _at_word_edges(body: str, chars: int, start: int, first_found: int, last_found: int) -> tuple[int, str]:
    """The window moved off the middle of words at both ends, never past a word found, and starting on
    a word (so the line it starts on is the line of its first word)."""
    end = min(len(body), start + chars)
    if start > 0 and not body[start - 1].isspace():
        start = _after_first_space(body, start, first_found)
    while start < first_found and body[start].isspace():
        start += 1
    if end < len(body) and not body[end].isspace():
        end = _last_space(body, last_found, end)
    return start, body[start:end]


def _after_first_space(body: str, start: int, stop: int) -> int:
    """Just after the first white space in ``body[start:stop]``; ``start`` when there is none."""
    for position in range(start, stop):
        if body[position].isspace():
            return position + 1
    return start


def _last_space(body: str, start: int, end: int) -> int:
    """The last white space in ``body[start:end]``; ``end`` when there is none."""
    for position in range(end - 1, start - 1, -1):
        if body[position].isspace():
            return position
    return end
