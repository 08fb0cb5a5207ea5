"""Run.context on real files: which copies a thread gets, when, and that a copy counts as a read."""

from __future__ import annotations

import copy
from types import SimpleNamespace

import pytest

import fsmem
from fsmem import Scope
from fsmem._core.context import latest_copies, message_text, parse_header

AGENT = "5c81d0e4-7f2a-4b6e-9d13-2a8c4e6f0b71"
ROUTINE = "a27f3b90-1c4d-4e8a-b5f2-6d9e0c3a7b14"
SIBLING = "e04c6d15-8b3f-4a27-9c61-f5d2a8e4b093"
AGENT_FILE = "agents/seo-5c81d0e4/MEMORY.md"
NOTES = "agents/seo-5c81d0e4/routines/title-tuning-a27f3b90/NOTES.md"


@pytest.fixture
def memory(tmp_path):
    memory = fsmem.open(tmp_path / "root", create=True)
    memory.create_agent(AGENT, "SEO")
    memory.create_routine(AGENT, ROUTINE, "Title tuning")
    writer = memory.run(Scope.routine(AGENT, ROUTINE), thread_id="setup")
    for path, text in [("MEMORY.md", "# Project\n- Titles end with | Rye & Ember\n"),
                       (AGENT_FILE, "# SEO\n- /classes on hold until 2027-01-25\n"),
                       (NOTES, "# Title tuning\n- last change 2026-11-30\n")]:
        assert writer.call({"command": "write", "path": path, "content": text})["ok"]
    return memory


def loaded(messages):
    """(tag, key) of each copy, in order."""
    out = []
    for message in messages:
        tag, attributes = parse_header(message_text(message))
        out.append((tag, attributes.get("path") or attributes.get("id")))
    return out


def write(memory, path, text, thread="other"):
    run = memory.run(Scope.routine(AGENT, ROUTINE), thread_id=thread)
    run.call({"command": "read", "path": path})
    result = run.call({"command": "write", "path": path, "content": text})
    assert result["ok"], result


def test_each_kind_of_run_gets_exactly_its_levels_in_load_order(memory):
    chat = memory.run(Scope.chat(), thread_id="c").context([])
    agent = memory.run(Scope.agent(AGENT, name="SEO"), thread_id="a").context([])
    routine = memory.run(Scope.routine(AGENT, ROUTINE, agent_name="SEO", routine_name="Title tuning"),
                         thread_id="r").context([])
    assert loaded(chat) == [("memory", "MEMORY.md")]
    assert loaded(agent) == [("memory", "MEMORY.md"), ("agent", AGENT), ("memory", AGENT_FILE)]
    assert loaded(routine) == [("memory", "MEMORY.md"), ("agent", AGENT), ("memory", AGENT_FILE),
                               ("routine", ROUTINE), ("memory", NOTES)]
    assert "/classes on hold" not in "".join(message_text(m) for m in chat)
    assert all(m["role"] == "user" for m in routine)


def test_copies_hold_the_file_exactly(memory):
    [copy_] = memory.run(Scope.chat()).context([])
    version = memory.run(Scope.chat()).call({"command": "read", "path": "MEMORY.md"})["version"]
    assert copy_["content"] == (
        f'<memory path="MEMORY.md" version="{version}">\n# Project\n- Titles end with | Rye & Ember\n</memory>'
    )


def test_the_agent_block_lists_routines_by_the_harness_names_and_the_rest_by_folder(memory):
    memory.create_routine(AGENT, SIBLING, "Rank check")
    run = memory.run(Scope.agent(AGENT, name="SEO"))
    block = message_text(run.context([], routines={ROUTINE: "Title tuning"})[1])
    assert f"- Title tuning (id {ROUTINE}) · notes: {NOTES}" in block
    assert "- rank-check (id e04c6d15) · notes: agents/seo-5c81d0e4/routines/rank-check-e04c6d15/NOTES.md" in block


def test_adding_a_routine_appends_a_new_agent_block_and_changes_nothing_before(memory):
    run = memory.run(Scope.agent(AGENT, name="SEO"), thread_id="a")
    thread = [{"role": "user", "content": "hi"}]
    thread += run.context(thread)
    before = copy.deepcopy(thread)
    memory.create_routine(AGENT, SIBLING, "Rank check")
    extra = run.context(thread)
    assert thread == before
    assert loaded(extra) == [("agent", AGENT)]
    assert "rank-check" in message_text(extra[0])


def test_an_empty_file_is_never_loaded(memory, tmp_path):
    fresh = fsmem.open(tmp_path / "fresh", create=True)
    fresh.create_agent(AGENT, "SEO")
    assert fresh.run(Scope.chat()).context([]) == []
    assert loaded(fresh.run(Scope.agent(AGENT)).context([])) == [("agent", AGENT)]


def test_a_changed_file_is_appended_never_rewritten(memory):
    run = memory.run(Scope.chat(), thread_id="c")
    thread = [{"role": "user", "content": "one"}]
    thread += run.context(thread)
    thread.append({"role": "assistant", "content": "ok"})
    assert run.context(thread) == []
    write(memory, "MEMORY.md", "# Project\n- Titles end with | Rye & Ember\n- No emoji\n")
    before = copy.deepcopy(thread)
    extra = run.context(thread)
    assert thread == before
    assert loaded(extra) == [("memory", "MEMORY.md")]
    assert "- No emoji" in message_text(extra[0])
    assert run.context(thread + extra) == []


def test_a_file_emptied_by_hand_gets_one_empty_notice(memory):
    run = memory.run(Scope.agent(AGENT), thread_id="a")
    thread = run.context([])
    (memory.root / AGENT_FILE).write_text("")
    [notice] = run.context(thread)
    assert parse_header(notice["content"])[1]["empty"] == "true"
    assert run.context(thread + [notice]) == []


def test_after_compaction_each_file_comes_back_once(memory):
    run = memory.run(Scope.routine(AGENT, ROUTINE), thread_id="r")
    thread = run.context([]) + [{"role": "assistant", "content": "done"}]
    compacted = [{"role": "user", "content": "Summary: a title was changed."}]
    back = run.context(compacted)
    assert loaded(back) == loaded(thread[:-1])
    assert run.context(compacted + back) == []


def test_a_copy_counts_as_a_read_for_the_version_check(memory):
    run = memory.run(Scope.chat(), thread_id="c")
    thread = run.context([])
    result = run.call({"command": "write", "path": "MEMORY.md", "old_text": "- Titles", "new_text": "- Page titles"})
    assert result["ok"], result
    # another thread changes the file: this run's copy is now stale, so its next write is refused
    write(memory, "MEMORY.md", "# Project\n- Changed elsewhere\n")
    refused = run.call({"command": "write", "path": "MEMORY.md", "old_text": "# Project", "new_text": "# P"})
    assert refused["error"]["code"] == "CONFLICT"
    # the next turn appends the new copy, which counts as reading it again
    thread += run.context(thread)
    assert run.call({"command": "write", "path": "MEMORY.md", "old_text": "# Project", "new_text": "# P"})["ok"]


def test_a_new_run_resuming_a_thread_counts_the_copies_already_in_it(memory):
    thread = memory.run(Scope.chat(), thread_id="c").context([])
    resumed = memory.run(Scope.chat(), thread_id="c")
    assert resumed.context(thread) == []
    assert resumed.call({"command": "write", "path": "MEMORY.md", "old_text": "# Project", "new_text": "# P"})["ok"]


def test_a_copy_of_an_old_version_does_not_count_as_reading_the_new_one(memory):
    thread = memory.run(Scope.chat(), thread_id="c").context([])
    write(memory, "MEMORY.md", "# Project\n- Changed elsewhere\n")
    resumed = memory.run(Scope.chat(), thread_id="c")
    # without context for the turn, the run has not seen the new version
    refused = resumed.call({"command": "write", "path": "MEMORY.md", "old_text": "# Project", "new_text": "# P"})
    assert refused["error"]["code"] == "NOT_READ"
    assert latest_copies(thread)[("memory", "MEMORY.md")] != resumed.call(
        {"command": "read", "path": "MEMORY.md"})["version"]


def test_a_renamed_routine_keeps_its_notes(memory):
    renamed = Scope.routine(AGENT, ROUTINE, agent_name="SEO", routine_name="Meta titles")
    messages = memory.run(renamed).context([])
    assert ("memory", NOTES) in loaded(messages)
    assert 'This is a run of the routine "Meta titles"' in message_text(messages[3])


def test_deleting_a_routine_returns_its_notes_and_the_agent_block_drops_it(memory):
    run = memory.run(Scope.agent(AGENT, name="SEO"), thread_id="a")
    thread = run.context([], routines={ROUTINE: "Title tuning"})
    held = memory.delete_routine(ROUTINE)
    assert held == {NOTES: "# Title tuning\n- last change 2026-11-30\n"}
    [block] = run.context(thread, routines={ROUTINE: "Title tuning"})
    assert "It has no routines yet." in message_text(block)


# --- recall ------------------------------------------------------------------------------------

def fake_search(memory, hits):
    """Stand in for Memory.search (issue 3) with fixed hits, recording the queries."""
    queries = []

    def search(query, **options):
        queries.append((query, options))
        return [SimpleNamespace(path=p, snippet=s, title="", kind="topic") for p, s in hits]

    memory.search = search
    return queries


def test_recall_appends_the_top_matches_last_skipping_loaded_files(memory):
    write(memory, "seo/titles.md", "# Titles\n- Under 60 characters\n")
    queries = fake_search(memory, [("MEMORY.md", "Titles end"), ("seo/titles.md", "Under 60")])
    run = memory.run(Scope.chat(), thread_id="c")
    extra = run.context([{"role": "user", "content": "How long can a title be?"}], recall="How long can a title be?")
    assert loaded(extra) == [("memory", "MEMORY.md"), ("recall", None)]
    assert queries[0][0] == "long title"  # words of 3+ letters that are not stopwords, no operators
    assert '<match path="seo/titles.md"' in extra[-1]["content"]
    assert "Under 60 characters" in extra[-1]["content"]
    assert "seo/titles.md" in run.seen  # shown whole, so it counts as read


def test_recall_respects_its_token_cap(memory):
    write(memory, "long.md", "# Long\n" + "flour water salt " * 400)
    fake_search(memory, [("long.md", "flour water salt")])
    extra = memory.run(Scope.chat()).context([], recall="flour", recall_tokens=80)
    recall = extra[-1]["content"]
    assert len(recall) <= 80 * 4
    assert 'excerpt="true"' in recall


def test_no_recall_message_when_nothing_new_matches(memory):
    fake_search(memory, [("MEMORY.md", "Titles")])
    assert loaded(memory.run(Scope.chat()).context([], recall="titles")) == [("memory", "MEMORY.md")]


def test_recall_brings_the_notes_a_match_links_to_marked_with_the_match(memory):
    write(memory, "seo/titles.md", "# Titles\n- Under 60 characters; see [the brand](brand.md) and [[MEMORY]].\n")
    write(memory, "seo/brand.md", "# Brand\n- British spelling\n")
    fake_search(memory, [("seo/titles.md", "Under 60")])
    run = memory.run(Scope.chat(), thread_id="c")
    recall = run.context([], recall="title length")[-1]["content"]
    assert '<match path="seo/titles.md"' in recall
    assert '<match path="seo/brand.md" version=' in recall and 'linked_from="seo/titles.md"' in recall
    assert "British spelling" in recall
    assert recall.count("<match ") == 2  # MEMORY.md is loaded already: never recalled
    assert "seo/brand.md" in run.seen


def test_recall_follows_links_one_level_deep_and_at_most_four_notes(memory):
    write(memory, "hub.md", "# Hub\n" + "".join(f"- [[n{i}]]\n" for i in range(6)))
    for i in range(6):
        write(memory, f"n{i}.md", f"# N{i}\nsee [[deeper]]\n")
    write(memory, "deeper.md", "# Deeper\nnot reached\n")
    fake_search(memory, [("hub.md", "Hub")])
    recall = memory.run(Scope.chat()).context([], recall="hub", recall_tokens=2000)[-1]["content"]
    assert [p for p in ("n0.md", "n1.md", "n2.md", "n3.md", "n4.md", "deeper.md") if f'path="{p}"' in recall] == [
        "n0.md", "n1.md", "n2.md", "n3.md"
    ]


# --- recall on the real index ------------------------------------------------------------------

@pytest.fixture
def sample(tmp_path):
    from fsmem._env.sample import copy_sample

    return fsmem.open(copy_sample(tmp_path / "sample"), create=True)


def test_recall_finds_facts_that_hold_before_replaced_ones_and_shows_each_as_one_line(sample):
    run = sample.run(Scope.chat(), thread_id="c")
    question = "When does the market stall open?"
    recall = run.context([{"role": "user", "content": question}], recall=question)[-1]["content"]
    assert recall.splitlines()[2:] == [
        f'<match path="notes/memory/20261109-162000-9d3e7f15.md" version="{_version(sample, "notes/memory/20261109-162000-9d3e7f15.md")}" kind="fact">',
        "Saturday market stall · opening time: From November the Saturday market stall opens at 7:30, half an"
        " hour earlier than before. (said 2026-11-09)",
        "</match>",
        f'<match path="notes/memory/history/20261005-091500-4be1c0a2.md" version="{_version(sample, "notes/memory/history/20261005-091500-4be1c0a2.md")}" kind="replaced_fact">',
        "Saturday market stall · opening time: The Saturday market stall opens at 8:00. (said 2026-10-05; held"
        " until 2026-11-09)",
        "</match>",
        "</recall>",
    ]
    assert not any(path.startswith("notes/") for path in run.seen)


def _version(memory, path):
    from fsmem._core.versions import version_of

    return version_of((memory.root / path).read_bytes())


def test_recall_shows_a_topic_file_whole_and_the_run_may_then_change_it(sample):
    run = sample.run(Scope.chat(), thread_id="c")
    question = "When is the sourdough class?"
    extra = run.context([{"role": "user", "content": question}], recall=question)
    assert '<match path="classes.md"' in extra[-1]["content"]
    assert "Saturdays 14:00–17:00" in extra[-1]["content"]
    result = run.call({"command": "write", "path": "classes.md", "old_text": "Saturdays 14:00–17:00",
                       "new_text": "Saturdays 13:00–16:00"})
    assert result["ok"], result
    # once in the thread at its current version, a file is not recalled again
    thread = [{"role": "user", "content": question}, *extra]
    again = run.context(thread, recall=question)
    assert [parse_header(message_text(m))[0] for m in again] == ["recall"]
    assert '<match path="classes.md"' in again[-1]["content"]  # it changed since: shown again
    thread += again
    assert '<match path="classes.md"' not in "".join(message_text(m) for m in run.context(thread, recall=question))
