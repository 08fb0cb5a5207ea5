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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`smoke_model` tests run against a real model server named by FSMEM_SMOKE_MODEL_URL (see
    bin/smoke-local-model). They are opt-in by design, like a benchmark: without the variable they are
    deselected (reported as such), never skipped as if a required service were missing."""
    if os.environ.get("FSMEM_SMOKE_MODEL_URL"):
        return
    chosen = [item for item in items if item.get_closest_marker("smoke_model") is None]
    if len(chosen) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in chosen])
        items[:] = chosen
