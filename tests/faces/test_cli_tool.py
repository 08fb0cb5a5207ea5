"""``fsmem tool`` always answers with JSON on stdout, whatever arrives on stdin, with the README's
exit codes (0 done, 1 refused, 2 setup, 3 conflict), in a real process."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_fsmem


def answer(root, stdin: str | bytes, *args: str):
    import subprocess
    import sys

    from tests.conftest import REPO

    data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
    proc = subprocess.run([sys.executable, "-m", "fsmem", "tool", "--root", str(root), *args], input=data, check=False,
                          capture_output=True, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, timeout=60)
    return proc.returncode, json.loads(proc.stdout.decode("utf-8")), proc.stderr.decode("utf-8")


@pytest.mark.parametrize("stdin, words", [
    ("[" * 100_000 + "]" * 100_000, "nests JSON too deeply"),
    ("[" * 900 + "]" * 900, "must be a JSON object"),
    ("{\"command\": \"search\", \"query\": \"x\", \"include\": " + "[" * 900 + "]" * 900 + "}", "does not fit the memory tool"),
    (b"\xff\xfe{}", "not UTF-8"),
    (b'{"command": "write", "path": "a.md", "content": "caf\xe9"}', "not UTF-8"),
    ("{not json", "is not JSON"),
    ("", "is not JSON"),
])
def test_what_is_not_a_request_is_a_json_refusal(root, stdin, words):
    code, result, _ = answer(root, stdin)
    assert code == 1
    assert result["ok"] is False and result["error"]["code"] == "BAD_REQUEST" and words in result["error"]["message"]
    assert not (root / "a.md").exists()


def test_setup_problems_are_json_too_with_exit_2(root, tmp_path):
    code, result, _ = answer(tmp_path / "nowhere", '{"command": "read", "path": "/"}')
    assert (code, result["error"]["code"]) == (2, "NO_ROOT")
    code, result, _ = answer(root, '{"command": "read", "path": "/"}', "--scope", "team:x")
    assert (code, result["error"]["code"]) == (2, "BAD_SCOPE")


def test_a_conflict_exits_3_and_a_good_call_0(root):
    code, written, _ = answer(root, json.dumps({"command": "write", "path": "a.md", "content": "one\n"}))
    assert code == 0 and written["ok"] and written["content"] == "one\n"
    code, result, _ = answer(root, json.dumps({"command": "write", "path": "a.md", "content": "two\n",
                                               "expected_version": "000000000000"}))
    assert code == 3 and result["error"]["code"] == "CONFLICT" and result["error"]["seen_version"] == "000000000000"
    unread = run_fsmem("tool", "--root", str(root), input=json.dumps({"command": "delete", "path": "a.md"}))
    assert unread.returncode == 3 and json.loads(unread.stdout)["error"]["code"] == "NOT_READ"
    assert (root / "a.md").read_text() == "one\n"


@pytest.mark.parametrize("command", ["tool", "search", "read"])
def test_a_one_shot_command_starts_no_watcher(root, command):
    # A watcher started by a process that exits at once would only cost its start (and leave its
    # heartbeat behind); run_fsmem runs with the default settings, where a long-lived process watches.
    args = {"tool": ["tool"], "search": ["search", "rules"], "read": ["read", "MEMORY.md"]}[command]
    stdin = json.dumps({"command": "search", "query": "rules"}) if command == "tool" else None
    done = run_fsmem(*args, "--root", str(root), input=stdin)
    assert done.returncode in (0, 1), done.stderr
    assert not (root / ".fsmem" / "watch.json").exists()
    assert "watchdog" not in done.stderr


def test_a_one_shot_edit_refused_not_read_names_the_field_and_version_to_pass(root):
    """A shell has no session: the refusal names what it can send (expected_version, and its value)."""
    (root / "a.md").write_text("Titles under 60.\n")
    edit = {"command": "write", "path": "a.md", "old_text": "under 60", "new_text": "under 65"}
    code, refused, _ = answer(root, json.dumps(edit))
    assert code == 3 and refused["error"]["code"] == "NOT_READ"
    version = refused["error"]["current_version"]
    assert f"expected_version (now {version})" in refused["error"]["message"]
    code, done, _ = answer(root, json.dumps({**edit, "expected_version": version}))
    assert code == 0 and done["ok"], done
    assert (root / "a.md").read_text() == "Titles under 65.\n"
