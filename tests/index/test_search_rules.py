"""The pure rules of search (fsmem._core.search): no disk, no tantivy."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fsmem._core.search import (
    RACY_WINDOW_NS,
    Indexed,
    Stamp,
    file_doc,
    is_indexable_name,
    content_words,
    plan_reconcile,
    split_query,
)
from fsmem._memory.facts.facts import Facts
from fsmem._memory.facts.files import parse
from fsmem._index.front_matter import fields, file_document, split


@pytest.mark.parametrize(
    ("query", "words", "phrases", "prefix"),
    [
        ("deploy", ("deploy",), (), True),
        ("deploy ", ("deploy",), (), False),
        ("support group?", ("support", "group?"), (), False),  # punctuation finishes the last word
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


@pytest.mark.parametrize(
    ("query", "words", "prefix"),
    [
        ("When did Caroline go to the support group?", ("Caroline", "go", "support", "group"), False),
        ("what did we decide about Ana's budget", ("decide", "Ana", "budget"), True),
        ("Melanie’s kids", ("Melanie", "kids"), True),
        ("deploy to", ("deploy",), False),  # the prefix was the stop word, left out
        ("the who", ("the", "who"), True),  # stop words only: all kept
        ("(staging)", ("staging",), False),
    ],
)
def test_content_words(query: str, words: tuple, prefix: bool) -> None:
    parts = content_words(split_query(query))
    assert (parts.words, parts.last_is_prefix) == (words, prefix)


@given(st.text(max_size=60))
def test_split_query_never_raises_and_keeps_every_word(query: str) -> None:
    parts = split_query(query)
    for word in parts.words:
        assert word in query and '"' not in word


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
    doc = file_document("notes/memory/history/f1.md", FACT)
    assert doc.kind == "replaced_fact" and doc.level == "project"
    assert doc.title == "Ana · role"
    assert doc.body == "Ana leads the data team.\n"
    assert doc.body_line == 10
    assert doc.said == datetime(2026, 9, 1, tzinfo=timezone.utc)
    assert "held until 2026-10-12" in doc.meta and "chat: Planning" in doc.meta


def test_a_topic_keeps_its_heading_as_title() -> None:
    doc = file_doc("agents/seo-3f9a1c2e/titles.md", "", "intro\n## Title rules\nunder 60 chars\n", {})
    assert (doc.title, doc.kind, doc.level, doc.folder) == ("Title rules", "topic", "agent", "agents/seo-3f9a1c2e")
    assert doc.said is None and doc.meta == ""


def test_front_matter_only_at_the_start() -> None:
    assert split("text\n---\nkey: v\n---\n") == ("", "text\n---\nkey: v\n---\n")
    assert split("---\nno closing line\n") == ("", "---\nno closing line\n")
    head, body = split("---\nkey: 'v'\nnested:\n  - a\n---\nbody")
    assert fields(head) == {"key": "v", "nested": ["a"]} and body == "body"
    assert file_document("agents/seo-3f9a1c2e/t.md", head + body).body_line == 6
    assert fields("---\nkey: [unclosed\n---\n") == {} and fields("---\n- a list\n---\n") == {}


def test_the_index_reads_a_fact_as_the_facts_do(tmp_path) -> None:
    """One reader: the index's fields of a fact file are those fsmem._memory.facts parses from it, even where
    YAML quoting, a date with a time, or a `...` in the sentence would trip a line-by-line reader."""
    import fsmem

    memory = fsmem.open(tmp_path / "root", create=True)
    facts = Facts(memory.drive)
    kept = facts.keep("O'Hara: #1", "role", "O'Hara leads --- the data team...", said="2026-09-01T09:30:00Z")
    later = facts.keep("O'Hara: #1", "role", "O'Hara works in research.", said="2026-10-12")
    path = f"notes/memory/history/{kept.fact.id}.md"
    data = (memory.root / path).read_bytes()
    fact = parse(data, kept.fact.id)
    doc = file_document(path, data.decode())
    assert doc.title == f"{fact.subject} · {fact.attribute}" == "O'Hara: #1 · role"
    assert (doc.said, doc.until) == (fact.said, fact.until) == (kept.fact.said, later.fact.said)
    assert " ".join(doc.body.split()) == fact.text
    memory.close()


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
    [("MEMORY.md", True), ("notes.txt", True), ("progress.xml", True), ("photo.png", False), (".MEMORY.md.swp", False), ("a.md~", False),
     ("#a.md#", False), (".#a.md", False), ("a.md.tmp", False), ("4913", False)],
)
def test_only_markdown_and_never_editor_temp_files(name: str, expected: bool) -> None:
    assert is_indexable_name(name) is expected
