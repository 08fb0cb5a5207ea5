"""``fsmem ui`` in a real Chromium (the distribution's ``chromium`` and ``chromium-driver``, driven by
Selenium): a real ``fsmem ui`` process, on a folder and on PostgreSQL, walked as a person would.

One browser for the whole session. Without Chromium these tests skip on a laptop and fail under
CI=true. With FSMEM_UI_SCREENSHOTS=1 the folder journey writes the screenshots docs/ui.md shows
into docs/ui/ (never otherwise, so a test run leaves the tree clean).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

import fsmem
from tests.conftest import IN_CI, REPO
from tests.faces.ui_helpers import HOSTILE, make_project, propose

SCREENSHOTS = REPO / "docs" / "ui" if os.environ.get("FSMEM_UI_SCREENSHOTS") == "1" else None
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1280,900"]

pytestmark = pytest.mark.slow


def _no_browser(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"the browser tests need Chromium under CI, but {reason}")
    pytest.skip(f"no browser: {reason} (bin/test installs chromium and chromium-driver as root)")


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    try:
        from selenium import webdriver
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _no_browser("selenium is not installed (pip install -e '.[dev]')")
    if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
        _no_browser(f"{CHROMIUM} or {CHROMEDRIVER} is missing (apt-get install chromium chromium-driver)")
    # Selenium's own driver finder is never needed (both paths are given); should it run, it stays offline.
    os.environ.setdefault("SE_OFFLINE", "true")
    os.environ.setdefault("SE_AVOID_STATS", "true")
    profile = tempfile.mkdtemp(prefix="fsmem-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [*FLAGS, f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    try:
        driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    except WebDriverException as error:
        shutil.rmtree(profile, ignore_errors=True)
        _no_browser(f"Chromium could not start ({error.msg})")
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@dataclass
class Served:
    """A running ``fsmem ui`` process, and the memory it serves opened in this one (another process)."""

    url: str  # as printed, with the token
    base: str  # http://127.0.0.1:PORT
    memory: fsmem.Memory

    def at(self, path: str) -> str:
        return self.base + path


def _serve(memory: fsmem.Memory, where: list[str]) -> Iterator[Served]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    server = subprocess.Popen(
        [sys.executable, "-m", "fsmem", "ui", *where], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=env,
    )
    try:
        assert server.stdout is not None
        lines = [server.stdout.readline() for _ in range(2)]
        found = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=\S+", "".join(lines))
        assert found, (lines, server.stderr.read() if server.poll() is not None and server.stderr else "")
        yield Served(found.group(0), found.group(1), memory)
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture
def on_folder(tmp_path) -> Iterator[Served]:
    memory = fsmem.open(tmp_path / "root", create=True)
    make_project(memory)
    yield from _serve(memory, ["--root", str(tmp_path / "root")])
    memory.close()


@pytest.fixture
def on_postgres(postgres) -> Iterator[Served]:
    name = f"ui-{uuid.uuid4().hex[:8]}"
    memory = fsmem.open(postgres, project=name, create=True)
    make_project(memory)
    yield from _serve(memory, ["--store", postgres, "--project", name])
    memory.close()


# ---- what a person does -----------------------------------------------------------------------------


def _shot(browser, name: str) -> None:
    if SCREENSHOTS is not None:
        SCREENSHOTS.mkdir(exist_ok=True)
        browser.save_screenshot(str(SCREENSHOTS / f"{name}.png"))


def _by(selector: str):
    from selenium.webdriver.common.by import By

    return By.CSS_SELECTOR, selector


def _text(browser) -> str:
    found = browser.find_elements(*_by("main"))
    assert found, browser.page_source
    return found[0].text


def _go_by(browser, element) -> None:
    """Click what leads to another page, and wait until that page has replaced this one."""
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    page = browser.find_element(*_by("html"))
    element.click()
    WebDriverWait(browser, 20).until(expected_conditions.staleness_of(page))


def _click_link(browser, text: str) -> None:
    from selenium.webdriver.common.by import By

    _go_by(browser, browser.find_element(By.LINK_TEXT, text))


def _type_into_editor(browser, text: str) -> None:
    area = browser.find_element(*_by("textarea[name=content]"))
    area.clear()
    area.send_keys(text)


def _submit(browser, label: str) -> None:
    from selenium.webdriver.common.by import By

    _go_by(browser, browser.find_element(By.XPATH, f"//button[normalize-space()='{label}']"))


def _journey(browser, served: Served, shots: bool) -> None:
    browser.delete_all_cookies()
    # Without the token: refused, nothing shown.
    browser.get(served.at("/files?path=brand.md"))
    assert "needs its token" in browser.page_source and "Field Notes" not in browser.page_source
    # With it: the levels, and the address no longer holds the token.
    browser.get(served.url)
    assert "token=" not in browser.current_url
    home = _text(browser)
    assert "SEO" in home and "Meta tags" in home and "always" in home
    if shots:
        _shot(browser, "levels")

    # Walk the tree: the agent's file, its folder, the routine, back up by the breadcrumb.
    _click_link(browser, "SEO")
    assert "Titles under 60 characters" in _text(browser)
    browser.back()
    _click_link(browser, "Meta tags")
    assert "NOTES.md" in browser.current_url or "NOTES.md" in _text(browser)
    _click_link(browser, "routines")
    assert "meta-tags-9b7d4e10" in _text(browser)
    _click_link(browser, "/")
    _click_link(browser, "brand.md")
    shown = _text(browser)
    assert "Titles end with | Field Notes" in shown and "version" in shown
    if shots:
        _shot(browser, "file")

    # Edit and save.
    _click_link(browser, "Edit")
    _type_into_editor(browser, "# Brand\n- Titles end with | Field Notes\n- Colours: rye and ember\n- Tone: warm\n")
    _submit(browser, "Save")
    assert "Tone: warm" in _text(browser)
    assert served.memory.read("brand.md").endswith("- Tone: warm\n")

    # A conflicting edit from another process between load and save: both texts shown, nothing lost.
    _click_link(browser, "Edit")
    # (this test's process is not the server's: its change reaches the page only through the store)
    _change(served.memory, "brand.md", "Tone: warm", "Tone: warm and dry")
    mine = "# Brand\n- Titles end with | Field Notes\n- Colours: rye and ember\n- Tone: plain\n"
    _type_into_editor(browser, mine)
    _submit(browser, "Save")
    page = _text(browser)
    assert "Changed by thread chat-7 (write)" in page and "Nothing was saved" in page
    assert "Tone: warm and dry" in browser.find_element(*_by("section.theirs")).text
    assert browser.find_element(*_by("textarea[name=content]")).get_property("value") == mine
    assert served.memory.read("brand.md").endswith("- Tone: warm and dry\n")
    if shots:
        _shot(browser, "conflict")
    _submit(browser, "Save mine")
    assert served.memory.read("brand.md") == mine

    # Versions: a diff between two, then revert to theirs.
    _click_link(browser, "Versions")
    theirs = served.memory.versions("brand.md")[0]
    rows = browser.find_elements(*_by("table.versions tbody tr"))
    rows[1].find_element(*_by("input[name=a]")).click()  # theirs, the newest kept
    rows[0].find_element(*_by("input[name=b]")).click()  # now
    _submit(browser, "Compare")
    assert "+- Tone: plain" in browser.find_element(*_by("pre.diff")).text
    if shots:
        _shot(browser, "versions")
    _go_by(browser, browser.find_elements(*_by("table.versions tbody tr"))[1].find_element(*_by("button")))
    assert "Tone: warm and dry" in _text(browser)
    assert served.memory.read("brand.md").endswith("- Tone: warm and dry\n")
    assert served.memory.read("brand.md") == _kept_text(served.memory, "brand.md", theirs.version)

    # Proposals: one that applies is approved; one whose file changed is refused, with the reason.
    applies = propose(served.memory, "seo/titles.md", "line two", "line 2")
    stale = propose(served.memory, "brand.md", "Tone: warm and dry", "Tone: crisp")
    _change(served.memory, "brand.md", "Colours: rye and ember", "Colours: rye")
    browser.get(served.at("/proposals"))
    assert "can apply" in _text(browser) and "no longer applies" in _text(browser)
    if shots:
        _shot(browser, "proposals")
    _go_by(browser, browser.find_element(*_by(f"#p-{applies} button")))
    assert f"Done: approved {applies}" in _text(browser)
    assert "line 2" in served.memory.read("seo/titles.md")
    _go_by(browser, browser.find_element(*_by(f"#p-{stale} button")))
    assert "can no longer apply" in _text(browser)
    assert "Tone: crisp" not in served.memory.read("brand.md")

    # A hostile file renders inert: no script ran, no handler fired, the text is shown as text.
    served.memory.run(thread_id="t").call({"command": "write", "path": "hostile.md", "content": HOSTILE})
    browser.get(served.at("/files?path=hostile.md"))
    assert browser.title != "owned" and "fsmem" in browser.title
    assert "<script>document.title='owned'</script>" in _text(browser)
    assert not browser.find_elements(*_by("main script, main img, main iframe"))
    for link in browser.find_elements(*_by("main a")):
        assert not (link.get_attribute("href") or "").startswith(("javascript:", "data:"))
    _click_link(browser, "Facts")
    assert "Open 7 to 17" in _text(browser)
    if shots:
        _shot(browser, "facts")
        browser.get(served.at("/search?q=titles"))
        _shot(browser, "search")


def _change(memory: fsmem.Memory, path: str, old: str, new: str) -> None:
    """Another thread's change, made in this process (the page runs in its own)."""
    run = memory.run(thread_id="chat-7")
    run.call({"command": "read", "path": path})
    assert run.call({"command": "write", "path": path, "old_text": old, "new_text": new})["ok"]


def _kept_text(memory: fsmem.Memory, path: str, version: str) -> str:
    from fsmem._memory.browse import kept_text

    return kept_text(memory, path, version)


def test_a_person_walks_edits_compares_and_approves_on_a_folder(browser, on_folder):
    _journey(browser, on_folder, shots=True)


def test_the_same_journey_on_postgresql(browser, on_postgres):
    _journey(browser, on_postgres, shots=False)
