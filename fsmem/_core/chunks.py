"""A file's text cut into passages for embedding: about ``target`` tokens each, along its headings and
paragraphs. Pure: text in, passages out.

    >>> [c.line for c in chunk_text("# Deploys\\n\\nStaging first.\\n\\n# Billing\\n\\nInvoices monthly.")]
    [1, 5]

A heading starts a new passage, and its text is carried into every passage of its section (a passage
"Staging first." means more under "# Deploys"). Paragraphs are joined while they fit; a paragraph
longer than ``target`` is cut at line ends, and a single line longer than that at word ends. The token
count is estimated from words (a model's word pieces run about 1.3 to a word), which is all a cut needs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["TARGET_TOKENS", "Chunk", "chunk_text", "estimate_tokens"]

TARGET_TOKENS = 200
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+\S")
_PIECES_PER_WORD = 1.3


@dataclass(frozen=True)
class Chunk:
    line: int  # 1-based line of the passage's first line in the text it was cut from
    text: str  # what is embedded: the section's heading, then the passage


def estimate_tokens(text: str) -> int:
    return int(len(text.split()) * _PIECES_PER_WORD + 0.5)


def chunk_text(text: str, target: int = TARGET_TOKENS, first_line: int = 1) -> list[Chunk]:
    """The passages of ``text`` in order; ``first_line`` is the line number of its first line (a body
    after front matter starts later in its file). Blank text has none."""
    chunks: list[Chunk] = []
    heading = ""
    block: list[str] = []  # lines of the passage being gathered
    block_line = first_line
    block_tokens = 0

    def flush() -> None:
        nonlocal block, block_tokens
        body = "\n".join(block).strip()
        if body:
            shown = body if not heading or body.startswith(heading) else f"{heading}\n{body}"
            chunks.append(Chunk(block_line, shown))
        block, block_tokens = [], 0

    for line, paragraph in _paragraphs(text, first_line):
        first = paragraph[0]
        if _HEADING.match(first):
            flush()
            heading = first.strip()
        for piece_line, piece, tokens in _pieces(paragraph, line, target):
            if block and block_tokens + tokens > target:
                flush()
            if not block:
                block_line = piece_line
            block.append(piece)
            block_tokens += tokens
    flush()
    return chunks


def _paragraphs(text: str, first_line: int) -> list[tuple[int, list[str]]]:
    """Runs of non-blank lines with the line number of each run's first; a heading is a run of its own."""
    runs: list[tuple[int, list[str]]] = []
    current: list[str] = []
    start = first_line
    for number, line in enumerate(text.splitlines(), first_line):
        if not line.strip() or _HEADING.match(line):
            if current:
                runs.append((start, current))
            current = []
            if line.strip():
                runs.append((number, [line]))
            continue
        if not current:
            start = number
        current.append(line)
    if current:
        runs.append((start, current))
    return runs


def _pieces(paragraph: list[str], line: int, target: int) -> list[tuple[int, str, int]]:
    """A paragraph as pieces of at most ``target`` tokens: whole, else its lines, else a long line's words."""
    whole = "\n".join(paragraph)
    tokens = estimate_tokens(whole)
    if tokens <= target:
        return [(line, whole, tokens)]
    pieces: list[tuple[int, str, int]] = []
    for number, text in enumerate(paragraph, line):
        count = estimate_tokens(text)
        if count <= target:
            pieces.append((number, text, count))
            continue
        words = text.split()
        step = max(1, int(target / _PIECES_PER_WORD))
        for start in range(0, len(words), step):
            part = " ".join(words[start : start + step])
            pieces.append((number, part, estimate_tokens(part)))
    return pieces
