"""The house in layers (docs/internals.md): no import circle between any two modules of fsmem, every
import counted (at the top, under TYPE_CHECKING, inside a function), and the shape the layers promise."""

from __future__ import annotations

from pathlib import Path

import grimp

PACKAGE = Path(__file__).resolve().parents[1] / "fsmem"


def _graph() -> grimp.ImportGraph:
    return grimp.build_graph("fsmem", exclude_type_checking_imports=False, cache_dir=None)


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in edges.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_module_of_fsmem_is_in_an_import_circle() -> None:
    graph = _graph()
    edges = {module: graph.find_modules_directly_imported_by(module) for module in graph.modules}
    assert _circles(edges) == []


def test_the_circle_finder_finds_a_circle() -> None:
    # the check above is only as good as this: a circle through a package's __init__ counts too
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"pkg": {"pkg.x"}, "pkg.x": {"pkg"}}) == [["pkg", "pkg.x"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_type_checking_and_function_imports_are_in_the_graph() -> None:
    graph = _graph()
    # fsmem/__init__.py names its lazily bound modules under TYPE_CHECKING only
    assert "fsmem._memory.memory" in graph.find_modules_directly_imported_by("fsmem")
    # Memory.index imports the search index inside a method (tantivy stays off a writer's path)
    assert "fsmem._index.index" in graph.find_modules_directly_imported_by("fsmem._memory.memory")


def test_the_package_shows_its_layers_and_no_module_is_over_600_lines() -> None:
    entries = sorted(path.name for path in PACKAGE.iterdir() if path.name != "__pycache__")
    assert len(entries) <= 14, entries
    too_long = {
        str(path.relative_to(PACKAGE)): lines
        for path in PACKAGE.rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert too_long == {}
