from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _isolate_fsmem_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No FSMEM_* variable from the developer's shell leaks into a test."""
    for name in list(os.environ):
        if name.startswith("FSMEM_"):
            monkeypatch.delenv(name, raising=False)
    # A search starts a watcher by default (settings.watch); in-process tests, which rarely close what
    # they open, would pile up inotify instances. Tests of watching turn it on (tests/test_watch*.py).
    monkeypatch.setenv("FSMEM_WATCH", "0")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A fresh memory root (test modules may define their own)."""
    import fsmem

    folder = tmp_path / "root"
    fsmem.open(folder, create=True)
    return folder


def write(root: Path, path: str, text: str) -> None:
    """Write a file by hand, as a person or another program would (no fsmem involved)."""
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def invoke(root: Path, *args: str, input: str | None = None):
    """One CLI call in this process (click's CliRunner), against ``root``."""
    from click.testing import CliRunner

    from fsmem.cli import main

    return CliRunner().invoke(main, [*args, "--root", str(root)], input=input)


def run_fsmem(*args: str, input: str | None = None, cwd: Path | None = None,
              env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``python -m fsmem`` as a real, separate process."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "fsmem", *args],
        input=input, capture_output=True, text=True, cwd=cwd, env=full_env, timeout=timeout,
    )


def index_of(root: Path):
    """The index of ``root`` as ``Memory`` composes it (a bare folder gets its ``.fsmem/`` first)."""
    from fsmem.config import Settings
    from fsmem.drive import Drive
    from fsmem.index import Index

    (root / ".fsmem").mkdir(exist_ok=True)
    settings = Settings(watch=False)
    return Index(Drive(root, settings))
