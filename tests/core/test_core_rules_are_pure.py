"""The rules modules of the core import only the standard library and fsmem.errors."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "fsmem" / "core"


@pytest.mark.parametrize("name", ["paths", "merge", "secrets", "when"])
def test_rules_import_nothing_outside_the_standard_library(name: str) -> None:
    tree = ast.parse((CORE / f"{name}.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = [node.module or ""]
        else:
            continue
        for module in modules:
            top = module.split(".")[0]
            assert top in sys.stdlib_module_names or module == "fsmem.errors" or module.startswith("fsmem.core"), module
    source = (CORE / f"{name}.py").read_text(encoding="utf-8")
    assert "open(" not in source and "os." not in source  # no I/O in the rules
