"""Where fsmem's own data folders are: ``prompts/``, ``tool_schema/``, ``sample_project/``.

In a checkout (and an editable install) they sit beside the package, where people edit them; a wheel
carries them inside the package as ``fsmem/_data/<name>`` (``pyproject.toml`` maps them there).
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent  # fsmem/


def data_dir(name: str) -> Path:
    """The folder ``name`` (``"prompts"``, ``"tool_schema"`` or ``"sample_project"``)."""
    for candidate in (PACKAGE.parent / name, PACKAGE / "_data" / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"fsmem's {name}/ folder is missing from this installation ({PACKAGE})")
