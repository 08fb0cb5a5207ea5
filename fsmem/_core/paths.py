"""The syntax of a path the memory tool accepts, checked before anything touches the disk.

    >>> normalize_path("/seo/titles.md")
    'seo/titles.md'
    >>> normalize_path("/")
    ''

A path is relative to the root (a leading ``/`` is allowed and ignored, one trailing ``/`` is
stripped) and NFC-normalized. Refused, with ``BadPath``:

- ``..`` and ``.`` segments, empty segments (``a//b``), and any segment starting with ``.``
  (``.fsmem``, ``.git``, dotfiles);
- a backslash, a Windows drive prefix (``C:``), a percent-encoded byte (``%2e``, ``%2F``);
- control and invisible formatting characters (Unicode Cc and Cf: NUL, escapes, zero-width
  spaces, bidi marks, BOM), line and paragraph separators (Zl, Zp) and lone surrogates (Cs);
- a segment that is blank or starts or ends with whitespace (``" notes.md"`` would sit beside
  ``"notes.md"`` and look the same to a person);
- more than 512 bytes of UTF-8 in all, or more than 255 in one segment (the file system's limit);
- a segment of dot look-alikes only (``\u2024\u2024``, ``\uff0e``, ``\u2026``), or starting with one (it
  would look like ``..`` or a hidden name), a first segment starting with ``~`` (the shell's home
  folder), and a segment starting with a shell variable (``$HOME``, ``${USER}``): fsmem expands
  neither, so each would make a folder that only looks like what was meant.

Whether a path stays inside the root once symlinks are resolved is the drive's check, not this one.
"""

from __future__ import annotations

import re
import unicodedata

from fsmem._errors import BadPath

__all__ = [
    "MAX_PATH_BYTES",
    "MAX_SEGMENT_BYTES",
    "TEXT_FILE_SUFFIXES",
    "ensure_memory_file",
    "is_memory_file_name",
    "normalize_path",
]

MAX_PATH_BYTES = 512
MAX_SEGMENT_BYTES = 255

_EXAMPLES = 'Use a path relative to the memory root, like "MEMORY.md" or "seo/titles.md".'
_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_DRIVE_PREFIX = re.compile(r"^[A-Za-z]:")
_FORBIDDEN_CATEGORIES = {
    "Cc": "a control character",
    "Cf": "an invisible formatting character",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
    "Cs": "a lone surrogate",
}


def _escaped(raw: str) -> str:
    """The path with invisible characters (and backslashes) escaped: printable, and encodable as UTF-8."""
    out = []
    for char in raw:
        if unicodedata.category(char) in _FORBIDDEN_CATEGORIES or char == "\\":
            out.append(char.encode("unicode_escape").decode("ascii"))
        else:
            out.append(char)
    return "".join(out)


def _shown(raw: str) -> str:
    """The path quoted for a message: invisible characters escaped, long paths cut."""
    shown = _escaped(raw)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return '"' + shown.replace('"', '\\"') + '"'


def _refuse(raw: str, problem: str) -> BadPath:
    # ``path`` and ``problem`` let a face that shows paths its own way (Claude's /memories) word it;
    # ``path`` is escaped as in the message, so every face can print it (a lone surrogate cannot be).
    return BadPath(f"Path {_shown(raw)} {problem}. {_EXAMPLES}", path=_escaped(raw), problem=problem)


def normalize_path(raw: object) -> str:
    """The normalized root-relative POSIX path of ``raw`` ("" is the root), or ``BadPath``."""
    if not isinstance(raw, str):
        raise BadPath(f"A path must be a string, not {type(raw).__name__}. {_EXAMPLES}")
    for char in raw:
        category = unicodedata.category(char)
        if category in _FORBIDDEN_CATEGORIES:
            raise _refuse(
                raw,
                f"contains {_FORBIDDEN_CATEGORIES[category]} "
                f"(U+{ord(char):04X}); type the path with visible characters only",
            )
    path = unicodedata.normalize("NFC", raw)
    if "\\" in path:
        raise _refuse(raw, 'contains a backslash; separate folders with "/"')
    if _PERCENT_ESCAPE.search(path):
        raise _refuse(raw, 'contains a percent-encoded character; write the characters themselves, not "%XX" escapes')
    if path.startswith("/"):
        path = path[1:]
        if not path:
            return ""
    if _DRIVE_PREFIX.match(path):
        raise _refuse(raw, "starts with a drive letter; paths are relative to the memory root")
    if path.endswith("/"):
        path = path[:-1]
    if not path and raw:
        raise _refuse(raw, 'has an empty folder name ("//")')
    if len(path.encode("utf-8")) > MAX_PATH_BYTES:
        raise _refuse(raw, f"is longer than {MAX_PATH_BYTES} bytes; use shorter folder and file names")
    if not path:
        return ""
    for number, segment in enumerate(path.split("/")):
        _check_segment(raw, segment)
        _check_look_alike(raw, segment, first=number == 0)
    return path


# Characters a person reads as a full stop: NFKC maps most to "." (U+2024 ONE DOT LEADER, U+FF0E,
# U+FE52) or to dots (U+2025, U+2026); these do not map but look the same.
_DOT_LOOK_ALIKES = frozenset("\u3002\uff61\u00b7\u2219\u22c5\u30fb\u0701\u0702\u2e31\ua4f8")
_SHELL_VARIABLE = re.compile(r"^\$(\{[A-Za-z_]|[A-Za-z_])")


def _is_dot_like(char: str) -> bool:
    if char in _DOT_LOOK_ALIKES:
        return True
    folded = unicodedata.normalize("NFKC", char)
    return folded != char and folded.strip(".") == ""


def _check_look_alike(raw: str, segment: str, first: bool) -> None:
    if _is_dot_like(segment[0]):
        if all(_is_dot_like(char) or char == "." for char in segment):
            raise _refuse(
                raw,
                f'has a segment "{segment}" made of characters that look like dots; '
                "name each folder on the way with letters or digits",
            )
        raise _refuse(
            raw,
            f'has a name starting with "{segment[0]}" (U+{ord(segment[0]):04X}), which '
            'looks like "." (a hidden name); start it with a letter or a digit',
        )
    if first and segment.startswith("~"):
        raise _refuse(
            raw,
            'starts with "~", the shell\'s home folder, which fsmem does not expand; '
            'paths are inside the memory root: leave out the "~/" part',
        )
    if _SHELL_VARIABLE.match(segment):
        raise _refuse(
            raw,
            f'has a segment "{segment}" that looks like a shell variable, which fsmem '
            "does not expand; type the folder's own name, inside the memory root",
        )


def _check_segment(raw: str, segment: str) -> None:
    if segment == "":
        raise _refuse(raw, 'has an empty folder name ("//"); remove the doubled "/"')
    if segment in {".", ".."}:
        raise _refuse(raw, f'has a "{segment}" segment; name each folder on the way, without "." or ".."')
    if segment.startswith("."):
        raise _refuse(raw, 'has a name starting with "."; hidden files and folders such as ".fsmem" cannot be used')
    if not segment.strip():
        raise _refuse(raw, "has a blank folder or file name")
    if segment != segment.strip():
        raise _refuse(raw, "has a folder or file name that starts or ends with a space; remove the extra spaces")
    if len(segment.encode("utf-8")) > MAX_SEGMENT_BYTES:
        raise _refuse(raw, f"has a folder or file name longer than {MAX_SEGMENT_BYTES} bytes; use a shorter name")


# Plain-text files models and people keep beside markdown: indexed, versioned, searchable, editable.
# Compared without case (``NOTES.TXT``). Binary content is refused by the write path whatever the name.
TEXT_FILE_SUFFIXES = (
    ".md",
    ".markdown",
    ".txt",
    ".text",
    ".xml",
    ".json",
    ".jsonl",
    ".yaml",
    ".yml",
    ".csv",
    ".tsv",
    ".toml",
    ".ini",
    ".log",
    ".html",
    ".rst",
    ".org",
)
_SUFFIX_LIST = ", ".join(f'"{suffix}"' for suffix in TEXT_FILE_SUFFIXES)


def is_memory_file_name(name: str) -> bool:
    """Whether a file name (no folder) is a memory file: a plain-text suffix, and not an editor's
    temp, swap or backup file.

    >>> [is_memory_file_name(n) for n in ("notes.md", "progress.xml", "NOTES.TXT", "a.png", "a.md~", ".md")]
    [True, True, True, False, False, False]
    """
    # Editors' debris ends in "~", "#", ".swp", ".tmp", none of them a text suffix, or starts so:
    return (name.endswith(TEXT_FILE_SUFFIXES) or name.lower().endswith(TEXT_FILE_SUFFIXES)) and not name.startswith(
        (".", "~", "#")
    )


def ensure_memory_file(path: str) -> str:
    """``path`` (already normalized) if it names a memory file (markdown or another plain-text
    file), else ``BadPath``.

    >>> ensure_memory_file("seo/titles.md"), ensure_memory_file("notes.txt")
    ('seo/titles.md', 'notes.txt')
    """
    name = path.rsplit("/", 1)[-1]
    if not path:
        raise BadPath('The root "/" is a folder; name a file in it, like "notes.md".')
    if not is_memory_file_name(name):
        problem = f"is not a memory file: memory files are plain text and end in {_SUFFIX_LIST}"
        raise BadPath(f'Path {_shown(path)} {problem}, like "{_suggest(path)}".', path=path, problem=problem)
    return path


def _suggest(path: str) -> str:
    if len(path) > 60:
        return "notes.md"
    stem = path.removesuffix(".")
    return stem + ".md"
