"""History and review: the log, a file's kept versions with a diff between any two, revert, proposals.

A revert is offered against the version the page showed: when the file changed since, the page
says so and changes nothing (what it holds now would be kept as a version anyway, but a person
should see it before choosing). A proposal is shown against the files as they are now; approving
one whose files changed is refused by ``Memory.approve``, with its reason.
"""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from fsmem._core.review import unified_diff
from fsmem._errors import Conflict, FsmemError, NotFound
from fsmem._memory import browse
from fsmem.cli.ui.site import THREAD, Site, arg, field, go
from fsmem.cli.ui.text import DiffRow, diff_rows

LOG_LIMIT = 200


def history(site: Site, request: Request) -> Response:
    path, thread = arg(request, "path").strip(), arg(request, "thread").strip()
    entries = browse.changes(site.memory, path=path or None, thread=thread or None, limit=LOG_LIMIT)
    return site.page("history.html", path=path, thread=thread, entries=entries, limit=LOG_LIMIT)


def versions(site: Site, request: Request) -> Response:
    """The file now and each kept version; ``a`` and ``b`` (versions) chosen for a diff."""
    path = arg(request, "path")
    try:
        kept = site.memory.versions(path)
        now = site.call({"command": "read", "path": path})
    except NotFound:
        now = {}
    current = now.get("version", "")
    choices = ([current] if current else []) + [v.version for v in kept]
    a = arg(request, "a") or (choices[1] if len(choices) > 1 else "")
    b = arg(request, "b") or (choices[0] if choices else "")
    diff = None
    if a and b:
        before, after = browse.kept_text(site.memory, path, a), browse.kept_text(site.memory, path, b)
        diff = diff_rows(unified_diff(path, before, after))
    return site.page("versions.html", path=path, current=current, kept=kept, a=a, b=b, diff=diff)


def revert(site: Site, request: Request, form: dict[str, str]) -> Response:
    path, version, shown = field(form, "path"), field(form, "version"), field(form, "current")
    try:
        now = site.call({"command": "read", "path": path})
        current = now.get("version", "")
    except NotFound:
        current = ""
    if current != shown:
        last = browse.last_change(site.memory, path)
        who = f" by thread {last.thread} ({last.command}, {last.time})" if last and last.after == current else ""
        changed = Conflict(
            f"{path} changed since this page showed it (it showed version {shown or 'none'}; it is now "
            f"{current or 'gone'}){who}. Nothing was reverted: look at its versions again, then choose."
        )
        raise changed
    site.memory.revert(path, version, thread=THREAD)
    return go("/files?" + urlencode({"path": path, "reverted": version}))


def _rows(site: Site) -> list[tuple[browse.ProposalNow, list[DiffRow], dict[str, list[DiffRow] | None]]]:
    """Each open proposal against the files now, its diffs as rows."""
    rows = []
    for proposal in browse.open_proposals(site.memory)[0]:
        view = browse.against_now(site.memory, proposal)
        since = {path: None if diff is None else diff_rows(diff) for path, diff in view.since.items()}
        rows.append((view, diff_rows(view.diff), since))
    return rows


def proposals(site: Site, request: Request) -> Response:
    return site.page(
        "proposals.html",
        items=_rows(site),
        broken=browse.open_proposals(site.memory)[1],
        refusal=None,
        done=arg(request, "done"),
    )


def approve(site: Site, request: Request, form: dict[str, str]) -> Response:
    proposal_id = field(form, "id")
    try:
        site.memory.approve(proposal_id)
    except FsmemError as error:
        return site.page(
            "proposals.html",
            409,
            items=_rows(site),
            broken=browse.open_proposals(site.memory)[1],
            refusal=error,
            done="",
        )
    return go("/proposals?" + urlencode({"done": f"approved {proposal_id}"}))


def discard(site: Site, request: Request, form: dict[str, str]) -> Response:
    proposal_id = field(form, "id")
    site.memory.discard(proposal_id)
    return go("/proposals?" + urlencode({"done": f"discarded {proposal_id}"}))
