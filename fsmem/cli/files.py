"""``fsmem init | read | write | edit | rename | delete | tool | versions | revert | log``."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import click

from fsmem._errors import BadRequest, Conflict, Exists, NotRead, RequestError, from_code
from fsmem.cli import exit_code_for, for_the_shell
from fsmem.cli.options import (
    chosen_store,
    echo_json,
    expect_option,
    json_line,
    json_option,
    open_memory,
    open_root,
    root_option,
    shell_path,
    shell_scope,
)
from fsmem.cli.style import table


def _memory(root: str | None, near: str | None = None):
    """The memory of ``--root``, else of the root holding ``near`` (an absolute path typed), else here."""
    return open_root(root, near)


def _call(memory: Any, request: dict, as_json: bool, run: Any = None) -> dict:
    """One stateless tool call; refusals become FsmemErrors so the group prints one Error line."""
    return _shown((run or memory.run(thread_id="cli")).call(request), request, as_json)


def _shown(result: dict, request: dict, as_json: bool) -> dict:
    """A tool call's result for the shell: printed under --json; a refusal becomes an FsmemError."""
    if as_json:
        echo_json(result)
        if not result["ok"]:
            sys.exit(exit_code_for(from_code(**result["error"])))
        return result
    if not result["ok"]:
        error = result["error"]
        message = error["message"]
        if error["code"] == "NOT_READ" and error.get("path") and error.get("current_version"):
            message = _not_read_for_the_shell(error["path"], error["current_version"])
        elif error["code"] == "CONFLICT" and "path" in request:
            path = request["path"]
            message = message.rstrip(".") + (
                f". From the shell: `fsmem read {path}` shows its version; pass it "
                f"with --expect, or change it with `fsmem edit {path}`."
            )
        raise from_code(error["code"], message)
    return result


def _not_read_for_the_shell(path: str, version: str) -> str:
    """NOT_READ in the shell's words (the tool's names a field the shell does not have)."""
    return (
        f"{path} has content this run has not read (version {version}); nothing was changed. "
        f"`fsmem read {path}` shows it; when what you write takes it into account, pass --expect {version}, "
        f"or change it with `fsmem edit {path}` (or `fsmem write {path} --old TEXT --new TEXT`)."
    )


def _stdin_text() -> str:
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadRequest(f"stdin is not UTF-8 text (byte {error.start}); fsmem stores UTF-8 markdown") from error


def _with_expect(request: dict, expected_version: str | None) -> dict:
    return {**request, "expected_version": expected_version} if expected_version else request


@click.command()
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
@root_option
@json_option
def init(directory: Path | None, root: str | None, as_json: bool) -> None:
    """Make DIRECTORY (default: --root, else here) an fsmem root: .fsmem/ and an empty MEMORY.md.

    A folder of notes you already have becomes a root as it is: its files stay where they are and
    are searchable at once.
    """
    from fsmem._env.system import check_system
    from fsmem._store.folder.root import init_root

    check_system()
    url, project = chosen_store(folder_given=directory is not None or bool(root))
    if url is not None:
        memory = open_memory(None, watch=False, create=True)
        if as_json:
            echo_json({"store": memory.drive.label, "project": memory.name})
        else:
            click.echo(f"Ready: {memory.drive.label}")
        memory.close()
        return
    target = (directory or (Path(root).expanduser() if root else None) or Path.cwd()).resolve()
    existed = (target / ".fsmem").is_dir()
    init_root(target)
    if as_json:
        echo_json({"root": str(target), "made": not existed})
    else:
        click.echo(f"{'Already an fsmem root' if existed else 'Made an fsmem root'}: {target}")


@click.command()
@click.argument("path", required=False)
@click.option("--start", "start_line", type=int, help="First line to show.")
@click.option("--end", "end_line", type=int, help="Last line to show.")
@root_option
@json_option
def read(path: str | None, start_line: int | None, end_line: int | None, root: str | None, as_json: bool) -> None:
    """Show a file with numbered lines, or a folder as a tree (default: the folder you are in, or the root).

    PATH is taken from the current folder when you are inside the root; an absolute path inside a
    root works from anywhere; otherwise PATH is relative to the root.
    """
    request: dict[str, Any] = {"command": "read"}
    if start_line:
        request["start_line"] = start_line
    if end_line:
        request["end_line"] = end_line
    memory = _memory(root, path)
    result = _call(memory, {**request, "path": shell_path(path, memory.root)}, as_json)
    if not as_json:
        click.echo(result["text"])


@click.command()
@click.argument("path")
@click.option(
    "--file", "source", type=click.File("r", encoding="utf-8"), help="Read the content from FILE (default: stdin)."
)
@expect_option
@click.option("--old", "old_text", help="Replace this exact text (with --new) instead of writing the whole file.")
@click.option("--new", "new_text", help="The replacement for --old.")
@root_option
@json_option
def write(
    path: str,
    source,
    expected_version: str | None,
    old_text: str | None,
    new_text: str | None,
    root: str | None,
    as_json: bool,
) -> None:
    """Write PATH from stdin or --file (whole content, or parts between <!-- ... --> markers).

    Replacing a file that has content needs --expect VERSION (as `fsmem read` shows it), so nothing
    written since is lost. --old A --new B replaces one exact, unique text and needs no --expect: the
    text you name is what you saw.
    """
    memory = _memory(root, path)
    request: dict[str, Any] = {"command": "write", "path": shell_path(path, memory.root)}
    run = memory.run(thread_id="cli")
    if old_text is not None or new_text is not None:
        if old_text is None or new_text is None:
            raise BadRequest("--old and --new go together")
        request.update(old_text=old_text, new_text=new_text)
        if not expected_version:
            # The person names the exact text they replace: that is their read. The version seen now is
            # checked again under the lock, so a change landing in between is still a CONFLICT.
            run.call({"command": "read", "path": request["path"], "end_line": 1})
    elif source is not None:
        request["content"] = source.read()
    else:
        if sys.stdin.isatty():
            click.echo(
                f"Reading the new content of {request['path']} from stdin; end with Ctrl-D "
                "(Ctrl-C to cancel). To change it in your editor: fsmem edit PATH.",
                err=True,
            )
        request["content"] = _stdin_text()
    result = _call(memory, _with_expect(request, expected_version), as_json, run)
    if not as_json:
        click.echo(result["text"])


@click.command()
@click.argument("path")
@root_option
@json_option
def edit(path: str, root: str | None, as_json: bool) -> None:
    """Open PATH in your editor ($VISUAL, else $EDITOR, else a sensible default) and save it back.

    The save is checked against the version you opened: if the file changed meanwhile, you see what
    changed and are offered your editor again on your text (nothing you typed is lost). A new PATH
    starts empty. Lines like <!-- ... --> are saved as text, not read as edit markers.
    """
    from fsmem._core.requests import Write
    from fsmem._core.review import unified_diff
    from fsmem.cli.style import diff as paint_diff

    memory = _memory(root, path)
    run = memory.run(thread_id="cli")
    target, base = _open_for_edit(run, shell_path(path, memory.root))
    text, retrying = base or b"", False
    while True:
        edited = click.edit(text, extension=os.path.splitext(target)[1] or ".md", require_save=True)
        if edited is None and retrying:  # they left the editor without saving: their text still counts
            raise Conflict(f"{target} was not saved; your text is kept in {_keep_aside(target, text)}")
        if edited is None or edited == (base or b""):
            _finish(as_json, {"ok": True, "path": target, "changed": False}, f"No changes to {target}.")
            return
        try:
            result = run.execute(Write(target, content=_utf8(edited), literal=True, create=base is None))
        except (Conflict, NotRead, Exists) as error:
            now = memory.drive.read(target)
            click.echo(f"Error: [{error.code}] {target} changed since you opened it:", err=True)
            click.echo(
                paint_diff(
                    unified_diff(
                        target, (base or b"").decode("utf-8", "replace"), (now or b"").decode("utf-8", "replace")
                    ),
                    err=True,
                ),
                err=True,
            )
            kept = _keep_aside(target, edited)
            if not click.confirm(
                f"Your text is kept in {kept}. Open your editor again on your text, to "
                "save it over the current version?",
                default=True,
                err=True,
            ):
                raise Conflict(f"{target} was not saved; your text is kept in {kept}") from error
            os.unlink(kept)
            target, base = _open_for_edit(run, target)
            text, retrying = edited, True
            continue
        except RequestError as error:  # refused (too large, a secret, …): what they typed is not lost
            raise from_code(
                error.code, f"{error.message.rstrip('.')}. Your text is kept in {_keep_aside(target, edited)}"
            ) from error
        _finish(as_json, {**result, "changed": True}, result["text"].split("\n", 1)[0])
        return


def _utf8(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadRequest(
            f"the editor saved text that is not UTF-8 (byte {error.start}); fsmem stores UTF-8 text"
        ) from error


def _open_for_edit(run: Any, path: str) -> tuple[str, bytes | None]:
    """The file's real path and bytes (None: a new file), marked as read at exactly those bytes."""
    from fsmem._core.versions import version_of

    shown = run.call({"command": "read", "path": path, "end_line": 1})
    if not shown["ok"]:
        if shown["error"]["code"] == "NOT_FOUND":
            return path, None
        raise from_code(**shown["error"])
    if "version" not in shown:
        raise BadRequest(f"{shown['path'] or '/'} is a folder; name a file in it to edit")
    data = run.memory.drive.read(shown["path"])
    if data is None:  # deleted a moment ago: edit it as a new file
        return shown["path"], None
    run.mark_seen(shown["path"], version_of(data))
    return shown["path"], data


def _keep_aside(path: str, data: bytes) -> str:
    """Put a person's unsaved text in a file of its own, so a refused save loses nothing."""
    stem, suffix = os.path.splitext(os.path.basename(path) or "memory.md")
    handle, kept = tempfile.mkstemp(prefix=f"fsmem-edit-{stem}-", suffix=suffix or ".md")
    with os.fdopen(handle, "wb") as out:
        out.write(data)
    return kept


def _finish(as_json: bool, data: dict, line: str) -> None:
    if as_json:
        echo_json(data)
    else:
        click.echo(line)


@click.command()
@click.argument("path")
@click.argument("new_path")
@expect_option
@root_option
@json_option
def rename(path: str, new_path: str, expected_version: str | None, root: str | None, as_json: bool) -> None:
    """Rename a file or folder (never over an existing path)."""
    memory = _memory(root, path)
    request = {
        "command": "rename",
        "path": shell_path(path, memory.root),
        "new_path": shell_path(new_path, memory.root),
    }
    result = _call(memory, _with_expect(request, expected_version), as_json)
    if not as_json:
        click.echo(result["text"])


@click.command()
@click.argument("path")
@expect_option
@root_option
@json_option
def delete(path: str, expected_version: str | None, root: str | None, as_json: bool) -> None:
    """Delete a file or folder (its content stays in `fsmem versions`; `fsmem revert` puts it back).

    A level's top file (MEMORY.md, NOTES.md) is emptied, not removed.
    """
    memory = _memory(root, path)
    request = {"command": "delete", "path": shell_path(path, memory.root)}
    result = _call(memory, _with_expect(request, expected_version), as_json)
    if not as_json:
        for line in _deleted_lines(result):
            click.echo(line)


def _deleted_lines(result: dict) -> list[str]:
    """What was deleted, and how each file comes back (the JSON result holds the contents)."""
    held: dict[str, str] = result.get("held", {})
    target = result["path"]
    if "version" in result:  # a level's top file: emptied in place
        return [
            f"Emptied {target} (a level's top file stays; it is now version {result['version']}).",
            f"Its earlier content is kept: `fsmem revert {target}` puts it back.",
        ]
    if list(held) == [target]:
        lines = len(held[target].splitlines())
        return [
            f"Deleted {target} ({lines} line{'s' if lines != 1 else ''}).",
            f"Its content is kept: `fsmem versions {target}` lists it, `fsmem revert {target}` puts it back.",
        ]
    out = [f"Deleted the folder {target} and its {len(held)} file{'s' if len(held) != 1 else ''}:"]
    out += [f"  {path}" for path in sorted(held)]
    out.append("Each is kept: `fsmem revert PATH` puts one back.")
    return out


@click.command()
@root_option
@click.option(
    "--scope",
    "scope_text",
    default="chat",
    show_default=True,
    help="chat, agent:ID[:NAME] or routine:AGENT_ID/ROUTINE_ID[:AGENT_NAME/ROUTINE_NAME].",
)
@click.option("--thread", "thread_id", default=None, help="The thread the call belongs to (for the log).")
def tool(root: str | None, scope_text: str, thread_id: str | None) -> None:
    """One memory-tool call: a JSON request on stdin, the JSON result on stdout.

    Always JSON, refusals and setup problems too; exit 0 done, 1 refused, 2 setup, 3 conflict.
    """
    from fsmem._errors import FsmemError
    from fsmem._memory.tool import error_result

    try:
        request = _request_from_stdin()
        memory = open_root(root)
        result = memory.run(shell_scope(memory, scope_text), thread_id=thread_id).call(request)
    except FsmemError as error:  # stdin, the root or the scope: still an answer the caller can parse
        result = error_result(for_the_shell(error))
    click.echo(json_line(result))
    if not result["ok"]:
        sys.exit(exit_code_for(from_code(**result["error"])))


def _request_from_stdin() -> object:
    raw = _stdin_text()
    try:
        request = json.loads(raw)
    except json.JSONDecodeError as error:
        raise BadRequest(f"stdin is not JSON ({error})") from error
    except RecursionError as error:  # the parser's own limit; a value it can hold, the run checks
        raise BadRequest("stdin nests JSON too deeply; send one flat object with the fields of one command") from error
    return request


@click.command()
@click.argument("path")
@root_option
@json_option
def versions(path: str, root: str | None, as_json: bool) -> None:
    """List the earlier contents kept for PATH, newest first."""
    memory = _memory(root, path)
    echo_versions(memory, shell_path(path, memory.root), as_json)


def echo_versions(memory: Any, path: str, as_json: bool) -> None:
    """What `fsmem versions` prints (also `fsmem skills versions`)."""
    from fsmem._memory.render import size, when_iso

    kept = memory.versions(path)
    if as_json:
        echo_json([{"version": v.version, "kept_at": v.kept_at, "command": v.command, "size": v.size} for v in kept])
        return
    if not kept:
        click.echo(f"No earlier versions of {path}.")
    rows = [[v.version, when_iso(v.kept_at), size(v.size), f"replaced by {v.command}"] for v in kept]
    for line in table(rows, right=frozenset({2})):
        click.echo(line)


@click.command()
@click.argument("path")
@click.argument("version", required=False)
@root_option
@json_option
def revert(path: str, version: str | None, root: str | None, as_json: bool) -> None:
    """Put back an earlier content of PATH (the newest kept one, or VERSION or its first characters)."""
    memory = _memory(root, path)
    echo_revert(memory, shell_path(path, memory.root), version, as_json)


def echo_revert(memory: Any, path: str, version: str | None, as_json: bool) -> None:
    """`fsmem revert`: put a kept version back, and say so (also `fsmem skills revert`)."""
    new_version = memory.revert(path, version, thread="cli")
    if as_json:
        echo_json({"path": path, "version": new_version})
    else:
        click.echo(f"Reverted {path}; it is now version {new_version}.")


@click.command()
@click.option("--path", "path_filter", default=None, help="Only changes to this path.")
@click.option("--limit", type=int, default=20, show_default=True, help="The newest N changes.")
@root_option
@json_option
def log(path_filter: str | None, limit: int, root: str | None, as_json: bool) -> None:
    """Show the newest changes from .fsmem/log.jsonl, oldest first."""
    memory = _memory(root)
    if path_filter is not None:
        path_filter = shell_path(path_filter, memory.root)
    entries = [e for e in memory.log() if path_filter is None or path_filter in (e.path, e.new_path)]
    entries = entries[-limit:]
    if as_json:
        echo_json([e.__dict__ for e in entries])
        return
    if not entries:
        click.echo("No changes yet." if path_filter is None else f"No changes to {path_filter}.")
    for line in log_lines(entries):
        click.echo(line)


def log_lines(entries: list[Any]) -> list[str]:
    """Log entries as aligned columns: time, command, path, versions, thread."""
    from fsmem._memory.render import when_iso

    rows = [
        [
            when_iso(e.time),
            e.command,
            e.path + (f" -> {e.new_path}" if e.new_path else ""),
            f"{e.before or '-'} -> {e.after or '-'}",
            e.thread or "",
        ]
        for e in entries
    ]
    return table(rows)
