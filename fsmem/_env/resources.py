"""Where fsmem's own data folders are: ``prompts/``, ``tool_schema/``, ``sample_project/``.

In a checkout (and an editable install) they sit beside the package, where people edit them; a wheel
carries them inside the package as ``fsmem/_data/<name>`` (``pyproject.toml`` maps them there).
"""

from __future__ import annotations

import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent  # fsmem/


def data_dir(name: str) -> Path:
    """The folder ``name`` (``"prompts"``, ``"tool_schema"`` or ``"sample_project"``)."""
    for candidate in (PACKAGE.parent / name, PACKAGE / "_data" / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"fsmem's {name}/ folder is missing from this installation ({PACKAGE})")


def install_command(extra: str) -> str:
    """The command that adds ``extra`` (``"postgres"``, ``"mcp"``, ``"anthropic"``) to this installation.

    fsmem is on no package index: it is installed from its source folder (this checkout when there is
    one, else a placeholder for it), with the pip of the Python running now.
    """
    source = PACKAGE.parent
    where = str(source) if (source / "pyproject.toml").is_file() else "/path/to/fsmem"
    return f"{sys.executable} -m pip install -e '{where}[{extra}]'"
