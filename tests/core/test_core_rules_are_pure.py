"""Every module of ``fsmem._core`` is pure: it imports only the standard library, ``fsmem._core`` and
``fsmem._errors``, and does no I/O of its own. One exception: ``known_keys`` runs detect-secrets'
regex plugins (pure matchers), imported inside its function so no import of fsmem loads them."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "fsmem" / "_core"
MODULES = sorted(path.stem for path in CORE.glob("*.py"))


def test_the_list_covers_the_core() -> None:
    assert {"__init__", "facts", "chains", "paths", "merge", "secrets", "when"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_core_module_imports_only_the_standard_library(name: str) -> None:
    source = (CORE / f"{name}.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    lazy = {id(node) for function in ast.walk(tree) if isinstance(function, ast.FunctionDef)
            for node in ast.walk(function)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # a relative import stays inside fsmem._core
                continue
            modules = [node.module or ""]
        else:
            continue
        for module in modules:
            top = module.split(".")[0]
            if name == "known_keys" and top == "detect_secrets" and id(node) in lazy:
                continue
            assert (top in sys.stdlib_module_names or module == "fsmem._errors"
                    or module == "fsmem._core" or module.startswith("fsmem._core.")), (name, module)
    assert "open(" not in source and "os." not in source, name  # no I/O in the rules
