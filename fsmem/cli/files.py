"""``fsmem init | read | write | rename | delete | tool | versions | revert | log``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from fsmem.cli.options import echo_json, expect_option, find_root, json_option, root_option
from fsmem.cli import exit_code_for
from fsmem.errors import BadRequest, from_code


def _memory(root: str | None):
    import fsmem

    return fsmem.open(find_root(root))


def _call(root: str | None, request: dict, as_json: bool) -> dict:
    """One stateless tool call; refusals become FsmemErrors so the group prints one Error line."""
    result = _memory(root).run(thread_id="cli").call(request)
    if as_json:
        echo_json(result)
        if not result["ok"]:
            sys.exit(exit_code_for(from_code(**result["error"])))
        return result
    if not result["ok"]:
        error = result["error"]
        message = error["message"]
        if error["code"] in {"NOT_READ", "CONFLICT"} and "path" in request:
            message += f" From the shell: `fsmem read {request['path']}` shows its version; pass it with --expect."
        raise from_code(error["code"], message)
    return result


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
def init(directory: Path | None) -> None:
    """Make DIRECTORY (default: here) an fsmem root: .fsmem/ and an empty MEMORY.md."""
    from fsmem.memory import init_root

    target = (directory or Path.cwd()).resolve()
    existed = (target / ".fsmem").is_dir()
    init_root(target)
    click.echo(f"{'Already an fsmem root' if existed else 'Made an fsmem root'}: {target}")


@click.command()
@click.argument("path", default="/")
@click.option("--start", "start_line", type=int, help="First line to show.")
@click.option("--end", "end_line", type=int, help="Last line to show.")
@root_option
@json_option
def read(path: str, start_line: int | None, end_line: int | None, root: str | None, as_json: bool) -> None:
    """Show a file with numbered lines, or a folder as a tree."""
    request = {"command": "read", "path": path}
    if start_line:
        request["start_line"] = start_line
    if end_line:
        request["end_line"] = end_line
    result = _call(root, request, as_json)
    if not as_json:
        click.echo(result["text"])


@click.command()
@click.argument("path")
@click.option("--file", "source", type=click.File("r", encoding="utf-8"), help="Read the content from FILE (default: stdin).")
@expect_option
@click.option("--old", "old_text", help="Replace this exact text (with --new) instead of writing the whole file.")
@click.option("--new", "new_text", help="The replacement for --old.")
@root_option
@json_option
def write(path: str, source, expected_version: str | None, old_text: str | None, new_text: str | None,
          root: str | None, as_json: bool) -> None:
    """Write PATH from stdin or --file (whole content, or parts between <!-- ... --> markers)."""
    request: dict = {"command": "write", "path": path}
    if old_text is not None or new_text is not None:
        if old_text is None or new_text is None:
            raise BadRequest("--old and --new go together")
        request.update(old_text=old_text, new_text=new_text)
    else:
        request["content"] = source.read() if source else _stdin_text()
    result = _call(root, _with_expect(request, expected_version), as_json)
    if not as_json:
        click.echo(result["text"])


@click.command()
@click.argument("path")
@click.argument("new_path")
@expect_option
@root_option
@json_option
def rename(path: str, new_path: str, expected_version: str | None, root: str | None, as_json: bool) -> None:
    """Rename a file or folder (never over an existing path)."""
    request = {"command": "rename", "path": path, "new_path": new_path}
    result = _call(root, _with_expect(request, expected_version), as_json)
    if not as_json:
        click.echo(result["text"])


@click.command()
@click.argument("path")
@expect_option
@root_option
@json_option
def delete(path: str, expected_version: str | None, root: str | None, as_json: bool) -> None:
    """Delete a file or folder (its content stays in `fsmem versions`)."""
    request = {"command": "delete", "path": path}
    result = _call(root, _with_expect(request, expected_version), as_json)
    if not as_json:
        click.echo(result["text"].split("\n", 1)[0])


@click.command()
@root_option
@click.option("--scope", "scope_text", default="chat", show_default=True,
              help="chat, agent:ID[:NAME] or routine:AGENT_ID/ROUTINE_ID[:AGENT_NAME/ROUTINE_NAME].")
@click.option("--thread", "thread_id", default=None, help="The thread the call belongs to (for the log).")
def tool(root: str | None, scope_text: str, thread_id: str | None) -> None:
    """One memory-tool call: a JSON request on stdin, the JSON result on stdout.

    Always JSON, refusals and setup problems too; exit 0 done, 1 refused, 2 setup, 3 conflict.
    """
    import fsmem
    from fsmem.errors import FsmemError
    from fsmem.levels import Scope
    from fsmem.tool import error_result

    try:
        request = _request_from_stdin()
        memory = fsmem.open(find_root(root))
        result = memory.run(Scope.parse(scope_text), thread_id=thread_id).call(request)
    except FsmemError as error:  # stdin, the root or the scope: still an answer the caller can parse
        result = error_result(error)
    click.echo(json.dumps(result, ensure_ascii=False))
    if not result["ok"]:
        sys.exit(exit_code_for(from_code(result["error"]["code"], result["error"]["message"])))


def _request_from_stdin() -> object:
    raw = _stdin_text()
    try:
        request = json.loads(raw)
    except json.JSONDecodeError as error:
        raise BadRequest(f"stdin is not JSON ({error})") from error
    except RecursionError as error:  # the parser's own limit; a value it can hold, the run checks
        raise BadRequest("stdin nests JSON too deeply; send one flat object with the fields of one "
                         "command") from error
    return request


@click.command()
@click.argument("path")
@root_option
@json_option
def versions(path: str, root: str | None, as_json: bool) -> None:
    """List the earlier contents kept for PATH, newest first."""
    kept = _memory(root).versions(path)
    if as_json:
        echo_json([{"version": v.version, "kept_at": v.kept_at, "command": v.command, "size": v.size}
                   for v in kept])
        return
    if not kept:
        click.echo(f"No earlier versions of {path}.")
    for v in kept:
        click.echo(f"{v.version}  {v.kept_at}  {v.size:>7} B  replaced by {v.command}")


@click.command()
@click.argument("path")
@click.argument("version", required=False)
@root_option
@json_option
def revert(path: str, version: str | None, root: str | None, as_json: bool) -> None:
    """Put back an earlier content of PATH (the newest kept one, or VERSION)."""
    new_version = _memory(root).revert(path, version, thread="cli")
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
    """Show the newest changes from .fsmem/log.jsonl."""
    entries = [e for e in _memory(root).log() if path_filter is None or path_filter in (e.path, e.new_path)]
    entries = entries[-limit:]
    if as_json:
        echo_json([e.__dict__ for e in entries])
        return
    for e in entries:
        moved = f" -> {e.new_path}" if e.new_path else ""
        click.echo(f"{e.time}  {e.command:<8} {e.path}{moved}  {e.before or '-'} -> {e.after or '-'}"
                   f"  {e.thread or ''}".rstrip())
