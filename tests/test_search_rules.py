"""The pure rules of search (fsmem.core.search): no disk, no tantivy."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fsmem.core.search import (
    RACY_WINDOW_NS,
    Indexed,
    Stamp,
    file_doc,
    glob_to_regex,
    is_indexable_name,
    parse_since,
    plan_reconcile,
    split_front_matter,
    split_query,
)
from fsmem.errors import BadRequest

NOW = datetime(2026, 8, 10, 12, 0, tzinfo=timezone.utc)


def matches(pattern: str, path: str) -> bool:
    return re.fullmatch(glob_to_regex(pattern), path) is not None


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.md", "MEMORY.md", True),
        ("*.md", "seo/titles.md", True),  # no slash: a name in any folder
        ("seo/*.md", "seo/titles.md", True),
        ("seo/*.md", "seo/deep/titles.md", False),
        ("seo/**", "seo/deep/titles.md", True),
        ("seo", "seo/titles.md", True),  # a folder names everything under it
        ("seo/", "seo/titles.md", True),
        ("seo", "seoul/titles.md", False),
        ("agents/*/MEMORY.md", "agents/seo-3f9a1c2e/MEMORY.md", True),
        ("agents/*/MEMORY.md", "agents/seo-3f9a1c2e/routines/x-1/MEMORY.md", False),
        ("**/NOTES.md", "agents/a-1/routines/b-2/NOTES.md", True),
        ("notes/memory/history", "notes/memory/history/f1.md", True),
        ("notes/memory/*.md", "notes/memory/history/f1.md", False),
        ("titl?s.md", "seo/titles.md", True),
        ("[st]eo/*.md", "seo/titles.md", True),
        ("[!s]eo/*.md", "seo/titles.md", False),
        ("a+b (1).md", "a+b (1).md", True),
        ("/MEMORY.md", "MEMORY.md", True),
    ],
)
def test_glob_to_regex(pattern: str, path: str, expected: bool) -> None:
    assert matches(pattern, path) is expected


def test_empty_glob_is_refused() -> None:
    with pytest.raises(BadRequest, match="pattern is empty"):
        glob_to_regex("  ")


@given(st.text(alphabet="abc/.-_ ()+", min_size=1, max_size=20).filter(lambda s: s.strip("/ ")))
def test_a_literal_path_matches_itself(path: str) -> None:
    clean = "/".join(part for part in path.strip().strip("/").split("/") if part)
    if clean:
        assert matches(clean, clean)


@pytest.mark.parametrize(
    ("query", "words", "phrases", "prefix"),
    [
        ("deploy", ("deploy",), (), True),
        ("deploy ", ("deploy",), (), False),
        ('deploy "release notes" stag', ("deploy", "stag"), ("release notes",), True),
        ('"release notes"', (), ("release notes",), False),
        ('"unclosed phrase', (), ("unclosed phrase",), False),
        ('""  ', (), (), False),
        ("", (), (), False),
    ],
)
def test_split_query(query: str, words: tuple, phrases: tuple, prefix: bool) -> None:
    parts = split_query(query)
    assert (parts.words, parts.phrases, parts.last_is_prefix) == (words, phrases, prefix)


@given(st.text(max_size=60))
def test_split_query_never_raises_and_keeps_every_word(query: str) -> None:
    parts = split_query(query)
    for word in parts.words:
        assert word in query and '"' not in word


def test_since_ages_and_dates() -> None:
    assert parse_since("8w", NOW) == NOW - timedelta(weeks=8)
    assert parse_since("30d", NOW) == NOW - timedelta(days=30)
    assert parse_since("12h", NOW) == NOW - timedelta(hours=12)
    assert parse_since("2026-08-01", NOW) == datetime(2026, 8, 1, tzinfo=timezone.utc)
    assert parse_since("2026-08-01T10:00:00+02:00", NOW) == datetime(2026, 8, 1, 8, tzinfo=timezone.utc)


def test_since_refuses_what_is_not_a_time() -> None:
    with pytest.raises(BadRequest, match="use an age such as 8w"):
        parse_since("last week", NOW)


FACT = """---
id: f1
subject: Ana
attribute: role
source: "chat: Planning"
said: 2026-09-01
until: 2026-10-12
replaced_by: f2
---
Ana leads the data team.
"""


def test_a_replaced_fact_says_until_when_it_held() -> None:
    doc = file_doc("notes/memory/history/f1.md", FACT)
    assert doc.kind == "replaced_fact" and doc.level == "project"
    assert doc.title == "Ana · role"
    assert doc.body == "Ana leads the data team.\n"
    assert doc.body_line == 10
    assert doc.said == datetime(2026, 9, 1, tzinfo=timezone.utc)
    assert "held until 2026-10-12" in doc.meta and "chat: Planning" in doc.meta


def test_a_topic_keeps_its_heading_as_title() -> None:
    doc = file_doc("agents/seo-3f9a1c2e/titles.md", "intro\n## Title rules\nunder 60 chars\n")
    assert (doc.title, doc.kind, doc.level, doc.folder) == ("Title rules", "topic", "agent", "agents/seo-3f9a1c2e")
    assert doc.said is None and doc.meta == ""


def test_front_matter_only_at_the_start() -> None:
    fields, raw, body, line = split_front_matter("text\n---\nkey: v\n---\n")
    assert (fields, raw, line) == ({}, "", 1)
    fields, raw, body, line = split_front_matter("---\nkey: 'v'\nnested:\n  - a\n---\nbody")
    assert fields == {"key": "v", "nested": ""} and body == "body" and line == 6


def stamp(size: int = 10, mtime: int = 1_000, ctime: int = 1_000, inode: int = 7) -> Stamp:
    return Stamp(size, mtime, ctime, inode)


def test_plan_finds_new_changed_removed_and_racy_files() -> None:
    old = Indexed(stamp(), "v1", 1_000 + 10 * RACY_WINDOW_NS)
    racy = Indexed(stamp(), "v1", 1_000 + RACY_WINDOW_NS // 2)
    on_disk = {"same.md": stamp(), "edited.md": stamp(size=11), "renamed-over.md": stamp(inode=8),
               "new.md": stamp(), "racy.md": stamp()}
    indexed = {"same.md": old, "edited.md": old, "renamed-over.md": old, "gone.md": old, "racy.md": racy}
    plan = plan_reconcile(on_disk, indexed)
    assert plan.changed == ("edited.md", "new.md", "renamed-over.md")
    assert plan.removed == ("gone.md",)
    assert plan.racy == ("racy.md",)
    assert plan


def test_an_unchanged_root_plans_nothing() -> None:
    entry = Indexed(stamp(), "v1", 1_000 + 10 * RACY_WINDOW_NS)
    assert not plan_reconcile({"a.md": stamp()}, {"a.md": entry})


@pytest.mark.parametrize(
    ("name", "expected"),
    [("MEMORY.md", True), ("notes.txt", False), (".MEMORY.md.swp", False), ("a.md~", False),
     ("#a.md#", False), (".#a.md", False), ("a.md.tmp", False), ("4913", False)],
)
def test_only_markdown_and_never_editor_temp_files(name: str, expected: bool) -> None:
    assert is_indexable_name(name) is expected
