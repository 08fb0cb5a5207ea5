"""One conformance suite, two stores: the folder and PostgreSQL behave the same through the API.

Every case goes through ``memory.run(scope, thread).call({...})`` or the ``Memory`` API and asserts on
structured results (``ok``, ``error.code``, data fields), never on the folder's files: the same
expectations as tests/memory/test_tool.py, test_versions_log.py, test_facts.py, test_levels.py,
test_review.py and test_context.py, on both stores (issue 12, "The conformance suite green on both
stores"). A refused call must change nothing: no file, no kept version, no log entry, no proposal.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import fsmem
from fsmem import Conflict, Scope
from fsmem._core.context import message_text, parse_header
from fsmem._core.versions import version_of
from fsmem._errors import Exists, NotFound

STORES = ["folder", "postgres"]

AGENT = "5c81d0e4-7f2a-4b6e-9d13-2a8c4e6f0b71"
ROUTINE = "a27f3b90-1c4d-4e8a-b5f2-6d9e0c3a7b14"
AGENT_FOLDER = "agents/seo-5c81d0e4"
ROUTINE_FOLDER = "agents/seo-5c81d0e4/routines/title-tuning-a27f3b90"
SECRET = "sk-" + "a1B2c3D4e5F6g7H8i9J0"


@dataclass
class Store:
    """How to open the one store under test, again: a second worker (its own cache) on the same data."""

    kind: str
    open: Callable[[], fsmem.Memory]


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path):
    opened: list[fsmem.Memory] = []
    if request.param == "folder":
        root = tmp_path / "root"
        fsmem.open(root, create=True)

        def open_() -> fsmem.Memory:
            opened.append(fsmem.open(root))
            return opened[-1]
    else:
        url = request.getfixturevalue("postgres")
        project = f"conformance-{uuid.uuid4().hex[:12]}"
        caches = iter(range(1000))

        def open_() -> fsmem.Memory:
            number = next(caches)  # the first open makes the project, as `fsmem init` makes a root
            opened.append(fsmem.open(url, create=number == 0, project=project, cache=tmp_path / f"cache{number}"))
            return opened[-1]

    yield Store(request.param, open_)
    for memory in opened:
        memory.close()


@pytest.fixture
def memory(store: Store) -> fsmem.Memory:
    return store.open()


@pytest.fixture
def run(memory: fsmem.Memory):
    return memory.run(Scope.chat(), thread_id="t-1")


def ok(result: dict[str, Any]) -> dict[str, Any]:
    assert result["ok"], result
    return result


def refused(result: dict[str, Any], code: str) -> dict[str, Any]:
    assert result["ok"] is False, result
    assert result["error"]["code"] == code, result
    return result


def put(memory: fsmem.Memory, path: str, text: str, thread: str = "setup") -> str:
    """Write ``path`` through the tool as another thread would (reading it first); its new version."""
    writer = memory.run(Scope.chat(), thread_id=thread)
    writer.call({"command": "read", "path": path})
    return ok(writer.call({"command": "write", "path": path, "content": text}))["version"]


def files(memory: fsmem.Memory) -> dict[str, bytes | None]:
    return {entry.path: memory.drive.read(entry.path) for entry in memory.drive.walk_files("")}


def state(memory: fsmem.Memory, *paths: str) -> tuple[object, ...]:
    """Everything a change could touch: files, kept versions (of every file and of ``paths``), the
    log, the proposals."""
    held = files(memory)
    versions = {}
    for path in sorted({*held, *paths}):
        try:
            versions[path] = [(v.version, v.command) for v in memory.versions(path)]
        except fsmem.FsmemError:  # a path the request itself names wrongly: nothing can be kept of it
            versions[path] = []
    return held, versions, list(memory.log()), sorted(p.id for p in memory.proposals())


def log_since(memory: fsmem.Memory, start: int) -> list[Any]:
    return list(memory.log())[start:]


# ---- read ----------------------------------------------------------------------------------------


def test_write_then_read_gives_the_content_and_its_version(run) -> None:
    written = ok(run.call({"command": "write", "path": "brand.md", "content": "# Brand\n- Voice: warm\n"}))
    assert written["version"] == version_of(b"# Brand\n- Voice: warm\n") and written["lines"] == 2
    read = ok(run.call({"command": "read", "path": "/brand.md"}))
    assert (read["path"], read["version"], read["content"], read["lines"]) == (
        "brand.md",
        written["version"],
        "# Brand\n- Voice: warm\n",
        2,
    )
    assert read["text"].splitlines()[1:] == ["     1\t# Brand", "     2\t- Voice: warm"]


def test_a_line_range_shows_only_those_lines(run) -> None:
    ok(run.call({"command": "write", "path": "a.md", "content": "".join(f"line {i}\n" for i in range(1, 11))}))
    read = ok(run.call({"command": "read", "path": "a.md", "start_line": 4, "end_line": 5}))
    assert read["version"] == version_of("".join(f"line {i}\n" for i in range(1, 11)).encode())
    assert read["text"].splitlines()[1:] == ["     4\tline 4", "     5\tline 5"]


def test_reading_a_folder_lists_two_levels(memory, run) -> None:
    ok(run.call({"command": "write", "path": "seo/titles.md", "content": "x\n"}))
    ok(run.call({"command": "write", "path": "seo/deep/more.md", "content": "y\n"}))
    lines = ok(run.call({"command": "read", "path": ""}))["text"].splitlines()
    assert lines[0] == "/"
    tree = [(len(line) - len(line.lstrip()), line.split()[0]) for line in lines[1:]]
    for entry in ((2, "seo/"), (4, "titles.md"), (4, "deep/"), (2, "MEMORY.md")):
        assert entry in tree, (entry, lines)
    assert not any(".fsmem" in line or "more.md" in line for line in lines)
    sub = ok(run.call({"command": "read", "path": "seo"}))
    assert sub["path"] == "seo" and "titles.md" in sub["text"] and "more.md" in sub["text"]


# ---- write ---------------------------------------------------------------------------------------


def test_a_marker_edit_keeps_the_unchanged_lines(memory, run) -> None:
    ok(run.call({"command": "write", "path": "a.md", "content": "# A\nkeep 1\nold line\nkeep 2\n"}))
    result = ok(run.call({"command": "write", "path": "a.md", "content": "<!-- ... -->\nkeep 1\nnew line\nkeep 2\n"}))
    assert result["content"] == "# A\nkeep 1\nnew line\nkeep 2\n"
    assert memory.read("a.md") == "# A\nkeep 1\nnew line\nkeep 2\n"


def test_old_text_is_replaced_once(memory, run) -> None:
    ok(run.call({"command": "write", "path": "a.md", "content": "x = 1\ny = 2\n"}))
    result = ok(run.call({"command": "write", "path": "a.md", "old_text": "y = 2", "new_text": "y = 5"}))
    assert result["line"] == 2 and result["version"] == version_of(b"x = 1\ny = 5\n")
    assert memory.read("a.md") == "x = 1\ny = 5\n"


def test_the_same_content_changes_nothing(memory, run) -> None:
    first = ok(run.call({"command": "write", "path": "a.md", "content": "same\n"}))
    before = state(memory)
    again = ok(run.call({"command": "write", "path": "a.md", "content": "same\n"}))
    assert again["version"] == first["version"]
    assert state(memory) == before


def test_an_existing_empty_file_needs_no_read(memory, run) -> None:
    put(memory, "empty.md", "")
    ok(run.call({"command": "write", "path": "empty.md", "content": "# Project\n"}))


# ---- rename and delete ---------------------------------------------------------------------------


def test_rename_a_file_keeps_the_runs_read_version(memory, run) -> None:
    ok(run.call({"command": "write", "path": "a.md", "content": "a\n"}))
    result = ok(run.call({"command": "rename", "path": "a.md", "new_path": "topics/a.md"}))
    assert result["path"] == "topics/a.md"
    assert memory.read("topics/a.md") == "a\n" and not memory.drive.exists("a.md")
    ok(run.call({"command": "write", "path": "topics/a.md", "content": "a2\n"}))


def test_rename_a_folder_moves_every_file(memory, run) -> None:
    for path in ("drafts/a.md", "drafts/deep/b.md"):
        ok(run.call({"command": "write", "path": path, "content": f"{path}\n"}))
    ok(run.call({"command": "rename", "path": "drafts", "new_path": "archive/drafts"}))
    assert {p: d for p, d in files(memory).items() if "drafts" in p} == {
        "archive/drafts/a.md": b"drafts/a.md\n",
        "archive/drafts/deep/b.md": b"drafts/deep/b.md\n",
    }
    assert not memory.drive.exists("drafts") and memory.drive.is_dir("archive/drafts")


def test_delete_a_file_returns_what_it_held_and_keeps_a_version(memory, run) -> None:
    ok(run.call({"command": "write", "path": "old.md", "content": "stale rule\n"}))
    result = ok(run.call({"command": "delete", "path": "old.md"}))
    assert result["held"] == {"old.md": "stale rule\n"}
    assert not memory.drive.exists("old.md")
    assert [(v.version, v.command) for v in memory.versions("old.md")] == [(version_of(b"stale rule\n"), "delete")]
    refused(run.call({"command": "read", "path": "old.md"}), "NOT_FOUND")


def test_deleting_a_top_file_empties_it(memory, run) -> None:
    put(memory, "MEMORY.md", "rules\n")
    ok(run.call({"command": "read", "path": "MEMORY.md"}))
    result = ok(run.call({"command": "delete", "path": "MEMORY.md"}))
    assert result["held"] == {"MEMORY.md": "rules\n"} and result["version"] == version_of(b"")
    assert memory.read("MEMORY.md") == ""


def test_delete_a_folder_returns_and_keeps_every_file(memory, run) -> None:
    held = {"drafts/a.md": "# A\n", "drafts/deep/b.md": "# B\n"}
    for path, text in held.items():
        ok(run.call({"command": "write", "path": path, "content": text}))
    start = len(list(memory.log()))
    result = ok(run.call({"command": "delete", "path": "drafts"}))
    assert result["held"] == held
    assert not memory.drive.exists("drafts") and not memory.drive.exists("drafts/a.md")
    deletes = log_since(memory, start)
    assert {(e.command, e.path, e.after) for e in deletes} == {("delete", p, None) for p in held}
    for path, text in held.items():
        assert version_of(text.encode()) in [v.version for v in memory.versions(path)]
        memory.revert(path)
        assert memory.read(path) == text


# ---- search --------------------------------------------------------------------------------------


@pytest.fixture
def corpus(run):
    for path, text in {
        "a.md": "alpha\nbeta 42\n",
        "b/c.md": "gamma 7\nsourdough starter\n",
        "b/d.md": "sourdough loaf\n",
        "e.md": "sourdough class on Saturday\n",
    }.items():
        ok(run.call({"command": "write", "path": path, "content": text}))
    return run


def hits(result: dict[str, Any]) -> list[str]:
    return [hit["path"] for hit in ok(result)["hits"]]


def test_regex_search_lists_matching_lines(corpus) -> None:
    result = ok(corpus.call({"command": "search", "query": r"\d+", "regex": True}))
    assert [(h["path"], h["line"]) for h in result["hits"]] == [("a.md", 2), ("b/c.md", 1)]
    only_b = ok(corpus.call({"command": "search", "query": r"\d+", "regex": True, "include": "b/**"}))
    assert [(h["path"], h["line"]) for h in only_b["hits"]] == [("b/c.md", 1)]
    not_b = ok(corpus.call({"command": "search", "query": r"\d+", "regex": True, "exclude": ["b/**"]}))
    assert [h["path"] for h in not_b["hits"]] == ["a.md"]


def test_text_search_with_include_exclude_since_and_limit(corpus) -> None:
    assert sorted(hits(corpus.call({"command": "search", "query": "sourdough"}))) == ["b/c.md", "b/d.md", "e.md"]
    assert sorted(hits(corpus.call({"command": "search", "query": "sourdough", "include": "b/**"}))) == [
        "b/c.md",
        "b/d.md",
    ]
    assert hits(corpus.call({"command": "search", "query": "sourdough", "exclude": ["b/**"]})) == ["e.md"]
    assert len(hits(corpus.call({"command": "search", "query": "sourdough", "limit": 2}))) == 2
    assert len(hits(corpus.call({"command": "search", "query": "sourdough", "since": "1h"}))) == 3
    assert hits(corpus.call({"command": "search", "query": "sourdough", "since": "2200-01-01"})) == []
    refused(corpus.call({"command": "search", "query": "sourdough", "since": "9999-12-31"}), "BAD_REQUEST")


def test_search_finds_a_change_at_once_and_never_a_deleted_file(corpus) -> None:
    ok(corpus.call({"command": "write", "path": "b/d.md", "old_text": "sourdough loaf", "new_text": "rye loaf"}))
    ok(corpus.call({"command": "delete", "path": "e.md"}))
    assert hits(corpus.call({"command": "search", "query": "sourdough"})) == ["b/c.md"]
    assert hits(corpus.call({"command": "search", "query": "rye"})) == ["b/d.md"]


# ---- ranking: questions in plain language find the file that answers them ----------------------


RANKED = {
    "trips.md": "# Trips\n\nAna went hiking in the Alps with her sister last summer.\n",
    "pets.md": "# Pets\n\nAna adopted a puppy named Biscuit; the puppy loves long walks.\n",
    "meetings.md": "# Meetings\n\nWe decided what to do about the budget, and when to meet.\n",
    "garden.md": "# Garden\n\nTomatoes, basil and a lemon tree on the balcony.\n",
}


def written(run, files: dict[str, str]):
    """``run`` once it wrote each of ``files`` through the tool."""
    for path, text in files.items():
        ok(run.call({"command": "write", "path": path, "content": text}))
    return run


@pytest.fixture
def ranked(run):
    return written(run, RANKED)


def test_a_question_with_stop_words_finds_the_file_with_its_content_words(ranked) -> None:
    """Only trips.md holds "hiking" and "Alps"; meetings.md holds "what", "did", "when", "to"."""
    found = hits(ranked.call({"command": "search", "query": "When did Ana go hiking in the Alps?"}))
    assert found[0] == "trips.md"
    assert "meetings.md" not in found  # it holds stop words only: they match nothing


def test_a_file_with_more_of_the_words_ranks_first(ranked) -> None:
    found = hits(ranked.call({"command": "search", "query": "Ana puppy Biscuit walks"}))
    assert found == ["pets.md", "trips.md"]  # all four words, then Ana alone


def test_words_match_across_their_forms(ranked) -> None:
    """English stemming: "adopting puppies" finds "adopted a puppy"; "hike" finds "hiking"."""
    assert hits(ranked.call({"command": "search", "query": "adopting puppies "})) == ["pets.md"]
    assert hits(ranked.call({"command": "search", "query": "hike"})) == ["trips.md"]


def test_a_possessive_asks_about_its_owner(ranked) -> None:
    assert hits(ranked.call({"command": "search", "query": "Ana's sister?"}))[0] == "trips.md"


def test_a_query_of_stop_words_only_still_searches_them(ranked) -> None:
    assert hits(ranked.call({"command": "search", "query": "what to do"})) == ["meetings.md"]


def test_a_question_mark_finishes_the_last_word(ranked) -> None:
    """"tomat" is being typed and finds "Tomatoes"; "tomat?" is a finished word, and no file holds it."""
    assert hits(ranked.call({"command": "search", "query": "tomat"})) == ["garden.md"]
    assert hits(ranked.call({"command": "search", "query": "tomat?"})) == []


# ---- linked notes: links, backlinks, and renames that keep them ---------------------------------


LINKED = {
    "MEMORY.md": "# Project\n\nSee [titles](seo/titles.md) and [[notes/plan]].\n",
    "seo/titles.md": "# Titles\n\nBack [home](../MEMORY.md); the [[brand]] rules.\n",
    "seo/brand.md": "# Brand\n\nBritish spelling.\n",
    "notes/plan.md": "# Plan\n\nThe [titles](/seo/titles.md#rules), and [[nowhere]].\n",
}


@pytest.fixture
def linked(run):
    return written(run, LINKED)


def _links(memory: fsmem.Memory, path: str) -> tuple[list, list]:
    from fsmem._memory.links import links_of

    found = links_of(memory, path)
    return [(link.written, link.target) for link in found.links], [(link.source, link.line) for link in found.backlinks]


def test_links_and_backlinks_of_a_file(linked, memory) -> None:
    assert _links(memory, "seo/titles.md") == (
        [("../MEMORY.md", "MEMORY.md"), ("brand", "seo/brand.md")],
        [("MEMORY.md", 3), ("notes/plan.md", 3)],
    )
    assert _links(memory, "notes/plan.md") == ([("/seo/titles.md#rules", "seo/titles.md"), ("nowhere", None)],
                                              [("MEMORY.md", 3)])


def test_a_rename_rewrites_the_links_that_led_to_the_file_in_the_same_change(linked, memory) -> None:
    result = ok(linked.call({"command": "rename", "path": "seo/titles.md", "new_path": "web/titles.md"}))
    assert result["relinked"] == ["MEMORY.md", "notes/plan.md", "web/titles.md"]
    text = {path: ok(linked.call({"command": "read", "path": path}))["content"] for path in result["relinked"]}
    assert "[titles](web/titles.md)" in text["MEMORY.md"]
    assert "[titles](/web/titles.md#rules)" in text["notes/plan.md"]
    assert "[home](../MEMORY.md)" in text["web/titles.md"] and "[[seo/brand]]" in text["web/titles.md"]
    assert [v.command for v in memory.versions("MEMORY.md")][:1] == ["rename"]  # what it held is kept
    assert memory.versions("MEMORY.md")[0].version == version_of(LINKED["MEMORY.md"].encode())
    assert _links(memory, "web/titles.md")[1] == [("MEMORY.md", 3), ("notes/plan.md", 3)]
    entries = [e for e in memory.log() if e.command == "rename"]
    assert {e.path for e in entries} >= {"MEMORY.md", "notes/plan.md"}
    # the run that renamed may go on writing what it rewrote
    ok(linked.call({"command": "write", "path": "MEMORY.md", "old_text": "# Project", "new_text": "# Our project"}))


def test_a_folder_rename_keeps_links_into_out_of_and_inside_it(linked, memory) -> None:
    result = ok(linked.call({"command": "rename", "path": "seo", "new_path": "archive/seo"}))
    assert result["relinked"] == ["MEMORY.md", "archive/seo/titles.md", "notes/plan.md"]
    titles = ok(linked.call({"command": "read", "path": "archive/seo/titles.md"}))["content"]
    assert "[home](../../MEMORY.md)" in titles and "[[brand]]" in titles  # out of it; inside it, as written
    assert _links(memory, "archive/seo/titles.md") == (
        [("../../MEMORY.md", "MEMORY.md"), ("brand", "archive/seo/brand.md")],
        [("MEMORY.md", 3), ("notes/plan.md", 3)],
    )


def test_a_rename_with_no_link_to_keep_changes_no_other_file(linked, memory) -> None:
    before = memory.versions("MEMORY.md")
    result = ok(linked.call({"command": "rename", "path": "seo/brand.md", "new_path": "seo/brand-book.md"}))
    assert result["relinked"] == ["seo/titles.md"]  # [[brand]] would lead nowhere now
    assert "[[brand-book]]" in ok(linked.call({"command": "read", "path": "seo/titles.md"}))["content"]
    assert memory.versions("MEMORY.md") == before


# ---- refusals: each code, and nothing changes ----------------------------------------------------


def _seed(memory: fsmem.Memory) -> None:
    put(memory, "MEMORY.md", "# Rules\n- one\n")
    put(memory, "a.md", "x = 1\ny = 2\nx = 1\n")
    put(memory, "b.md", "b\n")
    put(memory, "topics/t.md", "t\n")
    put(memory, "topics.md/in.md", "a folder named like a file\n")


REFUSALS = [
    ("NOT_FOUND", {"command": "read", "path": "nope.md"}),
    ("NOT_FOUND", {"command": "delete", "path": "nope.md"}),
    ("NOT_FOUND", {"command": "rename", "path": "nope.md", "new_path": "other.md"}),
    ("NOT_FOUND", {"command": "write", "path": "nope.md", "old_text": "a", "new_text": "b"}),
    ("BAD_PATH", {"command": "read", "path": "../outside.md"}),
    ("BAD_PATH", {"command": "write", "path": ".fsmem/log.jsonl", "content": "x\n"}),
    ("BAD_PATH", {"command": "write", "path": "program.exe", "content": "x\n"}),
    ("BAD_PATH", {"command": "search", "query": "x", "include": "../**"}),
    ("PROTECTED", {"command": "write", "path": "agents/ghost-12345678/MEMORY.md", "content": "x\n"}),
    ("PROTECTED", {"command": "write", "path": "notes/memory/new.md", "content": "x\n"}),
    ("PROTECTED", {"command": "delete", "path": AGENT_FOLDER}),
    ("PROTECTED", {"command": "rename", "path": "MEMORY.md", "new_path": "x.md"}),
    ("EXISTS", {"command": "write", "path": "topics.md", "content": "x\n"}),
    ("NOT_READ", {"command": "write", "path": "a.md", "content": "new\n"}),
    ("NOT_READ", {"command": "delete", "path": "b.md"}),
    ("TOO_LARGE", {"command": "write", "path": "big.md", "content": "x" * (32 * 1024 + 1)}),
    ("SENSITIVE", {"command": "write", "path": "key.md", "content": f"key {SECRET}\n"}),
    ("SENSITIVE", {"command": "write", "path": f"{SECRET}.md", "content": "x\n"}),
    ("EDIT_UNPLACED", {"command": "write", "path": "fresh.md", "content": "<!-- ... -->\nx\n"}),
    ("BAD_PATTERN", {"command": "search", "query": "(unclosed", "regex": True}),
    ("BAD_REQUEST", {"command": "fly"}),
    ("BAD_REQUEST", {"command": "read"}),
    ("BAD_REQUEST", {"command": "write", "path": "a.md"}),
    ("BAD_REQUEST", {"command": "write", "path": "a.md", "content": "x", "old_text": "a", "new_text": "b"}),
    ("BAD_REQUEST", {"command": "search", "query": "x", "limit": 0}),
    ("BAD_REQUEST", {"command": "rename", "path": "b.md", "new_path": "b.md"}),
    ("BAD_REQUEST", "not a dict"),
]


@pytest.mark.parametrize("code, request_", REFUSALS, ids=[f"{c}-{n}" for n, (c, _) in enumerate(REFUSALS)])
def test_each_refusal_has_its_code_and_changes_nothing(memory, code, request_) -> None:
    _seed(memory)
    run = memory.run(Scope.chat(), thread_id="t-1")
    paths = [request_.get(key, "") for key in ("path", "new_path")] if isinstance(request_, dict) else []
    before = state(memory, *[p for p in paths if p.endswith(".md")])
    refused(run.call(request_), code)
    assert state(memory, *[p for p in paths if p.endswith(".md")]) == before


@pytest.mark.parametrize(
    "code, request_",
    [
        ("EXISTS", {"command": "rename", "path": "a.md", "new_path": "b.md"}),
        ("EXISTS", {"command": "rename", "path": "a.md", "new_path": "topics.md"}),
        ("NOT_UNIQUE", {"command": "write", "path": "a.md", "old_text": "x = 1", "new_text": "x = 3"}),
        ("EDIT_UNPLACED", {"command": "write", "path": "a.md", "old_text": "z = 9", "new_text": "z = 0"}),
        ("EDIT_UNPLACED", {"command": "write", "path": "a.md", "content": "<!-- ... -->\nnowhere\nnew\n"}),
        ("SENSITIVE", {"command": "write", "path": "a.md", "old_text": "y = 2", "new_text": f"y = {SECRET}"}),
        ("TOO_LARGE", {"command": "write", "path": "a.md", "old_text": "y = 2", "new_text": "y" * 33_000}),
    ],
)
def test_refusals_of_a_file_the_run_has_read_change_nothing(memory, code, request_) -> None:
    _seed(memory)
    run = memory.run(Scope.chat(), thread_id="t-1")
    ok(run.call({"command": "read", "path": request_["path"]}))
    before = state(memory, request_["path"], request_.get("new_path", "a.md"))
    refused(run.call(request_), code)
    assert state(memory, request_["path"], request_.get("new_path", "a.md")) == before


def test_the_tool_reads_a_fact_file_and_never_changes_it(memory) -> None:
    kept = memory.facts.keep("Ana", "role", "Ana works in research.")
    run = memory.run(Scope.chat(), thread_id="t-1")
    path = kept.fact.path
    assert "Ana works in research." in ok(run.call({"command": "read", "path": path}))["content"]
    for request_ in (
        {"command": "write", "path": path, "content": "x\n"},
        {"command": "write", "path": path, "old_text": "Ana", "new_text": "Bo"},
        {"command": "delete", "path": path},
        {"command": "delete", "path": "notes/memory"},
        {"command": "rename", "path": path, "new_path": "elsewhere.md"},
    ):
        before = state(memory, path, "elsewhere.md")
        refused(run.call(request_), "PROTECTED")
        assert state(memory, path, "elsewhere.md") == before
    assert [f.id for f in memory.facts.current()] == [kept.fact.id]


def test_a_conflict_changes_nothing_and_a_new_read_clears_it(memory) -> None:
    first = memory.run(thread_id="alpha")
    second = memory.run(thread_id="beta")
    ok(first.call({"command": "write", "path": "notes.md", "content": "one\n"}))
    ok(second.call({"command": "read", "path": "notes.md"}))
    two = ok(first.call({"command": "write", "path": "notes.md", "content": "two\n"}))
    before = state(memory, "notes.md", "moved.md")
    for request_ in (
        {"command": "write", "path": "notes.md", "content": "three\n"},
        {"command": "write", "path": "notes.md", "old_text": "one", "new_text": "1"},
        {"command": "rename", "path": "notes.md", "new_path": "moved.md"},
        {"command": "delete", "path": "notes.md"},
    ):
        refused(second.call(request_), "CONFLICT")
        assert state(memory, "notes.md", "moved.md") == before
    assert memory.drive.last_change("notes.md").thread == "alpha"
    assert ok(second.call({"command": "read", "path": "notes.md"}))["version"] == two["version"]
    ok(second.call({"command": "write", "path": "notes.md", "content": "two\nthree\n"}))


def test_a_conflict_after_a_delete_by_another_thread(memory, run) -> None:
    ok(run.call({"command": "write", "path": "a.md", "content": "mine\n"}))
    other = memory.run(thread_id="t-2")
    ok(other.call({"command": "read", "path": "a.md"}))
    ok(other.call({"command": "delete", "path": "a.md"}))
    before = state(memory, "a.md")
    refused(run.call({"command": "write", "path": "a.md", "content": "again\n"}), "CONFLICT")
    assert state(memory, "a.md") == before


def test_a_folder_change_is_refused_when_a_file_in_it_changed_since_read(memory, run) -> None:
    ok(run.call({"command": "write", "path": "drafts/a.md", "content": "a\n"}))
    put(memory, "drafts/a.md", "changed by another\n", thread="other")
    before = state(memory, "drafts/a.md", "old/a.md")
    refused(run.call({"command": "delete", "path": "drafts"}), "CONFLICT")
    refused(run.call({"command": "rename", "path": "drafts", "new_path": "old"}), "CONFLICT")
    assert state(memory, "drafts/a.md", "old/a.md") == before


# ---- read versions across runs and workers -------------------------------------------------------


def test_expected_version_serves_stateless_callers(memory) -> None:
    version = ok(memory.run().call({"command": "write", "path": "a.md", "content": "v1\n"}))["version"]
    ok(memory.run().call({"command": "write", "path": "a.md", "content": "v2\n", "expected_version": version}))
    before = state(memory, "a.md")
    refused(
        memory.run().call({"command": "write", "path": "a.md", "content": "v3\n", "expected_version": version}),
        "CONFLICT",
    )
    assert state(memory, "a.md") == before and memory.read("a.md") == "v2\n"


def test_a_second_worker_sees_each_change_and_its_versions_are_checked(store, memory) -> None:
    other = store.open()  # a second process (for PostgreSQL: another machine, its own cache)
    here = memory.run(thread_id="here")
    there = other.run(thread_id="there")
    ok(here.call({"command": "write", "path": "shared.md", "content": "one\n"}))
    assert ok(there.call({"command": "read", "path": "shared.md"}))["content"] == "one\n"
    ok(there.call({"command": "write", "path": "shared.md", "content": "two\n"}))
    before = state(memory, "shared.md")
    refused(here.call({"command": "write", "path": "shared.md", "content": "three\n"}), "CONFLICT")
    assert state(other, "shared.md") == before
    assert memory.drive.last_change("shared.md").thread == "there"
    ok(here.call({"command": "read", "path": "shared.md"}))
    ok(here.call({"command": "write", "path": "shared.md", "content": "two\nthree\n"}))
    assert other.read("shared.md") == "two\nthree\n"
    assert [e.thread for e in other.log()] == [e.thread for e in memory.log()]


# ---- versions and revert -------------------------------------------------------------------------


def test_the_last_20_contents_of_a_file_are_kept(memory, run) -> None:
    contents = [f"# Topic\n- version {n}\n" for n in range(25)]
    for text in contents:
        ok(run.call({"command": "write", "path": "topic.md", "content": text}))
    listed = [v.version for v in memory.versions("topic.md")]
    assert listed == [version_of(text.encode()) for text in reversed(contents[4:24])]
    for n in range(3):
        ok(run.call({"command": "write", "path": "quiet.md", "content": f"# Quiet {n}\n"}))
    assert len(memory.versions("quiet.md")) == 2


def test_a_delete_counts_among_the_20(memory, run) -> None:
    for n in range(22):
        ok(run.call({"command": "write", "path": "t.md", "content": f"{n}\n"}))
    ok(run.call({"command": "delete", "path": "t.md"}))
    kept = memory.versions("t.md")
    assert len(kept) == 20 and (kept[0].version, kept[0].command) == (version_of(b"21\n"), "delete")


def test_revert_round_trip_is_a_logged_change(memory, run) -> None:
    texts = ["# T\n- one\n", "# T\n- one\n- two\n", "# T\n- three\n"]
    versions = [ok(run.call({"command": "write", "path": "t.md", "content": t}))["version"] for t in texts]
    start = len(list(memory.log()))
    memory.revert("t.md")
    assert memory.read("t.md") == texts[1]
    refused(run.call({"command": "write", "path": "t.md", "content": "# stale\n"}), "CONFLICT")
    assert versions[2] in [v.version for v in memory.versions("t.md")]
    memory.revert("t.md", version=versions[0])
    assert memory.read("t.md") == texts[0]
    memory.revert("t.md", version=versions[2][:6])  # a prefix is enough
    assert memory.read("t.md") == texts[2]
    reverts = log_since(memory, start)
    assert [(e.command, e.before, e.after) for e in reverts] == [
        ("revert", versions[2], versions[1]),
        ("revert", versions[1], versions[0]),
        ("revert", versions[0], versions[2]),
    ]


def test_a_deleted_file_comes_back_with_revert(memory, run) -> None:
    ok(run.call({"command": "write", "path": "seo/titles.md", "content": "# Titles\n- a\n- b\n"}))
    ok(run.call({"command": "delete", "path": "seo/titles.md"}))
    memory.revert("seo/titles.md")
    assert memory.read("seo/titles.md") == "# Titles\n- a\n- b\n"
    assert list(memory.log())[-1].command == "revert"


def test_revert_to_a_version_never_kept_changes_nothing(memory, run) -> None:
    ok(run.call({"command": "write", "path": "t.md", "content": "# T\n"}))
    before = state(memory, "t.md", "never.md")
    with pytest.raises(NotFound):
        memory.revert("t.md", version="0123456789ab")
    with pytest.raises(NotFound):
        memory.revert("never.md")
    assert state(memory, "t.md", "never.md") == before


# ---- the log ------------------------------------------------------------------------------------


def test_the_log_has_one_entry_per_change_in_order(memory) -> None:
    run = memory.run(Scope.chat(), thread_id="thread-42")
    start = len(list(memory.log()))
    w1 = ok(run.call({"command": "write", "path": "seo/a.md", "content": "# A\n- one\n"}))
    w2 = ok(run.call({"command": "write", "path": "seo/a.md", "old_text": "- one", "new_text": "- uno"}))
    ok(run.call({"command": "rename", "path": "seo/a.md", "new_path": "seo/b.md"}))
    ok(run.call({"command": "delete", "path": "seo/b.md"}))
    refused(run.call({"command": "delete", "path": "seo/b.md"}), "NOT_FOUND")
    ok(run.call({"command": "read", "path": "MEMORY.md"}))
    entries = log_since(memory, start)
    assert [(e.command, e.path, e.new_path, e.before, e.after) for e in entries] == [
        ("write", "seo/a.md", None, None, w1["version"]),
        ("write", "seo/a.md", None, w1["version"], w2["version"]),
        ("rename", "seo/a.md", "seo/b.md", w2["version"], w2["version"]),
        ("delete", "seo/b.md", None, w2["version"], None),
    ]
    assert all(e.thread == "thread-42" for e in entries)
    times = [datetime.fromisoformat(e.time) for e in entries]
    assert all(t.tzinfo is not None for t in times) and times == sorted(times)
    assert memory.drive.last_change("seo/b.md") == entries[-1]


# ---- facts --------------------------------------------------------------------------------------


def test_facts_keep_replace_history_edit_forget(memory) -> None:
    facts = memory.facts
    september = facts.keep("Ana", "role", "Ana leads the data team.", said="2026-09-01")
    october = facts.keep("ana", " Role ", "Ana works in reserch.", said="2026-10-12")
    assert september.outcome == "current" and october.outcome == "current"
    assert october.replaced.id == september.fact.id
    assert [f.text for f in facts.current("ANA")] == ["Ana works in reserch."]
    assert [f.id for f in facts.history(september.fact.id)] == [october.fact.id, september.fact.id]
    assert facts.get(september.fact.id).replaced_by == october.fact.id
    assert memory.drive.exists(f"notes/memory/{october.fact.id}.md")
    assert memory.drive.exists(f"notes/memory/history/{september.fact.id}.md")
    assert facts.keep("Ana", "role", "ana works in reserch.").outcome == "known"

    edited = facts.edit(october.fact.id, fact="Ana works in research.")
    assert edited.id == october.fact.id and edited.edited is not None
    assert [f.text for f in facts.current("Ana")] == ["Ana works in research."]
    assert [f.id for f in facts.history(october.fact.id)] == [october.fact.id, september.fact.id]

    bruno = facts.keep("Bruno", "team", "Bruno is in ops.")
    assert sorted(f.subject for f in facts.current()) == ["Ana", "Bruno"]
    forgotten = facts.forget(october.fact.id)
    assert [f.id for f in forgotten] == [october.fact.id, september.fact.id]
    assert [f.id for f in facts.current()] == [bruno.fact.id]
    assert not memory.drive.exists(f"notes/memory/{october.fact.id}.md")
    kept = memory.versions(f"notes/memory/{october.fact.id}.md")
    assert [v.command for v in kept] == ["facts.forget", "facts.edit"]  # what replaced each content
    with pytest.raises(NotFound):
        facts.forget(october.fact.id)


def test_fact_changes_are_logged_and_a_refused_fact_changes_nothing(memory) -> None:
    from fsmem._errors import BadFact, FactSensitive

    start = len(list(memory.log()))
    old = memory.facts.keep("Ana", "role", "Ana leads the data team.", said="2026-09-01")
    new = memory.facts.keep("Ana", "role", "Ana works in research.", said="2026-10-12")
    assert [(e.command, e.path, e.after is None) for e in log_since(memory, start)] == [
        ("facts.keep", f"notes/memory/{old.fact.id}.md", False),
        ("facts.keep", f"notes/memory/{new.fact.id}.md", False),
        ("facts.keep", f"notes/memory/history/{old.fact.id}.md", False),
        ("facts.keep", f"notes/memory/{old.fact.id}.md", True),
    ]
    before = state(memory)
    with pytest.raises(FactSensitive):
        memory.facts.keep("Bruno", "password", "Bruno uses his dog's name.")
    with pytest.raises(BadFact):
        memory.facts.keep_many(
            [
                {"subject": "Bruno", "attribute": "role", "fact": "Bruno works."},
                {"subject": "x" * 121, "attribute": "role", "fact": "x"},
            ]
        )
    assert state(memory) == before


def test_a_second_worker_sees_facts_at_once(store, memory) -> None:
    kept = memory.facts.keep("Ana", "role", "Ana works in research.")
    other = store.open()
    assert [f.id for f in other.facts.current("ana")] == [kept.fact.id]
    replaced = other.facts.keep("Ana", "role", "Ana leads search.")
    assert [f.text for f in memory.facts.current("ana")] == ["Ana leads search."]
    assert replaced.replaced.id == kept.fact.id


# ---- levels -------------------------------------------------------------------------------------


def test_levels_create_scope_and_delete(memory) -> None:
    assert memory.create_agent(AGENT, "SEO") == AGENT_FOLDER
    assert memory.create_routine(AGENT, ROUTINE, "Title tuning") == ROUTINE_FOLDER
    assert memory.read(f"{ROUTINE_FOLDER}/NOTES.md") == ""
    assert memory.create_agent(AGENT, "SEO", exist_ok=True) == AGENT_FOLDER
    with pytest.raises(Exists):
        memory.create_agent(AGENT, "SEO")
    assert memory.scope_files(Scope.chat()) == ["MEMORY.md"]
    assert memory.scope_files(Scope.routine(AGENT, ROUTINE)) == [
        "MEMORY.md",
        f"{AGENT_FOLDER}/MEMORY.md",
        f"{ROUTINE_FOLDER}/NOTES.md",
    ]
    assert memory.scope_files(Scope.agent(AGENT, name="Search Optimizer"))[1] == f"{AGENT_FOLDER}/MEMORY.md"
    lines = ok(memory.run().call({"command": "read", "path": ""}))["text"].splitlines()
    tree = [(len(line) - len(line.lstrip()), line.split()[0]) for line in lines[1:]]
    assert (2, "agents/") in tree and (4, "seo-5c81d0e4/") in tree, lines

    run = memory.run(Scope.routine(AGENT, ROUTINE), thread_id="r")
    ok(run.call({"command": "write", "path": f"{ROUTINE_FOLDER}/NOTES.md", "content": "baseline: 42\n"}))
    ok(run.call({"command": "write", "path": f"{ROUTINE_FOLDER}/extra.md", "content": "more\n"}))
    held = memory.delete_routine(ROUTINE)
    assert held == {f"{ROUTINE_FOLDER}/NOTES.md": "baseline: 42\n", f"{ROUTINE_FOLDER}/extra.md": "more\n"}
    assert not memory.drive.exists(ROUTINE_FOLDER)
    assert memory.scope_files(Scope.agent(AGENT)) == ["MEMORY.md", f"{AGENT_FOLDER}/MEMORY.md"]
    put(memory, f"{AGENT_FOLDER}/MEMORY.md", "agent notes\n")
    assert memory.delete_agent(AGENT) == {f"{AGENT_FOLDER}/MEMORY.md": "agent notes\n"}
    assert not memory.drive.exists(AGENT_FOLDER)
    assert memory.read(f"{memory.create_agent('77777777', 'SEO')}/MEMORY.md") == ""


def test_a_scope_with_names_makes_its_folders_on_first_use(memory) -> None:
    run = memory.run(Scope.routine("3f9a1c2e-77", "9b7d4e10", agent_name="SEO bot", routine_name="Meta tags"))
    assert run.routine_folder == "agents/seo-bot-3f9a1c2e/routines/meta-tags-9b7d4e10"
    assert memory.drive.exists(f"{run.routine_folder}/NOTES.md")
    with pytest.raises(fsmem.ScopeError):
        memory.run(Scope.agent("deadbeef"))


def test_a_deleting_block_that_raises_keeps_the_routine(memory) -> None:
    memory.create_agent(AGENT, "SEO")
    memory.create_routine(AGENT, ROUTINE, "Title tuning")
    put(memory, f"{ROUTINE_FOLDER}/NOTES.md", "notes\n")
    with pytest.raises(RuntimeError):
        with memory.deleting_routine(ROUTINE) as held:
            assert held == {f"{ROUTINE_FOLDER}/NOTES.md": "notes\n"}
            raise RuntimeError("the harness's own delete failed")
    assert memory.read(f"{ROUTINE_FOLDER}/NOTES.md") == "notes\n"
    with memory.deleting_routine(ROUTINE):
        pass
    assert not memory.drive.exists(ROUTINE_FOLDER)


# ---- review mode and proposals -------------------------------------------------------------------


@pytest.fixture
def reviewed(memory):
    put(memory, "MEMORY.md", "# Rules\n- one\n- two\n")
    put(memory, "topic.md", "t\n")
    return memory


def reviewer(memory: fsmem.Memory, *paths: str):
    run = memory.run(Scope.chat(), thread_id="review-1", review=True)
    for path in ("MEMORY.md", *paths):
        ok(run.call({"command": "read", "path": path}))
    return run


def test_an_addition_applies_at_once(reviewed) -> None:
    result = ok(
        reviewer(reviewed).call(
            {"command": "write", "path": "MEMORY.md", "content": "# Rules\n- one\n- two\n- three\n"}
        )
    )
    assert "proposal" not in result and reviewed.read("MEMORY.md").endswith("- three\n")
    assert reviewed.proposals() == []


def test_a_replacement_waits_and_approve_applies_it(reviewed) -> None:
    before = files(reviewed)
    result = ok(
        reviewer(reviewed).call({"command": "write", "path": "MEMORY.md", "old_text": "- two", "new_text": "- 2"})
    )
    assert result["proposal"] and files(reviewed) == before
    [proposal] = reviewed.proposals()
    assert proposal.id == result["proposal"] and proposal.thread == "review-1"
    reviewed.approve(proposal.id)
    assert reviewed.read("MEMORY.md") == "# Rules\n- one\n- 2\n"
    assert reviewed.proposals() == []


def test_rename_and_delete_wait_then_discard_drops_them(reviewed) -> None:
    run = reviewer(reviewed, "topic.md")
    before = files(reviewed)
    moved = ok(run.call({"command": "rename", "path": "topic.md", "new_path": "moved.md"}))["proposal"]
    deleted = ok(run.call({"command": "delete", "path": "topic.md"}))["proposal"]
    assert files(reviewed) == before
    assert sorted(p.id for p in reviewed.proposals()) == sorted([moved, deleted])
    reviewed.discard(moved)
    assert [p.id for p in reviewed.proposals()] == [deleted]
    reviewed.approve(deleted)
    assert not reviewed.drive.exists("topic.md") and not reviewed.drive.exists("moved.md")


def test_approve_refuses_when_the_file_changed_and_changes_nothing(reviewed) -> None:
    ok(reviewer(reviewed).call({"command": "delete", "path": "MEMORY.md"}))
    [proposal] = reviewed.proposals()
    put(reviewed, "MEMORY.md", "# Rules\n- changed by a person\n")
    before = state(reviewed)
    with pytest.raises(Conflict):
        reviewed.approve(proposal.id)
    assert state(reviewed) == before


def test_a_refused_change_leaves_no_proposal(reviewed) -> None:
    refused(
        reviewer(reviewed).call({"command": "write", "path": "MEMORY.md", "old_text": "- nine", "new_text": "x"}),
        "EDIT_UNPLACED",
    )
    assert reviewed.proposals() == []


def test_a_second_worker_sees_and_approves_a_proposal(store, reviewed) -> None:
    proposal = ok(
        reviewer(reviewed).call({"command": "write", "path": "MEMORY.md", "old_text": "- one", "new_text": "- 1"})
    )["proposal"]
    other = store.open()
    assert [p.id for p in other.proposals()] == [proposal]
    other.approve(proposal)
    assert reviewed.read("MEMORY.md") == "# Rules\n- 1\n- two\n" and reviewed.proposals() == []


# ---- context injection ---------------------------------------------------------------------------


def leveled(memory: fsmem.Memory) -> fsmem.Memory:
    """An agent and a routine with a file at each level (made in the test: on PostgreSQL it needs levels)."""
    memory.create_agent(AGENT, "SEO")
    memory.create_routine(AGENT, ROUTINE, "Title tuning")
    writer = memory.run(Scope.routine(AGENT, ROUTINE), thread_id="setup")
    for path, text in [
        ("MEMORY.md", "# Project\n- Titles end with | Rye & Ember\n"),
        (f"{AGENT_FOLDER}/MEMORY.md", "# SEO\n- /classes on hold\n"),
        (f"{ROUTINE_FOLDER}/NOTES.md", "# Title tuning\n- last change 2026-11-30\n"),
    ]:
        writer.call({"command": "read", "path": path})
        ok(writer.call({"command": "write", "path": path, "content": text}))
    return memory


@pytest.fixture
def project_file(memory):
    put(memory, "MEMORY.md", "# Project\n- Titles end with | Rye & Ember\n")
    return memory


def loaded(messages: list[dict[str, str]]) -> list[tuple[str, str | None]]:
    out = []
    for message in messages:
        tag, attributes = parse_header(message_text(message))
        out.append((tag, attributes.get("path") or attributes.get("id")))
    return out


def test_each_run_gets_its_levels_in_load_order(memory) -> None:
    leveled(memory)
    routine = memory.run(Scope.routine(AGENT, ROUTINE, agent_name="SEO", routine_name="Title tuning"))
    assert loaded(memory.run(Scope.chat()).context([])) == [("memory", "MEMORY.md")]
    assert loaded(routine.context([])) == [
        ("memory", "MEMORY.md"),
        ("agent", AGENT),
        ("memory", f"{AGENT_FOLDER}/MEMORY.md"),
        ("routine", ROUTINE),
        ("memory", f"{ROUTINE_FOLDER}/NOTES.md"),
    ]
    [copy_] = memory.run(Scope.chat()).context([])
    version = version_of(b"# Project\n- Titles end with | Rye & Ember\n")
    assert parse_header(copy_["content"])[1]["version"] == version


def test_a_copy_counts_as_a_read_and_a_change_is_appended(project_file) -> None:
    memory = project_file
    run = memory.run(Scope.chat(), thread_id="c")
    thread = run.context([])
    ok(run.call({"command": "write", "path": "MEMORY.md", "old_text": "- Titles", "new_text": "- Page titles"}))
    [own] = run.context(thread)  # its own write changed the file: the new copy is appended once
    assert loaded([own]) == [("memory", "MEMORY.md")] and "- Page titles" in message_text(own)
    thread.append(own)
    assert run.context(thread) == []
    put(memory, "MEMORY.md", "# Project\n- Changed elsewhere\n", thread="other")
    before = state(memory)
    refused(run.call({"command": "write", "path": "MEMORY.md", "old_text": "# Project", "new_text": "# P"}), "CONFLICT")
    assert state(memory) == before
    extra = run.context(thread)
    assert loaded(extra) == [("memory", "MEMORY.md")] and "- Changed elsewhere" in message_text(extra[0])
    thread += extra
    assert run.context(thread) == []
    ok(run.call({"command": "write", "path": "MEMORY.md", "old_text": "# Project", "new_text": "# P"}))


def test_a_resumed_thread_counts_the_copies_already_in_it(project_file) -> None:
    memory = project_file
    thread = memory.run(Scope.chat(), thread_id="c").context([])
    resumed = memory.run(Scope.chat(), thread_id="c")
    assert resumed.context(thread) == []
    ok(resumed.call({"command": "write", "path": "MEMORY.md", "old_text": "# Project", "new_text": "# P"}))


def test_deleting_a_routine_drops_it_from_the_agent_block(memory) -> None:
    leveled(memory)
    run = memory.run(Scope.agent(AGENT, name="SEO"), thread_id="a")
    thread = run.context([], routines={ROUTINE: "Title tuning"})
    assert f"- Title tuning (id {ROUTINE})" in message_text(thread[1])
    assert memory.delete_routine(ROUTINE) == {
        f"{ROUTINE_FOLDER}/NOTES.md": "# Title tuning\n- last change 2026-11-30\n"
    }
    [block] = run.context(thread, routines={ROUTINE: "Title tuning"})
    assert parse_header(message_text(block))[0] == "agent" and ROUTINE not in message_text(block)
