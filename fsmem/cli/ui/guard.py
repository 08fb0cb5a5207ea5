"""Who may use the page, and what the browser may do with it: the token, the cookie, the CSRF check.

Every request needs the token: the address ``fsmem ui`` prints carries it once (``?token=``); the
first visit trades it for an HttpOnly, SameSite=Strict cookie and is sent on without it (so it stays
out of the browser's history). A request whose Host is not the page's own is refused (a page
elsewhere cannot reach this server through a name it controls). A change is a POST whose form
carries a CSRF value only pages of this server hold, from the page's own origin. Every answer
forbids scripts, frames and other origins outright (the page is forms and links, no script).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# No script at all, no inline style, nothing from another origin; forms post only here.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),  # no-referrer would make a browser send "Origin: null"
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]

REFUSED_PAGE = "<!doctype html><meta charset=utf-8><title>fsmem: refused</title><h1>{title}</h1><p>{text}</p>"


def new_token() -> str:
    return secrets.token_urlsafe(24)


@dataclass(frozen=True)
class Keys:
    """The token a person opens the page with, and what it grants: the cookie and the CSRF value."""

    token: str
    port: int
    hosts: frozenset[str] | None  # Host headers this server answers to ("127.0.0.1:8765", ...); None: any
    session: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    @property
    def cookie(self) -> str:
        # Cookies ignore ports: two pages on one host keep one cookie each by their port.
        return f"fsmem-ui-{self.port}"

    @property
    def csrf(self) -> str:
        return hmac.new(self.session.encode(), b"csrf", hashlib.sha256).hexdigest()

    def token_ok(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())

    def session_ok(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.session.encode())

    def csrf_ok(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.csrf.encode())

    def host_ok(self, host: str) -> bool:
        return self.hosts is None or host in self.hosts

    def origin_ok(self, origin: str, host: str) -> bool:
        """The page's own origin: the address it was reached by, which the Host check vouched for."""
        return origin == f"http://{host}"


def loopback_hosts(port: int) -> frozenset[str]:
    return frozenset({f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"})


class Guard:
    """ASGI middleware in front of the page: refuses what has no token, sets the cookie, adds the headers."""

    def __init__(self, app: ASGIApp, keys: Keys) -> None:
        self.app, self.keys = app, keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        if not self.keys.host_ok(headers.get("host", "")):
            await _answer(send, 421, "Wrong address", "This server answers only to the address fsmem ui printed.")
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = dict(query).get("token")
        if given is not None:
            if not self.keys.token_ok(given):
                await _answer(send, 403, "Wrong token", "Open the address fsmem ui printed, with its token.")
                return
            # Trade the token for the cookie and go on to the same page without it in the address.
            rest = urlencode([(name, value) for name, value in query if name != "token"])
            location = scope.get("path", "/") + (f"?{rest}" if rest else "")
            cookie = f"{self.keys.cookie}={self.keys.session}; HttpOnly; SameSite=Strict; Path=/"
            await _answer(
                send, 303, "Signed in", "Go on.", [(b"location", location.encode()), (b"set-cookie", cookie.encode())]
            )
            return
        if not self.keys.session_ok(_cookie(headers.get("cookie", ""), self.keys.cookie)):
            await _answer(
                send, 403, "This page needs its token", "Open the address fsmem ui printed (it ends with ?token=…)."
            )
            return
        if scope["method"] not in ("GET", "HEAD", "POST"):
            await _answer(send, 405, "Not allowed", "The page only reads (GET) and changes by its forms (POST).")
            return
        if scope["method"] == "POST" and not self._same_origin(headers):
            await _answer(send, 403, "Refused", "A change must come from a form of this page.")
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _same_origin(self, headers: dict[str, str]) -> bool:
        """A POST from another site is refused even before its CSRF value is looked at."""
        if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            return False
        origin = headers.get("origin")
        return origin is None or self.keys.origin_ok(origin, headers.get("host", ""))


def _cookie(header: str, name: str) -> str | None:
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


async def _answer(
    send: Send, status: int, title: str, text: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = REFUSED_PAGE.format(title=title, text=text).encode()
    headers = [(b"content-type", b"text/html; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": [*headers, *(extra or []), *HEADERS]})
    await send({"type": "http.response.body", "body": body})
