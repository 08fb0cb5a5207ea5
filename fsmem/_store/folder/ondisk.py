"""Memory paths are NFC; a name a person made by hand may sit on disk in another Unicode form.

macOS editors and some tools write decomposed (NFD) names: ``cafe\u0301.md`` for ``café.md``. fsmem
shows and indexes every name in NFC, and maps it back to the spelling on disk only when the NFC name
is not there (ASCII names have one spelling, so they never pay for a folder listing).

A file system that ignores case (macOS and Windows by default) takes ``memory.md`` for ``MEMORY.md``;
there every name is looked up in its folder and used as spelled on disk, so the rules that protect a
top file, a level folder or the facts see the name they guard (``spelled``, ``is_case_blind``).
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


def is_case_blind(folder: Path) -> bool | None:
    """Whether the file system holding ``folder`` takes ``Name`` and ``NAME`` for one entry; ``None``
    while nothing there can tell (no ``.fsmem`` yet, and no letter in the folder's own name)."""
    for probe in (folder / ".fsmem", folder):
        swapped = probe.with_name(probe.name.swapcase())
        if swapped.name == probe.name or not os.path.lexists(probe):
            continue
        try:
            return os.path.samestat(os.lstat(probe), os.lstat(swapped))
        except OSError:
            return False  # the other spelling is not there: case counts
    return None


def spelled(folder: str, name: str) -> str:
    """``name`` as the entry of ``folder`` it stands for on a case-blind file system is spelled.

    The entry that is the very file the file system opens for ``name`` wins (two entries differing only
    in case can meet in a folder copied from elsewhere); else the one equal to it ignoring case.
    """
    try:
        entries = os.listdir(folder)
    except OSError:
        return name
    if name in entries:
        return name
    key = nfc(name).casefold()
    alike = [entry for entry in entries if nfc(entry).casefold() == key]
    try:
        opened = os.lstat(os.path.join(folder, name))
    except OSError:
        return alike[0] if alike else name
    for entry in alike + [entry for entry in entries if entry not in alike]:
        try:
            if os.path.samestat(opened, os.lstat(os.path.join(folder, entry))):
                return entry
        except OSError:
            continue
    return alike[0] if alike else name


def spelled_path(root: Path, real: Path) -> Path:
    """``real`` (a real path) with each name under ``root`` as spelled on disk; others as they are."""
    try:
        parts = real.relative_to(root).parts
    except ValueError:
        return real
    current = str(root)
    for part in parts:
        current = os.path.join(current, spelled(current, part))
    return Path(current)


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
                return Path(step, *parts[index + 1 :])
            step = f"{current}/{other}"
        current = step
    return Path(current)


def is_utf8(name: str) -> bool:
    """Whether a name read from the disk is UTF-8 (``os.fsdecode`` turns other bytes into surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
