"""The memory tool, command by command, through Run.call as a model would use it."""

from __future__ import annotations

import json

import pytest

import fsmem
from fsmem import Scope


@pytest.fixture
def memory(tmp_path):
    return fsmem.open(tmp_path / "root", create=True)


@pytest.fixture
def run(memory):
    return memory.run(Scope.chat(), thread_id="t-1")


def ok(result):
    assert result["ok"], result
    return result


def refused(result, code):
    assert not result["ok"], result
    assert result["error"]["code"] == code, result
    assert result["text"].startswith(f"Error [{code}]")
    return result["error"]["message"]


def test_write_then_read_shows_numbered_lines_and_version(run):
    written = ok(run.call({"command": "write", "path": "brand.md", "content": "# Brand\n- Voice: warm\n"}))
    assert written["text"].startswith("Created brand.md (version ")
    read = ok(run.call({"command": "read", "path": "/brand.md"}))
    assert read["version"] == written["version"]
    assert read["text"].splitlines()[1:] == ["     1\t# Brand", "     2\t- Voice: warm"]
    assert read["text"].startswith(f"brand.md · version {written['version']} · 2 lines · changed ")


def test_partial_read_names_the_range(run):
    ok(run.call({"command": "write", "path": "a.md", "content": "".join(f"line {i}\n" for i in range(1, 11))}))
    read = ok(run.call({"command": "read", "path": "a.md", "start_line": 4, "end_line": 5}))
    assert "showing lines 4-5" in read["text"]
    assert read["text"].splitlines()[1:] == ["     4\tline 4", "     5\tline 5"]


def test_reading_a_folder_shows_a_two_level_tree_without_state(memory, run):
    memory.create_agent("3f9a1c2e-aaaa", "SEO")
    ok(run.call({"command": "write", "path": "seo/titles.md", "content": "x\n"}))
    tree = ok(run.call({"command": "read", "path": ""}))["text"]
    assert tree.splitlines()[0] == "/"
    assert "  agents/" in tree and "    seo-3f9a1c2e/" in tree
    assert "    titles.md" in tree
    assert ".fsmem" not in tree


def test_reading_a_folder_gives_its_entries_as_data(memory, run):
    ok(run.call({"command": "write", "path": "seo/titles.md", "content": "x\n"}))
    entries = ok(run.call({"command": "read", "path": ""}))["entries"]
    by_path = {entry["path"]: entry for entry in entries}
    assert by_path["MEMORY.md"]["folder"] is False and by_path["MEMORY.md"]["size"] == 0
    assert by_path["seo"]["folder"] is True
    assert [(e["path"], e["folder"], e["size"]) for e in by_path["seo"]["entries"]] == [("seo/titles.md", False, 2)]
    assert not any(entry["path"].startswith(".fsmem") for entry in entries)


def test_missing_file_is_not_found(run):
    refused(run.call({"command": "read", "path": "nope.md"}), "NOT_FOUND")


def test_write_to_unread_nonempty_file_is_not_read(memory, run):
    (memory.root / "hand.md").write_text("by hand\n")
    message = refused(run.call({"command": "write", "path": "hand.md", "content": "new\n"}), "NOT_READ")
    assert "read it first" in message
    assert (memory.root / "hand.md").read_text() == "by hand\n"


def test_write_to_existing_empty_file_needs_no_read(run):
    ok(run.call({"command": "write", "path": "MEMORY.md", "content": "# Project\n"}))


def test_conflict_names_the_other_thread_and_changes_nothing(memory):
    first = memory.run(thread_id="alpha")
    second = memory.run(thread_id="beta")
    ok(first.call({"command": "write", "path": "MEMORY.md", "content": "one\n"}))
    ok(second.call({"command": "read", "path": "MEMORY.md"}))
    ok(first.call({"command": "write", "path": "MEMORY.md", "content": "two\n"}))
    message = refused(second.call({"command": "write", "path": "MEMORY.md", "content": "three\n"}), "CONFLICT")
    assert "thread alpha" in message and "Read it again" in message
    assert (memory.root / "MEMORY.md").read_text() == "two\n"
    ok(second.call({"command": "read", "path": "MEMORY.md"}))
    ok(second.call({"command": "write", "path": "MEMORY.md", "content": "two\nthree\n"}))


def test_expected_version_serves_stateless_callers(memory):
    writer = memory.run()
    version = ok(writer.call({"command": "write", "path": "a.md", "content": "v1\n"}))["version"]
    stateless = memory.run()
    ok(stateless.call({"command": "write", "path": "a.md", "content": "v2\n", "expected_version": version}))
    refused(memory.run().call({"command": "write", "path": "a.md", "content": "v3\n", "expected_version": version}),
            "CONFLICT")


def test_marker_edit_keeps_unchanged_lines(run):
    ok(run.call({"command": "write", "path": "a.md", "content": "# A\nkeep 1\nold line\nkeep 2\n"}))
    result = ok(run.call({"command": "write", "path": "a.md",
                          "content": "<!-- ... -->\nkeep 1\nnew line\nkeep 2\n"}))
    assert "new line" in result["text"]
    assert run.memory.read("a.md") == "# A\nkeep 1\nnew line\nkeep 2\n"


def test_exact_replacement_and_not_unique(run):
    ok(run.call({"command": "write", "path": "a.md", "content": "x = 1\ny = 2\nx = 1\n"}))
    message = refused(run.call({"command": "write", "path": "a.md", "old_text": "x = 1", "new_text": "x = 3"}),
                      "NOT_UNIQUE")
    assert "1, 3" in message
    ok(run.call({"command": "write", "path": "a.md", "old_text": "y = 2", "new_text": "y = 5"}))
    assert run.memory.read("a.md") == "x = 1\ny = 5\nx = 1\n"


def test_same_content_changes_nothing(memory, run):
    ok(run.call({"command": "write", "path": "a.md", "content": "same\n"}))
    result = ok(run.call({"command": "write", "path": "a.md", "content": "same\n"}))
    assert "nothing changed" in result["text"]
    assert len(list(memory.log())) == 1


def test_rename_file_and_never_over_existing(memory, run):
    ok(run.call({"command": "write", "path": "a.md", "content": "a\n"}))
    ok(run.call({"command": "write", "path": "b.md", "content": "b\n"}))
    refused(run.call({"command": "rename", "path": "a.md", "new_path": "b.md"}), "EXISTS")
    ok(run.call({"command": "rename", "path": "a.md", "new_path": "topics/a.md"}))
    assert memory.read("topics/a.md") == "a\n"
    # the run keeps its read version across its own rename
    ok(run.call({"command": "write", "path": "topics/a.md", "content": "a2\n"}))


def test_delete_returns_what_it_held_and_keeps_a_version(memory, run):
    ok(run.call({"command": "write", "path": "old.md", "content": "stale rule\n"}))
    result = ok(run.call({"command": "delete", "path": "old.md"}))
    assert result["held"] == {"old.md": "stale rule\n"}
    assert not (memory.root / "old.md").exists()
    assert [v.command for v in memory.versions("old.md")] == ["delete"]


def test_deleting_a_top_file_empties_it(memory, run):
    ok(run.call({"command": "write", "path": "MEMORY.md", "content": "rules\n"}))
    result = ok(run.call({"command": "delete", "path": "MEMORY.md"}))
    assert result["held"] == {"MEMORY.md": "rules\n"}
    assert (memory.root / "MEMORY.md").read_text() == ""


def test_regex_search_lists_path_line_text(run):
    ok(run.call({"command": "write", "path": "a.md", "content": "alpha\nbeta 42\n"}))
    ok(run.call({"command": "write", "path": "b/c.md", "content": "gamma 7\n"}))
    result = ok(run.call({"command": "search", "query": r"\d+", "regex": True}))
    assert result["text"].splitlines() == ["a.md:2: beta 42", "b/c.md:1: gamma 7"]
    only_b = ok(run.call({"command": "search", "query": r"\d+", "regex": True, "include": "b/**"}))
    assert only_b["text"] == "b/c.md:1: gamma 7"


def test_bad_regex_is_bad_pattern(run):
    refused(run.call({"command": "search", "query": "(unclosed", "regex": True}), "BAD_PATTERN")


def test_catastrophic_regex_times_out(memory, run):
    ok(run.call({"command": "write", "path": "a.md", "content": "a" * 5000 + "!\n"}))
    fast = fsmem.open(memory.root, settings=fsmem._env.config.Settings(regex_timeout=0.2)).run()
    refused(fast.call({"command": "search", "query": r"^(a|a)+$", "regex": True}), "TIMEOUT")


@pytest.mark.parametrize("request_", [
    {"command": "fly"},
    {"command": "read"},
    {"command": "write", "path": "a.md"},
    {"command": "write", "path": "a.md", "content": "x", "old_text": "a", "new_text": "b"},
    {"command": "read", "path": "a.md", "content": "x"},
    {"command": "search", "query": "x", "limit": 0},
    "not a dict",
])
def test_malformed_requests_are_bad_request(run, request_):
    refused(run.call(request_), "BAD_REQUEST")


def test_too_large_is_refused(run):
    refused(run.call({"command": "write", "path": "a.md", "content": "x" * (32 * 1024 + 1)}), "TOO_LARGE")


def test_secret_is_refused_without_echo(memory, run):
    secret = "sk-" + "a1B2c3D4e5F6g7H8i9J0"
    message = refused(run.call({"command": "write", "path": "a.md", "content": f"key {secret}\n"}), "SENSITIVE")
    assert secret not in message
    assert not (memory.root / "a.md").exists()


def test_results_are_json_serialisable(run):
    result = run.call({"command": "write", "path": "a.md", "content": "é\n"})
    json.dumps(result)


def test_write_into_missing_agent_folder_is_protected(run):
    refused(run.call({"command": "write", "path": "agents/ghost-12345678/MEMORY.md", "content": "x\n"}),
            "PROTECTED")


def test_fact_files_are_read_only_for_the_tool(memory, run):
    (memory.root / "notes/memory").mkdir(parents=True)
    (memory.root / "notes/memory/f1.md").write_text("---\nid: f1\n---\nAna leads design.\n")
    ok(run.call({"command": "read", "path": "notes/memory/f1.md"}))
    refused(run.call({"command": "write", "path": "notes/memory/f1.md", "content": "x\n"}), "PROTECTED")
    refused(run.call({"command": "delete", "path": "notes/memory/f1.md"}), "PROTECTED")


def test_conflict_from_a_hand_edit_says_so(memory, run):
    ok(run.call({"command": "write", "path": "a.md", "content": "mine\n"}))
    (memory.root / "a.md").write_text("edited in an editor\n")
    message = refused(run.call({"command": "write", "path": "a.md", "content": "again\n"}), "CONFLICT")
    assert "outside fsmem" in message


def test_conflict_after_a_delete_by_another_thread(memory, run):
    ok(run.call({"command": "write", "path": "a.md", "content": "mine\n"}))
    other = memory.run(thread_id="t-2")
    ok(other.call({"command": "read", "path": "a.md"}))
    ok(other.call({"command": "delete", "path": "a.md"}))
    message = refused(run.call({"command": "write", "path": "a.md", "content": "again\n"}), "CONFLICT")
    assert "no longer exists" in message and "thread t-2" in message


def test_a_request_nested_past_pythons_recursion_limit_is_refused_not_raised(tmp_path):
    import fsmem

    memory = fsmem.open(tmp_path / "root", create=True)
    nested: list = []
    for _ in range(5000):
        nested = [nested]
    for request in ({"command": "search", "query": "x", "include": nested}, {"command": nested}):
        result = memory.run().call(request)
        assert result["ok"] is False and result["error"]["code"] == "BAD_REQUEST", result["text"][:200]


@pytest.mark.parametrize("fields", [{}, {"old_text": "x"}, {"new_text": "y"}])
def test_a_typed_write_with_nothing_to_write_is_refused_and_changes_nothing(memory, run, fields):
    # call() checks the shape against the schema; execute() takes a typed Write, checked by the tool.
    from fsmem._core.requests import Write
    from fsmem._errors import BadRequest

    ok(run.call({"command": "write", "path": "a.md", "content": "x\n"}))
    with pytest.raises(BadRequest, match="either content, or old_text with new_text"):
        run.execute(Write("a.md", **fields))
    with pytest.raises(BadRequest, match="either content, or old_text with new_text"):
        run.execute(Write("b.md", **fields))
    assert (memory.root / "a.md").read_text() == "x\n" and not (memory.root / "b.md").exists()
