"""What every page shares: the memory, the templates (autoescaped), the person's runs of the tool,
and how a refusal becomes a page."""

from __future__ import annotations

from importlib import resources
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from fsmem._errors import FsmemError, from_code
from fsmem._memory.memory import Memory
from fsmem._memory.tool import Run
from fsmem.cli.ui.guard import Keys
from fsmem.cli.ui.text import filters

# The thread the log names for every change made on the page: a person's, through the page.
THREAD = "ui"

STATUS_BY_CODE = {"NOT_FOUND": 404, "CONFLICT": 409, "NOT_READ": 409, "EXISTS": 409, "BUSY": 503, "STORAGE": 503}


class Site:
    """One project's page: its memory, the keys the guard checks, the templates."""

    def __init__(self, memory: Memory, keys: Keys) -> None:
        self.memory, self.keys = memory, keys
        folder = resources.files("fsmem.cli.ui") / "templates"
        self.templates = Environment(
            loader=FileSystemLoader(str(folder)),
            autoescape=True,  # every value is escaped unless a renderer marked it safe (text.render_markdown)
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.templates.filters.update(filters())

    def run(self) -> Run:
        """A run of the tool for one request; the version a page showed comes back with its form."""
        return self.memory.run(thread_id=THREAD)

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        """One tool call; a refusal raises, to become the page's error (or be caught by the page)."""
        result = self.run().call(request)
        if not result["ok"]:
            raise from_code(**result["error"])
        return result

    def page(self, name: str, status: int = 200, **values: Any) -> HTMLResponse:
        template = self.templates.get_template(name)
        html = template.render(project=self.memory.name, csrf=self.keys.csrf, **values)
        return HTMLResponse(html, status_code=status)

    def refused(self, error: FsmemError) -> HTMLResponse:
        return self.page("refused.html", STATUS_BY_CODE.get(error.code, 400), error=error)


def arg(request: Request, name: str, default: str = "") -> str:
    return request.query_params.get(name, default)


def field(form: dict[str, str], name: str, default: str = "") -> str:
    return form.get(name, default)


def go(location: str) -> Response:
    """After a change, on to the page that shows it (a reload does not post it again)."""
    return RedirectResponse(location, status_code=303)
