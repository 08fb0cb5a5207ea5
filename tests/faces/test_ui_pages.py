"""``fsmem ui``'s pages through Starlette's TestClient, asserted on the HTML: the levels, folders and
files, edits checked against the version the page showed, history and versions, facts, proposals, search.
"""

from __future__ import annotations

import re

import pytest

pytest.importorskip("starlette")

import fsmem  # noqa: E402
from tests.faces import ui_fixtures  # noqa: E402
from tests.faces.ui_helpers import (  # noqa: E402
    AGENT_ID,
    ROUTINE_ID,
    csrf,
    csrf_of,
    form_value,
    page,
    post,
    propose,
    textarea,
    write_by_hand,
)

# The page's fixtures, shared by its two test modules (a conftest here would shadow the suite's own).
project, memory, keys, anonymous, client = (
    ui_fixtures.project, ui_fixtures.memory, ui_fixtures.keys, ui_fixtures.anonymous, ui_fixtures.client
)

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


def test_a_proposal_file_fsmem_cannot_read_is_listed_with_its_problem_and_can_be_discarded(client, memory):
    pid = propose(memory, "brand.md", "rye and ember", "rye, ember and oak")
    broken = memory.root / ".fsmem" / "proposals" / "0123456789abcdef.json"
    broken.write_text("{not json", encoding="utf-8")
    shown = page(client, "/proposals")
    assert "can apply" in shown and 'id="p-0123456789abcdef"' in shown
    assert "A proposal fsmem cannot read" in shown and "not JSON" in shown
    post(client, "/proposals/discard", {"id": "0123456789abcdef", "csrf": csrf_of(shown)})
    assert not broken.exists() and [proposal.id for proposal in memory.proposals()] == [pid]


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
