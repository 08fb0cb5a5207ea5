"""``fsmem ui``'s guard through Starlette's TestClient, asserted on the HTML: the token, the cookie,
the Host, CSRF and origin checks, the headers, the tool's path jail, hostile memory rendered inert,
and the command itself (a real process, its address, its refusals).
"""

from __future__ import annotations

import os
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

pytest.importorskip("starlette")

from starlette.testclient import TestClient  # noqa: E402

import fsmem  # noqa: E402
from fsmem.cli.ui.app import build_app  # noqa: E402
from fsmem.cli.ui.guard import Keys  # noqa: E402
from tests.faces import ui_fixtures  # noqa: E402
from tests.faces.ui_helpers import (  # noqa: E402
    HOST,
    HOSTILE,
    TOKEN,
    csrf,
    csrf_of,
    form_value,
    page,
    post,
    propose,
    write_by_hand,
)

# The page's fixtures, shared by its two test modules (a conftest here would shadow the suite's own).
project, memory, keys, anonymous, client = (
    ui_fixtures.project, ui_fixtures.memory, ui_fixtures.keys, ui_fixtures.anonymous, ui_fixtures.client
)

# ---- the guard ------------------------------------------------------------------------------------


def test_without_the_token_every_page_is_refused_and_shows_no_memory(anonymous):
    for url in ("/", "/files?path=brand.md", "/search?q=brand", "/static/ui.css", "/history"):
        answer = anonymous.get(url)
        assert answer.status_code == 403, url
        assert "Field Notes" not in answer.text and "needs its token" in answer.text


def test_a_wrong_token_is_refused_and_sets_no_cookie(anonymous):
    answer = anonymous.get("/?token=guess", follow_redirects=False)
    assert answer.status_code == 403 and "set-cookie" not in answer.headers
    assert anonymous.get("/").status_code == 403


def test_the_token_is_traded_for_a_strict_httponly_cookie_and_left_out_of_the_address(anonymous, keys):
    answer = anonymous.get(f"/files?path=brand.md&token={TOKEN}", follow_redirects=False)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/files?path=brand.md"
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith(f"{keys.cookie}=") and TOKEN not in cookie
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert "Field Notes" in anonymous.get("/files?path=brand.md").text


def test_a_cookie_of_another_session_is_refused(anonymous, keys):
    anonymous.cookies.set(keys.cookie, "not-the-session")
    assert anonymous.get("/").status_code == 403


def test_another_host_name_is_refused_even_with_the_cookie(client):
    # A page on a name its owner points at 127.0.0.1 (DNS rebinding) sends that name as Host.
    answer = client.get("/files?path=brand.md", headers={"host": "attacker.example:80"})
    assert answer.status_code == 421 and "Field Notes" not in answer.text


def test_a_page_on_every_address_answers_any_host_but_still_wants_the_token(memory):
    anywhere = TestClient(build_app(memory, Keys(TOKEN, 80, None)), base_url="http://my-laptop.lan:80")
    assert anywhere.get("/").status_code == 403
    assert anywhere.get(f"/?token={TOKEN}").status_code == 200
    token = csrf_of(anywhere.get("/files?path=brand.md").text)
    version = form_value(anywhere.get("/edit?path=brand.md").text, "version")
    data = {"path": "brand.md", "version": version, "content": "x\n", "csrf": token}
    assert anywhere.post("/edit", data=data, headers={"origin": "http://other.lan"}).status_code == 403
    assert anywhere.post("/edit", data=data, headers={"origin": "http://my-laptop.lan"}).status_code == 200


def test_every_answer_forbids_scripts_frames_and_other_origins(client):
    for url in ("/", "/files?path=brand.md", "/files?path=../x", "/static/ui.css"):
        headers = client.get(url).headers
        policy = headers["content-security-policy"]
        assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
        assert "script-src" not in policy and "unsafe" not in policy  # no script source at all
        assert headers["x-frame-options"] == "DENY" and headers["x-content-type-options"] == "nosniff"
        assert headers["referrer-policy"] == "same-origin"


def test_no_page_holds_a_script(client, memory):
    pid = propose(memory, "brand.md", "rye and ember", "rye")
    for url in (
        "/",
        "/files?path=",
        "/files?path=MEMORY.md",
        "/edit?path=MEMORY.md",
        "/history",
        "/facts",
        "/versions?path=MEMORY.md",
        "/proposals",
        "/search?q=brand",
        "/scope",
        "/delete?path=brand.md",
    ):
        text = page(client, url).lower()
        assert "<script" not in text, url
        assert not re.search(r"<[a-z]+[^>]*\son[a-z]+=", text), url
    assert pid


def test_a_change_without_the_csrf_value_changes_nothing(client, memory):
    before = memory.read("brand.md")
    version = form_value(page(client, "/edit?path=brand.md"), "version")
    answer = client.post("/edit", data={"path": "brand.md", "version": version, "content": "gone\n"})
    assert answer.status_code == 403 and "CSRF" in answer.text
    answer = client.post("/edit", data={"path": "brand.md", "version": version, "content": "x\n", "csrf": "0" * 64})
    assert answer.status_code == 403
    assert memory.read("brand.md") == before


def test_a_change_from_another_origin_is_refused_before_its_form_is_read(client, memory):
    token = csrf(client)
    version = form_value(page(client, "/edit?path=brand.md"), "version")
    data = {"path": "brand.md", "version": version, "content": "gone\n", "csrf": token}
    assert client.post("/edit", data=data, headers={"origin": "http://attacker.example"}).status_code == 403
    assert client.post("/edit", data=data, headers={"sec-fetch-site": "cross-site"}).status_code == 403
    assert "Field Notes" in memory.read("brand.md")
    assert client.post("/edit", data=data, headers={"origin": f"http://{HOST}"}).status_code == 200


def test_only_get_and_post_are_answered(client):
    assert client.put("/edit").status_code == 405
    assert client.delete("/files?path=brand.md").status_code == 405


def test_every_form_that_changes_carries_the_csrf_value(client, memory, keys):
    propose(memory, "brand.md", "rye and ember", "rye")
    for url in (
        "/files?path=brand.md",
        "/edit?path=brand.md",
        "/new?folder=seo",
        "/delete?path=brand.md",
        "/versions?path=MEMORY.md",
        "/proposals",
    ):
        text = page(client, url)
        for form in re.findall(r'<form[^>]*method="post"[^>]*>.*?</form>', text, flags=re.S):
            assert f'name="csrf" value="{keys.csrf}"' in form, (url, form)


# ---- the path jail --------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["../outside.md", ".fsmem/log.jsonl", ".fsmem", "seo/../../outside.md", "a/./b.md"])
def test_paths_outside_the_rules_are_refused(client, path, tmp_path):
    (tmp_path / "outside.md").write_text("SECRET OUTSIDE\n")
    for url in (f"/files?path={path}", f"/edit?path={path}", f"/versions?path={path}", f"/delete?path={path}"):
        text = client.get(url).text
        assert "SECRET OUTSIDE" not in text and '"time"' not in text and "root:" not in text, url
        assert "Refused" in text or "BAD_PATH" in text or "NOT_FOUND" in text, url


def test_an_absolute_path_names_a_file_of_the_root(client):
    shown = page(client, "/edit?path=/etc/passwd")
    assert form_value(shown, "path") == "etc/passwd" and "root:" not in shown


def test_a_symlink_out_of_the_root_is_not_followed(client, memory, tmp_path):
    (tmp_path / "outside.md").write_text("SECRET OUTSIDE\n")
    os.symlink(tmp_path / "outside.md", memory.root / "link.md")
    os.symlink(tmp_path, memory.root / "away")
    for url in ("/files?path=link.md", "/files?path=away/outside.md", "/edit?path=link.md", "/files?path=away"):
        answer = client.get(url)
        assert answer.status_code == 400 and "SECRET OUTSIDE" not in answer.text, url
        assert "BAD_PATH" in answer.text
    token = csrf(client)
    written = post(client, "/edit", {"path": "link.md", "version": "", "content": "x\n", "csrf": token}, 400)
    assert "BAD_PATH" in written.text
    assert (tmp_path / "outside.md").read_text() == "SECRET OUTSIDE\n"


def test_the_state_folder_is_never_listed(client):
    assert ".fsmem" not in page(client, "/files?path=")


# ---- hostile text is inert ------------------------------------------------------------------------


class _Elements(HTMLParser):
    """Every element a browser would build from the page, with its attributes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs)))


def _inert(text: str) -> None:
    """No element that runs or loads anything: no script, frame or image, no on* handler, no
    javascript:/data: address."""
    parser = _Elements()
    parser.feed(text)
    for tag, attrs in parser.found:
        assert tag not in ("script", "iframe", "img", "object", "embed", "svg"), (tag, attrs)
        assert not [name for name in attrs if name.startswith("on")], (tag, attrs)
        for name in ("href", "src", "action", "formaction"):
            value = (attrs.get(name) or "").strip().lower()
            assert not value.startswith(("javascript:", "data:", "vbscript:")), (tag, attrs)


def test_a_hostile_file_renders_as_text_everywhere(client, memory):
    write_by_hand(memory.root, "hostile.md", HOSTILE)
    shown = page(client, "/files?path=hostile.md")
    _inert(shown)
    assert "&lt;script&gt;document.title=" in shown  # shown as the text it is, in the rendered part and the source
    assert "[image: tracker" in shown and "198.51.100.7/pixel.png" in shown  # where it points, not loaded
    _inert(page(client, "/edit?path=hostile.md"))
    _inert(page(client, "/delete?path=hostile.md"))
    _inert(page(client, "/search?q=hostile"))
    token = csrf(client)
    version = form_value(page(client, "/edit?path=hostile.md"), "version")
    post(client, "/edit", {"path": "hostile.md", "version": version, "content": "calm\n", "csrf": token})
    _inert(page(client, "/versions?path=hostile.md"))  # the diff between the hostile text and the calm one
    _inert(page(client, "/history?path=hostile.md"))


def test_a_hostile_file_name_is_escaped(client, memory):
    name = '"><img src=x onerror=alert(1)>.md'
    write_by_hand(memory.root, name, "named\n")
    for url in ("/files?path=", f"/files?path={name}", "/history", "/search?q=named"):
        _inert(page(client, url))


def test_a_hostile_proposal_and_fact_are_inert(client, memory):
    propose(memory, "brand.md", "rye and ember", "<script>alert(1)</script><img src=x onerror=alert(2)>")
    memory.facts.keep("<b onmouseover=alert(1)>x</b>", "kind", "<script>alert(3)</script>")
    _inert(page(client, "/proposals"))
    _inert(page(client, "/facts"))


def test_relative_links_open_memory_files_and_outside_links_say_so(client, memory):
    write_by_hand(
        memory.root, "seo/links.md", "[titles](titles.md) [up](../brand.md#rules) [out](https://example.org/)\n"
    )
    shown = page(client, "/files?path=seo/links.md")
    assert 'href="/files?path=seo/titles.md"' in shown
    assert 'href="/files?path=brand.md#rules"' in shown
    assert 'href="https://example.org/" rel="noopener noreferrer nofollow"' in shown


def test_a_link_to_a_name_with_a_space_or_an_accent_opens_that_file(client, memory):
    write_by_hand(memory.root, "seo/café.md", "# Café\n")
    write_by_hand(memory.root, "seo/my notes.md", "# Notes\n")
    write_by_hand(memory.root, "seo/links.md", "[c](café.md) [n](<my notes.md>) [e](my%20notes.md)\n")
    shown = page(client, "/files?path=seo/links.md")
    links = re.findall(r'href="(/files\?path=[^"]+)"', shown)
    notes = "/files?path=seo/my%20notes.md"
    assert links[-3:] == ["/files?path=seo/caf%C3%A9.md", notes, notes]
    assert "Café" in page(client, links[-3])
    assert "Notes" in page(client, links[-2])


# ---- the face stays a face --------------------------------------------------------------------------


def test_the_page_never_reaches_for_a_store():
    package = Path(fsmem.__file__).parent / "cli" / "ui"
    for source in package.glob("*.py"):
        text = source.read_text(encoding="utf-8")
        assert ".drive" not in text and "fsmem._store" not in text, source.name


def test_outside_loopback_the_command_wants_a_token_of_its_own(root):
    from tests.conftest import invoke

    refused = invoke(root, "ui", "--host", "0.0.0.0")
    assert refused.exit_code == 2 and "--token" in refused.output
    short = invoke(root, "ui", "--token", "short")
    assert short.exit_code == 2 and "16 characters" in short.output


def test_a_port_in_use_is_a_setup_error(root):
    import socket

    from tests.conftest import invoke

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        busy = invoke(root, "ui", "--port", str(taken.getsockname()[1]))
    assert busy.exit_code == 2 and "cannot listen on 127.0.0.1" in busy.output and "another --port" in busy.output


def test_the_command_serves_on_loopback_prints_its_address_and_opens_it(root, tmp_path):
    """A real ``fsmem ui --open`` process: the address it prints is the one it opens ($BROWSER, as
    Python's webbrowser reads it), a request without the token is refused, the token signs in."""
    import http.client
    import subprocess
    import sys
    import time

    from tests.conftest import REPO

    opened = tmp_path / "opened"
    browser = tmp_path / "browser"
    browser.write_text(f"#!/bin/sh\nprintf '%s' \"$1\" > {opened}\n")
    browser.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    env.update(PYTHONPATH=str(REPO), BROWSER=f"{browser} %s")
    server = subprocess.Popen([sys.executable, "-m", "fsmem", "ui", "--root", str(root), "--open", "--json"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert server.stdout is not None
        import json

        printed = json.loads(server.stdout.readline())
        found = re.fullmatch(r"http://127\.0\.0\.1:(\d+)(/\?token=(\S+))", printed["url"])
        assert found, printed
        port, address, token = int(found.group(1)), found.group(2), found.group(3)
        assert (printed["port"], printed["token"], printed["project"]) == (port, token, "root")
        for _ in range(100):
            if opened.exists() and opened.read_text():
                break
            time.sleep(0.05)
        assert opened.read_text() == f"http://127.0.0.1:{port}{address}"
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("GET", "/")
        refused = connection.getresponse()
        assert refused.status == 403 and b"needs its token" in refused.read()
        connection.request("GET", f"/?token={token}")
        signed = connection.getresponse()
        signed.read()
        assert signed.status == 303 and "HttpOnly" in (signed.getheader("set-cookie") or "")
        connection.request("GET", "/", headers={"Cookie": signed.getheader("set-cookie").split(";")[0]})
        home = connection.getresponse()
        assert home.status == 200 and b"Levels" in home.read()
    finally:
        server.terminate()
        server.wait(timeout=30)
