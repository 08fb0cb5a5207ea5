"""The shell a person expects (issue 13): paths from the current folder, --root anywhere, the person's
own edits, one output contract (--json, errors, exit codes), ids by prefix, colour only on a terminal."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import fsmem
from fsmem.cli import exit_code_for, main
from fsmem._core.versions import version_of
from fsmem._errors import (
    BadFact,
    BadPath,
    Busy,
    Conflict,
    FactSensitive,
    IndexError_,
    ModelError,
    NotFound,
    NotRead,
    RootNotFound,
    ScopeError,
    SetupError,
)
from tests.conftest import REPO, invoke, run_fsmem, write


def cli(*args: str, input: str | None = None, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, list(args), input=input, env=env)


# ---- paths and --root ------------------------------------------------------------------------


def test_paths_are_taken_from_the_current_folder_inside_the_root(root):
    write(root, "notes/ops/deploy.md", "deploy on fridays\n")
    here = root / "notes" / "ops"
    read = run_fsmem("read", "deploy.md", cwd=here)
    assert read.returncode == 0, read.stderr
    assert read.stdout.startswith("notes/ops/deploy.md · version ")
    listing = run_fsmem("read", cwd=here)  # no path: the folder you are in
    assert listing.stdout.startswith("notes/ops/\n  deploy.md")
    up = run_fsmem("read", "../../MEMORY.md", cwd=here)
    assert up.returncode == 0 and up.stdout.startswith("MEMORY.md · version ")
    absolute = run_fsmem("read", str(here / "deploy.md"), "--root", str(root), cwd=REPO)
    assert absolute.returncode == 0 and absolute.stdout.startswith("notes/ops/deploy.md"), absolute.stderr
    found = run_fsmem("read", str(here / "deploy.md"), cwd=Path("/"))  # the root found from the path itself
    assert found.returncode == 0 and found.stdout.startswith("notes/ops/deploy.md"), found.stderr
    tool_form = run_fsmem("read", "/notes/ops/deploy.md", cwd=here)  # a leading / is the root
    assert tool_form.returncode == 0 and tool_form.stdout.startswith("notes/ops/deploy.md")
    out = run_fsmem("read", "../../../elsewhere.md", cwd=here)
    assert out.returncode == 1
    assert out.stderr == (f"Error: [BAD_PATH] '../../../elsewhere.md' from {here} leads outside the root {root}; "
                          "name a file inside it\n")
    written = run_fsmem("write", "new.md", input="hello\n", cwd=here)
    assert written.returncode == 0, written.stderr
    assert (here / "new.md").read_text() == "hello\n"


def test_root_is_accepted_before_or_after_the_command(root):
    write(root, "a.md", "x\n")
    before = cli("--root", str(root), "read", "a.md")
    after = cli("read", "a.md", "--root", str(root))
    assert before.exit_code == after.exit_code == 0 and before.output == after.output
    assert before.output.startswith("a.md · version ")
    nested = cli("--root", str(root), "agents", "list")
    assert nested.exit_code == 0 and nested.output == "No agents. `fsmem agents create ID NAME` makes one.\n"
    assert json.loads(cli("--json", "--root", str(root), "read", "a.md").output)["ok"] is True
    made = cli("--root", str(root.parent / "other"), "init", "--json")
    assert json.loads(made.output) == {"root": str(root.parent / "other"), "made": True}


# ---- the person's own edits ------------------------------------------------------------------


def test_old_new_replacement_needs_no_expect(root):
    write(root, "a.md", "deploy on fridays\nnever on mondays\n")
    done = invoke(root, "write", "a.md", "--old", "fridays", "--new", "tuesdays")
    assert done.exit_code == 0, done.output
    assert (root / "a.md").read_text() == "deploy on tuesdays\nnever on mondays\n"
    twice = invoke(root, "write", "a.md", "--old", "on", "--new", "at")
    assert twice.exit_code == 1 and twice.output.startswith("Error: [NOT_UNIQUE]")
    stale = invoke(root, "write", "a.md", "--old", "mondays", "--new", "x", "--expect", version_of(b"old\n"))
    assert stale.exit_code == 3 and stale.output.startswith("Error: [CONFLICT]")
    whole = invoke(root, "write", "a.md", input="all new\n")  # a whole overwrite still needs --expect
    current = version_of(b"deploy on tuesdays\nnever on mondays\n")
    assert whole.exit_code == 3 and f"pass --expect {current}, or change it with `fsmem edit a.md`" in whole.output
    assert (root / "a.md").read_text() == "deploy on tuesdays\nnever on mondays\n"


def _editor(tmp_path: Path, body: str) -> str:
    script = tmp_path / "editor.sh"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return str(script)


def test_edit_opens_the_editor_and_saves_with_the_version_check(root, tmp_path):
    write(root, "a.md", "one\n<!-- keep -->\n")
    editor = _editor(tmp_path, 'printf "two\\n" >> "$1"\n')
    done = CliRunner().invoke(main, ["edit", "a.md", "--root", str(root)], env={"EDITOR": editor, "VISUAL": None})
    assert done.exit_code == 0, done.output
    saved = b"one\n<!-- keep -->\ntwo\n"
    assert done.output == f"Wrote a.md (version {version_of(saved)}, 3 lines). Around the change:\n"
    assert (root / "a.md").read_text() == "one\n<!-- keep -->\ntwo\n"  # the marker line saved as text
    visual = CliRunner().invoke(main, ["edit", "b.md", "--root", str(root)],
                                env={"VISUAL": _editor(tmp_path, 'printf "new\\n" > "$1"\n'), "EDITOR": "false"})
    assert visual.exit_code == 0 and (root / "b.md").read_text() == "new\n"
    unchanged = CliRunner().invoke(main, ["edit", "a.md", "--root", str(root)],
                                   env={"EDITOR": _editor(tmp_path, "exit 0\n"), "VISUAL": None})
    assert unchanged.exit_code == 0 and unchanged.output == "No changes to a.md.\n"


def test_edit_offers_a_retry_when_the_file_changed_meanwhile(root, tmp_path):
    write(root, "a.md", "one\n")
    flag = tmp_path / "first"
    flag.write_text("")
    # The first time, someone else saves the file while the person is editing; the second, the
    # person edits again (their text is what the editor is reopened on).
    editor = _editor(tmp_path, f'''if [ -e "{flag}" ]; then rm "{flag}"; printf "theirs\\n" > "{root / 'a.md'}"; fi
printf "mine\\n" >> "$1"
''')
    done = CliRunner().invoke(main, ["edit", "a.md", "--root", str(root)], input="y\n",
                              env={"EDITOR": editor, "VISUAL": None})
    assert done.exit_code == 0, done.output
    assert "Error: [CONFLICT] a.md changed since you opened it:" in done.stderr
    assert "-one\n+theirs" in done.stderr
    assert (root / "a.md").read_text() == "one\nmine\nmine\n"
    assert fsmem.open(root).versions("a.md")[0].version == version_of(b"theirs\n")  # theirs is kept

    flag.write_text("")
    write(root, "a.md", "one\n")
    declined = CliRunner().invoke(main, ["edit", "a.md", "--root", str(root)], input="n\n",
                                  env={"EDITOR": editor, "VISUAL": None})
    assert declined.exit_code == 3
    kept = declined.stderr.rsplit("your text is kept in ", 1)[1].strip()
    assert Path(kept).read_text() == "one\nmine\n" and (root / "a.md").read_text() == "theirs\n"
    os.unlink(kept)


def _on_a_terminal(args: list[str], cwd: Path, env: dict[str, str], send: bytes = b"") -> tuple[str, str, int]:
    """Run fsmem with stdin and stdout on a pseudo-terminal; stderr on a pipe. Returns (tty output, stderr, code)."""
    leader, follower = pty.openpty()
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_") and k != "NO_COLOR"}
    full_env.update(PYTHONPATH=str(REPO), **env)
    proc = subprocess.Popen([sys.executable, "-m", "fsmem", *args], stdin=follower, stdout=follower,
                            stderr=subprocess.PIPE, cwd=cwd, env=full_env)
    os.close(follower)
    if send:
        os.write(leader, send)
    chunks = []
    while True:
        ready, _, _ = select.select([leader], [], [], 30)
        if not ready:
            break
        try:
            data = os.read(leader, 4096)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    code = proc.wait(timeout=30)
    os.close(leader)
    return b"".join(chunks).decode(errors="replace"), stderr, code


def test_write_at_a_terminal_says_it_reads_stdin(root):
    shown, stderr, code = _on_a_terminal(["write", "t.md", "--root", str(root)], root, {},
                                         send=b"typed at the terminal\n\x04")
    assert code == 0, (shown, stderr)
    assert stderr.startswith("Reading the new content of t.md from stdin; end with Ctrl-D")
    assert (root / "t.md").read_text() == "typed at the terminal\n"
    piped = run_fsmem("write", "u.md", "--root", str(root), input="piped\n")
    assert piped.returncode == 0 and piped.stderr == ""


# ---- one output contract ---------------------------------------------------------------------


def test_errors_under_json_are_json_on_stdout(root):
    for args in (["read", "missing.md"], ["agents", "delete", "nobody"], ["proposals", "approve", "nope"],
                 ["facts", "show", "nope"], ["versions", "../x"]):
        done = CliRunner().invoke(main, [*args, "--json", "--root", str(root)])
        assert done.exit_code == 1, (args, done.output)
        data = json.loads(done.stdout)
        assert data["ok"] is False and data["error"]["code"] in {"NOT_FOUND", "BAD_PATH"}, args
        assert done.stderr == ""
    usage = CliRunner().invoke(main, ["--json", "--root", str(root), "read", "--bogus"])
    assert usage.exit_code == 2 and json.loads(usage.stdout)["error"]["code"] == "USAGE"
    no_root = run_fsmem("--json", "status", cwd=Path("/"))
    assert no_root.returncode == 2 and json.loads(no_root.stdout)["error"]["code"] == "NO_ROOT"


def test_every_command_that_prints_data_takes_json(root):
    from tests.journeys.test_docs import _commands

    quiet = {("mcp",), ("watch",), ("tool",), ("demo",), ("chat",)}  # JSON by nature, or a session
    missing = [" ".join(words) for words, command in _commands()
               if not isinstance(command, __import__("click").Group) and words not in quiet
               and not any(p.name == "as_json" for p in command.params)]
    assert missing == []


@pytest.mark.parametrize("error,code", [
    (Conflict("x"), 3), (NotRead("x"), 3), (BadPath("x"), 1), (NotFound("x"), 1), (Busy("x"), 1),
    (FactSensitive("x"), 1), (BadFact("x"), 1), (RootNotFound("x"), 2), (ScopeError("x"), 2),
    (ModelError("x"), 2), (IndexError_("x"), 2), (SetupError("x"), 2),
])
def test_exit_codes_follow_the_error_tree(error, code):
    assert exit_code_for(error) == code


def test_exit_codes_at_the_shell_are_the_readme_table(root, tmp_path):
    write(root, "a.md", "deploy\n")
    assert run_fsmem("search", "deploy", "--root", str(root)).returncode == 0
    nothing = run_fsmem("search", "zebra", "--root", str(root))
    assert nothing.returncode == 1 and nothing.stdout == "No matches for 'zebra'.\n"
    assert run_fsmem("search", "zebra", "--json", "--root", str(root)).returncode == 0
    assert run_fsmem("read", "../x", "--root", str(root)).returncode == 1
    assert run_fsmem("read", "/", "--root", str(tmp_path / "nowhere")).returncode == 2
    assert run_fsmem("write", "a.md", "--root", str(root), input="y\n").returncode == 3
    assert run_fsmem("read", "--bogus", "--root", str(root)).returncode == 2
    readme = (REPO / "README.md").read_text()
    for line in ("| 1 | refused", "| 2 | setup", "| 3 | conflict"):
        assert line in readme


@pytest.mark.parametrize("search", [("--regex", "--limit", "5000"), ("--limit", "500")], ids=["lines", "ranked"])
def test_a_reader_that_goes_away_is_taken_quietly(root, search):
    """``fsmem search … | head -1``: the output is far more than a pipe holds, the reader takes one
    line and closes, so the command's next write finds no reader. As click takes it: no ``Error:`` line,
    exit 1 (the served path, ``_print_and_exit``, does the same)."""
    for n in range(500):
        write(root, f"notes/n{n:03d}.md", f"# Quokka {n}\n" + "".join(f"quokka line {i} of note {n}\n" for i in range(10)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    env.update(PYTHONPATH=str(REPO), FSMEM_MEANING="off")
    command = [sys.executable, "-m", "fsmem", "search", *search, "quokka", "--root", str(root)]
    whole = subprocess.run(command, capture_output=True, env=env, timeout=120)
    assert whole.returncode == 0 and len(whole.stdout) > 100_000, whole.stderr  # more than a pipe holds (64 KB)
    reader = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert reader.stdout is not None and reader.stderr is not None
    assert reader.stdout.readline().startswith(b"notes/n")
    reader.stdout.close()
    stderr = reader.stderr.read()
    assert reader.wait(timeout=120) == 1
    assert stderr == b""


def test_delete_prints_what_it_promises(root):
    write(root, "a.md", "one\ntwo\n")
    write(root, "folder/x.md", "x\n")
    write(root, "folder/y.md", "y\n")
    done = invoke(root, "delete", "a.md", "--expect", version_of(b"one\ntwo\n"))
    assert done.output == ("Deleted a.md (2 lines).\n"
                           "Its content is kept: `fsmem versions a.md` lists it, `fsmem revert a.md` puts it back.\n")
    assert invoke(root, "revert", "a.md").exit_code == 0 and (root / "a.md").read_text() == "one\ntwo\n"
    folder = invoke(root, "delete", "folder")
    assert folder.output == ("Deleted the folder folder and its 2 files:\n  folder/x.md\n  folder/y.md\n"
                             "Each is kept: `fsmem revert PATH` puts one back.\n")
    write(root, "MEMORY.md", "rules\n")
    top = invoke(root, "delete", "MEMORY.md", "--expect", version_of(b"rules\n"))
    assert top.output.startswith("Emptied MEMORY.md (a level's top file stays; it is now version ")
    as_json = json.loads(invoke(root, "delete", "a.md", "--json", "--expect", version_of(b"one\ntwo\n")).output)
    assert as_json["held"] == {"a.md": "one\ntwo\n"}


def _proposal(root: Path) -> str:
    memory = fsmem.open(root)
    write(root, "MEMORY.md", "# Rules\n- one\n")
    run = memory.run(thread_id="reviewer", review=True)
    run.call({"command": "read", "path": "MEMORY.md"})
    return run.call({"command": "write", "path": "MEMORY.md", "old_text": "- one", "new_text": "- 1"})["proposal"]


def test_proposals_by_prefix_with_json_and_approve_prints_the_change(root):
    first = _proposal(root)
    listed = json.loads(invoke(root, "proposals", "--json").output)
    assert [p["id"] for p in listed] == [first]
    shown = json.loads(invoke(root, "proposals", "show", first[:17], "--json").output)
    assert shown["id"] == first and shown["stale"] == []
    approved = invoke(root, "proposals", "approve", first[:17])
    assert approved.exit_code == 0, approved.output
    lines = approved.output.splitlines()
    assert lines[0] == f"Applied {first}: change MEMORY.md."
    assert lines[1].startswith("Wrote MEMORY.md (version ") and "     2\t- 1" in approved.output
    write(root, "MEMORY.md", "# Rules\n- one\n")
    a, b = _proposal(root), _proposal(root)
    common = os.path.commonprefix([a, b])
    ambiguous = invoke(root, "proposals", "discard", common)
    assert ambiguous.exit_code == 1
    assert ambiguous.output.startswith(f"Error: [NOT_UNIQUE] proposal id '{common}' is the start of 2 ids: ")
    assert a in ambiguous.output and b in ambiguous.output
    discarded = json.loads(invoke(root, "proposals", "discard", a, "--json").output)
    assert discarded == {"id": a, "summary": "change MEMORY.md", "discarded": True}


def test_facts_by_prefix(root):
    kept = json.loads(invoke(root, "facts", "keep", "Ana", "role", "Ana leads data.", "--json").output)
    fact_id = kept["fact"]["id"]
    shown = invoke(root, "facts", "show", fact_id[:-3])
    assert shown.exit_code == 0 and shown.output.startswith("Ana / role: Ana leads data.")
    invoke(root, "facts", "keep", "Bo", "role", "Bo writes.")
    ambiguous = invoke(root, "facts", "forget", fact_id[:4])
    assert ambiguous.exit_code == 1 and ambiguous.output.startswith(
        f"Error: [NOT_UNIQUE] fact id '{fact_id[:4]}' is the start of 2 ids: ")
    assert invoke(root, "facts", "forget", fact_id[:-2]).exit_code == 0
    assert invoke(root, "facts", "show", fact_id).exit_code == 1


def test_regex_search_says_how_many_more_it_did_not_show(root):
    write(root, "a.md", "".join(f"deploy {n}\n" for n in range(7)))
    shown = invoke(root, "search", "--regex", "dep.oy", "--limit", "3")
    assert shown.output.splitlines() == ["a.md:1: deploy 0", "a.md:2: deploy 1", "a.md:3: deploy 2",
                                         "… and 4 more matching lines not shown (raise --limit to see them)."]
    assert "more" not in invoke(root, "search", "--regex", "dep.oy", "--limit", "7").output


def test_versions_and_log_are_aligned_with_one_time_format(root):
    invoke(root, "write", "a.md", input="one\n")
    invoke(root, "write", "a.md", "--old", "one", "--new", "two")
    invoke(root, "write", "b-longer-name.md", input="x" * 3000)
    listing = invoke(root, "versions", "a.md").output.splitlines()
    assert len(listing) == 1 and listing[0].endswith("4 B  replaced by write")
    assert listing[0].split("  ")[1].endswith(" UTC")
    log = invoke(root, "log").output.splitlines()
    starts = {line.index("b-longer") if "b-longer" in line else line.index("a.md") for line in log}
    assert len(starts) == 1  # the path column lines up
    assert all(line[:20].endswith("UTC") for line in log)


def test_colour_only_on_a_terminal_and_never_under_no_color(root):
    write(root, "a.md", "# Deploy\nwe deploy on fridays\n")
    shown, stderr, code = _on_a_terminal(["search", "deploy", "--root", str(root)], root, {})
    assert code == 0, stderr
    assert "\x1b[" in shown and "\x1b[33m\x1b[1mdeploy\x1b[0m" in shown.replace("\x1b[1m\x1b[33m", "\x1b[33m\x1b[1m")
    plain, _, _ = _on_a_terminal(["search", "deploy", "--root", str(root)], root, {"NO_COLOR": "1"})
    assert "\x1b[" not in plain and "deploy" in plain
    piped = run_fsmem("search", "deploy", "--root", str(root))
    assert "\x1b[" not in piped.stdout and piped.stdout.startswith("a.md")
    proposal = _proposal(root)
    diff, _, _ = _on_a_terminal(["proposals", "show", proposal, "--root", str(root)], root, {})
    assert "\x1b[32m+- 1\x1b[0m" in diff and "\x1b[31m-- one\x1b[0m" in diff
    regex, _, _ = _on_a_terminal(["search", "--regex", "fri.ays", "--root", str(root)], root, {})
    assert "\x1b[33m\x1b[1mfridays\x1b[0m" in regex.replace("\x1b[1m\x1b[33m", "\x1b[33m\x1b[1m")


# ---- status and agents ----------------------------------------------------------------------


def test_status_is_the_page_a_person_opens_first(root):
    memory = fsmem.open(root)
    memory.create_agent("3f9a1c2e-77", "SEO")
    memory.create_routine("3f9a1c2e-77", "9b7d4e10", "Meta tags")
    memory.facts.keep("Ana", "role", "Ana leads data.")
    _proposal(root)
    text = invoke(root, "status")
    assert text.exit_code == 0, text.output
    lines = text.output.splitlines()
    assert lines[0] == f"root:      {root}"
    assert lines[2] == "facts:     1 holding, 0 replaced"
    assert lines[3].startswith("index:     ") and "fresh" in lines[3]
    assert lines[4] == "watcher:   not running (`fsmem watch` starts one)"
    assert "  SEO                  3f9a1c2e-77  agents/seo-3f9a1c2e" in lines
    assert "    Meta tags          9b7d4e10  agents/seo-3f9a1c2e/routines/meta-tags-9b7d4e10" in lines
    assert any(line.startswith("proposals: 1") for line in lines)
    assert "last changes:" in lines
    data = json.loads(invoke(root, "status", "--json").output)
    assert data["root"] == str(root) and data["facts"] == {"current": 1, "replaced": 0}
    assert data["index"]["stale"] == 0 and data["agents"][0]["routines"][0]["name"] == "Meta tags"
    assert len(data["proposals"]) == 1 and data["last_changes"][0]["command"] == "facts.keep"


def test_agents_list_shows_names_ids_and_folders(root):
    invoke(root, "agents", "create", "3f9a1c2e-77", "SEO")
    invoke(root, "routines", "create", "3f9a1c2e-77", "9b7d4e10", "Meta tags")
    created = json.loads(invoke(root, "agents", "create", "aa11bb22", "Writer", "--json").output)
    assert created == {"id": "aa11bb22", "name": "Writer", "folder": "agents/writer-aa11bb22"}
    assert invoke(root, "agents", "create", "aa11bb22", "Writer").exit_code == 1  # EXISTS
    again = invoke(root, "agents", "create", "aa11bb22", "Writer", "--exist-ok")
    assert again.exit_code == 0 and again.output == "agents/writer-aa11bb22\n"
    routine = invoke(root, "routines", "create", "3f9a1c2e-77", "9b7d4e10", "Meta tags", "--exist-ok")
    assert routine.output == "agents/seo-3f9a1c2e/routines/meta-tags-9b7d4e10\n"
    assert invoke(root, "agents", "list").output == (
        "SEO          3f9a1c2e-77  agents/seo-3f9a1c2e\n"
        "  Meta tags  9b7d4e10     agents/seo-3f9a1c2e/routines/meta-tags-9b7d4e10\n"
        "Writer       aa11bb22     agents/writer-aa11bb22\n")


def test_an_unsupported_system_is_refused_plainly_at_open(root, monkeypatch):
    import fsmem._env.system

    assert "fsync of a folder" in fsmem._env.system.missing_features(os_name="nt")[0]
    monkeypatch.delattr(os, "O_NOFOLLOW")
    try:
        fsmem.open(root)
    except fsmem._errors.Unsupported as error:
        assert error.message.startswith(f"fsmem runs on Linux and macOS; this system ({sys.platform}) lacks "
                                        "opening a file without following symlinks (O_NOFOLLOW)")
        assert error.message.endswith("Use fsmem from Linux, macOS or WSL")
    else:
        raise AssertionError("fsmem.open went on without what it relies on")
    shown = invoke(root, "read", "/")
    assert shown.exit_code == 2 and shown.output.startswith("Error: [UNSUPPORTED] fsmem runs on Linux and macOS")
    monkeypatch.undo()
    assert fsmem._env.system.missing_features() == []  # here, on Linux or macOS


def test_completion_script_is_what_the_readme_says(root):
    done = subprocess.run([sys.executable, "-m", "fsmem"], env={**os.environ, "_FSMEM_COMPLETE": "bash_source",
                                                                "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=60, check=False)
    assert "complete " in done.stdout and "_fsmem_completion" in done.stdout
    assert '_FSMEM_COMPLETE=bash_source fsmem' in (REPO / "README.md").read_text()


def test_review_under_json_prints_one_document_even_when_the_model_fails(root, tmp_path):
    from tests.chat_server import ChatServer, Reply

    conversation = tmp_path / "chat.json"
    conversation.write_text(json.dumps([{"role": "user", "content": "We deploy on Tuesdays."}]))
    from fsmem._llm.model import tool_call

    add = {"command": "write", "path": "MEMORY.md", "content": "- Deploys happen on Tuesdays.\n"}
    with ChatServer([Reply(tool_calls=[tool_call("memory", add)]), Reply(status=500, raw="down")]) as server:
        done = run_fsmem("review", "--from", str(conversation), "--json", "--root", str(root),
                         env={"FSMEM_MODEL_URL": server.base_url, "FSMEM_MODEL": "m"})
    assert done.returncode == 2, done.stderr
    data = json.loads(done.stdout)  # one document, not a result followed by an error
    assert data["error"] and [a["path"] for a in data["applied"]] == ["MEMORY.md"]


def test_edit_refuses_what_is_not_a_file_and_speaks_json(root, tmp_path):
    write(root, "folder/a.md", "x\n")
    editor = _editor(tmp_path, 'printf "y\\n" >> "$1"\n')
    env = {"EDITOR": editor, "VISUAL": None}
    folder = CliRunner().invoke(main, ["edit", "folder", "--root", str(root)], env=env)
    assert folder.exit_code == 1 and folder.stderr == "Error: [BAD_REQUEST] folder is a folder; name a file in it to edit\n"
    bad = CliRunner().invoke(main, ["edit", ".fsmem/config.toml", "--root", str(root)], env=env)
    assert bad.exit_code == 1 and bad.stderr.startswith("Error: [BAD_PATH]")
    done = json.loads(CliRunner().invoke(main, ["edit", "folder/a.md", "--json", "--root", str(root)], env=env).stdout)
    assert done["ok"] is True and done["changed"] is True and done["version"] == version_of(b"x\ny\n")


def test_an_edit_that_is_refused_keeps_the_persons_text(root, tmp_path):
    write(root, "a.md", "one\n")
    editor = _editor(tmp_path, 'printf "password: hunter2-horse-battery\\n" >> "$1"\n')
    done = CliRunner().invoke(main, ["edit", "a.md", "--root", str(root)], env={"EDITOR": editor, "VISUAL": None})
    assert done.exit_code == 1 and done.stderr.startswith("Error: [SENSITIVE]")
    assert "hunter2" not in done.stderr
    kept = done.stderr.rsplit("Your text is kept in ", 1)[1].strip()
    assert Path(kept).read_text() == "one\npassword: hunter2-horse-battery\n"
    assert (root / "a.md").read_text() == "one\n"
    os.unlink(kept)


def test_an_edit_that_completes_a_key_on_a_kept_line_is_refused(root, tmp_path):
    head = "- deploy key sk-" + "proj-Zq8xW2"  # harmless alone; with the next line, a key cut in two
    write(root, "a.md", f"{head}\n- last\n")
    editor = _editor(tmp_path, "sed -i '1a mN4pL7" + "rT9v' \"$1\"\n")
    done = CliRunner().invoke(main, ["edit", "a.md", "--root", str(root)], env={"EDITOR": editor, "VISUAL": None})
    assert done.exit_code == 1 and done.stderr.startswith("Error: [SENSITIVE]"), done.output
    assert "rT9v" not in done.stderr
    kept = done.stderr.rsplit("Your text is kept in ", 1)[1].strip()
    assert Path(kept).read_text() == f"{head}\nmN4pL7rT9v\n- last\n"
    assert (root / "a.md").read_text() == f"{head}\n- last\n"
    os.unlink(kept)


def test_leaving_the_editor_unsaved_on_a_retry_keeps_the_text(root, tmp_path):
    write(root, "a.md", "one\n")
    flag = tmp_path / "first"
    flag.write_text("")
    editor = _editor(tmp_path, f'''if [ -e "{flag}" ]; then rm "{flag}"; printf "theirs\\n" > "{root / 'a.md'}"
printf "mine\\n" >> "$1"; fi
''')
    done = CliRunner().invoke(main, ["edit", "a.md", "--root", str(root)], input="y\n",
                              env={"EDITOR": editor, "VISUAL": None})
    assert done.exit_code == 3
    kept = done.stderr.rsplit("your text is kept in ", 1)[1].strip()
    assert Path(kept).read_text() == "one\nmine\n" and (root / "a.md").read_text() == "theirs\n"
    os.unlink(kept)


# ---- each face words its own advice (the shell never reads create=True or create_agent) ---------------


def test_the_shell_is_told_what_to_type_and_python_what_to_call(root, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    no_root = CliRunner().invoke(main, ["read", "MEMORY.md", "--root", str(plain)])
    assert no_root.exit_code == 2
    assert f"run `fsmem init {plain}` to make it" in no_root.output and "create=True" not in no_root.output
    with pytest.raises(fsmem.RootNotFound, match="create=True") as raised:
        fsmem.open(plain)
    assert "fsmem init" not in raised.value.message
    for scope, typed in (("agent:nobody", "`fsmem agents create nobody NAME`"),
                         ("routine:nobody/r-1", "`fsmem routines create nobody r-1 NAME`")):
        if scope.startswith("routine"):
            fsmem.open(root).create_agent("nobody", "Nobody")
        tool = CliRunner().invoke(main, ["tool", "--root", str(root), "--scope", scope],
                                  input=json.dumps({"command": "read", "path": "MEMORY.md"}))
        error = json.loads(tool.output)["error"]
        assert error["code"] == "BAD_SCOPE" and typed in error["message"], error
        assert "create_agent" not in error["message"] and "create_routine" not in error["message"]
    with pytest.raises(fsmem.ScopeError, match=r"memory\.create_agent"):
        fsmem.open(root).run(fsmem.Scope.agent("someone"))
