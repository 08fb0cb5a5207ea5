"""Memory paths are NFC; a name a person made by hand may sit on disk in another Unicode form.

macOS editors and some tools write decomposed (NFD) names: ``cafe\u0301.md`` for ``café.md``. fsmem
shows and indexes every name in NFC, and maps it back to the spelling on disk only when the NFC name
is not there (ASCII names have one spelling, so they never pay for a folder listing).
"""

from __future__ import annotations

import os
from pathlib import Path


def nfc(name: str) -> str:
    if name.isascii():
        return name
    import unicodedata  # only for non-ASCII names: keeps it off the cold search path

    return unicodedata.normalize("NFC", name)


def other_spelling(folder: str, name: str) -> str | None:
    """The entry of ``folder`` whose NFC form is ``name``, when it is spelled otherwise on disk."""
    if name.isascii():
        return None
    try:
        entries = os.listdir(folder)
    except OSError:
        return None
    for entry in entries:
        if entry != name and not entry.isascii() and nfc(entry) == name:
            return entry
    return None


def on_disk(root: Path, path: str) -> Path:
    """Where the NFC ``path`` under ``root`` is on disk (itself when nothing else matches)."""
    full = root / path
    if path.isascii() or os.path.lexists(full):
        return full
    current = str(root)
    parts = path.split("/")
    for index, part in enumerate(parts):
        step = f"{current}/{part}"
        if not os.path.lexists(step):
            other = other_spelling(current, part)
            if other is None:
                return Path(step, *parts[index + 1:])
            step = f"{current}/{other}"
        current = step
    return Path(current)
