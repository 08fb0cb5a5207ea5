"""The path rules of the memory tool (docs/design.md §4, Paths): pure, no disk."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings, strategies as st

from fsmem._core.paths import MAX_PATH_BYTES, ensure_memory_file, is_memory_file_name, normalize_path
from fsmem._errors import BadPath


@pytest.mark.parametrize(("raw", "expected"), [
    ("", ""),
    ("/", ""),
    ("MEMORY.md", "MEMORY.md"),
    ("/MEMORY.md", "MEMORY.md"),
    ("seo/titles.md", "seo/titles.md"),
    ("/seo/titles.md", "seo/titles.md"),
    ("seo/", "seo"),
    ("/agents/seo-3f9a1c2e/", "agents/seo-3f9a1c2e"),
    ("notas/acentuação.md", "notas/acentuação.md"),
    ("e\u0301.md", "\u00e9.md"),                 # NFC: e + combining acute -> é
    ("a b/c d.md", "a b/c d.md"),                # inner spaces are fine
    ("100%.md", "100%.md"),                      # % not followed by two hex digits
    ("50%off.md", "50%off.md"),
    ("a/C:.md", "a/C:.md"),                      # a colon is only refused as a drive prefix
    ("file.name.md", "file.name.md"),
    ("..md", None),                               # starts with "."; listed below too
])
def test_good_paths_normalize(raw: str, expected: str | None) -> None:
    if expected is None:
        with pytest.raises(BadPath):
            normalize_path(raw)
    else:
        assert normalize_path(raw) == expected


HOSTILE = [
    "..", "../", "../etc/passwd", "a/../../b", "a/..", "/..", ".", "./a", "a/./b", "a/.",
    ".fsmem", ".fsmem/log.jsonl", "/.fsmem/lock", "a/.fsmem/x", ".git/config", ".env", "a/.hidden.md",
    "a//b", "//", "///a", "a//",
    "a\\b", "..\\..\\windows", "\\a",
    "%2e%2e/x", "%2E%2E%2Fetc", "a%2Fb", "a/%00", "%5c",
    "C:", "C:/Windows", "c:\\x", "/D:x",
    "a\x00b", "\x00", "a\nb", "a\rb", "a\tb", "\x1b[31m.md", "a\x7f",
    "a\u200bb", "\u200d", "\ufeffMEMORY.md", "a\u202eb.md", "a\u200fb", "\u2066x",
    "a\u2028b", "a\u2029b",
    " ", "a/ /b", " lead.md", "trail.md ", "a/ b",
    "x" * (MAX_PATH_BYTES + 1),
    "é" * 300,                                       # 600 bytes
    "a/" + "b" * 256,                                 # one segment over 255 bytes
]


@pytest.mark.parametrize("raw", HOSTILE)
def test_hostile_paths_are_refused(raw: str) -> None:
    with pytest.raises(BadPath) as caught:
        normalize_path(raw)
    message = caught.value.message
    assert caught.value.code == "BAD_PATH"
    assert "relative to the memory root" in message      # says what a good path looks like
    assert "\x00" not in message and "\n" not in message  # never echoes invisible characters raw


@pytest.mark.parametrize("raw", [None, 3, b"a.md", ["a.md"], {"path": "a"}])
def test_non_strings_are_refused(raw: object) -> None:
    with pytest.raises(BadPath, match="must be a string"):
        normalize_path(raw)


def test_messages_name_the_problem() -> None:
    cases = {
        "a/../b": '".." segment',
        ".fsmem/x": 'starting with "."',
        "a\\b": "backslash",
        "%2e": "percent-encoded",
        "C:/x": "drive letter",
        "a\u200bb": "U+200B",
        "a//b": "empty folder name",
        "x" * 600: "longer than 512 bytes",
    }
    for raw, words in cases.items():
        with pytest.raises(BadPath) as caught:
            normalize_path(raw)
        assert words in caught.value.message, raw


def test_long_paths_are_cut_in_messages() -> None:
    with pytest.raises(BadPath) as caught:
        normalize_path("a/" * 300)
    assert len(caught.value.message) < 300


def test_exactly_512_bytes_is_allowed() -> None:
    path = "/".join(["x" * 127] * 4)  # 4*127 + 3 = 511
    path += "y"
    assert len(path.encode()) == 512
    assert normalize_path(path) == path


def test_ensure_memory_file_takes_plain_text_files() -> None:
    for good in ["a/b.md", "MEMORY.md", "notes.txt", "progress.xml", "data.json", "c.yaml", "c.yml",
                 "t.csv", "b.MD", "NOTES.TXT", "pyproject.toml", "run.log"]:
        assert ensure_memory_file(good) == good
    for bad in ["a", "a/b", "a.md/b", "a/.md", "photo.png", "notes.md~", "a.pdf", "notes.txt.swp"]:
        with pytest.raises(BadPath) as caught:
            ensure_memory_file(bad)
        assert ".md" in caught.value.message and ".txt" in caught.value.message
        assert caught.value.details == {"path": bad, "problem": caught.value.message.split(" ", 2)[2].split(", like")[0]}
    with pytest.raises(BadPath, match="is a folder"):
        ensure_memory_file("")


def test_is_memory_file_name_skips_editor_debris() -> None:
    assert is_memory_file_name("notes.txt") and is_memory_file_name("progress.xml")
    assert not any(is_memory_file_name(n) for n in ["#notes.md#", "~notes.md", ".notes.md.swp", "notes.md.tmp",
                                                   "image.png", "archive.zip", "notes"])


# --- properties --------------------------------------------------------------------------

SAFE_CHAR = st.characters(
    blacklist_categories=("Cc", "Cf", "Cs", "Zl", "Zp", "Zs"),
    blacklist_characters="/\\%.:",
)
_LOOKS_LIKE_A_DOT = "~$\u00b7\u3002\uff61\u2219\u22c5\u30fb\u0701\u0702\u2e31\ua4f8"
SEGMENT = st.text(SAFE_CHAR, min_size=1, max_size=12).filter(  # refused on purpose: see below
    lambda s: s[0] not in _LOOKS_LIKE_A_DOT and not unicodedata.normalize("NFKC", s[0]).startswith("."))
GOOD_PATH = st.lists(SEGMENT, min_size=1, max_size=5).map("/".join)


@settings(deadline=None)  # no timing: shared machines are slow at times
@given(GOOD_PATH)
def test_good_paths_survive_and_leading_slash_is_ignored(path: str) -> None:
    normal = normalize_path(path)
    assert normal == unicodedata.normalize("NFC", path)
    assert normalize_path("/" + path) == normal
    assert normalize_path(path + "/") == normal
    assert normalize_path(normal) == normal  # idempotent


@settings(deadline=None)  # no timing: shared machines are slow at times
@given(st.text(max_size=40))
def test_any_text_is_refused_or_safe(raw: str) -> None:
    try:
        normal = normalize_path(raw)
    except BadPath:
        return
    assert normalize_path(normal) == normal
    if normal:
        segments = normal.split("/")
        assert all(s and not s.startswith(".") for s in segments)
        assert "\\" not in normal and not normal.startswith("/")
        assert len(normal.encode()) <= MAX_PATH_BYTES


@settings(deadline=None)  # no timing: shared machines are slow at times
@given(GOOD_PATH, st.sampled_from(["..", ".", ".fsmem", ".git", ""]), GOOD_PATH)
def test_bad_segment_anywhere_is_refused(before: str, bad: str, after: str) -> None:
    with pytest.raises(BadPath):
        normalize_path(f"{before}/{bad}/{after}")


@settings(deadline=None)  # no timing: shared machines are slow at times
@given(GOOD_PATH, st.sampled_from("\x00\x01\x1f\x7f\x85\u00ad\u200b\u200c\u200e\u202a\u2028\u2029\ufeff"))
def test_invisible_characters_anywhere_are_refused(path: str, char: str) -> None:
    for cut in (0, len(path) // 2, len(path)):
        with pytest.raises(BadPath):
            normalize_path(path[:cut] + char + path[cut:])


# --- look-alike segments (issue 10, item 9) ---------------------------------------------------------

DOT_LIKE = st.sampled_from(["\u2024", "\u2025", "\u2026", "\uff0e", "\ufe52", "\u3002", "\uff61", "."])


@settings(deadline=None)
@given(st.lists(DOT_LIKE, min_size=1, max_size=4).map("".join), st.sampled_from(["", "a/", "a/b/"]))
def test_a_segment_of_dot_look_alikes_is_refused_with_what_to_type(segment: str, before: str) -> None:
    with pytest.raises(BadPath) as caught:
        normalize_path(f"{before}{segment}/notes.md")
    assert "dot" in caught.value.message or '"."' in caught.value.message or '".."' in caught.value.message


@pytest.mark.parametrize("raw", ["~/notes.md", "~", "~alice/notes.md", "$HOME/notes.md", "a/${USER}/x.md",
                                 "$XDG_DATA_HOME/x.md", "\u2024\u2024/x.md", "\u2024fsmem/lock.md"])
def test_home_and_variable_spellings_are_refused_saying_they_are_not_expanded(raw: str) -> None:
    with pytest.raises(BadPath) as caught:
        normalize_path(raw)
    message = caught.value.message
    assert "expand" in message or "dot" in message or "hidden" in message


@pytest.mark.parametrize("raw", ["a/~draft.md", "price$5.md", "a/b\u2024c.md", "notes/l\u00b7l.md", "$5.md"])
def test_look_alikes_inside_a_name_are_fine(raw: str) -> None:
    assert normalize_path(raw) == raw
