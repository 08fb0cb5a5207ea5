"""fsmem as a user has it: this checkout built as a wheel and installed, not editable, in a virtual
environment of its own, so a cold row times the ``fsmem`` console script a user's shell runs.

    script = installed_fsmem(scratch)        # <scratch>/venv/bin/fsmem, bytecode compiled by pip
    subprocess.run([str(script), "facts", "list"], env=installed_env())

The checkout's own ``.venv`` installs fsmem editable: its finder is imported by ``site`` in every
new interpreter (with ``pathlib``, ``importlib.util`` and ``contextlib``), which a wheel does not do.
The scratch environment takes fsmem's dependencies from the interpreter running the bench (a ``.pth``
line naming its ``site-packages``: a line adds the folder to ``sys.path`` without running the ``.pth``
files in it, so the editable finder stays out), and fsmem itself from the wheel.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# What a wheel is built from (pyproject.toml's packages and data); a copy, so no build/ is left in the checkout
SOURCES = ("pyproject.toml", "README.md", "fsmem", "prompts", "tool_schema", "sample_project")


def installed_fsmem(scratch: Path) -> Path:
    """The ``fsmem`` console script of this checkout's wheel, installed in ``<scratch>/venv``."""
    source, environment = scratch / "source", scratch / "venv"
    source.mkdir(parents=True)
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(REPO / name, source / name)
    venv.create(environment, with_pip=False, symlinks=True)
    python = environment / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "bench-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n", encoding="utf-8")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", str(source)],
        check=True,
        env=installed_env(),
    )
    return environment / "bin" / "fsmem"


def installed_env() -> dict[str, str]:
    """A user's environment: no FSMEM_* of this shell, no PYTHONPATH leading to the checkout."""
    return {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_") and k != "PYTHONPATH"}
