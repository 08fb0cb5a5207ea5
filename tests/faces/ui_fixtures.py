"""The page's TestClient fixtures (bound by name in tests/faces/test_ui_*.py): the project made once a
module, a copy a test, a client without the cookie and one signed in."""

from __future__ import annotations

import shutil

import pytest

import fsmem
from tests.faces.ui_helpers import HOST, TOKEN, make_project


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
    from fsmem.cli.ui.guard import Keys

    return Keys(TOKEN, 80, frozenset({HOST}))


@pytest.fixture
def anonymous(memory, keys):
    """A client of the page that has not opened its address yet (no cookie)."""
    from starlette.testclient import TestClient  # the ui extra: the test modules skip without it

    from fsmem.cli.ui.app import build_app

    return TestClient(build_app(memory, keys), base_url=f"http://{HOST}")


@pytest.fixture
def client(anonymous):
    signed = anonymous.get(f"/?token={TOKEN}", follow_redirects=False)
    assert signed.status_code == 303
    return anonymous
