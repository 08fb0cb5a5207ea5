"""Hostile requests through every face: the tool's JSON (``fsmem tool``), the CLI, MCP (the official
client, in memory) and the Claude adapter (the anthropic SDK's memory-tool commands).

Each request is answered with a coded refusal or a correct answer: never an exception, a hang (every
test has a timeout) or a change to the root. The whole root — ``.fsmem/`` included — and the folder
its symlinks point to are snapshot around each refused request (special files by kind, never
opened). The requests come from a table (paths with ``..``, NUL, control characters, surrogates,
long names, links out, ``.fsmem``, FIFOs and devices; huge contents, secrets, wrong types, nested
JSON, bad regexes, bad ``since``) and from Hypothesis.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fsmem
from fsmem.cli import main
from fsmem._errors import TOOL_ERROR_CODES
from tests.conftest import tree_snapshot

pytestmark = pytest.mark.timeout(120)


# ---- the world: a root with files, links out, a FIFO, a device ---------------------------------

OUTSIDE_TEXT = "# Outside\nneedle-outside: this file lives outside the root\n"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("faces")
    root, outside = base / "root", base / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(OUTSIDE_TEXT, encoding="utf-8")
    memory = fsmem.open(root, create=True)
    run = memory.run(fsmem.Scope.chat(), thread_id="setup")
    for path, text in {"MEMORY.md": "# Project\n", "topic.md": "# Topic\nneedle here\n",
                       "docs/a.md": "# A\n"}.items():
        assert run.call({"command": "write", "path": path, "content": text})["ok"]
    os.symlink(outside / "secret.md", root / "link_file.md")
    os.symlink(outside, root / "link_dir")
    os.symlink(".fsmem", root / "state")
    os.symlink("../..", root / "docs" / "up2")
    os.mkfifo(root / "fifo.md")
    os.mknod(root / "zero.md", stat.S_IFCHR | 0o600, os.makedev(1, 5))
    # Files an hour old: the index's freshness check trusts its walk cache only for files older than
    # a moment (a just-written file may change again within its mtime tick), and would otherwise
    # refresh that cache on every search, refused or not.
    old = os.stat(root / "MEMORY.md").st_mtime - 3600
    for here, dirs, files in os.walk(root):
        if ".fsmem" in Path(here).parts:
            continue
        for name in dirs + files:
            os.utime(Path(here, name), (old, old), follow_symlinks=False)
    os.utime(root, (old, old))
    memory.search("needle")  # the index is built before any snapshot
    memory.close()  # and no watcher of this setup writes its heartbeat under a snapshot later
    return root, outside


def snapshot(*folders: Path) -> dict[str, tuple[str, object]]:
    """The folders' trees side by side (``tree_snapshot``), keys prefixed by the folder's place."""
    return {f"{index}:{key}": value for index, folder in enumerate(folders)
            for key, value in tree_snapshot(folder).items()}


def changes(before: dict, after: dict) -> list[str]:
    return [key for key in sorted(before.keys() | after.keys()) if before.get(key) != after.get(key)]


# ---- the table ---------------------------------------------------------------------------------

HOSTILE_PATHS = {
    "dotdot": "../x.md", "inner-dotdot-out": "a/../../x.md", "rooted-dotdot": "/../x.md",
    "dotdot-alone": "..", "dot-first": "./x.md", "dot-alone": ".", "encoded-dotdot": "%2e%2e/x.md",
    "encoded-slash": "..%2fx.md", "nul-inside": "x\x00.md", "nul-alone": "\x00", "nul-truncation": "x.md\x00.txt",
    "newline": "a\nb.md", "tab": "x\t.md", "escape": "x\x1b[31m.md", "delete-char": "x\x7f.md",
    "next-line": "x\u0085.md", "backslash-dotdot": "..\\x.md", "backslash-name": "a\\b.md",
    "drive": "C:/x.md", "unc": "\\\\server\\share\\x.md", "state-lock": ".fsmem/lock",
    "state-log": ".fsmem/log.jsonl", "state-folder": ".fsmem", "state-version": ".fsmem/versions/MEMORY.md",
    "git": ".git/config", "dotfile": ".hidden.md", "inner-dotfile": "docs/.secret.md",
    "overlong": "a" * 510 + ".md", "overlong-segment": "b" * 300 + ".md", "deep": "/".join(["abcdefgh"] * 60) + ".md",
    "zero-width": "x\u200b.md", "rtl-override": "\u202edm.x", "bom": "\ufeffx.md", "soft-hyphen": "x\u00ad.md",
    "line-separator": "x\u2028.md", "surrogate": "x\ud800.md", "surrogate-pair-half": "\udc80.md",
    "blank": "   ", "space-edge": " notes.md", "double-slash": "a//b.md",
    "link-file": "link_file.md", "link-dir": "link_dir/secret.md", "link-dir-itself": "link_dir",
    "link-dir-new": "link_dir/new.md", "link-state": "state/lock", "link-up": "docs/up2/outside/secret.md",
    "fifo": "fifo.md", "device": "zero.md",
}
LONG_NAMES = {"long-240": "c" * 237 + ".md", "long-250": "d" * 247 + ".md"}  # fit NAME_MAX, not the temp name


def path_ops(path: str) -> dict[str, dict[str, Any]]:
    return {
        "read": {"command": "read", "path": path},
        "read-range": {"command": "read", "path": path, "start_line": 1, "end_line": 2},
        "write": {"command": "write", "path": path, "content": "# hostile\n"},
        "replace": {"command": "write", "path": path, "old_text": "Outside", "new_text": "Owned"},
        "rename-from": {"command": "rename", "path": path, "new_path": "moved.md"},
        "rename-to": {"command": "rename", "path": "topic.md", "new_path": path},
        "delete": {"command": "delete", "path": path},
    }


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = {"a": value}
    return value


OTHER = {
    # wrong types and shapes
    "no-command": {"path": "MEMORY.md"}, "unknown-command": {"command": "format", "path": "/"},
    "command-number": {"command": 7}, "command-list": {"command": ["read"]}, "command-null": {"command": None},
    "path-number": {"command": "read", "path": 42}, "path-null": {"command": "read", "path": None},
    "path-list": {"command": "read", "path": ["MEMORY.md"]}, "path-object": {"command": "read", "path": {"p": 1}},
    "path-bool": {"command": "delete", "path": True}, "content-number": {"command": "write", "path": "n.md", "content": 5},
    "content-list": {"command": "write", "path": "n.md", "content": ["a"]},
    "content-and-old": {"command": "write", "path": "n.md", "content": "a", "old_text": "a", "new_text": "b"},
    "old-without-new": {"command": "write", "path": "topic.md", "old_text": "Topic"},
    "nothing-to-write": {"command": "write", "path": "n.md"},
    "start-line-text": {"command": "read", "path": "topic.md", "start_line": "1"},
    "start-line-negative": {"command": "read", "path": "topic.md", "start_line": -5},
    "start-line-huge": {"command": "read", "path": "topic.md", "start_line": 10**30},
    "end-before-start": {"command": "read", "path": "topic.md", "start_line": 5, "end_line": 2},
    "start-line-float": {"command": "read", "path": "topic.md", "start_line": 1.5},
    "extra-field": {"command": "read", "path": "topic.md", "sudo": True},
    "expected-version-number": {"command": "delete", "path": "topic.md", "expected_version": 12},
    "expected-version-wrong": {"command": "delete", "path": "topic.md", "expected_version": "000000000000"},
    "rename-no-new": {"command": "rename", "path": "topic.md"},
    "rename-same": {"command": "rename", "path": "topic.md", "new_path": "topic.md"},
    "rename-into-itself": {"command": "rename", "path": "docs", "new_path": "docs/inner"},
    "rename-over-existing": {"command": "rename", "path": "topic.md", "new_path": "MEMORY.md"},
    "rename-top-file": {"command": "rename", "path": "MEMORY.md", "new_path": "old.md"},
    "delete-root": {"command": "delete", "path": "/"}, "delete-empty": {"command": "delete", "path": ""},
    "write-root": {"command": "write", "path": "/", "content": "x"},
    "write-folder": {"command": "write", "path": "docs", "content": "x"},
    "write-not-markdown": {"command": "write", "path": "run.sh", "content": "rm -rf /"},
    "write-into-file": {"command": "write", "path": "topic.md/x.md", "content": "x"},
    "write-agent-missing": {"command": "write", "path": "agents/ghost-12345678/MEMORY.md", "content": "x"},
    "write-fact": {"command": "write", "path": "notes/memory/f1.md", "content": "x"},
    "write-unread": {"command": "write", "path": "topic.md", "content": "# replaced unseen\n"},
    "nested-content": {"command": "write", "path": "n.md", "content": _nested(50)},
    "nested-path": {"command": "read", "path": _nested(200)},
    "nested-query": {"command": "search", "query": _nested(200)},
    # huge contents and secrets
    "huge-content": {"command": "write", "path": "huge.md", "content": "x" * (2 * 1024 * 1024)},
    "huge-new-text": {"command": "write", "path": "topic.md", "old_text": "Topic", "new_text": "y" * 100_000},
    "huge-query": {"command": "search", "query": "needle " * 20_000},
    "huge-regex": {"command": "search", "query": "(a|b)" * 5000, "regex": True},
    "secret-openai": {"command": "write", "path": "s.md", "content": "key sk-" + "proj-" + "a1b2c3d4e5f6g7h8i9j0"},
    "secret-card": {"command": "write", "path": "s.md", "content": "card 4111 1111 1111 1111"},
    "secret-pem": {"command": "write", "path": "s.md", "content": "-----" + "BEGIN RSA PRIVATE KEY-----\nabc"},
    "secret-password": {"command": "write", "path": "s.md", "content": "password: hunter2"},
    "secret-aws": {"command": "write", "path": "s.md",
                   "content": "aws_secret_access_key=" + "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY"},
    "secret-zero-width": {"command": "write", "path": "s.md", "content": "sk-pr\u200boj-a1b2c3d4e5f6g7h8i9j0"},
    "secret-full-width": {"command": "write", "path": "s.md",
                          "content": "\uff53\uff4b\uff0d\uff50\uff52\uff4f\uff4a\uff0d" + "a1b2c3d4e5f6g7h8i9"},
    "secret-in-path": {"command": "write", "path": "sk-" + "proj-a1b2c3d4e5f6g7h8i9j0.md", "content": "x"},
    "surrogate-content": {"command": "write", "path": "s.md", "content": "a\ud800b"},
    "surrogate-old-text": {"command": "write", "path": "topic.md", "old_text": "\udfff", "new_text": "x"},
    # search: bad regexes, bad since, bad globs
    "regex-unclosed": {"command": "search", "query": "(", "regex": True},
    "regex-bad-class": {"command": "search", "query": "[z-a]", "regex": True},
    "regex-bad-escape": {"command": "search", "query": "\\", "regex": True},
    "regex-lookbehind": {"command": "search", "query": "(?<=a+)b", "regex": True},
    "regex-catastrophic": {"command": "search", "query": "(a+)+$", "regex": True},
    "regex-nul": {"command": "search", "query": "a\x00", "regex": True},
    "regex-surrogate": {"command": "search", "query": "\ud800", "regex": True},
    "query-surrogate": {"command": "search", "query": "caf\udce9"},
    "query-empty": {"command": "search", "query": ""},
    "query-nul": {"command": "search", "query": "\x00"},
    "query-only-symbols": {"command": "search", "query": "!!! ??? ***"},
    "query-tantivy-syntax": {"command": "search", "query": "title:x AND (body:[a TO z]"},
    "since-9999": {"command": "search", "query": "needle", "since": "9999-12-31"},
    "since-0001": {"command": "search", "query": "needle", "since": "0001-01-01"},
    "since-9999-regex": {"command": "search", "query": "needle", "since": "9999-12-31", "regex": True},
    "since-garbage": {"command": "search", "query": "needle", "since": "yesterday-ish"},
    "since-number": {"command": "search", "query": "needle", "since": 30},
    "since-huge-age": {"command": "search", "query": "needle", "since": "9999999w"},
    "since-bad-date": {"command": "search", "query": "needle", "since": "2026-02-30"},
    "since-offset-overflow": {"command": "search", "query": "needle", "since": "0001-01-01T00:00+02:00"},
    "limit-zero": {"command": "search", "query": "needle", "limit": 0},
    "limit-negative": {"command": "search", "query": "needle", "limit": -1},
    "limit-huge": {"command": "search", "query": "needle", "limit": 10**12},
    "limit-text": {"command": "search", "query": "needle", "limit": "10"},
    "include-dotdot": {"command": "search", "query": "needle", "include": "../**"},
    "include-state": {"command": "search", "query": "needle", "include": [".fsmem/**"]},
    "include-number": {"command": "search", "query": "needle", "include": 5},
    "include-bad-class": {"command": "search", "query": "needle", "include": "[z-a]"},
    "exclude-nul": {"command": "search", "query": "needle", "exclude": "a\x00"},
    "regex-not-bool": {"command": "search", "query": "needle", "regex": "yes"},
}

READ_ONLY = {"read", "search"}


def table() -> list[Any]:
    """(id, request) for every case."""
    cases = []
    for name, path in {**HOSTILE_PATHS, **LONG_NAMES}.items():
        for op, request in path_ops(path).items():
            if name in LONG_NAMES and op in ("rename-to",):
                continue  # a long name that fits NAME_MAX is a fine name to rename to: not hostile
            cases.append(pytest.param(request, id=f"{name}-{op}"))
    cases += [pytest.param(request, id=name) for name, request in OTHER.items()]
    return cases


CASES = table()


def test_each_face_gets_at_least_300_hostile_requests() -> None:
    assert len(CASES) >= 300
    assert len(CLI_CASES) >= 300
    assert len(CLAUDE_CASES) >= 300


def _fresh_run(root: Path) -> Any:
    return fsmem.open(root).run(fsmem.Scope.chat(), thread_id="attacker")


def check_answer(result: dict[str, Any], request: Any) -> None:
    assert isinstance(result, dict) and isinstance(result.get("ok"), bool), result
    assert isinstance(result.get("text"), str)
    json.dumps(result, ensure_ascii=False).encode("utf-8")  # valid text all the way out
    if not result["ok"]:
        assert result["error"]["code"] in TOOL_ERROR_CODES, result
        assert result["text"].startswith(f"Error [{result['error']['code']}]")
    assert "needle-outside" not in json.dumps(result), "read outside the root"


def _command(request: Any) -> str | None:
    return request.get("command") if isinstance(request, dict) else None


def expect_unchanged(world: tuple[Path, Path], before: dict, ok: bool, request: Any) -> None:
    after = snapshot(*world)
    if not ok or _command(request) in READ_ONLY:
        assert changes(before, after) == [], (request if len(repr(request)) < 300 else _command(request))


# ---- face 1: the tool's JSON, through `fsmem tool` ---------------------------------------------


def _tool_call(root: Path, raw: str | bytes) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(main, ["tool", "--root", str(root), "--thread", "attacker"], input=raw)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.output[:500]
    return result.exit_code, json.loads(lines[0])


def readme_exit_code(result: dict[str, Any]) -> int:
    """The README's table: 0 done, 3 a conflict (the file changed or was not read), 1 any other refusal."""
    if result["ok"]:
        return 0
    return 3 if result["error"]["code"] in ("CONFLICT", "NOT_READ") else 1


@pytest.mark.parametrize("request_", CASES)
def test_tool_json(world: tuple[Path, Path], request_: Any) -> None:
    if _command(request_) == "search":  # whatever earlier cases left for the index to pick up, it picks up now
        assert _tool_call(world[0], json.dumps({"command": "search", "query": "needle"}))[1]["ok"]
    before = snapshot(*world)
    code, result = _tool_call(world[0], json.dumps(request_))
    check_answer(result, request_)
    assert code == readme_exit_code(result)
    expect_unchanged(world, before, result["ok"], request_)


RAW_STDIN = {
    "not-json": "read MEMORY.md", "empty": "", "array": "[]", "number": "42", "null": "null", "string": '"read"',
    "trailing-garbage": '{"command": "read", "path": "/"} x', "nan": '{"command": "read", "path": NaN}',
    "duplicate-keys": '{"command": "read", "command": "delete", "path": "topic.md"}',
    "bom": '\ufeff{"command": "read", "path": "/"}',
    "lone-surrogate-escape": '{"command": "read", "path": "\\ud800.md"}',
    "huge-number": '{"command": "read", "path": "topic.md", "start_line": 1e999}',
}
RAW_STDIN_DEEP = {
    "deeply-nested": "[" * 100_000 + "]" * 100_000,
    "deeply-nested-object": '{"a":' * 50_000 + "1" + "}" * 50_000,
    "invalid-utf8": b'{"command": "read", "path": "\xff\xfe.md"}',
}


@pytest.mark.parametrize("raw", list(RAW_STDIN.values()), ids=list(RAW_STDIN))
def test_tool_raw_stdin(world: tuple[Path, Path], raw: str) -> None:
    before = snapshot(*world)
    code, result = _tool_call(world[0], raw)
    check_answer(result, raw)
    assert code == readme_exit_code(result)
    expect_unchanged(world, before, result["ok"], {"command": "read"})


@pytest.mark.parametrize("raw", list(RAW_STDIN_DEEP.values()), ids=list(RAW_STDIN_DEEP))
def test_tool_raw_stdin_deep_or_not_utf8(world: tuple[Path, Path], raw: str | bytes) -> None:
    before = snapshot(*world)
    code, result = _tool_call(world[0], raw)
    check_answer(result, raw)
    assert code == 1 and not result["ok"]
    expect_unchanged(world, before, False, {"command": "read"})


# ---- face 2: the CLI ---------------------------------------------------------------------------


def cli_args(request: dict[str, Any]) -> tuple[list[str], str | None] | None:
    """The shell form of a tool request, or None when the shell cannot express it (a non-text field)."""
    command = request.get("command")
    fields = {k: v for k, v in request.items() if k != "command"}
    if any(not isinstance(v, (str, int, bool)) or isinstance(v, bool) and k != "regex" for k, v in fields.items()):
        return None
    if command == "read":
        args = ["read", str(fields.get("path", "/"))]
        for name, flag in (("start_line", "--start"), ("end_line", "--end")):
            if name in fields:
                args += [flag, str(fields[name])]
        return args, None
    if command == "write" and "content" in fields:
        if any(0xD800 <= ord(c) <= 0xDFFF for c in str(fields["content"])):
            return None  # stdin carries bytes: a lone surrogate cannot be sent (invalid UTF-8 is its own case)
        return ["write", str(fields["path"])], str(fields["content"])
    if command == "write" and "old_text" in fields:
        return ["write", str(fields["path"]), "--old", str(fields["old_text"]), "--new",
                str(fields.get("new_text", ""))], None
    if command == "rename" and "new_path" in fields:
        return ["rename", str(fields["path"]), str(fields["new_path"])], None
    if command == "delete":
        return ["delete", str(fields["path"])], None
    if command == "search":
        args = ["search", str(fields.get("query", ""))]
        if fields.get("regex") is True:
            args.append("--regex")
        for name in ("since", "include", "exclude", "limit"):
            if name in fields:
                args += [f"--{name}", str(fields[name])]
        return args, None
    return None


def _cli_cases() -> list[Any]:
    cases = []
    for param in CASES:
        request = param.values[0]
        shell = cli_args(request) if isinstance(request, dict) else None
        if shell is not None:
            cases.append(pytest.param(*shell, request, id=param.id, marks=param.marks))
    extra = {"fsmem-dir-versions": (["versions", ".fsmem/log.jsonl"], None),
             "fifo-versions": (["versions", "fifo.md"], None), "device-versions": (["versions", "zero.md"], None),
             "revert-fifo": (["revert", "fifo.md"], None), "revert-dotdot": (["revert", "../x.md"], None),
             "log-nul": (["log", "--path", "a\x00"], None), "agents-delete-empty": (["agents", "delete", ""], None),
             "agents-delete-dotdot": (["agents", "delete", ".."], None),
             "routines-delete-missing": (["routines", "delete", "nope"], None),
             "search-nul": (["search", "\x00"], None), "search-since-far": (["search", "x", "--since", "9999-12-31"], None),
             "read-start-text": (["read", "topic.md", "--start", "one"], None)}
    cases += [pytest.param(args, stdin, {"command": "cli"}, id=name) for name, (args, stdin) in extra.items()]
    return cases


CLI_CASES = _cli_cases()


@pytest.mark.parametrize(("args", "stdin", "request_"), CLI_CASES)
def test_cli(world: tuple[Path, Path], args: list[str], stdin: str | None, request_: dict[str, Any]) -> None:
    if args[0] == "search":  # whatever earlier cases left for the index to pick up, it picks up now
        assert CliRunner().invoke(main, ["search", "needle", "--root", str(world[0])]).exit_code == 0
    before = snapshot(*world)
    result = CliRunner().invoke(main, [*args, "--root", str(world[0])], input=stdin)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in (0, 1, 2, 3), result.output
    # a search that finds nothing exits 1 as grep does: an answer, not a refusal
    answered = result.exit_code == 0 or (args[0] == "search" and result.output.startswith("No matches"))
    if answered:
        assert "Error" not in result.stderr
    else:
        assert result.output.startswith("Error: [") or "Usage:" in result.output, result.output[:300]
    assert "needle-outside" not in result.output
    expect_unchanged(world, before, answered, request_)


# ---- face 3: MCP, through the official client ---------------------------------------------------


def test_mcp(world: tuple[Path, Path]) -> None:
    pytest.importorskip("mcp")
    from mcp import Client
    from mcp.shared.exceptions import MCPError
    from mcp.types import INTERNAL_ERROR

    from fsmem.mcp_server import build_server

    server = build_server(fsmem.open(world[0]), fsmem.Scope.chat())
    requests = [(p.id, p.values[0]) for p in CASES]
    assert len(requests) >= 300
    failures: list[str] = []

    async def script() -> None:
        async with Client(server) as client:
            for case_id, request in requests:
                if _command(request) == "search":  # the index picks up what earlier cases left, first
                    await client.call_tool("memory", {"command": "search", "query": "needle"})
                before = snapshot(*world)
                try:
                    result = await client.call_tool("memory", request)
                except MCPError as error:  # a JSON-RPC refusal is coded too; an internal error is an exception
                    if error.error.code == INTERNAL_ERROR:
                        failures.append(f"{case_id}: internal error: {error.error.message}")
                        continue
                    ok = False
                except Exception as error:  # noqa: BLE001 - the point: nothing else may come out
                    failures.append(f"{case_id}: {type(error).__name__}: {error}"[:300])
                    continue
                else:
                    ok = not result.is_error
                    if result.is_error:
                        code = (result.structured_content or {}).get("error", {}).get("code")
                        if code not in TOOL_ERROR_CODES:
                            failures.append(f"{case_id}: refusal without a code: {result.content}"[:300])
                if changes(before, snapshot(*world)) and (not ok or _command(request) in READ_ONLY):
                    failures.append(f"{case_id}: the root changed")

    anyio.run(script)
    assert failures == []


# ---- face 4: the Claude adapter (memory_20250818 commands) --------------------------------------

MEMORIES = "/memories"


def claude_commands(name: str, path: str) -> dict[str, dict[str, Any]]:
    shown = f"{MEMORIES}/{path}"
    return {
        "view": {"command": "view", "path": shown},
        "view-range": {"command": "view", "path": shown, "view_range": [1, 2]},
        "create": {"command": "create", "path": shown, "file_text": "# hostile\n"},
        "str_replace": {"command": "str_replace", "path": shown, "old_str": "Outside", "new_str": "Owned"},
        "insert": {"command": "insert", "path": shown, "insert_line": 0, "insert_text": "owned\n"},
        "delete": {"command": "delete", "path": shown},
        "rename-from": {"command": "rename", "old_path": shown, "new_path": f"{MEMORIES}/moved.md"},
        "rename-to": {"command": "rename", "old_path": f"{MEMORIES}/topic.md", "new_path": shown},
    }


CLAUDE_OTHER = {
    "no-prefix": {"command": "view", "path": "topic.md"}, "other-prefix": {"command": "view", "path": "/etc/passwd"},
    "prefix-dotdot": {"command": "view", "path": "/memories/../etc/passwd"},
    "prefix-only-dot": {"command": "view", "path": "/memories/."},
    "prefix-look-alike": {"command": "view", "path": "/memoriesx/topic.md"},
    "path-number": {"command": "view", "path": 5}, "path-missing": {"command": "view"},
    "unknown-command": {"command": "format", "path": "/memories"}, "no-command": {"path": "/memories"},
    "view-range-text": {"command": "view", "path": "/memories/topic.md", "view_range": "1-2"},
    "view-range-backwards": {"command": "view", "path": "/memories/topic.md", "view_range": [5, 1]},
    "view-range-huge": {"command": "view", "path": "/memories/topic.md", "view_range": [1, 10**30]},
    "view-range-zero": {"command": "view", "path": "/memories/topic.md", "view_range": [0, 0]},
    "create-no-text": {"command": "create", "path": "/memories/n.md"},
    "create-text-number": {"command": "create", "path": "/memories/n.md", "file_text": 5},
    "create-secret": {"command": "create", "path": "/memories/n.md", "file_text": "password: hunter2"},
    "create-huge": {"command": "create", "path": "/memories/n.md", "file_text": "x" * (2 * 1024 * 1024)},
    "create-surrogate": {"command": "create", "path": "/memories/n.md", "file_text": "\ud800"},
    "create-existing": {"command": "create", "path": "/memories/topic.md", "file_text": "x"},
    "create-not-md": {"command": "create", "path": "/memories/run.sh", "file_text": "x"},
    "replace-missing-old": {"command": "str_replace", "path": "/memories/topic.md", "old_str": "zzz", "new_str": "y"},
    "replace-secret": {"command": "str_replace", "path": "/memories/topic.md", "old_str": "Topic",
                       "new_str": "token: abc123secret"},
    "insert-negative": {"command": "insert", "path": "/memories/topic.md", "insert_line": -3, "insert_text": "x"},
    "insert-huge-line": {"command": "insert", "path": "/memories/topic.md", "insert_line": 10**9, "insert_text": "x"},
    "insert-line-text": {"command": "insert", "path": "/memories/topic.md", "insert_line": "2", "insert_text": "x"},
    "delete-root": {"command": "delete", "path": "/memories"}, "rename-root": {"command": "rename",
                                                                               "old_path": "/memories", "new_path": "/memories/x"},
    "rename-no-new": {"command": "rename", "old_path": "/memories/topic.md"},
}


def _claude_cases() -> list[Any]:
    cases = []
    for name, path in {**HOSTILE_PATHS, **LONG_NAMES}.items():
        for op, command in claude_commands(name, path).items():
            if name in LONG_NAMES and op == "rename-to":
                continue  # a fine name to rename to: not hostile
            cases.append(pytest.param(command, id=f"{name}-{op}"))
    cases += [pytest.param(command, id=name) for name, command in CLAUDE_OTHER.items()]
    return cases


CLAUDE_CASES = _claude_cases()


@pytest.mark.parametrize("command", CLAUDE_CASES)
def test_claude_adapter(world: tuple[Path, Path], command: dict[str, Any]) -> None:
    pytest.importorskip("anthropic")
    from anthropic.lib.tools import ToolError

    from fsmem.claude_memory import FsmemMemoryTool

    tool = FsmemMemoryTool(fsmem.open(world[0]), thread_id="attacker")
    before = snapshot(*world)
    try:
        answer = tool.call(command)
        ok = True
    except ToolError as error:  # the SDK's refusal: its text is what the model reads
        assert isinstance(error.content, str) and error.content
        answer, ok = error.content, False
    assert "needle-outside" not in str(answer)
    read_only = command.get("command") == "view"
    after = snapshot(*world)
    if not ok or read_only:
        assert changes(before, after) == []


# ---- Hypothesis: paths built from hostile pieces ---------------------------------------------------

PIECES = ["..", ".", "", "a", "é", "e\u0301", ".fsmem", "lock", "link_dir", "fifo.md", "zero.md", "%2e", "\x00",
          "\\", "\u202e", "\u200b", "\ud800", "~", " ", "x.md", "MEMORY.md", "state", "docs", "up2", "\n", "C:"]
hostile_path = st.lists(st.sampled_from(PIECES), min_size=1, max_size=6).map("/".join) | st.text(max_size=40)
ops = st.sampled_from(["read", "write", "replace", "rename-from", "rename-to", "delete"])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=hostile_path, op=ops)
def test_hypothesis_paths_through_the_tool(world: tuple[Path, Path], path: str, op: str) -> None:
    # Runs last: a request that turns out fine (a plain new name) is carried out and may change the
    # world for the examples after it; each refusal must still change nothing.
    request = path_ops(path)[op]
    before = snapshot(*world)
    result = _fresh_run(world[0]).call(request)
    check_answer(result, request)
    expect_unchanged(world, before, result["ok"], request)
