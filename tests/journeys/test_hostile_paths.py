"""Hostile paths: every one refused with BAD_PATH by every command, and nothing changed anywhere.

docs/design.md §4 (Paths): relative to the root, NFC, no ``..``/``.`` segment, no backslash, no Cc/Cf
character, no segment starting with ``.``, at most 512 bytes; after resolving, inside the root, and no
symlink on the way leading out. ``.fsmem/`` is never reachable.

The snapshot covers the whole root (``.fsmem/`` included) and the folder outside it that the symlinks
point to, so an escape that writes, renames or deletes anything is caught.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fsmem
from fsmem._errors import BadPath
from tests.conftest import run_fsmem
from tests.procs.common import diff, snapshot

# Paths wrong by their spelling alone. Every escape they attempt would land beside the root in the
# test's own tmp folder, never on a real system file: the tests run as whatever user the machine has.
SPELLED = {
    # traversal
    "dotdot": "../x.md",
    "inner-dotdot-out": "a/../../x.md",
    "inner-dotdot-in": "a/../x.md",
    "rooted-dotdot": "/../x.md",
    "rooted-dotdot-twice": "/../../x.md",
    "dotdot-alone": "..",
    "trailing-dotdot": "a/..",
    "file-then-dotdot": "x.md/..",
    "through-a-real-folder": "docs/../../outside/secret.md",
    "dotdot-then-slash": "../",
    # dot segments
    "dot-first": "./x.md",
    "dot-inner": "a/./x.md",
    "dot-alone": ".",
    "rooted-dot": "/./x.md",
    # percent-encoded
    "encoded-dotdot": "%2e%2e/x.md",
    "encoded-slash": "..%2fx.md",
    "encoded-both": "%2e%2e%2fx.md",
    "encoded-upper": "%2E%2E/x.md",
    "encoded-inner": "a/%2e%2e/%2e%2e/x.md",
    # NUL and other control characters
    "nul-inside": "x\x00.md",
    "nul-alone": "\x00",
    "nul-truncation": "x.md\x00.txt",
    "newline": "a\nb.md",
    "tab": "x\t.md",
    "escape-sequence": "x\x1b[31m.md",
    "delete-char": "x\x7f.md",
    "next-line": "x\u0085.md",
    # backslashes and Windows spellings
    "backslash-dotdot": "..\\x.md",
    "backslash-inner": "a\\..\\..\\x.md",
    "drive-backslash": "C:\\x.md",
    "drive-slash": "C:/x.md",
    "unc": "\\\\server\\share\\x.md",
    "backslash-name": "a\\b.md",
    # fsmem's own state and hidden files
    "state-lock": ".fsmem/lock",
    "state-version": ".fsmem/versions/MEMORY.md",
    "state-log": ".fsmem/log.jsonl",
    "state-folder": ".fsmem",
    "state-rooted": "/.fsmem/lock",
    "state-index": ".fsmem/index/meta.json",
    "git-config": ".git/config",
    "dotfile": ".hidden.md",
    "inner-dotfile": "docs/.secret.md",
    "dotdot-prefix-name": "..x.md",
    # overlong
    "overlong-ascii": "a" * 510 + ".md",
    "overlong-multibyte": "\u00e9" * 300 + ".md",
    "overlong-deep": "/".join(["abcdefgh"] * 60) + ".md",
    # invisible and bidi characters
    "zero-width-space": "x\u200b.md",
    "zero-width-joiner": "x\u200d.md",
    "right-to-left-override": "\u202edm.x",
    "left-to-right-isolate": "x\u2066.md",
    "byte-order-mark": "\ufeffx.md",
    "soft-hyphen": "x\u00ad.md",
    "line-separator": "x\u2028.md",
}

# Paths spelled well that lead out of the root (or into .fsmem) through a symlink; made by `world`.
LINKED = {
    "link-file-absolute": "link_file.md",
    "link-file-relative": "link_rel.md",
    "link-dir-file": "link_dir/secret.md",
    "link-dir-itself": "link_dir",
    "link-dir-new-file": "link_dir/new.md",
    "link-chain-dir": "chain_a/secret.md",
    "link-chain-file": "chain_file.md",
    "link-into-state": "state/lock",
    "link-into-state-log": "state/log.jsonl",
    "link-dangling-out": "dangling.md",
    "link-up-two": "docs/up2/outside/secret.md",
}

OUTSIDE_LINE = "this file lives outside the root"
OUTSIDE_TEXT = f"# Outside\nneedle-outside: {OUTSIDE_LINE}\n"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A root with files and hostile symlinks, and an outside folder they point to."""
    base = tmp_path_factory.mktemp("hostile")
    root, outside = base / "root", base / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(OUTSIDE_TEXT, encoding="utf-8")
    (outside / "outside-only-name.md").write_text(OUTSIDE_TEXT, encoding="utf-8")
    memory = fsmem.open(root, create=True)
    run = memory.run(fsmem.Scope.chat(), thread_id="setup")
    for path, text in {"MEMORY.md": "# Project\n", "topic.md": "# Topic\n", "docs/a.md": "# A\n"}.items():
        assert run.call({"command": "write", "path": path, "content": text})["ok"]
    os.symlink(outside / "secret.md", root / "link_file.md")
    os.symlink("../outside/secret.md", root / "link_rel.md")
    os.symlink(outside, root / "link_dir")
    os.symlink(outside, root / "chain_b")
    os.symlink("chain_b", root / "chain_a")
    os.symlink("chain_a/secret.md", root / "chain_file.md")
    os.symlink(".fsmem", root / "state")
    os.symlink(outside / "never-made.md", root / "dangling.md")
    os.symlink("../..", root / "docs" / "up2")
    return root, outside


def fresh_run(root: Path, review: bool = False):
    run = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="attacker", review=review)
    # Warm up: whatever a first read or search does lazily (an index, a cache) happens before the snapshot.
    assert run.call({"command": "read", "path": "topic.md"})["ok"]
    assert run.call({"command": "search", "query": "Topic"})["ok"]
    return run


def calls_for(path: str) -> dict[str, dict]:
    return {
        "read": {"command": "read", "path": path},
        "write": {"command": "write", "path": path, "content": "# hostile\n"},
        "replace": {"command": "write", "path": path, "old_text": "Outside", "new_text": "Owned"},
        "rename-from": {"command": "rename", "path": path, "new_path": "moved.md"},
        "rename-to": {"command": "rename", "path": "topic.md", "new_path": path},
        "delete": {"command": "delete", "path": path},
    }


def assert_refused(world: tuple[Path, Path], request: dict, expected: str = "BAD_PATH",
                   review: bool = False) -> dict:
    root, outside = world
    run = fresh_run(root, review=review)
    before = snapshot(root, outside)
    result = run.call(request)
    assert result["ok"] is False, result
    assert result["error"]["code"] == expected, result
    assert result["text"].startswith("Error")
    assert "needle-outside" not in json.dumps(result)
    after = snapshot(root, outside)
    assert after == before, diff(before, after)
    return result


@pytest.mark.parametrize("op", list(calls_for("x")))
@pytest.mark.parametrize("path", list(SPELLED.values()), ids=list(SPELLED))
def test_spelled_hostile_paths_are_refused_by_every_command(world, path: str, op: str) -> None:
    assert_refused(world, calls_for(path)[op])


@pytest.mark.parametrize("op", list(calls_for("x")))
@pytest.mark.parametrize("path", list(LINKED.values()), ids=list(LINKED))
def test_symlinks_out_of_the_root_are_refused_by_every_command(world, path: str, op: str) -> None:
    assert_refused(world, calls_for(path)[op])


@pytest.mark.parametrize("op", ["write", "rename-from", "rename-to", "delete"])
@pytest.mark.parametrize("path", list(SPELLED.values()) + list(LINKED.values()),
                         ids=list(SPELLED) + list(LINKED))
def test_a_reviewer_gets_the_same_refusal_and_no_proposal_is_made(world, path: str, op: str) -> None:
    # A background reviewer's changes may become proposals; a hostile one never becomes anything.
    assert_refused(world, calls_for(path)[op], review=True)


@pytest.mark.parametrize("path", [p for k, p in SPELLED.items() if not k.startswith("overlong")]
                         + ["../*.md", "../**", "**/../*.md", ".fsmem/**", "/../**/*.md"])
def test_hostile_search_include_globs_are_refused(world, path: str) -> None:
    assert_refused(world, {"command": "search", "query": "Outside", "regex": True, "include": [path]})


@pytest.mark.parametrize("include", [None, ["**"], ["link_dir/**"], ["chain_a/**"], ["docs/**"],
                                     ["state/**"], ["*.md"]])
@pytest.mark.parametrize("regex", [True, False])
def test_search_never_reaches_outside_the_root_or_into_state(world, include, regex: bool) -> None:
    root, outside = world
    run = fresh_run(root)
    before = snapshot(root, outside)
    request = {"command": "search", "query": "needle-outside", "regex": regex}
    if include is not None:
        request["include"] = include
    result = run.call(request)
    if not result["ok"]:
        assert result["error"]["code"] == "BAD_PATH", result
    assert not result.get("hits") and OUTSIDE_LINE not in result["text"], result
    state = run.call({"command": "search", "query": '"command"', "regex": regex})  # every log line has it
    assert state["ok"] and not state.get("hits") and "log.jsonl" not in state["text"], state
    assert snapshot(root, outside) == before


def test_folder_listings_never_show_what_lies_outside_or_in_state(world) -> None:
    root, outside = world
    run = fresh_run(root)
    for folder in ("", "/", "docs"):
        listing = run.call({"command": "read", "path": folder})
        assert listing["ok"], listing
        text = json.dumps(listing)
        assert "outside-only-name" not in text and "never-made" not in text
        assert ".fsmem" not in text and "log.jsonl" not in text
        assert "needle-outside" not in text


def test_absolute_system_paths_are_root_relative_and_never_read_the_real_file(world) -> None:
    root, _ = world
    run = fresh_run(root)
    for path in ("/etc/passwd", "/etc/shadow", "/proc/self/environ", "//etc/passwd"):
        result = run.call({"command": "read", "path": path})
        assert result["ok"] is False and result["error"]["code"] in {"NOT_FOUND", "BAD_PATH"}, result
        assert "root:" not in result["text"]


def test_two_spellings_of_one_name_are_one_file(world) -> None:
    root, _ = world
    run = fresh_run(root)
    assert run.call({"command": "write", "path": "caf\u00e9.md", "content": "# NFC\n"})["ok"]
    decomposed = run.call({"command": "read", "path": "/cafe\u0301.md"})
    assert decomposed["ok"], decomposed
    assert "# NFC" in decomposed["text"]
    assert [name for name in os.listdir(root) if name.startswith("caf")] == ["caf\u00e9.md"]


def test_memory_api_refuses_hostile_paths_too(world) -> None:
    root, outside = world
    memory = fsmem.open(root)
    before = snapshot(root, outside)
    # Versions live under .fsmem/, so a link in the root cannot lead them out; the spelling is what counts.
    for path in ("../x.md", ".fsmem/log.jsonl", "a/../../x.md", "a\\b.md", "x\u200b.md", "%2e%2e/x.md"):
        with pytest.raises(BadPath):
            memory.versions(path)
        with pytest.raises(BadPath):
            memory.revert(path)
    assert snapshot(root, outside) == before


def test_hostile_paths_through_real_processes(world) -> None:
    root, outside = world
    before = snapshot(root, outside)
    read = run_fsmem("read", "--root", str(root), "../outside/secret.md")
    assert read.returncode == 1 and read.stderr.startswith("Error: [BAD_PATH]"), read
    assert "needle-outside" not in read.stdout + read.stderr
    write = run_fsmem("write", "--root", str(root), "link_dir/new.md", input="# hostile\n")
    assert write.returncode == 1 and write.stderr.startswith("Error: [BAD_PATH]"), write
    for request in ({"command": "write", "path": ".fsmem/lock", "content": "x"},
                    {"command": "delete", "path": "chain_a/secret.md"},
                    {"command": "rename", "path": "topic.md", "new_path": "%2e%2e/x.md"}):
        tool = run_fsmem("tool", "--root", str(root), input=json.dumps(request))
        result = json.loads(tool.stdout)
        assert result["ok"] is False and result["error"]["code"] == "BAD_PATH", (request, tool)
    assert snapshot(root, outside) == before


# --- a property: whatever the spelling, a write lands inside the root and outside .fsmem, or nowhere ---

_PIECES = st.sampled_from(["..", ".", "", "a", "b.md", "%2e", "\\", "\x00", "\u200b", "e\u0301",
                           ".fsmem", "link_dir", "chain_a", "state", "docs", "up2", "x.md", " ", "C:"])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(_PIECES, min_size=1, max_size=6), lead=st.sampled_from(["", "/"]))
def test_any_spelling_writes_inside_the_root_or_nowhere(world, pieces: list[str], lead: str) -> None:
    root, outside = world
    path = lead + "/".join(pieces)
    if not path.endswith(".md"):
        path += "/x.md"
    before_outside = snapshot(outside)
    run = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="fuzz")
    result = run.call({"command": "write", "path": path, "content": "# fuzz\n"})
    assert snapshot(outside) == before_outside, path
    if result["ok"]:
        written = (root / result["path"]).resolve()
        assert written.is_relative_to(root.resolve()), (path, result["path"])
        assert ".fsmem" not in written.relative_to(root.resolve()).parts
        assert written.read_text(encoding="utf-8") == "# fuzz\n"
        assert run.call({"command": "delete", "path": result["path"]})["ok"]
    else:
        assert result["error"]["code"] in {"BAD_PATH", "EXISTS", "NOT_READ", "PROTECTED"}, (path, result)


@pytest.mark.parametrize("link_name", ["out.txt", "out.md", "deeper/out.txt"])
def test_a_folder_holding_a_link_out_is_refused_whole_or_deleted_without_touching_outside(
    tmp_path: Path, link_name: str
) -> None:
    """A folder delete either changes nothing (refused) or removes the link only; never a half delete."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(OUTSIDE_TEXT, encoding="utf-8")
    run = fsmem.open(root, create=True).run(fsmem.Scope.chat(), thread_id="t-1")
    for path in ("mixed/a.md", "mixed/z.md"):
        assert run.call({"command": "write", "path": path, "content": f"# {path}\n"})["ok"]
    (root / "mixed" / link_name).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(outside / "secret.md", root / "mixed" / link_name)
    before = snapshot(root, outside)
    result = run.call({"command": "delete", "path": "mixed"})
    if result["ok"]:
        assert not (root / "mixed").exists()
        assert set(result["held"]) == {"mixed/a.md", "mixed/z.md"}
        assert (outside / "secret.md").read_text(encoding="utf-8") == OUTSIDE_TEXT
    else:
        assert result["error"]["code"] == "BAD_PATH", result
        assert snapshot(root, outside) == before, diff(before, snapshot(root, outside))


def test_a_write_through_a_hard_link_never_changes_the_other_name(tmp_path: Path) -> None:
    """A hard link made by hand can't be seen as a link; the atomic replace still leaves its twin alone."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    outside.mkdir()
    (outside / "twin.md").write_text(OUTSIDE_TEXT, encoding="utf-8")
    fsmem.open(root, create=True)
    os.link(outside / "twin.md", root / "twin.md")
    run = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="t-1")
    assert run.call({"command": "read", "path": "twin.md"})["ok"]
    assert run.call({"command": "write", "path": "twin.md", "content": "# Mine now\n"})["ok"]
    assert (outside / "twin.md").read_text(encoding="utf-8") == OUTSIDE_TEXT
    assert (root / "twin.md").read_text(encoding="utf-8") == "# Mine now\n"


def test_links_inside_the_root_do_not_get_around_protection(tmp_path: Path) -> None:
    """A link to a fact, a level folder or a top file is judged by where it leads."""
    root = tmp_path / "root"
    memory = fsmem.open(root, create=True)
    agent = memory.create_agent("3f9a1c2e-77", "SEO")
    (root / "notes" / "memory").mkdir(parents=True)
    (root / "notes" / "memory" / "f1.md").write_text("---\nsubject: a\n---\nA fact.\n", encoding="utf-8")
    os.symlink("notes/memory/f1.md", root / "fact_alias.md")
    os.symlink(agent, root / "agent_alias")
    os.symlink("MEMORY.md", root / "top_alias.md")
    run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
    for path in ("fact_alias.md", "top_alias.md"):
        assert run.call({"command": "read", "path": path})["ok"]
    before = snapshot(root)
    for request in ({"command": "write", "path": "fact_alias.md", "content": "# changed\n"},
                    {"command": "delete", "path": "fact_alias.md"},
                    {"command": "delete", "path": "agent_alias"},
                    {"command": "rename", "path": "agent_alias", "new_path": "elsewhere"},
                    {"command": "write", "path": "agent_alias/../x.md", "content": "# x\n"},
                    {"command": "rename", "path": "top_alias.md", "new_path": "old.md"}):
        result = run.call(request)
        assert result["ok"] is False and result["error"]["code"] in {"PROTECTED", "BAD_PATH"}, (request, result)
        assert snapshot(root) == before, (request, diff(before, snapshot(root)))


# --- hostile requests: whatever the shape, an answer (never an exception) and no change on refusal ---

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.floats(allow_nan=False)
    | st.text(max_size=20) | st.sampled_from(["../x.md", "topic.md", ".fsmem/lock", "", "/", "docs", "**"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)
_KEYS = ["path", "new_path", "content", "old_text", "new_text", "start_line", "end_line", "query", "regex",
         "include", "exclude", "since", "limit", "expected_version", "extra"]


@pytest.fixture(scope="module")
def small_world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("requests")
    root, outside = base / "root", base / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(OUTSIDE_TEXT, encoding="utf-8")
    run = fsmem.open(root, create=True).run(fsmem.Scope.chat(), thread_id="setup")
    assert run.call({"command": "write", "path": "topic.md", "content": "# Topic\n"})["ok"]
    os.symlink(outside, root / "link_dir")
    return root, outside


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=st.sampled_from(["read", "write", "rename", "delete", "search", "view", "", None, 3]),
       fields=st.dictionaries(st.sampled_from(_KEYS), _JSON, max_size=5))
def test_any_request_gets_an_answer_and_a_refusal_changes_nothing(small_world, command, fields) -> None:
    from fsmem._errors import TOOL_ERROR_CODES

    root, outside = small_world
    run = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="fuzz")
    run.call({"command": "read", "path": "topic.md"})
    before = snapshot(root, outside)
    request = {"command": command, **fields}
    result = run.call(request)  # raising would be a bug: every refusal is a result
    assert isinstance(result, dict) and isinstance(result.get("ok"), bool) and isinstance(result["text"], str)
    json.dumps(result)  # JSON-able, as every face needs
    assert snapshot(outside) == {"0:" + k[2:]: v for k, v in before.items() if k.startswith("1:")}
    if not result["ok"]:
        assert result["error"]["code"] in TOOL_ERROR_CODES, result
        assert snapshot(root, outside) == before, (request, diff(before, snapshot(root, outside)))
