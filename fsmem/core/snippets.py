"""Where a search hit's snippet is cut: the window of a body that shows the most of the query.

Pure: ``fsmem.index`` gives it the body it fetched, the query's terms (as the index analyzed them) and
how the index reads a character, and prints what it answers.

    >>> terms = snippet_terms([Term("deploy"), Term("stag", frozenset({"staging"}))])
    >>> body = "# Notes\\n\\nWe deploy on Fridays. Never to staging before a deploy review."
    >>> cut_snippet(body, terms, 40, read_as=lambda char: char)
    Snippet(start=31, text='Never to staging before a deploy')

It finds the words the index matched as the index finds them: the body is searched in a copy of the
same length where each character is what the index reads it as — ASCII letters lowercased, ``É`` as
``e``, ``Σ`` as ``σ``, a dash as a space, a Devanagari vowel sign as part of its word — so offsets
carry over; for the last word of a query, the longer words the index searched for (``stag`` →
``staging``) and no others. A character the index reads as two (``æ`` as ``ae``) matches nothing
here: when that leaves nothing found in a body, or when much of the body is in another script,
``None`` lets the caller ask the index's own snippet generator.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import NamedTuple

__all__ = ["ReadAs", "Snippet", "Term", "cut_snippet", "snippet_terms"]

LEAD_SHARE = 4  # a quarter of the window shows what comes before the first word found
MOSTLY_ASCII = 10  # a body whose UTF-8 is over a tenth longer than its characters is left to the caller
LONGEST_WORD = 40  # the index leaves out words of this many bytes or more (``Filter.remove_long``)
_NOT_ASCII = re.compile(r"[^\x00-\x7f]")
_READ_AS_MORE = "\ue000"  # stands for a character the index reads as several: in a word, matching none

# How the index reads one character that is not ASCII: the one character it becomes in a word, ""
# when it separates words, None when it becomes several characters.
ReadAs = Callable[[str], "str | None"]


class Snippet(NamedTuple):
    start: int  # offset of the window in the body, in characters
    text: str  # the window, cut at word boundaries


class Term(NamedTuple):
    token: str  # a word of the query, as the index analyzed it
    longer: frozenset[str] = frozenset()  # for the last word: the longer words it found, which show too


def snippet_terms(terms: Iterable[Term]) -> tuple[Term, ...]:
    """The query's terms, once each."""
    return tuple(term for term in dict.fromkeys(terms) if term.token)


def _searchable(body: str, read_as: ReadAs) -> tuple[str, frozenset[str]] | None:
    """The copy of ``body`` that is searched, and the characters beyond ASCII that are word characters
    in it; ``None`` if it cannot be made of the same length, or if much of the body is beyond ASCII
    (text in another script: looking at each of its characters here costs more than the index's own
    generator, which reads it natively)."""
    if body.isascii():
        return body.lower(), frozenset()
    if (len(body.encode("utf-8")) - len(body)) * MOSTLY_ASCII > len(body):
        return None
    targets = {}
    for char in set(_NOT_ASCII.findall(body)):
        seen = read_as(char)
        if seen == "":
            targets[char] = " "
        elif seen is None or seen.lower() != seen:  # several characters; or one a lowercasing would change
            targets[char] = _READ_AS_MORE  # (the index keeps "ᴅ" as "D": no word typed with "d" is it)
        else:
            targets[char] = seen
    if any(target in targets and targets[target] != target for target in targets.values()):
        return None  # a character read as another that is read otherwise: not one replacement each
    text = body
    for char, target in targets.items():
        if target != char:
            text = text.replace(char, target)
    text = text.lower()  # ASCII letters; every other character is already as it is read, lowercased
    in_words = frozenset(target for target in targets.values() if not target.isascii())
    return (text, in_words) if len(text) == len(body) else None


def _words_found(body: str, text: str, in_words: frozenset[str],
                 terms: tuple[Term, ...]) -> list[tuple[int, int, int]]:
    """``(start, end, term number)`` of every whole word of the searchable copy ``text`` of ``body`` a
    term finds, in order; a word the index leaves out (``LONGEST_WORD`` bytes or more) is not one."""
    size = len(text)
    is_word: Callable[[str], bool] = str.isalnum  # when the copy is all ASCII
    if in_words:
        is_word = lambda char: char.isalnum() if char.isascii() else char in in_words  # noqa: E731
    found = []
    for number, (token, longer) in enumerate(terms):
        length = len(token)
        position = text.find(token)
        while position >= 0:
            end = position + length
            if position and is_word(text[position - 1]):
                position = text.find(token, end)
                continue
            if longer:
                while end < size and is_word(text[end]):
                    end += 1
                if end - position > length and text[position:end] not in longer:
                    position = text.find(token, end)
                    continue
            if (end == size or not is_word(text[end])) and (
                    end - position < LONGEST_WORD // 4 or len(body[position:end].encode("utf-8")) < LONGEST_WORD):
                found.append((position, end, number))
            position = text.find(token, end)
    if len(terms) > 1:
        found.sort()
    return found


def cut_snippet(body: str, terms: tuple[Term, ...], chars: int, read_as: ReadAs) -> Snippet | None:
    """The ``chars``-long window of ``body`` holding the most different terms, then the most words
    found; the earliest such. ``None`` when no term is found in the body.

    Each window begins a little before a word found, so the reader sees what leads to it.
    """
    searchable = _searchable(body, read_as)
    if searchable is None:
        return None
    found = _words_found(body, *searchable, terms)
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
