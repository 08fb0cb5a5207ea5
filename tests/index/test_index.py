"""The tantivy index in-process: ranking, filters, freshness, recovery."""

from __future__ import annotations

import json
import os
import time
import shutil
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from fsmem._errors import BadRequest
from fsmem._index.index import IndexWarning
from fsmem._index.state import MANIFEST, index_dir, read_current

CURRENT_FACT = """---
id: f2
subject: Ana
attribute: role
source: chat
said: 2026-10-12
replaces: [f1]
---
Ana works in research.
"""

REPLACED_FACT = """---
id: f1
subject: Ana
attribute: role
source: chat
said: 2026-09-01
until: 2026-10-12
replaced_by: f2
---
Ana leads the data team and works in research planning.
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / ".fsmem").mkdir()
    write(tmp_path, "MEMORY.md", "# Project\n\nWe deploy to staging every Friday.\nSee seo/titles.md.\n")
    write(tmp_path, "seo/titles.md", "# Titles\n\nKeep titles under 60 characters.\nDeployment happens weekly.\n")
    write(tmp_path, "agents/seo-3f9a1c2e/MEMORY.md", "# SEO agent\n\nThe client prefers British spelling.\n")
    write(tmp_path, "notes/memory/f2.md", CURRENT_FACT)
    write(tmp_path, "notes/memory/history/f1.md", REPLACED_FACT)
    return tmp_path


def paths(hits) -> list[str]:
    return [hit.path for hit in hits]


def test_a_file_with_all_the_words_ranks_first(root: Path) -> None:
    hits = index_of(root).search("deploy staging")
    assert paths(hits) == ["MEMORY.md", "seo/titles.md"]  # both words; then "Deployment" alone
    hit = hits[0]
    assert (hit.title, hit.kind, hit.level, hit.line) == ("Project", "memory", "project", 1)
    assert "deploy to staging" in hit.snippet


def test_a_file_with_any_of_the_words_is_found(root: Path) -> None:
    assert set(paths(index_of(root).search("staging british "))) == {"MEMORY.md", "agents/seo-3f9a1c2e/MEMORY.md"}


def test_the_last_word_matches_as_a_prefix(root: Path) -> None:
    index = index_of(root)
    assert paths(index.search("brit")) == ["agents/seo-3f9a1c2e/MEMORY.md"]
    assert paths(index.search("brit ")) == []  # a finished word is matched whole


def test_phrases_in_quotes(root: Path) -> None:
    index = index_of(root)
    assert paths(index.search('"under 60 characters"')) == ["seo/titles.md"]
    assert paths(index.search('"60 under characters"')) == []


def test_a_title_match_ranks_above_a_body_match(root: Path) -> None:
    write(root, "body-only.md", "# Other\n\nsome words about titles here\n")
    assert paths(index_of(root).search("titles "))[0] == "seo/titles.md"


def test_facts_that_hold_rank_before_replaced_ones(root: Path) -> None:
    hits = index_of(root).search("ana research")
    assert paths(hits) == ["notes/memory/f2.md", "notes/memory/history/f1.md"]
    assert hits[0].snippet == "Ana works in research. (said 2026-10-12)"
    assert hits[1].snippet.endswith("(said 2026-09-01; held until 2026-10-12)")
    assert hits[1].kind == "replaced_fact" and hits[1].title == "Ana · role"


def test_held_until_is_searchable(root: Path) -> None:
    assert paths(index_of(root).search('"held until"')) == ["notes/memory/history/f1.md"]


def test_include_exclude_and_since_are_applied_inside_the_query(root: Path) -> None:
    index = index_of(root)
    assert paths(index.search("ana", include=["notes/**"], exclude="history/")) == ["notes/memory/f2.md"]
    assert paths(index.search("deploy", include="seo")) == ["seo/titles.md"]
    assert set(paths(index.search("deploy", exclude=["seo/*.md"]))) == {"MEMORY.md"}
    old = 1_600_000_000
    os.utime(root / "seo/titles.md", (old, old))
    assert paths(index.search("deploy", since="30d")) == ["MEMORY.md"]
    assert set(paths(index.search("deploy", since="2020-01-01"))) == {"MEMORY.md", "seo/titles.md"}


GLOB_CASES = [
    ("*.md", "MEMORY.md"), ("*.md", "seo/titles.md"), ("seo/*.md", "seo/titles.md"),
    ("seo/*.md", "seo/deep/titles.md"), ("seo/**", "seo/deep/titles.md"), ("seo", "seo/titles.md"),
    ("seo", "seoul/titles.md"), ("history/", "notes/memory/history/f1.md"), ("history/", "history.md"),
    ("agents/*/MEMORY.md", "agents/seo-3f9a1c2e/MEMORY.md"),
    ("agents/*/MEMORY.md", "agents/seo-3f9a1c2e/routines/x-1/MEMORY.md"),
    ("**/NOTES.md", "agents/a-1/routines/b-2/NOTES.md"), ("titl?s.md", "seo/titles.md"),
    ("[st]eo/*.md", "seo/titles.md"), ("[!s]eo/*.md", "seo/titles.md"), ("[a-z]*", "x/y.md"),
    ("a+b (1).md", "a+b (1).md"), ("/MEMORY.md", "MEMORY.md"),
    ("/MEMORY.md", "agents/a-1/MEMORY.md"), ("caf\u00e9.md", "caf\u00e9.md"), ("x\\*.md", "x*.md"),
]


@pytest.fixture(scope="module")
def path_index():
    """A bare in-memory tantivy index of paths, to run include/exclude regexes as search does."""
    import tantivy

    from fsmem._index.generations import analyzer as _analyzer, schema as _schema

    schema = _schema()
    index = tantivy.Index(schema)
    index.register_tokenizer("fsmem", _analyzer())
    writer = index.writer(15_000_000, 1)
    for _, path in GLOB_CASES:
        writer.add_document(tantivy.Document(path=path))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    return schema, index


@pytest.mark.parametrize(("pattern", "path"), GLOB_CASES)
def test_globs_inside_the_query_match_as_the_tool_s_globs_do(path_index, pattern: str, path: str) -> None:
    import tantivy

    from fsmem._core.search import glob_to_regex
    from fsmem._core.when import compile_globs

    schema, index = path_index
    Occur, Query = tantivy.Occur, tantivy.Query
    query = Query.boolean_query([(Occur.Must, Query.regex_query(schema, "path", glob_to_regex(pattern))),
                                 (Occur.Must, Query.term_query(schema, "path", path))])
    found = bool(index.searcher().search(query, 1).hits)
    assert found is compile_globs(pattern)(path)


def test_limit_counts_replaced_facts_last(root: Path) -> None:
    assert paths(index_of(root).search("ana", limit=1)) == ["notes/memory/f2.md"]


def test_replaced_facts_come_last_even_when_they_score_higher(root: Path) -> None:
    for n in range(12):  # files that hold, each naming the word once among many others
        write(root, f"weak/w{n:02d}.md", f"# Weak {n}\n\n" + "filler words " * 30 + "okapi\n")
    for n in range(3):  # replaced facts that say little else: they score higher
        write(root, f"notes/memory/history/r{n}.md", REPLACED_FACT.replace("id: f1", f"id: r{n}").replace(
            "Ana leads the data team and works in research planning.", "okapi okapi okapi"))
    index = index_of(root)
    top = index.search("okapi", limit=10)
    assert [hit.kind for hit in top] == ["topic"] * 10
    more = index.search("okapi", limit=14)
    assert [hit.kind for hit in more] == ["topic"] * 12 + ["replaced_fact"] * 2
    assert [hit.kind for hit in index.search("okapi", limit=20)] == ["topic"] * 12 + ["replaced_fact"] * 3
    scores = [hit.score for hit in more[:12]]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize(("filler", "line", "query", "shown"), [
    ("Step {n}: nothing of note happens here.", "Step 24: deploy the release to staging, then check it.",
     "deploy staging", "deploy the release to staging"),
    ("Ligne {n} : rien à signaler, vraiment rien du tout.", "Le café ouvre à sept heures, le crème aussi.",
     "cafe ouvre", "café ouvre"),  # accents folded, as the index folds them
])
def test_a_snippet_is_the_part_of_a_long_file_that_holds_the_words(root: Path, filler: str, line: str,
                                                                   query: str, shown: str) -> None:
    lines = ["# Notes", ""] + [filler.format(n=n) for n in range(1, 40)]
    lines[25] = line
    write(root, "long.md", "\n".join(lines) + "\n")
    [hit] = index_of(root).search(query, include="long.md")
    assert shown in hit.snippet
    assert "\n" not in hit.snippet and len(hit.snippet) <= 180
    assert 23 <= hit.line <= 26  # the window starts on the line holding the words, or a little before
    assert hit.snippet.split()[0] in lines[hit.line - 1]


def test_a_file_matched_only_by_its_title_shows_its_beginning(root: Path) -> None:
    write(root, "walrus.md", "# Walrus\n\n" + "Nothing else about the animal here at all. " * 20)
    [hit] = index_of(root).search("walrus", include="walrus.md")
    assert hit.snippet.startswith("# Walrus Nothing else") and hit.line == 1


def test_a_file_mostly_in_another_script_is_cut_by_the_index_s_generator(root: Path) -> None:
    write(root, "greek.md", "# Σημειώσεις\n\n" + "Καλημέρα κόσμε, τίποτα εδώ. " * 20 + "Ο δρόμος είναι μεγάλος.\n")
    [hit] = index_of(root).search("δρόμος", include="greek.md")
    assert "δρόμος" in hit.snippet and hit.line == 3


def test_a_word_the_index_folds_into_two_letters_is_still_shown(root: Path) -> None:
    write(root, "fable.md", "# Fables\n\n" + "Rien à dire ici. " * 20 + "Une fable d’Æsop, très ancienne.\n")
    [hit] = index_of(root).search("aesop", include="fable.md")
    assert "Æsop" in hit.snippet  # the generator folds as the index does


def test_a_snippet_shows_the_words_the_index_found_for_a_prefix(tmp_path: Path) -> None:
    for n in range(20):  # twenty words beginning "stb" come first among the words "st" begins
        write(tmp_path, f"o{n:02d}.md", f"# Other\n\nstb{n:02d}\n")
    write(tmp_path, "long.md", "# Long\n\nstzza stzzb stzzc stzzd. " + "filler words here. " * 30
          + "the staaa word.\n")
    [hit] = index_of(tmp_path).search("st", include="long.md")  # matched through "staaa" only
    assert "staaa" in hit.snippet and "stzz" not in hit.snippet, hit.snippet


def test_the_line_of_a_snippet_is_the_line_of_its_first_word(tmp_path: Path) -> None:
    lines = ["# Notes", ""] + [f"Line {n} says nothing much at all here." for n in range(1, 20)]
    lines += ["", "w" * (180 // 4 - 2) + " okapi appears here."] + [f"Tail {n} more words." for n in range(30)]
    write(tmp_path, "lf.md", "\n".join(lines) + "\n")
    (tmp_path / "crlf.md").write_bytes(("\r\n".join(lines[:21] + lines[22:]) + "\r\n").encode())
    for name in ("lf.md", "crlf.md"):
        [hit] = index_of(tmp_path).search("okapi", include=name)
        shown = (tmp_path / name).read_text(encoding="utf-8").splitlines()[hit.line - 1]
        assert hit.snippet.split()[0] in shown, (name, hit.line, shown)


def test_a_replaced_fact_has_one_score_whatever_the_limit(root: Path) -> None:
    for n in range(12):
        write(root, f"weak/w{n:02d}.md", f"# Weak {n}\n\n" + "filler words " * 30 + "okapi\n")
    for n in range(3):
        write(root, f"notes/memory/history/r{n}.md", REPLACED_FACT.replace("id: f1", f"id: r{n}").replace(
            "Ana leads the data team and works in research planning.", "okapi okapi okapi"))
    index = index_of(root)
    scores = {limit: {hit.path: hit.score for hit in index.search("okapi", limit=limit)} for limit in (14, 20)}
    assert scores[14]["notes/memory/history/r0.md"] == scores[20]["notes/memory/history/r0.md"]


def test_bad_requests_change_nothing(root: Path) -> None:
    index = index_of(root)
    with pytest.raises(BadRequest, match="no words to search for"):
        index.search('  "" ,, ')
    with pytest.raises(BadRequest, match="limit must be"):
        index.search("ana", limit=0)
    with pytest.raises(BadRequest, match="is not an age or a date"):
        index.search("ana", since="yesterday-ish")


def test_hand_edits_are_seen_by_the_next_search(root: Path) -> None:
    index = index_of(root)
    assert paths(index.search("friday")) == ["MEMORY.md"]
    write(root, "MEMORY.md", "# Project\n\nWe ship on Mondays now.\n")
    assert paths(index.search("friday")) == []
    assert paths(index.search("mondays")) == ["MEMORY.md"]


def test_an_edit_within_one_timestamp_tick_is_still_seen(root: Path) -> None:
    index = index_of(root)
    assert paths(index.search("friday")) == ["MEMORY.md"]
    target = root / "MEMORY.md"
    info = target.stat()
    # Same size, same mtime, same inode: only the racy-entry hash check can tell.
    target.write_text(target.read_text().replace("Friday", "Sunday"))
    os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert paths(index.search("sunday")) == ["MEMORY.md"]


def test_files_and_folders_moved_in_and_out(root: Path, tmp_path_factory) -> None:
    index = index_of(root)
    outside = tmp_path_factory.mktemp("outside")
    write(outside, "incoming/plan.md", "# Plan\n\nquarterly roadmap\n")
    shutil.move(str(root / "seo"), str(outside / "seo"))
    shutil.move(str(outside / "incoming"), str(root / "incoming"))
    assert paths(index.search("characters")) == []
    assert paths(index.search("roadmap")) == ["incoming/plan.md"]
    os.rename(root / "incoming/plan.md", root / "incoming/renamed.md")
    assert paths(index.search("roadmap")) == ["incoming/renamed.md"]


def test_refresh_of_a_folder_covers_everything_under_it(root: Path) -> None:
    index = index_of(root)
    index.search("x")
    write(root, "seo/new.md", "# New\n\nmeta descriptions\n")
    shutil.rmtree(root / "agents")
    with index.locked():
        assert index.refresh(["seo", "agents"]) == 3  # new.md, titles.md re-read, agent file removed
    assert paths(index.search("descriptions", fresh=False)) == ["seo/new.md"]
    assert paths(index.search("british", fresh=False)) == []


def test_what_is_not_markdown_or_is_hidden_is_not_indexed(root: Path, tmp_path_factory) -> None:
    write(root, "photo.png", "zebra")
    write(root, ".hidden/a.md", "zebra")
    write(root, ".MEMORY.md.swp", "zebra")
    write(root, "MEMORY.md~", "zebra")
    outside = tmp_path_factory.mktemp("elsewhere")
    write(outside, "secret.md", "zebra")
    os.symlink(outside / "secret.md", root / "link-out.md")
    os.symlink(outside, root / "dir-out")
    os.symlink(root / "seo/titles.md", root / "link-in.md")
    index = index_of(root)
    assert paths(index.search("zebra")) == []
    assert paths(index.search('"under 60"')) == ["link-in.md", "seo/titles.md"] or \
        sorted(paths(index.search('"under 60"'))) == ["link-in.md", "seo/titles.md"]


def test_a_deleted_index_is_rebuilt_with_a_warning(root: Path) -> None:
    index_of(root).search("ana")
    shutil.rmtree(index_dir(root / ".fsmem"))
    with pytest.warns(IndexWarning, match="was missing; rebuilt it from the 5 files"):
        assert paths(index_of(root).search("friday")) == ["MEMORY.md"]


def test_a_first_build_is_silent(root: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert paths(index_of(root).search("friday")) == ["MEMORY.md"]


@pytest.mark.parametrize("damage", ["meta", "current", "schema", "segments", "generation"])
def test_a_corrupt_index_is_rebuilt_with_a_warning(root: Path, damage: str) -> None:
    index_of(root).search("ana")
    generation = index_dir(root / ".fsmem") / read_current(root / ".fsmem")["generation"]
    if damage == "meta":
        (generation / "meta.json").write_text("{not json")
    elif damage == "current":
        (index_dir(root / ".fsmem") / "CURRENT").write_text("garbage")
    elif damage == "generation":
        shutil.rmtree(generation)
    elif damage == "schema":
        (index_dir(root / ".fsmem") / "CURRENT").write_text('{"schema": 999, "generation": "%s"}' % generation.name)
    else:
        for segment_file in generation.iterdir():
            if segment_file.suffix in {".idx", ".store", ".term"}:
                segment_file.write_bytes(b"\0" * 16)
    with pytest.warns(IndexWarning, match="rebuilt it"):
        assert paths(index_of(root).search("friday")) == ["MEMORY.md"]
    assert paths(index_of(root).search("british")) == ["agents/seo-3f9a1c2e/MEMORY.md"]


def test_a_long_lived_index_survives_its_generation_being_deleted(root: Path) -> None:
    index = index_of(root)
    assert paths(index.search("friday")) == ["MEMORY.md"]
    shutil.rmtree(index_dir(root / ".fsmem") / read_current(root / ".fsmem")["generation"])
    write(root, "MEMORY.md", "# Project\n\nnow on Tuesdays\n")
    with pytest.warns(IndexWarning, match="rebuilt it"):
        assert paths(index.search("tuesdays")) == ["MEMORY.md"]


def test_a_torn_manifest_line_only_costs_a_reread(root: Path) -> None:
    index = index_of(root)
    index.search("ana")
    manifest = index_dir(root / ".fsmem") / read_current(root / ".fsmem")["generation"] / MANIFEST
    with open(manifest, "a") as handle:
        handle.write("+\tdeadbeef\t12")  # a crash mid-append
    write(root, "MEMORY.md", "# Project\n\nnew words: kiwi\n")
    fresh = index_of(root)
    assert paths(fresh.search("kiwi")) == ["MEMORY.md"]
    assert fresh.status()["stale"] == 0


def test_rebuild_swaps_in_a_new_generation_and_collects_the_old(root: Path) -> None:
    index = index_of(root)
    index.search("ana")
    first = read_current(root / ".fsmem")["generation"]
    seen: list[tuple[int, int]] = []
    assert index.rebuild(lambda done, total: seen.append((done, total))) == 5
    assert seen[-1] == (5, 5)
    second = read_current(root / ".fsmem")["generation"]
    assert second != first
    assert sorted(p.name for p in index_dir(root / ".fsmem").iterdir()) == sorted(["CURRENT", second])
    assert paths(index.search("friday")) == ["MEMORY.md"]


def test_a_reader_opened_before_a_rebuild_follows_the_swap(root: Path) -> None:
    reader = index_of(root)
    assert paths(reader.search("friday")) == ["MEMORY.md"]
    index_of(root).rebuild()
    write(root, "MEMORY.md", "# Project\n\nplums\n")
    assert paths(reader.search("plums")) == ["MEMORY.md"]


def test_status_counts_stale_files_without_fixing_them(root: Path) -> None:
    index = index_of(root)
    index.search("ana")
    write(root, "new.md", "fresh")
    (root / "seo/titles.md").unlink()
    info = index.status()
    assert (info["documents"], info["files"], info["stale"], info["watcher"]) == (5, 5, 2, False)
    index.reconcile()
    info = index.status()
    assert (info["documents"], info["files"], info["stale"]) == (5, 5, 0)


@pytest.mark.slow
def test_segment_files_orphaned_by_a_crashed_writer_are_collected(root: Path) -> None:
    import subprocess
    import sys

    index = index_of(root)
    index.search("ana")
    generation = index_dir(root / ".fsmem") / read_current(root / ".fsmem")["generation"]
    before = {p.name for p in generation.iterdir()}
    crash = (
        "import os, sys; sys.path.insert(0, sys.argv[2]); import tantivy;"
        "from fsmem._index.generations import analyzer as _analyzer;"
        "ix = tantivy.Index.open(sys.argv[1]); ix.register_tokenizer('fsmem', _analyzer());"
        "w = ix.writer(heap_size=15_000_000, num_threads=1)\n"
        "for i in range(40000): w.add_document(tantivy.Document(path=f'x{i}.md', body='word ' * 60 + str(i)))\n"
        "os._exit(1)"
    )
    subprocess.run([sys.executable, "-c", crash, str(generation), str(Path(__file__).resolve().parents[2])],
                   check=False, timeout=60)
    orphans = {p.name for p in generation.iterdir()} - before - {".tantivy-writer.lock"}
    assert orphans, "the crashed writer should have flushed segment files without committing them"
    write(root, "MEMORY.md", "# Project\n\nchanged\n")
    assert paths(index.search("changed")) == ["MEMORY.md"]
    left = {p.name for p in generation.iterdir()} & orphans
    assert left == set()


@pytest.fixture(scope="module")
def shared_index(tmp_path_factory):
    root = tmp_path_factory.mktemp("hypothesis-root")
    (root / ".fsmem").mkdir()
    write(root, "MEMORY.md", "# Project\n\nWe deploy to staging every Friday. café crème, C++ & foo-bar.\n")
    write(root, "notes/memory/f2.md", CURRENT_FACT)
    index = index_of(root)
    index.search("warm")
    return index


from tests.conftest import index_of, write


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(list('abcé "*:+-()[]{}^~!?\\/\'.,&|') + ["staging", "café", "AND", "OR",
                                                                             "NOT", " ", "stag"]),
                max_size=12).map("".join))
def test_any_query_text_gives_hits_or_a_clear_refusal(shared_index, query: str) -> None:
    try:
        hits = shared_index.search(query, fresh=False)
    except BadRequest as error:
        assert "no words to search for" in error.message
        return
    assert all(hit.path in {"MEMORY.md", "notes/memory/f2.md"} for hit in hits)


@pytest.mark.slow
def test_threads_writing_editing_and_searching_share_one_memory(tmp_path: Path) -> None:
    import threading

    import fsmem

    memory = fsmem.open(tmp_path, create=True)
    memory.search("warm")
    errors: list[BaseException] = []

    def guarded(work):
        def run() -> None:
            try:
                work()
            except BaseException as error:  # noqa: BLE001 - reported by the assertion below
                errors.append(error)
        return run

    def tool_writer(name: str):
        def work() -> None:
            run = memory.run(thread_id=name)
            for i in range(10):
                result = run.call({"command": "write", "path": f"{name}/n{i}.md", "content": f"# {name}\n\ntw{name}{i}\n"})
                assert result["ok"], result
        return work

    def hand_editor() -> None:
        for i in range(10):
            write(tmp_path, f"hand/h{i}.md", f"# Hand\n\nhandword{i}\n")

    def searcher() -> None:
        for _ in range(15):
            memory.search("handword0 twa0 twb0")

    threads = [threading.Thread(target=guarded(work)) for work in
               (tool_writer("a"), tool_writer("b"), hand_editor, searcher, searcher)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    status = memory.index.status()
    assert (status["documents"], status["files"], status["stale"]) == (31, 31, 0)
    for word, path in (("twa9", "a/n9.md"), ("twb9", "b/n9.md"), ("handword9", "hand/h9.md")):
        assert [hit.path for hit in memory.search(word)] == [path]


@pytest.mark.slow
def test_searches_keep_working_while_a_rebuild_runs(root: Path) -> None:
    import threading

    for i in range(300):
        write(root, f"bulk/{i // 50}/n{i}.md", f"# N{i}\n\nbulk words {i}\n")
    index = index_of(root)
    assert len(index.search("bulk", limit=100)) == 100
    done = threading.Event()
    answers: list[int] = []

    def keep_searching() -> None:
        reader = index_of(root)
        while not done.is_set():
            answers.append(len(reader.search("bulk", limit=100, fresh=False)))

    thread = threading.Thread(target=keep_searching)
    thread.start()
    try:
        for _ in range(3):
            assert index_of(root).rebuild() == 305
    finally:
        done.set()
        thread.join(timeout=60)
    assert answers and set(answers) == {100}


def test_a_file_name_that_is_not_utf8_is_skipped_not_fatal(root: Path) -> None:
    import os as _os

    _os.close(_os.open(_os.fsencode(str(root)) + b"/bad-\xff.md", _os.O_CREAT | _os.O_WRONLY, 0o644))
    assert paths(index_of(root).search("friday")) == ["MEMORY.md"]


def test_a_large_difference_is_applied_in_chunks_and_a_recreated_file_is_kept(root: Path, monkeypatch) -> None:
    import fsmem._index.freshness as index_module

    index = index_of(root)
    index.search("ana")
    monkeypatch.setattr(index_module, "RECONCILE_CHUNK", 7)
    for i in range(30):
        write(root, f"many/n{i}.md", f"# N{i}\n\nmanyword{i}\n")
    plan = index.reconcile()
    assert len(plan.changed) == 30
    assert index.status()["stale"] == 0
    assert paths(index.search("manyword29", fresh=False)) == ["many/n29.md"]
    # A removal planned from an old comparison must not drop a file that exists again.
    with index.store.batch() as batch:
        batch.apply([], ["many/n0.md"])
    assert paths(index.search("manyword0", fresh=False)) == ["many/n0.md"]


def test_a_batch_that_waited_for_another_leaves_no_file_unmanaged(root: Path) -> None:
    """A batch that opened the index while another was writing must not rewrite tantivy's list of
    managed files without the other's: those files could then never be collected (the index grew
    without end in a process whose watcher and searches both wrote batches)."""
    import threading

    index = index_of(root)
    index.search("ana")
    store = index.store
    inside, second_started = threading.Event(), threading.Event()

    def first() -> None:
        with store.batch() as batch:
            write(root, "a.md", "# A\n\nfirst batch\n")
            batch.apply(["a.md"], [])
            inside.set()
            second_started.wait(10)
            time.sleep(0.2)  # the second batch is waiting for the writer meanwhile

    thread = threading.Thread(target=first)
    thread.start()
    inside.wait(10)
    second_started.set()
    with store.batch() as batch:  # opens the index while the first one still writes
        write(root, "b.md", "# B\n\nsecond batch\n")
        batch.apply(["b.md"], [])
    thread.join(10)
    for n in range(30):  # enough commits for tantivy to merge segments away
        write(root, f"m{n % 3}.md", f"# M\n\nround {n}\n")
        index.refresh([f"m{n % 3}.md"])
    folder = store.folder
    managed = set(json.loads((folder / ".managed.json").read_text()))
    unmanaged = {name for name in os.listdir(folder) if "." in name and not name.startswith(".")
                 and name.rsplit(".", 1)[1] in {"idx", "pos", "term", "store", "fast", "fieldnorm", "del"}}
    assert unmanaged <= managed, sorted(unmanaged - managed)
    assert paths(index.search("first batch", fresh=False))[0] == "a.md"
    assert paths(index.search("second batch", fresh=False))[0] == "b.md"


def test_a_reader_sees_another_commit_when_it_reloads_and_never_on_its_own(root: Path) -> None:
    # tantivy's reload-on-commit reader reloads from a thread of its own, taking the index's meta lock:
    # a search's reload (the delta's RAM index) meeting it waited tantivy's 100 ms lock retry.
    write(root, "MEMORY.md", "# Project\n\nfirst\n")
    reader, writer = index_of(root), index_of(root)
    reader.search("first")
    held = reader.store.open()
    before = held.searcher().num_docs
    write(root, "notes/second.md", "# Second\n\nsecond\n")
    assert writer.refresh({"notes/second.md"}) == 1  # committed by another index of the root
    time.sleep(1.5)  # past tantivy's meta.json watch (500 ms): a reader reloading on its own would have
    assert held.searcher().num_docs == before
    assert reader.store.searcher().num_docs == before + 1  # the store reloads when the commit is new
    assert paths(reader.search("second")) == ["notes/second.md"]
