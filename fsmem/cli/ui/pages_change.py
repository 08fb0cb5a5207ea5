"""The pages that change memory: edit, create, rename, delete — each one call of the tool, as a person.

An edit is saved against the version the page showed. When the file changed in between, nothing
is written: the page says who changed it and when, shows their text beside the person's, and keeps
the person's text in the form (saving again then goes over theirs on purpose; theirs stays in the
file's versions). A refusal of the tool (a secret, a level's file, a path outside the rules) is
shown with the person's text still in the form.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from fsmem._core.paths import normalize_path
from fsmem._core.requests import Delete, Rename, Write
from fsmem._core.review import unified_diff
from fsmem._errors import Conflict, Exists, FsmemError, NotFound, NotRead, RequestError
from fsmem._memory import browse
from fsmem.cli.ui.site import Site, arg, field, go
from fsmem.cli.ui.text import diff_rows


def _to_file(path: str, **more: str) -> str:
    from urllib.parse import urlencode

    return "/files?" + urlencode({"path": path, **more})


def edit_form(site: Site, request: Request) -> Response:
    path = arg(request, "path")
    try:
        shown = site.call({"command": "read", "path": path})
    except NotFound:  # a new file: named as the tool will name it
        return site.page(
            "edit.html", path=normalize_path(path), version="", content="", new=True, problem=None, conflict=None
        )
    if "entries" in shown:
        return go(_to_file(shown["path"]))
    return site.page(
        "edit.html",
        path=shown["path"],
        version=shown["version"],
        content=shown["content"],
        new=False,
        problem=None,
        conflict=None,
    )


def new_form(site: Site, request: Request) -> Response:
    folder = arg(request, "folder").strip("/")
    return site.page(
        "edit.html", path=f"{folder}/" if folder else "", version="", content="", new=True, problem=None, conflict=None
    )


def save(site: Site, request: Request, form: dict[str, str]) -> Response:
    path, base = field(form, "path").strip(), field(form, "version")
    # A browser sends a textarea's lines ended with CR LF whatever the file held: memory keeps LF.
    text = field(form, "content").replace("\r\n", "\n")
    write = Write(path, content=text, expected_version=base or None, literal=True, create=not base)
    try:
        result = site.run().execute(write)
    except (Conflict, NotRead, Exists) as error:
        return _conflict(site, path, text, error)
    except RequestError as error:  # a secret, a level's file, a bad path, too large: their text stays
        return site.page(
            "edit.html",
            400 if error.code != "NOT_FOUND" else 404,
            path=path,
            version=base,
            content=text,
            new=not base,
            problem=error,
            conflict=None,
        )
    kept = result.get("hand_edit_kept")
    if kept:  # a person's save by hand landed inside this one: theirs is kept as a version
        return go(_to_file(result["path"], kept=str(kept["version"])))
    return go(_to_file(result["path"], saved=result["version"]))


def _conflict(site: Site, path: str, text: str, error: FsmemError) -> Response:
    """Their change, who made it and when, beside the person's text (kept in the form)."""
    try:
        now = site.call({"command": "read", "path": path})
        current, version = now.get("content", ""), now.get("version", "")
    except NotFound:
        current, version = "", ""
    else:
        if "entries" in now:  # a folder is there, not someone's text: a refusal like any other
            return site.page(
                "edit.html", 409, path=path, version="", content=text, new=True, problem=error, conflict=None
            )
    changed_by: Any = error.details.get("changed_by")
    if changed_by is None and version:
        last = browse.last_change(site.memory, path)
        if last is not None and last.after == version:
            changed_by = {"thread": last.thread, "command": last.command, "time": last.time}
    conflict = {
        "changed_by": changed_by,
        "theirs": current,
        "gone": not version,
        "diff": diff_rows(unified_diff(path, current, text)),
    }
    return site.page(
        "edit.html", 409, path=path, version=version, content=text, new=not version, problem=error, conflict=conflict
    )


def rename(site: Site, request: Request, form: dict[str, str]) -> Response:
    path, new_path = field(form, "path"), field(form, "new_path").strip()
    result = site.run().execute(Rename(path, new_path, expected_version=field(form, "version") or None))
    return go(_to_file(result["path"]))


def delete_form(site: Site, request: Request) -> Response:
    """What the file (or folder) holds, before a person says delete."""
    shown = site.call({"command": "read", "path": arg(request, "path")})
    return site.page(
        "delete.html",
        path=shown["path"],
        version=shown.get("version", ""),
        content=shown.get("content"),
        entries=shown.get("entries"),
        held=None,
    )


def delete(site: Site, request: Request, form: dict[str, str]) -> Response:
    result = site.run().execute(Delete(field(form, "path"), expected_version=field(form, "version") or None))
    return site.page(
        "delete.html",
        path=result["path"],
        version=result.get("version", ""),
        content=None,
        entries=None,
        held=result.get("held", {}),
        emptied="version" in result,
    )
