"""The injection plan: a pure function of (thread messages, documents) → messages to append."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from fsmem._core.context import (
    EMPTY_NOTE,
    Document,
    RecallCandidate,
    estimate_tokens,
    latest_copies,
    parse_header,
    plan_context,
    plan_recall,
    render_copy,
)
from fsmem._core.versions import version_of

RULES = Document("memory", "MEMORY.md", "# Rules\n- Titles end with | Harbor Light\n")
AGENT = Document("memory", "agents/seo-5c81d0e4/MEMORY.md", "# SEO\n- /classes on hold\n")


def test_first_turn_appends_one_copy_per_document_in_order():
    plan = plan_context([{"role": "user", "content": "hi"}], [RULES, AGENT])
    assert [m["content"] for m in plan.messages] == [
        f'<memory path="MEMORY.md" version="{RULES.version}">\n# Rules\n- Titles end with | Harbor Light\n</memory>',
        f'<memory path="agents/seo-5c81d0e4/MEMORY.md" version="{AGENT.version}">\n# SEO\n- /classes on hold\n</memory>',
    ]
    assert all(m["role"] == "user" for m in plan.messages)
    assert plan.seen == {"MEMORY.md": RULES.version, "agents/seo-5c81d0e4/MEMORY.md": AGENT.version}


def test_unchanged_documents_append_nothing_but_still_count_as_seen():
    thread = plan_context([], [RULES]).messages
    plan = plan_context(thread, [RULES])
    assert plan.messages == []
    assert plan.seen == {"MEMORY.md": RULES.version}


def test_a_changed_file_gets_a_new_copy_at_the_end_and_the_old_copy_stays():
    thread = [{"role": "system", "content": "s"}] + plan_context([], [RULES]).messages
    thread.append({"role": "assistant", "content": "ok"})
    before = copy.deepcopy(thread)
    changed = Document("memory", "MEMORY.md", RULES.body + "- No emoji in titles\n")
    plan = plan_context(thread, [changed])
    assert thread == before
    assert len(plan.messages) == 1
    assert plan.messages[0]["content"].startswith(f'<memory path="MEMORY.md" version="{changed.version}">\n')


def test_going_back_to_an_older_version_still_appends_because_the_latest_copy_differs():
    v1, v2 = RULES, Document("memory", "MEMORY.md", "# Rules\n")
    thread = plan_context([], [v1]).messages
    thread += plan_context(thread, [v2]).messages
    assert len(plan_context(thread, [v1]).messages) == 1


def test_an_empty_file_is_never_loaded():
    empty = Document("memory", "agents/seo-5c81d0e4/MEMORY.md", "")
    blank = Document("memory", "x/NOTES.md", "\n  \n")
    plan = plan_context([], [RULES, empty, blank])
    assert [parse_header(m["content"])[1]["path"] for m in plan.messages] == ["MEMORY.md"]
    assert "agents/seo-5c81d0e4/MEMORY.md" not in plan.seen


def test_a_file_emptied_after_it_was_loaded_gets_one_empty_notice():
    thread = plan_context([], [AGENT]).messages
    emptied = Document("memory", AGENT.key, "")
    plan = plan_context(thread, [emptied])
    assert plan.messages == [{
        "role": "user",
        "content": f'<memory path="{AGENT.key}" version="{version_of(b"")}" empty="true">\n{EMPTY_NOTE}\n</memory>',
    }]
    assert plan_context(thread + plan.messages, [emptied]).messages == []
    # after compaction the notice is gone and nothing comes back: an empty file is never loaded
    assert plan_context([{"role": "user", "content": "summary"}], [emptied]).messages == []


def test_after_compaction_each_document_comes_back_once():
    thread = plan_context([], [RULES, AGENT]).messages + [{"role": "assistant", "content": "done"}]
    compacted = [{"role": "user", "content": "Summary of the earlier conversation: titles were fixed."}]
    plan = plan_context(compacted, [RULES, AGENT])
    assert len(plan.messages) == 2
    assert plan_context(compacted + plan.messages, [RULES, AGENT]).messages == []


def test_blocks_travel_like_files_and_a_new_block_version_is_appended():
    block = Document("agent", "5c81d0e4-aaaa", "Agent SEO\nRoutines:\n- Title tuning\n")
    thread = plan_context([], [block]).messages
    assert thread[0]["content"].startswith(f'<agent id="5c81d0e4-aaaa" version="{block.version}">')
    grown = Document("agent", "5c81d0e4-aaaa", block.body + "- Rank check\n")
    plan = plan_context(thread, [grown])
    assert len(plan.messages) == 1 and plan.seen == {}  # blocks are not files: nothing to mark read


def test_same_key_under_two_tags_are_different_documents():
    agent = Document("agent", "r1", "agent body")
    routine = Document("routine", "r1", "routine body")
    thread = plan_context([], [agent]).messages
    assert len(plan_context(thread, [agent, routine]).messages) == 1


def test_copies_are_recognised_in_list_content_and_only_from_user_messages():
    text = render_copy(RULES)
    as_parts = [{"role": "user", "content": [{"type": "text", "text": text}]}]
    assert plan_context(as_parts, [RULES]).messages == []
    from_assistant = [{"role": "assistant", "content": text}]
    assert len(plan_context(from_assistant, [RULES]).messages) == 1


def test_headers_escape_quotes_and_round_trip():
    odd = Document("memory", 'seo/"odd" & <path>.md', "x")
    text = render_copy(odd)
    assert text.splitlines()[0] == (
        f'<memory path="seo/&quot;odd&quot; &amp; &lt;path&gt;.md" version="{odd.version}">'
    )
    assert latest_copies([{"role": "user", "content": text}]) == {("memory", odd.key): odd.version}


def test_a_given_file_version_is_used_as_is():
    doc = Document("memory", "MEMORY.md", "body", version="0123456789ab")
    assert 'version="0123456789ab"' in render_copy(doc)


def test_an_unknown_tag_is_a_bug_in_the_caller():
    import pytest

    with pytest.raises(ValueError, match="unknown document tag"):
        Document("memo", "x", "y")


# --- properties --------------------------------------------------------------------------------

bodies = st.text(alphabet=st.sampled_from("ab \n#-é\""), max_size=30)
keys = st.sampled_from(["MEMORY.md", "agents/a-1/MEMORY.md", "agents/a-1/routines/r-2/NOTES.md"])
documents = st.lists(st.builds(Document, st.just("memory"), keys, bodies), max_size=4)
chatter = st.lists(
    st.builds(lambda role, text: {"role": role, "content": text},
              st.sampled_from(["user", "assistant"]), st.text(max_size=20)),
    max_size=4,
)


@settings(max_examples=200, deadline=None)  # no timing: shared machines are slow at times
@given(chatter, st.lists(documents, min_size=1, max_size=5))
def test_turn_after_turn_the_prefix_never_changes_and_the_thread_holds_the_current_versions(start, turns):
    thread = list(start)
    for docs in turns:
        snapshot = copy.deepcopy(thread)
        plan = plan_context(thread, docs)
        assert thread == snapshot  # the planner never touches the thread
        thread = thread + plan.messages
        assert plan_context(thread, docs).messages == []  # appending twice adds nothing
        latest = latest_copies(thread)
        current = {}
        for doc in docs:
            current.setdefault(doc.key, doc)
        for key, doc in current.items():
            if not doc.is_empty:
                assert latest[("memory", key)] == doc.version
            else:
                assert latest.get(("memory", key)) in (None, doc.version)
        thread.append({"role": "assistant", "content": "ok"})


@settings(max_examples=200, deadline=None)  # no timing: shared machines are slow at times
@given(documents)
def test_after_any_compaction_every_non_empty_document_comes_back_exactly_once(docs):
    plan = plan_context([{"role": "user", "content": "summary"}], docs)
    loaded = [parse_header(m["content"])[1]["path"] for m in plan.messages]
    expected = []
    for doc in docs:
        if doc.key not in expected and not doc.is_empty and doc.key not in [d.key for d in docs[: docs.index(doc)]]:
            expected.append(doc.key)
    assert loaded == expected


# --- recall ------------------------------------------------------------------------------------

def candidate(path, text, snippet="", kind="topic"):
    return RecallCandidate(path=path, version=version_of(text.encode()), text=text, snippet=snippet, kind=kind)


def test_recall_shows_small_files_whole_and_marks_them_read():
    titles = candidate("seo/titles.md", "# Titles\n- At most 60 characters\n")
    plan = plan_recall("how long can a title be?", [titles], loaded=["MEMORY.md"])
    assert plan.message["content"] == (
        '<recall query="how long can a title be?">\n'
        "Memory files that may bear on the message above; they are not loaded in full."
        " Read a file before you rely on it or change it.\n"
        f'<match path="seo/titles.md" version="{titles.version}" kind="topic">\n'
        "# Titles\n- At most 60 characters\n"
        "</match>\n"
        "</recall>"
    )
    assert plan.paths == ["seo/titles.md"]
    assert plan.seen == {"seo/titles.md": titles.version}


def test_recall_skips_loaded_files_and_files_already_in_the_thread():
    top = candidate("MEMORY.md", "# Rules\n")
    brand = candidate("brand.md", "# Brand\n")
    thread = [{"role": "user", "content": plan_recall("q", [brand]).message["content"]}]
    plan = plan_recall("q", [top, brand], messages=thread, loaded=["MEMORY.md"])
    assert plan.message is None
    changed = candidate("brand.md", "# Brand\n- warm tone\n")
    assert plan_recall("q", [changed], messages=thread).paths == ["brand.md"]


def test_recall_stays_under_its_token_cap_and_cuts_a_long_file_to_an_excerpt():
    long_text = "# Long\n" + "word " * 2000
    plan = plan_recall("word", [candidate("long.md", long_text, snippet="word word word")], max_tokens=90)
    assert estimate_tokens(plan.message["content"]) <= 90
    assert '<match path="long.md" excerpt="true" kind="topic">\nword word word\n</match>' in plan.message["content"]
    assert plan.seen == {}
    plan = plan_recall("word", [candidate("long.md", long_text)], max_tokens=100)
    assert estimate_tokens(plan.message["content"]) <= 100
    assert plan.message["content"].count(" …") == 1


@settings(max_examples=150, deadline=None)  # no timing: shared machines are slow at times
@given(
    st.lists(st.tuples(st.sampled_from(["a.md", "b.md", "c/d.md", "e.md"]), st.text(max_size=600),
                       st.text(max_size=120)), max_size=6),
    st.integers(min_value=40, max_value=800),
    st.text(max_size=300),
)
def test_recall_never_exceeds_the_cap(hits, cap, query):
    plan = plan_recall(query, [candidate(p, t, s) for p, t, s in hits], max_tokens=cap)
    if plan.message is not None:
        assert estimate_tokens(plan.message["content"]) <= cap
        assert len(plan.paths) == len(set(plan.paths))


def test_core_context_imports_only_the_standard_library():
    import ast
    import sys
    from pathlib import Path

    import fsmem._core.context as module

    tree = ast.parse(Path(module.__file__).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            root = node.module.split(".")[0]
            assert root in sys.stdlib_module_names or node.module.startswith("fsmem._core") or root == "__future__"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                assert alias.name.split(".")[0] in sys.stdlib_module_names
