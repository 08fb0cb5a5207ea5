"""The page as an ASGI app, and serving it: ``build_app(memory, keys)``, ``serve(...)``.

Each route gathers its query or form (a POST's CSRF value checked first), then builds its page in
a worker thread: ``Memory`` is synchronous and safe to share between threads.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from importlib import resources

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from fsmem._errors import FsmemError
from fsmem._memory.memory import Memory
from fsmem.cli.ui import pages_change, pages_history, pages_read
from fsmem.cli.ui.guard import Guard, Keys
from fsmem.cli.ui.site import Site

Reader = Callable[[Site, Request], Response]
Changer = Callable[[Site, Request, dict[str, str]], Response]

MAX_FORM_BYTES = 1024 * 1024  # a memory file is 32 KiB by default; a form is never more than a few


def _shown(site: Site, page: Callable[..., Response], *args: object) -> Response:
    """The page, or the refusal that stopped it as a page of its own (nothing was changed)."""
    try:
        return page(site, *args)
    except FsmemError as error:
        return site.refused(error)


def _reading(site: Site, page: Reader) -> Callable[[Request], object]:
    async def endpoint(request: Request) -> Response:
        return await run_in_threadpool(_shown, site, page, request)

    return endpoint


def _changing(site: Site, page: Changer) -> Callable[[Request], object]:
    async def endpoint(request: Request) -> Response:
        if int(request.headers.get("content-length") or 0) > MAX_FORM_BYTES:
            return HTMLResponse("<!doctype html><title>fsmem: refused</title><p>That form is too large.", 413)
        async with request.form(max_files=0, max_fields=20) as received:
            form = {name: value for name, value in received.items() if isinstance(value, str)}
        if not site.keys.csrf_ok(form.get("csrf")):
            return HTMLResponse(
                "<!doctype html><title>fsmem: refused</title><p>This form is not from this page (its CSRF value "
                "is missing or wrong); reload the page and try again.",
                403,
            )
        return await run_in_threadpool(_shown, site, page, request, form)

    return endpoint


def _stylesheet(request: Request) -> Response:
    css = (resources.files("fsmem.cli.ui") / "static" / "ui.css").read_bytes()
    return Response(css, media_type="text/css")


def build_app(memory: Memory, keys: Keys) -> Guard:
    """The page for ``memory``, behind the guard that holds ``keys``."""
    site = Site(memory, keys)
    read, change = (lambda page: _reading(site, page)), (lambda page: _changing(site, page))
    routes = [
        Route("/", read(pages_read.home)),
        Route("/files", read(pages_read.files)),
        Route("/scope", read(pages_read.scope)),
        Route("/search", read(pages_read.search)),
        Route("/facts", read(pages_read.facts)),
        Route("/edit", read(pages_change.edit_form)),
        Route("/edit", change(pages_change.save), methods=["POST"]),
        Route("/new", read(pages_change.new_form)),
        Route("/new", change(pages_change.save), methods=["POST"]),
        Route("/rename", change(pages_change.rename), methods=["POST"]),
        Route("/delete", read(pages_change.delete_form)),
        Route("/delete", change(pages_change.delete), methods=["POST"]),
        Route("/history", read(pages_history.history)),
        Route("/versions", read(pages_history.versions)),
        Route("/revert", change(pages_history.revert), methods=["POST"]),
        Route("/proposals", read(pages_history.proposals)),
        Route("/proposals/approve", change(pages_history.approve), methods=["POST"]),
        Route("/proposals/discard", change(pages_history.discard), methods=["POST"]),
        Route("/static/ui.css", _stylesheet),
    ]
    return Guard(Starlette(routes=routes), keys)


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before the address is printed (port 0: any free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(app: Guard, sock: socket.socket) -> None:
    """Serve until interrupted (Ctrl-C)."""
    import uvicorn

    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", server_header=False)
    uvicorn.Server(config).run(sockets=[sock])
