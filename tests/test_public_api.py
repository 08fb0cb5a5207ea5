"""The public face and the architecture rules that keep the code honest."""

from __future__ import annotations

import ast
from pathlib import Path

import fsmem

PACKAGE = Path(fsmem.__file__).parent


def test_all_matches_public_members():
    public = {name for name in dir(fsmem) if not name.startswith("_")}
    modules = {name for name in public if type(getattr(fsmem, name)).__name__ == "module"}
    assert set(fsmem.__all__) == public - modules
    assert len(fsmem.__all__) == len(set(fsmem.__all__))


def test_the_public_face_is_plain_imports():
    # no module __getattr__: what `__all__` names is bound when `import fsmem` returns
    assert "__getattr__" not in vars(fsmem)
    names = vars(fsmem)
    assert all(name in names for name in fsmem.__all__)
    assert fsmem.open is fsmem.memory.open and fsmem.Memory is fsmem.memory.Memory
    assert fsmem.Run is fsmem.tool.Run and fsmem.Scope is fsmem.levels.Scope


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module if node.module.startswith("fsmem") else node.module.split(".")[0])
    return found


def test_frameworks_are_imported_by_one_module_each():
    owners = {"tantivy": {"index_store.py", "query.py"}, "watchdog": {"watch.py"}, "click": None, "mcp": {"mcp_server.py"},
              "anthropic": {"claude_memory.py"}}
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE).as_posix()
        for name in _imports(path) & set(owners):
            allowed = owners[name]
            if allowed is None:
                assert relative.startswith("cli/"), (relative, name)
            else:
                assert relative in allowed, (relative, name)


def test_every_error_code_is_unique():
    from fsmem import errors

    classes = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.FsmemError)]
    codes = [c.code for c in classes if c.code != "FSMEM_ERROR"]
    assert len(codes) == len(set(codes))


def test_tool_error_codes_are_those_of_the_design():
    from fsmem.errors import TOOL_ERROR_CODES

    assert TOOL_ERROR_CODES == {
        "NOT_FOUND", "BAD_PATH", "PROTECTED", "EXISTS", "CONFLICT", "NOT_READ", "TOO_LARGE", "SENSITIVE",
        "EDIT_UNPLACED", "NOT_UNIQUE", "BAD_PATTERN", "TIMEOUT", "BUSY", "BAD_REQUEST", "FACT_SENSITIVE",
        "STORAGE"}


def test_data_folders_are_found_beside_the_package_in_a_checkout():
    from fsmem.resources import data_dir

    for name in ("prompts", "tool_schema", "sample_project"):
        assert data_dir(name) == PACKAGE.parent / name


def test_the_wheel_maps_every_data_folder_into_the_package():
    import tomllib

    config = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    for name in ("prompts", "tool_schema", "sample_project"):
        assert config["package-dir"][f"fsmem._data.{name}"] == name
        assert f"fsmem._data.{name}" in config["packages"]
    subpackages = {p.parent.relative_to(PACKAGE.parent).as_posix().replace("/", ".")
                   for p in PACKAGE.rglob("__init__.py")}
    assert subpackages <= set(config["packages"]), "a new subpackage must be listed in pyproject.toml"
