"""The memory tool: one call from the model → rules, drive, index → a result the model reads.

    run = memory.run(Scope.chat(), thread_id="t-1")
    run.call({"command": "write", "path": "MEMORY.md", "content": "# Rules\n- Titles under 60 chars\n"})

A change to an existing file needs the version this run last saw (by read, by context, or by its own
write), or ``expected_version`` from a caller that keeps no session. A refused call changes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, assert_never

from fsmem._core import layout
from fsmem._core.changes import find_brought_secret
from fsmem._core.merge import has_markers, merge_markers, replace_exact
from fsmem._core.paths import ensure_memory_file, normalize_path
from fsmem._core.requests import Delete, Read, Rename, Request, Search, Write, parse_request, request_to_dict
from fsmem._core.secrets import find_secret
from fsmem._core.text import added_lines, file_text
from fsmem._core.versions import version_of
from fsmem._errors import (
    BadPath,
    BadRequest,
    Conflict,
    EditUnplaced,
    Exists,
    FsmemError,
    NotFound,
    NotRead,
    Protected,
    RequestError,
    Sensitive,
    TooLarge,
)
from fsmem._memory import render
from fsmem._memory import skills as skill_rules
from fsmem._memory.levels import Scope, scope_folders
from fsmem._memory.links import rename_plan
from fsmem._memory.schema import check_request
from fsmem._store.types import ChangeProposal, Entry, now_iso

if TYPE_CHECKING:
    from fsmem._memory.project import Project
    from fsmem._store.interface import StoreChange


READ_CAP_FACTOR = 4  # a read shows at most 4 × the file size limit (128 KiB by default) at once


class _Deferred(Exception):
    """Raised by a review-mode run just before it would change what someone wrote: becomes a proposal."""

    def __init__(self, summary: str, base: dict[str, str | None], diff: str = "", folder: str | None = None):
        super().__init__(summary)
        self.summary, self.base, self.diff, self.folder = summary, base, diff, folder


def error_result(error: FsmemError) -> dict[str, Any]:
    return {"ok": False, "error": error.to_dict(), "text": f"Error [{error.code}]: {error.message}"}


class Run:
    """One thread's use of the memory tool, with the versions it has seen."""

    def __init__(self, memory: Project, scope: Scope, thread_id: str | None = None, review: bool = False) -> None:
        self.memory = memory
        self.review = review  # a background reviewer: adds apply at once, the rest become proposals
        self.only_proposals = False  # a consolidation: every change of a review run waits for a person
        self.scope = scope
        self.thread_id = thread_id
        self.seen: dict[str, str] = {}
        # Resolving the scope up front means a run never starts with the wrong memory.
        self.agent_folder, self.routine_folder = scope_folders(memory, scope)

    @property
    def drive(self):
        return self.memory.drive

    def mark_seen(self, path: str, version: str) -> None:
        self.seen[path] = version

    def context(self, messages: Any, recall: str | None = None, **options: Any) -> list[dict[str, str]]:
        """The memory messages to append to ``messages`` before a turn (see ``fsmem._memory.context``)."""
        from fsmem._memory.context import build_context

        return build_context(self, messages, recall=recall, **options)

    def call(self, request: Any) -> dict[str, Any]:
        """Execute one memory-tool call. Refusals come back as ``{"ok": False, ...}``, never raised."""
        try:
            try:
                parsed = parse_request(check_request(request))
            except RecursionError as error:  # checking a value nested thousands deep: not a request
                raise BadRequest(
                    "the request nests lists or objects too deeply; send one flat object with the fields of one command"
                ) from error
            return self.execute(parsed)
        except RequestError as error:
            return error_result(error)

    def execute(self, request: Request) -> dict[str, Any]:
        try:
            return self._dispatch(request)
        except _Deferred as deferred:
            return self._propose(request, deferred)

    def _dispatch(self, request: Request) -> dict[str, Any]:
        match request:
            case Read():
                return self._read(request)
            case Write():
                return self._write(request)
            case Rename():
                return self._rename(request)
            case Delete():
                return self._delete(request)
            case Search():
                return self._search(request)
            case _:
                assert_never(request)

    # ---- paths ------------------------------------------------------------------------------

    def _path(self, raw: str) -> str:
        """Normalize, apply the symlink guard, and return where the path really is."""
        path = normalize_path(raw)
        real = self.drive.canonical(path)
        if layout.is_state_path(real):
            raise BadPath(f"{raw!r} is fsmem's own state, not memory; use another path")
        return real

    def _check_version(self, path: str, current: bytes, expected: str | None, doing: str) -> None:
        expected = expected or self.seen.get(path)
        current_version = version_of(current)
        if expected is None:
            if current.strip():
                raise NotRead(
                    f"{path} has content this run has not read; read it first (command read), then "
                    f"{doing} it with what you saw in mind. A caller that keeps no session passes the "
                    f"version that read shows as expected_version (now {current_version})",
                    path=path,
                    current_version=current_version,
                )
            return
        if expected != current_version:
            raise self._changed_since(path, expected, current_version)

    def _changed_since(self, path: str, expected: str, current_version: str | None) -> Conflict:
        """The CONFLICT for a file that is no longer as this run saw it; ``changed_by`` is the log's
        ``{thread, command, time}`` of the change, or None when it was made outside fsmem."""
        last = self.drive.last_change(path)
        landed = last is not None and (last.after if last.new_path is None or last.new_path == path else None)
        changed_by = None
        if last is not None and landed == current_version:
            thread = f"thread {last.thread}" if last.thread else "a caller without a thread"
            who = f" by {thread} ({last.command}, {last.time})"
            changed_by = {"thread": last.thread, "command": last.command, "time": last.time}
        else:
            who = " outside fsmem (edited by hand or by another program)"
        now = f"it is now version {current_version}" if current_version else "it no longer exists"
        return Conflict(
            f"{path} changed since you read it (you saw version {expected}; {now}){who}. "
            f"Nothing was changed. Read it again, then redo your change on what it holds now.",
            path=path,
            seen_version=expected,
            current_version=current_version,
            changed_by=changed_by,
        )

    def _check_writable(self, path: str, doing: str) -> layout.PathRole:
        role = layout.role_of(path)
        if layout.is_fact_path(path):
            raise Protected(
                f"{path} is a fact file; facts change only through the facts API "
                "(`fsmem facts keep|edit|forget`), not by {doing}; you may read and search them".replace(
                    "{doing}", doing
                )
            )
        if role.is_level_folder or path in ("", layout.AGENTS_DIR):
            raise Protected(
                f"{path or '/'} is the place of a level folder (agents/ holds only agent folders, "
                "routines/ only routine folders); only the harness creates, renames or deletes those. "
                "Put the file in an existing agent's or routine's folder, or in a project topic folder"
            )
        if role.agent_folder and not self.drive.is_dir(role.agent_folder):
            raise Protected(
                f"there is no agent folder {role.agent_folder}; agents are created by the harness, so "
                "write to an existing agent's folder or to a project file"
            )
        if role.routine_folder and not self.drive.is_dir(role.routine_folder):
            raise Protected(
                f"there is no routine folder {role.routine_folder}; routines are created by the harness, "
                "so write to an existing routine's folder"
            )
        return role

    def _holds_levels(self, folder: str) -> bool:
        """Whether a folder is, or holds, a level folder or top file (agents/, routines/, ...)."""
        if folder in ("", layout.AGENTS_DIR) or layout.is_fact_path(folder):
            return True
        role = layout.role_of(folder)
        if role.is_level_folder or folder.endswith("/" + layout.ROUTINES_DIR) and role.agent_folder:
            return True
        return False

    # ---- read -------------------------------------------------------------------------------

    def _read(self, request: Read) -> dict[str, Any]:
        path = self._path(request.path)
        if path == "" or self.drive.is_dir(path):
            levels = self._listing(path)
            entries = [
                render.entry_data(entry, [render.entry_data(child, None) for child in children])
                for entry, children in levels
            ]
            return {"ok": True, "path": path, "text": render.tree(path, levels), "entries": entries}
        # A file placed by hand may be any size: shown whole only up to the cap; a line range of a
        # bigger one is still shown (the model asked for those lines), itself capped below.
        cap = READ_CAP_FACTOR * self.memory.settings.max_file_bytes
        ranged = request.start_line is not None or request.end_line is not None
        data = self.drive.read(path, limit=None if ranged else cap)
        if data is None:
            # The run has now seen that the file is gone: it may make it anew without a conflict.
            self.seen.pop(path, None)
            raise NotFound(f'there is no file {path!r}; read the folder "/" to see what exists')
        version = version_of(data)
        # Seen even when it cannot be shown: the refusal below says to write it whole, which needs it.
        self.mark_seen(path, version)
        skill_rules.note_use(self, path)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise BadRequest(
                f"{path} is not UTF-8 text (edited outside fsmem?), so it cannot be shown; write it whole "
                "with content to replace it (its bytes stay in the versions kept)"
            ) from error
        info = self.drive.info(path)
        view = render.file_view(
            path, text, version, info.modified if info else 0.0, request.start_line, request.end_line
        )
        if len(view) > cap:
            raise TooLarge(
                f"lines {request.start_line or 1}-{request.end_line or 'end'} of {path} come to "
                f"{len(view):,} characters, more than the {cap:,} a read shows; ask for fewer lines"
            )
        return render.file_result(path, version, text, view)

    def _listing(self, path: str) -> list[tuple[Entry, list[Entry]]]:
        levels = []
        for entry in self.drive.entries(path):
            children = self.drive.entries(entry.path) if entry.is_dir else []
            levels.append((entry, children))
        return levels

    # ---- write ------------------------------------------------------------------------------

    def _write(self, request: Write) -> dict[str, Any]:
        # call() checks this shape against the schema; a typed Write given to execute() is checked here.
        brought = request.content if request.content is not None else request.new_text
        if brought is None or (request.content is None and request.old_text is None):
            raise BadRequest("write takes either content, or old_text with new_text (not both)")
        path = self._path(request.path)
        ensure_memory_file(path)
        self._check_writable(path, "writing")
        self._refuse_secret_path(path)
        if self.drive.is_dir(path):
            raise Exists(f"{path} is a folder; write to a file inside it")
        with self.drive.change("write", self.thread_id) as tx:
            before = tx.read(path)
            if before is not None and request.create:
                raise Exists(f"{path} already exists; nothing was written. Choose another path, or change it")
            if before is not None:
                self._check_version(path, before, request.expected_version, "write")
            elif request.expected_version or path in self.seen:
                raise self._changed_since(path, request.expected_version or self.seen[path], None)
            whole = request.content is not None and (request.literal or not has_markers(request.content))
            before_text = None if before is None else file_text(before, path, lenient=whole)
            if not whole:  # a merge refusal names lines: the lines the call brings are checked before it
                self._refuse_secret(path, find_secret(added_lines(before_text or "", brought)))
            after_text = self._new_text(path, before_text, request)
            after = self._checked_bytes(path, before_text or "", after_text)
            if before is not None and after == before:
                version = version_of(before)
                self.mark_seen(path, version)
                return render.file_result(
                    path,
                    version,
                    after_text,
                    f"{path} already holds exactly this (version {version}); nothing changed.",
                )
            in_skill = skill_rules.check_write(self, path, before_text, after_text)  # a review patches skills
            if self.review and (self.only_proposals or (before is not None and not in_skill)):
                from fsmem._core.review import only_adds, unified_diff  # review mode only: not loaded to search

                if self.only_proposals or not only_adds(before_text or "", after_text):
                    base = {path: None if before is None else version_of(before)}
                    verb = "create" if before is None else "change"
                    raise _Deferred(f"{verb} {path}", base, unified_diff(path, before_text or "", after_text))
            version = tx.write(path, after)
            hand = [edit for edit in tx.hand_edits if edit.path == path and edit.version]
        self.mark_seen(path, version)
        line = render.first_difference(before_text or "", after_text)
        verb = "Created" if before is None else "Wrote"
        text = (
            f"{verb} {path} (version {version}, {render.lines_count(len(after_text.splitlines()))}). "
            f"Around the change:\n{render.excerpt(after_text, line)}"
        )
        if request.old_text is not None and before_text is not None:  # where the replaced text began
            line = before_text[: before_text.find(request.old_text)].count("\n") + 1
        result = render.file_result(path, version, after_text, text, line=line)
        if hand:  # a person saved the file while this write was made: their text is kept, not lost
            kept = hand[-1].version
            result["hand_edit_kept"] = hand[-1].to_dict()
            result["text"] = (
                f"{text}\nA person saved {path} by hand while this write was being made; "
                f"their text is kept as version {kept} in the file's history, not in the "
                f"file (`fsmem revert {path} {kept}` brings it back). Tell them, or read "
                "their version and fold it in."
            )
        return result

    def _new_text(self, path: str, before: str | None, request: Write) -> str:
        if request.content is not None:
            if request.literal or not has_markers(request.content):
                return request.content
            if before is None:
                raise EditUnplaced(
                    f"{path} does not exist yet, so <!-- ... --> markers have nothing to stand for; "
                    "write the whole content without markers"
                )
            return merge_markers(before, request.content)
        if before is None:
            raise NotFound(f"there is no file {path!r} to replace text in; write it whole with content")
        assert request.old_text is not None and request.new_text is not None  # _write checked the shape
        return replace_exact(before, request.old_text, request.new_text)

    def _checked_bytes(self, path: str, before: str, after: str) -> bytes:
        try:
            data = after.encode("utf-8")
        except UnicodeEncodeError as error:
            raise BadRequest(
                "the content is not valid UTF-8 text (it holds a lone surrogate); send plain text"
            ) from error
        if b"\0" in data:  # a NUL is what marks a binary file; memory is text, whatever its name
            raise BadRequest(
                f"the content for {path} holds a NUL character, so it is binary, not text; "
                "memory files are plain text: send the text without it"
            )
        limit = self.memory.settings.max_file_bytes
        if len(data) > limit:
            raise TooLarge(
                f"{path} would be {len(data):,} bytes; the limit is {limit:,}. Keep the file short: move "
                "details into topic files and leave a pointer here"
            )
        # Each change with the unchanged lines around it, not the new lines alone: a secret may
        # straddle a line the file holds and a new one.
        self._refuse_secret(path, find_brought_secret(before, after))
        return data

    @staticmethod
    def _refuse_secret(path: str, kind: str | None) -> None:
        if kind is not None:
            raise Sensitive(
                f"the change to {path} looks like it holds {kind}; secrets never go into memory. "
                "Nothing was written: remove it (say where the secret is kept instead) and write again"
            )

    @staticmethod
    def _refuse_secret_path(path: str) -> None:
        """A path is stored too (file name, log, versions/); it is never repeated back."""
        kind = find_secret(path.replace("/", " ").replace(".", " "))
        if kind is not None:
            raise Sensitive(
                f"the path looks like it holds {kind}; secrets never go into memory, not even in a "
                "file name. Nothing was written: choose a plain descriptive name"
            )

    # ---- rename -----------------------------------------------------------------------------

    def _rename(self, request: Rename) -> dict[str, Any]:
        source = self._path(request.path)
        destination = self._path(request.new_path)
        if source == destination:
            raise BadRequest("path and new_path are the same; give a different new_path")
        if layout.is_fact_path(source) or layout.is_fact_path(destination):
            raise Protected("fact files change only through the facts API (`fsmem facts ...`), not by renaming")
        for end, label in ((source, "path"), (destination, "new_path")):
            if self._holds_levels(end):
                raise Protected(f"{label} {end or '/'} is, or holds, a level folder; only the harness moves those")
            if layout.role_of(end).is_top_file:
                raise Protected(f"{end} is a level's top file; it cannot be renamed (edit it instead)")
        source_is_dir = self.drive.is_dir(source)
        if source_is_dir and self._contains_levels(source):
            raise Protected(f"{source} holds level folders; only the harness moves those")
        if destination.startswith(source + "/"):
            raise BadRequest(f"cannot move {source} into itself")
        if not source_is_dir:
            ensure_memory_file(destination)
        self._check_writable(destination, "renaming")
        self._refuse_secret_path(destination)
        with self.drive.change("rename", self.thread_id) as tx:
            if source_is_dir:
                tx.lock_folder()  # first: what is checked below cannot change before the move
                self._check_folder_seen(tx, source)
            else:
                data = tx.read(source)
                if data is None:
                    raise NotFound(f"there is no file or folder {source!r}")
                self._check_version(source, data, request.expected_version, "rename")
            self.drive.check_free(destination, "new_path")
            if self.review:
                skill_rules.refuse_removal(self, source)
                base: dict[str, str | None] = (
                    {e.path: version_of(self.drive.read(e.path) or b"") for e in self.drive.walk_files(source)}
                    if source_is_dir
                    else {source: version_of(data)}
                )
                raise _Deferred(f"rename {source} to {destination}", base, folder=source if source_is_dir else None)
            # every check passed: only now ask the index who links here (a refused rename touches nothing)
            moved = [e.path for e in self.drive.walk_files(source)] if source_is_dir else [source]
            relinked = rename_plan(self.memory, source, destination, moved).texts(tx, self.drive)
            tx.move(source, destination)
            for path, data in relinked.items():  # links that led to what moved, or from it, lead there still
                tx.write(path, data)
        for old in [p for p in self.seen if p == source or p.startswith(source + "/")]:
            self.seen[destination + old[len(source) :]] = self.seen.pop(old)
        for path, data in relinked.items():
            if path in self.seen:
                self.seen[path] = version_of(data)
        result: dict[str, Any] = {"ok": True, "path": destination, "text": f"Renamed {source} to {destination}."}
        if relinked:
            result["relinked"] = sorted(relinked)
            result["text"] += f" Links rewritten so they still lead there: {', '.join(sorted(relinked))}."
        return result

    def _contains_levels(self, folder: str) -> bool:
        return any(layout.role_of(entry.path).is_top_file for entry in self.drive.walk_files(folder)) or any(
            e.is_dir and self._holds_levels(e.path) for e in self.drive.entries(folder)
        )

    def _check_folder_seen(self, tx: StoreChange, folder: str) -> None:
        """Files in a folder that this run saw must still be as it saw them (read in the change,
        after ``tx.lock_folder()``: nothing committed meanwhile goes unchecked)."""
        for path, seen_version in list(self.seen.items()):
            if path.startswith(folder + "/"):
                data = tx.read(path)
                if data is not None and version_of(data) != seen_version:
                    raise self._changed_since(path, seen_version, version_of(data))

    # ---- delete -----------------------------------------------------------------------------

    def _delete(self, request: Delete) -> dict[str, Any]:
        path = self._path(request.path)
        if self._holds_levels(path):
            raise Protected(f"{path or '/'} is, or holds, a level folder; only the harness deletes those")
        if layout.is_fact_path(path):
            raise Protected(f"{path} is a fact file; forget facts with `fsmem facts forget ID`")
        if self.drive.is_dir(path):
            if self._contains_levels(path):
                raise Protected(f"{path} holds level folders; only the harness deletes those")
            return self._delete_folder(path)
        role = layout.role_of(path)
        with self.drive.change("delete", self.thread_id) as tx:
            data = tx.read(path)
            if data is None:
                raise NotFound(f'there is no file or folder {path!r}; read "/" to see what exists')
            self._check_version(path, data, request.expected_version, "delete")
            held = {path: data.decode("utf-8", errors="replace")}
            if self.review:
                skill_rules.refuse_removal(self, path)
                from fsmem._core.review import unified_diff

                raise _Deferred(
                    f"{'empty' if role.is_top_file else 'delete'} {path}",
                    {path: version_of(data)},
                    unified_diff(path, held[path], ""),
                )
            if role.is_top_file:
                version = tx.write(path, b"")
            else:
                tx.delete(path)
        if role.is_top_file:
            self.mark_seen(path, version)
            text = (
                f"{path} is a level's top file, so it was emptied, not removed (version {version}). "
                f"It held:\n{held[path]}"
            )
            return {"ok": True, "path": path, "version": version, "held": held, "text": text}
        self.seen.pop(path, None)
        return {
            "ok": True,
            "path": path,
            "held": held,
            "text": f"Deleted {path}. It held (write it back to undo):\n{held[path]}",
        }

    def _delete_folder(self, folder: str) -> dict[str, Any]:
        with self.drive.change("delete", self.thread_id) as tx:
            tx.lock_folder()  # first: reading the files then locking the folder would deadlock two deletes
            self._check_folder_seen(tx, folder)
            held = {}
            for entry in self.drive.walk_files(folder):
                data = tx.read(entry.path)
                if data is not None:
                    held[entry.path] = data.decode("utf-8", errors="replace")
            if self.review:
                skill_rules.refuse_removal(self, folder)
                raise _Deferred(
                    f"delete the folder {folder} ({len(held)} files)",
                    {p: version_of(c.encode("utf-8")) for p, c in held.items()},
                    folder=folder,
                )
            tx.delete(folder)
        for path in [p for p in self.seen if p.startswith(folder + "/")]:
            del self.seen[path]
        listing = "\n".join(f"--- {p}\n{c}" for p, c in held.items()) or "(no files)"
        return {
            "ok": True,
            "path": folder,
            "held": held,
            "text": f"Deleted the folder {folder} and its {len(held)} files. They held:\n{listing}",
        }

    def _propose(self, request: Request, deferred: _Deferred) -> dict[str, Any]:
        from fsmem._memory import proposals as _proposals

        proposal = ChangeProposal(
            id=_proposals.new_id(),
            made_at=now_iso(),
            thread=self.thread_id,
            scope=self.scope.to_text(),
            request=request_to_dict(request),
            base=deferred.base,
            summary=deferred.summary,
            diff=deferred.diff,
            extra={"folder": deferred.folder} if deferred.folder else {},
        )
        _proposals.save(self.memory, proposal)
        return {
            "ok": True,
            "proposal": proposal.id,
            "text": (
                f"Proposed {proposal.id}: {deferred.summary}. It replaces or removes what is written, "
                "so it waits for a person to approve it; nothing changed yet. Additions apply at once."
            ),
        }

    # ---- search -----------------------------------------------------------------------------

    def _search(self, request: Search) -> dict[str, Any]:
        settings = self.memory.settings
        limit = min(request.limit or settings.search_limit, settings.max_search_limit)
        for name, globs in (("include", request.include), ("exclude", request.exclude)):
            for glob in globs:
                _check_glob(name, glob)
        found = self.memory.search(
            request.query,
            regex=request.regex,
            include=request.include or None,
            exclude=request.exclude or None,
            since=request.since,
            limit=limit,
        )
        return {
            "ok": True,
            "text": render.hits(found, request.query),
            "hits": [hit.to_dict() for hit in found],
            "meaning": found.meaning,
        }


def _check_glob(name: str, glob: str) -> None:
    """A glob names paths, so it obeys the path rules: no "..", no hidden or state folders, no
    invisible characters. Nothing outside them could match anyway; saying so beats "No match"."""
    try:
        normalize_path(glob)
    except BadPath as error:
        raise BadPath(f"The {name} glob is not a memory path: {error.message}") from error
