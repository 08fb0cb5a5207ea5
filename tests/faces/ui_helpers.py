"""What the page's tests share: a project with levels, files, a fact and a proposal; a signed-in client."""

from __future__ import annotations

import re
from pathlib import Path

import fsmem
from fsmem import Scope

AGENT_ID = "3f9a1c2e-77aa-4b1e-9d3c-5a0e8f1b2c3d"
ROUTINE_ID = "9b7d4e10-0c1d-4e2f-8a9b-7c6d5e4f3a2b"
TOKEN = "a-token-for-tests-only-0123"
HOST = "testserver"  # the Host the TestClient sends

HOSTILE = (
    "# Hostile\n"
    "<script>document.title='owned'</script>\n"
    "[click me](javascript:document.title='owned')\n"
    "<img src=x onerror=\"document.title='owned'\">\n"
    "![tracker](http://198.51.100.7/pixel.png)\n"
    '<a href="javascript:alert(1)">raw link</a>\n'
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)\n"
    '<iframe src="http://198.51.100.7/"></iframe>\n'
)


def make_project(memory: fsmem.Memory) -> None:
    """The project the page's tests walk: a brand rule, an agent with a routine, a topic, a fact, a proposal."""
    memory.create_agent(AGENT_ID, "SEO")
    memory.create_routine(AGENT_ID, ROUTINE_ID, "Meta tags")
    run = memory.run(Scope.chat(), thread_id="setup")
    for path, text in {
        "MEMORY.md": "# Project\n- Brand voice: warm, plain.\n- See [brand](brand.md).\n",
        "brand.md": "# Brand\n- Titles end with | Field Notes\n- Colours: rye and ember\n",
        "agents/seo-3f9a1c2e/MEMORY.md": "# SEO\n- Titles under 60 characters\n",
        "seo/titles.md": "# Titles\nline two\nline three\n",
    }.items():
        run.call({"command": "read", "path": path})  # MEMORY.md is there, empty
        assert run.call({"command": "write", "path": path, "content": text})["ok"]
    memory.facts.keep("Rye & Ember", "opening hours", "Open 8 to 16", source="setup")
    memory.facts.keep("Rye & Ember", "opening hours", "Open 7 to 17", source="setup")


def propose(memory: fsmem.Memory, path: str, old: str, new: str) -> str:
    """A reviewer's replacement, left as a proposal; its id."""
    reviewer = memory.run(Scope.chat(), thread_id="review-1", review=True)
    reviewer.call({"command": "read", "path": path})
    result = reviewer.call({"command": "write", "path": path, "old_text": old, "new_text": new})
    assert result["ok"] and "proposal" in result, result
    return result["proposal"]


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "the page has no form with a CSRF value"
    return found.group(1)


def form_value(html: str, name: str) -> str:
    found = re.search(rf'name="{name}" value="([^"]*)"', html)
    assert found, f"no field {name}"
    return found.group(1)


def textarea(html: str) -> str:
    """What a textarea holds, unescaped as a browser reads it (its first newline is not content)."""
    import html as html_module

    found = re.search(r"<textarea[^>]*>\n?(.*?)</textarea>", html, flags=re.S)
    assert found, "no textarea"
    return html_module.unescape(found.group(1))


def write_by_hand(root: Path, path: str, text: str) -> None:
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


# ---- a signed-in TestClient's requests ------------------------------------------------------------


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
