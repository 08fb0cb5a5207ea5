"""Claude's built-in memory tool (``memory_20250818``) backed by an fsmem root.

    import anthropic, fsmem
    from fsmem.claude_memory import FsmemMemoryTool

    tool = FsmemMemoryTool(fsmem.open("memory", create=True), thread_id="t-1")
    runner = anthropic.Anthropic().beta.messages.tool_runner(
        model="claude-sonnet-4-5", max_tokens=2048, tools=[tool],
        messages=[{"role": "user", "content": "Titles end with | Field Notes. Remember that."}])
    for message in runner: ...

``/memories`` is the root. Every command goes through the same :class:`fsmem._memory.tool.Run` as fsmem's own
tool, so the path and symlink guard, the secret guard, read versions, ``versions/``, ``log.jsonl`` and
the index all apply:

    view         → read (a file view marks its version as seen)
    create       → write of the whole content, refused when the file exists
    str_replace  → write with old_text / new_text
    insert       → write of the whole file computed from the version the last view saw
    delete       → delete (a level's top file is emptied instead)
    rename       → rename, never over an existing path

Results and error texts are those of the SDK's local-filesystem tool, which models are trained on,
wherever fsmem's rules allow; a refusal that only fsmem makes (a secret, a conflict, a file not viewed
yet, a protected file) is explained in fsmem's words. Errors are raised as the SDK's ``ToolError``,
which its tool runner sends back with ``is_error``.

This module is the only one that imports ``anthropic`` (the ``anthropic`` extra).
"""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path
from typing import Any

from anthropic.lib.tools import BetaAbstractMemoryTool, ToolError
from anthropic.types.beta import (
    BetaCacheControlEphemeralParam,
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)

import fsmem
from fsmem._core import paths as _paths
from fsmem._core.paths import normalize_path
from fsmem._core.requests import Delete, Read, Rename, Request, Write
from fsmem._core.secrets import find_secret
from fsmem._core.versions import version_of
from fsmem._errors import BadPath, RequestError
from fsmem._memory.levels import Scope
from fsmem._memory.memory import Memory
from fsmem._memory.tool import Run, error_result

__all__ = ["FsmemMemoryTool", "MEMORIES"]

MEMORIES = "/memories"
LINE_NUMBER_WIDTH = 6  # as the SDK numbers lines: right-aligned in six columns, then a tab
_PATH_EXAMPLES = getattr(_paths, "_EXAMPLES", "\0")  # the path hint of fsmem's own tool
_EXAMPLE = f'Use a path under {MEMORIES}, like "{MEMORIES}/notes.md".'


class FsmemMemoryTool(BetaAbstractMemoryTool):
    """Claude's memory tool on an fsmem root; one instance per conversation (it keeps read versions).

    ``memory`` is a :class:`fsmem.Memory` or a folder (made into a root when ``create``). Changes are
    logged as ``thread_id`` (default ``claude-<8 hex digits>``). Pass ``run`` to share one
    :class:`fsmem._memory.tool.Run` with the harness (so context injection counts as a view).
    """

    def __init__(
        self,
        memory: Memory | str | os.PathLike[str] | None = None,
        *,
        scope: Scope | None = None,
        thread_id: str | None = None,
        run: Run | None = None,
        create: bool = True,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> None:
        super().__init__(cache_control=cache_control)
        if run is None:
            if memory is None:
                raise TypeError("FsmemMemoryTool needs a memory (a fsmem.Memory or a folder) or a run")
            if isinstance(memory, str) and memory.startswith(("postgresql://", "postgres://")):
                raise TypeError(
                    "a database holds many projects: open one with fsmem.open(url, project=...) and pass the Memory"
                )
            if not isinstance(memory, Memory):
                memory = fsmem.open(Path(memory), create=create)
            run = memory.run(scope or Scope.chat(), thread_id=thread_id or f"claude-{uuid.uuid4().hex[:8]}")
        self.run = run

    @property
    def memory(self) -> Memory:
        memory = self.run.memory  # the tool's run is typed on what it needs (a Project); Memory.run made it
        if not isinstance(memory, Memory):
            raise TypeError(f"this tool's run was made on {type(memory).__name__}, not on a fsmem.Memory")
        return memory

    def execute(self, command: Any) -> str:
        """The SDK's dispatch, plus one outcome it has no text for: a change held for a person."""
        try:
            result = super().execute(command)
            assert isinstance(result, str)  # the SDK's type allows content blocks; our six commands return text
            return result
        except _Proposed as proposed:
            return proposed.text
        except NotImplementedError as error:  # the SDK's dispatch of a command it does not know
            raise ToolError(f"{error}; the commands are view, create, str_replace, insert, delete, rename") from None

    # ---- the six commands -------------------------------------------------------------------

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        shown = _field(command, "path", str)
        path = self._path(shown)
        view_range = getattr(command, "view_range", None)
        result = self._call(Read(path=path), shown, "view")
        if "content" not in result:  # a folder
            return self._listing(result["path"], shown)
        return _file_view(result["content"], shown, view_range)

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        shown = _field(command, "path", str)
        text = _field(command, "file_text", str)
        self._call(Write(path=self._path(shown), content=text, literal=True, create=True), shown, "create")
        return f"File created successfully at: {shown}"

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        shown = _field(command, "path", str)
        old = _field(command, "old_str", str)
        new = _field(command, "new_str", str)
        path = self._path(shown)
        self._require_file(path, shown)
        result = self._call(Write(path=path, old_text=old, new_text=new), shown, "str_replace", old_str=old)
        changed_line = result["line"] - 1
        lines = result["content"].split("\n")
        start, end = max(0, changed_line - 2), min(len(lines), changed_line + 3)
        snippet = "\n".join(_numbered(number, lines[number - 1]) for number in range(start + 1, end + 1))
        return (
            "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n" + snippet
        )

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        shown = _field(command, "path", str)
        line = _field(command, "insert_line", int)
        text = _field(command, "insert_text", str)
        path = self._path(shown)
        data = self._require_file(path, shown)
        real = self._canonical(path, shown)
        try:
            content = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"The file {shown} is not UTF-8 text; only UTF-8 markdown can be edited.") from None
        lines = _split_lines_keeping_cr(content)
        if line < 0 or line > len(lines):
            raise ToolError(
                f"Invalid `insert_line` parameter: {line}. It should be within the range [0, {len(lines)}]."
            )
        lines.insert(line, text.rstrip("\n"))
        new_content = "\n".join(lines)
        if not new_content.endswith("\n"):
            new_content += "\n"
        # The new file is computed from the bytes just read, so it may land only over those very bytes,
        # and only if they are what this conversation last viewed: the run checks that (NOT_READ,
        # CONFLICT) against the version it saw, or against these bytes when they are that version.
        seen, current = self.run.seen.get(real), version_of(data)
        expected = current if seen == current else seen
        self._call(Write(path=path, content=new_content, literal=True, expected_version=expected), shown, "insert")
        return f"The file {shown} has been edited."

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        shown = _field(command, "path", str)
        path = self._path(shown)
        if path == "":
            raise ToolError(f"Cannot delete the {MEMORIES} directory itself")
        result = self._call(Delete(path=path), shown, "delete")
        if "version" in result:  # a level's top file: emptied, never removed
            return (
                f"{shown} is a top memory file, loaded in every conversation of its level, so it was "
                f"emptied instead of deleted."
            )
        return f"Successfully deleted {shown}"

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        old_shown = _field(command, "old_path", str)
        new_shown = _field(command, "new_path", str)
        old_path = self._path(old_shown)
        new_path = self._path(new_shown)
        if old_path == "":
            raise ToolError(f"Cannot rename the {MEMORIES} directory itself")
        self._call(Rename(path=old_path, new_path=new_path), old_shown, "rename", new_shown=new_shown)
        return f"Successfully renamed {old_shown} to {new_shown}"

    # ---- paths ------------------------------------------------------------------------------

    def _path(self, shown: str) -> str:
        """``/memories/a/b.md`` → ``a/b.md`` (the root is ""); the SDK's refusals for what leaves it.

        ``.`` and ``..`` are resolved as the SDK's tool resolves them (``/memories/sub/..`` is the
        folder itself); one that climbs out is the SDK's escape. Everything else is fsmem's path rule.
        """
        if shown != MEMORIES and not shown.startswith(MEMORIES + "/"):
            raise ToolError(f"Path must start with {MEMORIES}, got: {shown}")
        kept: list[str] = []
        for segment in shown[len(MEMORIES) :].split("/"):
            if segment == "..":
                if not kept:
                    raise ToolError(f"Path {shown} would escape {MEMORIES} directory")
                kept.pop()
            elif segment not in ("", "."):
                kept.append(segment)
        try:
            relative = normalize_path("/".join(kept))
        except BadPath as error:
            raise ToolError(self._bad_path(error, {}, shown)) from None
        try:
            self.memory.drive.canonical(relative)  # the store's guard: no link on the way leads out
        except BadPath:
            raise ToolError(f"Path would escape {MEMORIES} directory via symlink") from None
        return relative

    @staticmethod
    def _bad_path(error: BadPath, paths: dict[str, str], shown: str) -> str:
        """fsmem's path refusal, worded from its data with the path as this tool shows it."""
        problem = error.details.get("problem")
        if problem is None:
            return error.message.replace(_PATH_EXAMPLES, _EXAMPLE)
        display = _paths._shown(paths.get(error.details.get("path", ""), shown))[1:-1]  # invisibles escaped
        return f"Path {display} {problem}. {_EXAMPLE}"

    def _canonical(self, path: str, shown: str) -> str:
        try:
            return self.memory.drive.canonical(normalize_path(path))
        except BadPath as error:
            raise ToolError(self._bad_path(error, {path: shown}, shown)) from None

    def _require_file(self, path: str, shown: str) -> bytes:
        """The file's bytes, or the SDK's refusal for a missing path or a folder."""
        real = self._canonical(path, shown)
        drive = self.memory.drive
        if not drive.exists(real):
            raise ToolError(f"The path {shown} does not exist. Please provide a valid path.")
        try:
            data = None if drive.is_dir(real) else drive.read(real)
        except RequestError as error:  # a FIFO or a device: not memory, refused with the drive's words
            raise ToolError(_with_display_path(error.message, real, shown)) from None
        if data is None:
            raise ToolError(f"The path {shown} is not a file.")
        return data

    # ---- calling the run --------------------------------------------------------------------

    def _call(self, request: Request, shown: str, command: str, **details: str) -> dict[str, Any]:
        result = _execute(self.run, request, shown)
        if result.get("ok"):
            if "proposal" in result:  # a review-mode run held the change for a person: nothing changed yet
                raise _Proposed(result["text"])
            return result
        raise ToolError(self._error_text(result["error"], request, shown, command, **details))

    def _error_text(
        self,
        error: dict[str, Any],
        request: Request,
        shown: str,
        command: str,
        old_str: str | None = None,
        new_shown: str | None = None,
    ) -> str:
        """The SDK's text for a refusal it also makes; fsmem's own explanation, worded from the
        error's data, otherwise."""
        code, message = error["code"], error["message"]
        path = getattr(request, "path", "")
        paths = {path: shown}
        if isinstance(request, Rename) and new_shown is not None:
            paths[request.new_path] = new_shown
        display = paths.get(error.get("path", path), shown)
        if code == "NOT_FOUND":
            if command in ("view", "str_replace", "insert"):
                return f"The path {shown} does not exist. Please provide a valid path."
            if command in ("delete", "rename"):
                return f"The path {shown} does not exist"
        if code == "EXISTS":
            if command == "create":
                return f"File {shown} already exists"
            if command == "rename" and new_shown is not None:
                return f"The destination {new_shown} already exists"
        if command == "str_replace" and old_str is not None:
            quoted = "old_str" if find_secret(old_str) else f"old_str `{old_str}`"
            if code == "EDIT_UNPLACED":
                return f"No replacement was performed, {quoted} did not appear verbatim in {shown}."
            if code == "NOT_UNIQUE":
                lines = _occurrence_lines(self.memory.drive.read(self._canonical(path, shown)) or b"", old_str)
                return (
                    f"No replacement was performed. Multiple occurrences of {quoted} in lines: "
                    f"{', '.join(map(str, lines))}. Please ensure it is unique"
                )
        if code == "EXISTS" and command in ("str_replace", "insert"):
            return f"The path {shown} is not a file."
        if code == "NOT_READ":
            return (
                f"The file {display} has content you have not viewed in this conversation. Nothing was "
                f"changed: view it first, then make your change with what it holds in mind."
            )
        if code == "CONFLICT" and "seen_version" in error:
            return _conflict_text(display, error)
        if code == "BAD_PATH":
            return self._bad_path(
                BadPath(message, **{k: v for k, v in error.items() if k not in ("code", "message")}), paths, shown
            )
        text = message.replace(_PATH_EXAMPLES, _EXAMPLE)
        for relative, display in paths.items():
            text = _with_display_path(text, relative, display)
        return text

    # ---- folder listing ---------------------------------------------------------------------

    def _listing(self, folder: str, shown: str) -> str:
        """The SDK's two-level listing: sizes as the file system reports them, hidden items left out."""
        drive = self.memory.drive
        lines = [f"{_format_file_size(_size(drive, folder))}\t{shown}"]
        base = shown.rstrip("/") or shown

        def collect(path: str, depth: int) -> None:
            for entry in drive.entries(path):
                relative = entry.path[len(folder) :].lstrip("/")
                if entry.is_dir:
                    lines.append(f"{_format_file_size(_size(drive, entry.path))}\t{base}/{relative}/")
                    if depth < 2:
                        collect(entry.path, depth + 1)
                else:
                    lines.append(f"{_format_file_size(entry.size)}\t{base}/{relative}")

        collect(folder, 1)
        header = f"Here're the files and directories up to 2 levels deep in {shown}, excluding hidden items:"
        return header + "\n" + "\n".join(lines)


# ---- helpers (pure, mirroring the SDK's local-filesystem tool) --------------------------------


class _Proposed(Exception):
    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def _execute(run: Run, request: Request, shown: str) -> dict[str, Any]:
    """Run a typed request the way ``Run.call`` runs a dict: refusals come back, never raised."""
    try:
        return run.execute(request)
    except RequestError as error:
        return error_result(error)
    except OSError as error:  # the disk said no (a name too long for it, a full disk): still the model's to read
        raise ToolError(
            f"The memory could not store {shown}: {error.strerror or error}. Use a shorter name, or try again later."
        ) from None


def _conflict_text(shown: str, error: dict[str, Any]) -> str:
    """CONFLICT in this tool's words (view, not read), from the error's data."""
    changed_by, current = error.get("changed_by"), error.get("current_version")
    if changed_by:
        thread = f"thread {changed_by['thread']}" if changed_by.get("thread") else "a caller without a thread"
        who = f" by {thread} ({changed_by['command']}, {changed_by['time']})"
    else:
        who = " outside fsmem (edited by hand or by another program)"
    now = f"it is now version {current}" if current else "it no longer exists"
    return (
        f"The file {shown} changed since you viewed it (you saw version {error['seen_version']}; {now}){who}. "
        "Nothing was changed: view it again, then redo your change on what it holds now."
    )


def _field(command: object, name: str, kind: type) -> Any:
    value = getattr(command, name, None)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        what = "a string" if kind is str else "an integer"
        raise ToolError(f"The `{name}` parameter is missing or is not {what}.")
    return value


def _numbered(number: int, line: str) -> str:
    return f"{str(number).rjust(LINE_NUMBER_WIDTH)}\t{line}"


def _file_view(content: str, shown: str, view_range: Any) -> str:
    lines = content.split("\n")
    first = 1
    if isinstance(view_range, (list, tuple)) and len(view_range) == 2 and all(isinstance(n, int) for n in view_range):
        start = max(1, view_range[0]) - 1
        end = len(lines) if view_range[1] == -1 else view_range[1]
        lines, first = lines[start:end], start + 1
    numbered = "\n".join(_numbered(first + i, line) for i, line in enumerate(lines))
    return f"Here's the content of {shown} with line numbers:\n" + numbered


def _split_lines_keeping_cr(content: str) -> list[str]:
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def _occurrence_lines(data: bytes, old: str) -> list[int]:
    content = data.decode("utf-8", errors="replace")
    found, start = [], 0
    while (position := content.find(old, start)) != -1:
        found.append(content[:position].count("\n") + 1)
        start = position + 1
    return found


def _format_file_size(size: int) -> str:
    if size == 0:
        return "0B"
    units = ["B", "K", "M", "G"]
    i = min((size.bit_length() - 1) // 10, len(units) - 1)
    value = size / (1024**i)
    return f"{int(value)}{units[i]}" if value == int(value) else f"{value:.1f}{units[i]}"


def _size(drive: Any, path: str) -> int:
    info = drive.info(path)
    return info.size if info else 0


def _with_display_path(text: str, relative: str, display: str) -> str:
    """fsmem's messages name paths relative to the root; this tool's model knows them under /memories."""
    if not any(char.isalnum() for char in relative):  # "" or a run of dots would match everywhere
        return text
    return re.sub(r"(?<![\w./-])'?" + re.escape(relative) + r"'?(?![\w/-])", lambda _: display, text)
