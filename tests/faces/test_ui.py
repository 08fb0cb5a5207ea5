"""``fsmem ui``'s routes through Starlette's TestClient: every page, every refusal, asserted on the HTML.

The guard (token, cookie, Host, CSRF, origin), the tool's path jail, hostile memory rendered inert,
edits checked against the version the page showed, history, versions, facts, proposals, search.
"""

from __future__ import annotations

import os
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

pytest.importorskip("starlette")

from starlette.testclient import TestClient  # noqa: E402

import fsmem  # noqa: E402
from fsmem.cli.ui.app import build_app  # noqa: E402
from fsmem.cli.ui.guard import Keys  # noqa: E402
from tests.faces.ui_helpers import (  # noqa: E402
    AGENT_ID,
    HOSTILE,
    ROUTINE_ID,
    TOKEN,
    csrf_of,
    form_value,
    make_project,
    propose,
    textarea,
    write_by_hand,
)

HOST = "testserver"


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """The project, made once; each test gets its own copy (made in a few milliseconds)."""
    folder = tmp_path_factory.mktemp("ui") / "root"
    with fsmem.open(folder, create=True) as memory:
        make_project(memory)
    return folder


@pytest.fixture
def memory(project, tmp_path):
    shutil.copytree(project, tmp_path / "root", symlinks=True)
    memory = fsmem.open(tmp_path / "root")
    yield memory
    memory.close()


@pytest.fixture
def keys():
    return Keys(TOKEN, 80, frozenset({HOST}))


@pytest.fixture
def anonymous(memory, keys):
    return TestClient(build_app(memory, keys), base_url=f"http://{HOST}")


@pytest.fixture
def client(anonymous):
    signed = anonymous.get(f"/?token={TOKEN}", follow_redirects=False)
    assert signed.status_code == 303
    return anonymous


def page(client, url: str, status: int = 200) -> str:
    answer = client.get(url)
    assert answer.status_code == status, answer.text
    return answer.text


def post(client, url: str, data: dict[str, str], status: int = 200, **headers: str):
    answer = client.post(url, data=data, headers=headers, follow_redirects=True)
    assert answer.status_code == status, answer.text
    return answer


def csrf(client) -> str:
    return csrf_of(page(client, "/files?path=brand.md"))


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


# ---- browse ---------------------------------------------------------------------------------------


def test_the_levels_show_agents_and_routines_by_name_with_what_they_load(client, memory):
    memory.run(thread_id="t").call({"command": "write", "path": "agents/seo-3f9a1c2e/keywords.md", "content": "k\n"})
    home = page(client, "/")
    topics = re.findall(r'<span class="topics">topics: (.*?)</span>', home)
    names = [re.findall(r">([^<]+)</a>", line) for line in topics]
    assert names == [["brand.md", "notes/", "seo/"], ["keywords.md"]]  # no top file, no level folder, no routine
    assert "SEO" in home and "Meta tags" in home and AGENT_ID in home and ROUTINE_ID in home
    project = len(memory.read("MEMORY.md").encode())
    agent = len(memory.read("agents/seo-3f9a1c2e/MEMORY.md").encode())
    totals = re.findall(r'<strong class="total">([^<]+)</strong>', home)
    assert totals == [f"{project} B", f"{project + agent} B", f"{project + agent} B"]  # the routine's NOTES.md is empty
    assert 'loads <a href="/files?path=MEMORY.md">MEMORY.md</a>' in home


def test_the_scope_page_lists_the_top_files_a_run_loads(client, memory):
    shown = page(client, f"/scope?agent={AGENT_ID}&routine={ROUTINE_ID}")
    assert re.findall(r'<td><a href="/files\?path=([^"]+)">', shown) == [
        "MEMORY.md",
        "agents/seo-3f9a1c2e/MEMORY.md",
        "agents/seo-3f9a1c2e/routines/meta-tags-9b7d4e10/NOTES.md",
    ]
    assert "routine:" in shown
    assert page(client, "/scope?agent=nobody", 400).count("SCOPE") >= 1


def test_a_folder_lists_names_and_sizes(client):
    shown = page(client, "/files?path=seo")
    assert 'href="/files?path=seo/titles.md">titles.md</a>' in shown
    assert "29 B" in shown


def test_a_file_is_rendered_and_shown_as_numbered_source(client, memory):
    shown = page(client, "/files?path=brand.md")
    assert "<h1>Brand</h1>" in shown and "<li>Titles end with | Field Notes</li>" in shown
    assert '<tr id="L2"><td class="num"><a href="#L2">2</a></td><td><pre>- Titles end with | Field Notes</pre>' in shown
    assert 'thread <a href="/history?thread=setup">setup</a>' in shown


def test_a_file_that_is_not_markdown_is_shown_as_source_only(client, memory):
    write_by_hand(memory.root, "notes.txt", "# not a heading\n")
    shown = page(client, "/files?path=notes.txt")
    assert "<h1>not a heading</h1>" not in shown and "<pre># not a heading</pre>" in shown


def test_a_missing_file_is_not_found(client):
    assert "NOT_FOUND" in page(client, "/files?path=nope.md", 404)


# ---- edit -----------------------------------------------------------------------------------------


def test_an_edit_is_saved_as_a_persons_change_with_the_version_kept(client, memory):
    shown = page(client, "/edit?path=brand.md")
    version, before = form_value(shown, "version"), textarea(shown)
    assert before == memory.read("brand.md")
    text = before + "- <!-- ... --> is text here, not a marker\n"
    saved = post(
        client,
        "/edit",
        {"path": "brand.md", "version": version, "content": text.replace("\n", "\r\n"), "csrf": csrf_of(shown)},
    )
    assert str(saved.url).endswith("/files?path=brand.md&saved=" + fsmem._core.versions.version_of(text.encode()))
    assert memory.read("brand.md") == text
    assert "Saved: it is now version" in saved.text and "- &lt;!-- ... --&gt; is text here" in saved.text
    last = list(memory.log())[-1]
    assert (last.command, last.path, last.thread, last.before) == ("write", "brand.md", "ui", version)
    assert [v.version for v in memory.versions("brand.md")][0] == version


def test_a_stale_save_shows_who_changed_it_and_both_texts_and_keeps_the_persons(client, memory):
    shown = page(client, "/edit?path=brand.md")
    version, token = form_value(shown, "version"), csrf_of(shown)
    other = memory.run(thread_id="chat-7")
    other.call({"command": "read", "path": "brand.md"})
    other.call({"command": "write", "path": "brand.md", "old_text": "rye and ember", "new_text": "rye, ember, oak"})
    theirs = memory.read("brand.md")
    mine = "# Brand\n- my own rewrite\n"
    answer = post(client, "/edit", {"path": "brand.md", "version": version, "content": mine, "csrf": token}, 409)
    assert memory.read("brand.md") == theirs  # nothing written
    assert "thread <strong>chat-7</strong> (write)" in answer.text
    assert re.search(r"at <strong>\d{4}-\d\d-\d\d \d\d:\d\d", answer.text)
    assert "rye, ember, oak" in answer.text  # their text, shown
    assert textarea(answer.text) == mine  # the person's text, kept in the form
    assert '<span class="add">+- my own rewrite</span>' in answer.text
    new_version = form_value(answer.text, "version")
    assert new_version == fsmem._core.versions.version_of(theirs.encode())
    post(client, "/edit", {"path": "brand.md", "version": new_version, "content": mine, "csrf": token})
    assert memory.read("brand.md") == mine
    assert memory.versions("brand.md")[0].version == new_version  # theirs kept


def test_a_save_over_a_file_deleted_meanwhile_says_so_and_keeps_the_text(client, memory):
    shown = page(client, "/edit?path=seo/titles.md")
    version, token = form_value(shown, "version"), csrf_of(shown)
    memory.run(thread_id="t").call({"command": "delete", "path": "seo/titles.md", "expected_version": version})
    answer = post(
        client, "/edit", {"path": "seo/titles.md", "version": version, "content": "mine\n", "csrf": token}, 409
    )
    assert "deleted seo/titles.md after you opened it" in answer.text and textarea(answer.text) == "mine\n"


def test_a_hand_edit_between_load_and_save_is_a_conflict_from_outside_fsmem(client, memory):
    shown = page(client, "/edit?path=brand.md")
    write_by_hand(memory.root, "brand.md", "by hand\n")
    answer = post(
        client,
        "/edit",
        {"path": "brand.md", "version": form_value(shown, "version"), "content": "page\n", "csrf": csrf_of(shown)},
        409,
    )
    assert "outside fsmem" in answer.text and "by hand" in answer.text
    assert memory.read("brand.md") == "by hand\n" and textarea(answer.text) == "page\n"


def test_a_secret_is_refused_by_the_tools_rule_and_the_text_stays(client, memory):
    shown = page(client, "/edit?path=brand.md")
    secret = "- deploy key: sk-" + "a1B2c3D4e5F6g7H8i9J0kLmN"
    text = memory.read("brand.md") + secret + "\n"
    answer = post(
        client,
        "/edit",
        {"path": "brand.md", "version": form_value(shown, "version"), "content": text, "csrf": csrf_of(shown)},
        400,
    )
    assert "SENSITIVE" in answer.text and "Nothing was saved" in answer.text
    assert textarea(answer.text) == text
    message = re.search(r"<strong>SENSITIVE</strong>: (.*?)</p>", answer.text).group(1)
    assert "a1B2c3D4" not in message
    assert "sk-" not in memory.read("brand.md")


def test_a_new_file_is_created_and_an_existing_path_is_not_overwritten(client, memory):
    shown = page(client, "/new?folder=seo")
    assert form_value(shown, "path") == "seo/"
    token = csrf_of(shown)
    post(client, "/new", {"path": "seo/meta.md", "version": "", "content": "# Meta\n", "csrf": token})
    assert memory.read("seo/meta.md") == "# Meta\n"
    answer = post(client, "/new", {"path": "seo/meta.md", "version": "", "content": "again\n", "csrf": token}, 409)
    assert memory.read("seo/meta.md") == "# Meta\n" and textarea(answer.text) == "again\n"
    write_by_hand(memory.root, "odd.md/inside.md", "a folder named like a file\n")
    folder = post(client, "/new", {"path": "odd.md", "version": "", "content": "x\n", "csrf": token}, 409)
    assert "odd.md is a folder" in folder.text and "deleted" not in folder.text and textarea(folder.text) == "x\n"
    refused = post(
        client, "/new", {"path": "agents/nobody-1234abcd/x.md", "version": "", "content": "x\n", "csrf": token}, 400
    )
    assert "PROTECTED" in refused.text


def test_rename_follows_the_tools_rules(client, memory):
    token = csrf(client)
    version = form_value(page(client, "/files?path=seo/titles.md"), "version")
    moved = post(
        client, "/rename", {"path": "seo/titles.md", "new_path": "seo/headlines.md", "version": version, "csrf": token}
    )
    assert str(moved.url).endswith("/files?path=seo%2Fheadlines.md")
    assert memory.read("seo/headlines.md").startswith("# Titles")
    top = form_value(page(client, "/files?path=MEMORY.md"), "version")
    refused = post(client, "/rename", {"path": "MEMORY.md", "new_path": "other.md", "version": top, "csrf": token}, 400)
    assert "PROTECTED" in refused.text and memory.read("MEMORY.md").startswith("# Project")
    version = form_value(page(client, "/files?path=seo/headlines.md"), "version")
    over = post(
        client, "/rename", {"path": "seo/headlines.md", "new_path": "brand.md", "version": version, "csrf": token}, 409
    )
    assert "EXISTS" in over.text
    assert "Rename the folder" in page(client, "/files?path=seo")
    post(client, "/rename", {"path": "seo", "new_path": "search", "version": "", "csrf": token})
    assert memory.read("search/headlines.md").startswith("# Titles") and not (memory.root / "seo").exists()


def test_delete_shows_what_the_file_held_and_a_top_file_is_emptied(client, memory):
    confirm = page(client, "/delete?path=brand.md")
    assert "Titles end with | Field Notes" in confirm
    deleted = post(
        client, "/delete", {"path": "brand.md", "version": form_value(confirm, "version"), "csrf": csrf_of(confirm)}
    )
    assert "Deleted brand.md" in deleted.text and "Titles end with | Field Notes" in deleted.text
    assert not (memory.root / "brand.md").exists()
    confirm = page(client, "/delete?path=MEMORY.md")
    emptied = post(
        client, "/delete", {"path": "MEMORY.md", "version": form_value(confirm, "version"), "csrf": csrf_of(confirm)}
    )
    assert "Emptied MEMORY.md" in emptied.text and "Brand voice" in emptied.text
    assert memory.read("MEMORY.md") == ""
    agent = post(client, "/delete", {"path": "agents/seo-3f9a1c2e", "version": "", "csrf": csrf_of(confirm)}, 400)
    assert "PROTECTED" in agent.text and (memory.root / "agents/seo-3f9a1c2e/MEMORY.md").exists()


def test_a_stale_delete_changes_nothing(client, memory):
    confirm = page(client, "/delete?path=brand.md")
    write_by_hand(memory.root, "brand.md", "changed\n")
    answer = post(
        client,
        "/delete",
        {"path": "brand.md", "version": form_value(confirm, "version"), "csrf": csrf_of(confirm)},
        409,
    )
    assert "CONFLICT" in answer.text and memory.read("brand.md") == "changed\n"


# ---- history ----------------------------------------------------------------------------------------


def test_the_log_filters_by_path_and_by_thread(client, memory):
    other = memory.run(thread_id="chat-9")
    other.call({"command": "write", "path": "seo/new.md", "content": "x\n"})
    everything = page(client, "/history")
    assert "seo/new.md" in everything and "brand.md" in everything
    by_path = page(client, "/history?path=seo/new.md")
    assert "seo/new.md" in by_path and ">brand.md<" not in by_path
    by_thread = page(client, "/history?thread=chat-9")
    assert by_thread.count("<tr><td>") == 1 and "chat-9" in by_thread


def test_versions_diff_any_two_and_revert(client, memory):
    run = memory.run(thread_id="t")
    first = run.call({"command": "read", "path": "seo/titles.md"})["version"]
    second = run.call({"command": "write", "path": "seo/titles.md", "old_text": "line two", "new_text": "line 2"})
    third = run.call({"command": "write", "path": "seo/titles.md", "old_text": "line three", "new_text": "line 3"})
    shown = page(client, f"/versions?path=seo/titles.md&a={first}&b={third['version']}")
    assert '<span class="del">-line two</span>' in shown and '<span class="add">+line 3</span>' in shown
    between = page(client, f"/versions?path=seo/titles.md&a={first}&b={second['version']}")
    assert '<span class="add">+line 3</span>' not in between and '<span class="add">+line 2</span>' in between
    reverted = post(
        client,
        "/revert",
        {"path": "seo/titles.md", "version": first, "current": third["version"], "csrf": csrf_of(shown)},
    )
    assert "reverted=" in str(reverted.url)
    assert memory.read("seo/titles.md") == "# Titles\nline two\nline three\n"
    assert list(memory.log())[-1].command == "revert" and list(memory.log())[-1].thread == "ui"


def test_a_revert_from_a_stale_page_changes_nothing(client, memory):
    run = memory.run(thread_id="t")
    run.call({"command": "read", "path": "brand.md"})
    run.call({"command": "write", "path": "brand.md", "old_text": "rye and ember", "new_text": "rye"})
    shown = page(client, "/versions?path=brand.md")
    kept = memory.versions("brand.md")[0].version
    write_by_hand(memory.root, "brand.md", "changed by hand\n")
    answer = post(
        client,
        "/revert",
        {"path": "brand.md", "version": kept, "current": form_value(shown, "current"), "csrf": csrf_of(shown)},
        409,
    )
    assert "changed since this page showed it" in answer.text and memory.read("brand.md") == "changed by hand\n"


def test_an_unknown_version_is_not_found(client):
    assert "NOT_FOUND" in page(client, "/versions?path=brand.md&a=000000000000&b=111111111111", 404)


# ---- facts, proposals, search ---------------------------------------------------------------------------


def test_facts_by_subject_with_what_they_replaced(client):
    shown = page(client, "/facts")
    assert "<h2>Rye &amp; Ember</h2>" in shown and "<dt>opening hours</dt>" in shown
    current, chain = shown.split('<ol class="chain">')
    assert "Open 7 to 17" in current and "Open 8 to 16" in chain and "held until" in chain
    assert "No facts about nobody" in page(client, "/facts?subject=nobody")


def test_a_proposal_shows_its_diff_and_is_approved(client, memory):
    pid = propose(memory, "brand.md", "rye and ember", "rye, ember and oak")
    shown = page(client, "/proposals")
    assert "can apply" in shown and '<span class="add">+- Colours: rye, ember and oak</span>' in shown
    done = post(client, "/proposals/approve", {"id": pid, "csrf": csrf_of(shown)})
    assert f"approved {pid}" in done.text and "No proposals" in done.text
    assert "rye, ember and oak" in memory.read("brand.md")


def test_a_proposal_that_no_longer_applies_says_why_and_is_refused(client, memory):
    pid = propose(memory, "brand.md", "rye and ember", "rye, ember and oak")
    other = memory.run(thread_id="chat-3")
    other.call({"command": "read", "path": "brand.md"})
    other.call(
        {"command": "write", "path": "brand.md", "old_text": "Field Notes\n", "new_text": "Field Notes\n- added\n"}
    )
    shown = page(client, "/proposals")
    assert "no longer applies" in shown and "brand.md changed since it was made" in shown
    assert '<span class="add">+- added</span>' in shown  # what changed since
    refused = post(client, "/proposals/approve", {"id": pid, "csrf": csrf_of(shown)}, 409)
    assert "can no longer apply" in refused.text and "rye, ember and oak" not in memory.read("brand.md")
    post(client, "/proposals/discard", {"id": pid, "csrf": csrf_of(shown)})
    assert memory.proposals() == []


def test_search_links_each_hit_to_the_file_at_its_line(client, memory):
    shown = page(client, "/search?q=ember")
    assert re.search(r'href="/files\?path=brand.md(#L\d+)?">brand.md', shown)
    long = "".join(f"- rule {n}: nothing to see here\n" for n in range(40)) + "- Colours: saffron\n"
    write_by_hand(memory.root, "seo/long.md", long)
    found = page(client, "/search?q=saffron")
    line = re.search(r'href="/files\?path=seo/long.md#L(\d+)">seo/long.md:\d+</a>', found)
    assert line, found
    snippet = re.search(r'<pre class="snippet">(.*?)</pre>', found, flags=re.S).group(1)
    assert long.splitlines()[int(line.group(1)) - 1].split(":")[0].lstrip("- ") in snippet  # the window starts there
    assert "0 results" in page(client, "/search?q=zzzzunfound")


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
