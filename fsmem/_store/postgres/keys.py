"""A path as a row's key: a file's normalized path, the range of keys under a folder, the hidden rows.

Paths are normalized by ``fsmem._core.paths`` before they reach the store, which refuses any that is not.
"""

from __future__ import annotations

from fsmem._core.layout import LEVEL_IDENTITY_FILE, without_archive
from fsmem._core.paths import normalize_path
from fsmem._errors import BadPath


def file_key(path: str) -> str:
    """A normalized path of a file (the store refuses what the tool would have normalized); the one
    dot folder it keeps is a skills folder's archive (``skills/.archive/…``), which no tool call names."""
    shown = without_archive(path)
    if not path or normalize_path(shown) != shown:
        raise BadPath(f"{path!r} is not a normalized path of a file, e.g. 'notes/seo.md'")
    return path


def in_hidden_folder(relative: str) -> bool:
    """Whether a path (below the folder listed) lies in a dot folder: hidden, as the folder store hides it."""
    return any(segment.startswith(".") for segment in relative.split("/")[:-1])


def identity_path(folder: str) -> str:
    """Where a level folder's identity row is: a dot name, which ``file_key`` refuses on purpose."""
    return f"{file_key(folder)}/{LEVEL_IDENTITY_FILE}"


def is_hidden(path: str) -> bool:
    """A row no tool call can name (its last segment starts with a dot): a level folder's identity."""
    return path.rpartition("/")[2].startswith(".")


def folder_prefix(path: str) -> str:
    """The prefix of the files under a folder ('' is the whole project)."""
    return "" if path == "" else file_key(path) + "/"


def key_range(prefix: str) -> tuple[str, str]:
    """Bounds of the paths starting with ``prefix`` under byte order: "/" + 1 is "0"."""
    if not prefix:
        return "", "\U0010ffff"
    return prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)
