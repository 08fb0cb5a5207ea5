"""The public face and the architecture rules that keep the code honest."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import fsmem

PACKAGE = Path(fsmem.__file__).parent


def test_all_matches_public_members():
    public = {name for name in dir(fsmem) if not name.startswith("_")}
    modules = {name for name in public if type(getattr(fsmem, name)).__name__ == "module"}
    assert set(fsmem.__all__) == public - modules
    assert len(fsmem.__all__) == len(set(fsmem.__all__))


def test_the_public_face_binds_each_name_from_its_module_on_first_use():
    # one table in fsmem/__init__.py: `import fsmem` loads nothing of fsmem (not even the errors: a shell
    # a resident answers needs none); each name is the
    # defining module's own object, through `fsmem.X`, `from fsmem import X` and `import *` alike
    code = (
        "import sys\n"
        "import fsmem\n"
        "print(sorted(name for name in sys.modules if name.startswith('fsmem.')))\n"
        "from fsmem import *\n"
        "from fsmem import Memory, Run, Scope, build_model, open, review\n"
        "from fsmem._memory import levels as _levels, memory as _memory, review as _review, tool as _tool\n"
        "from fsmem._llm import openai as _openai\n"
        "assert open is fsmem.open is _memory.open and Memory is fsmem.Memory is _memory.Memory\n"
        "assert Run is _tool.Run and Scope is _levels.Scope and build_model is _openai.build_model\n"
        "assert review is _review.review and set(fsmem.__all__) <= set(vars(fsmem)) <= set(dir(fsmem))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert fsmem.Run is fsmem._memory.tool.Run and fsmem.scope_files is fsmem._memory.levels.scope_files
    with pytest.raises(AttributeError, match="no attribute 'Memroy'"):
        fsmem.Memroy  # noqa: B018 - the lookup is what is tested


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module if node.module.startswith("fsmem") else node.module.split(".")[0])
    return found


def test_frameworks_are_imported_by_one_module_each():
    # a set names the modules; a string the one folder whose modules may
    owners: dict[str, set[str] | str] = {"tantivy": {"_index/generations.py", "_index/delta.py", "_index/query.py"},
                                         "watchdog": {"_index/watch.py"}, "click": "cli/", "mcp": {"mcp_server.py"},
                                         "anthropic": {"claude_memory.py"}, "psycopg": "_store/postgres/",
                                         "detect_secrets": {"_core/known_keys.py"},
                                         **dict.fromkeys(("starlette", "uvicorn", "jinja2", "markdown_it"), "cli/ui/")}
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE).as_posix()
        for name in _imports(path) & set(owners):
            allowed = owners[name]
            if isinstance(allowed, str):
                assert relative.startswith(allowed), (relative, name)
            else:
                assert relative in allowed, (relative, name)


def test_every_error_code_is_unique():
    from fsmem import _errors

    classes = [c for c in vars(_errors).values() if isinstance(c, type) and issubclass(c, _errors.FsmemError)]
    codes = [c.code for c in classes if c.code != "FSMEM_ERROR"]
    assert len(codes) == len(set(codes))


def test_tool_error_codes_are_those_of_the_design():
    from fsmem._errors import TOOL_ERROR_CODES

    assert TOOL_ERROR_CODES == {
        "NOT_FOUND", "BAD_PATH", "PROTECTED", "EXISTS", "CONFLICT", "NOT_READ", "TOO_LARGE", "SENSITIVE",
        "EDIT_UNPLACED", "NOT_UNIQUE", "BAD_PATTERN", "TIMEOUT", "BUSY", "BAD_REQUEST", "FACT_SENSITIVE",
        "STORAGE", "BAD_SKILL"}


def test_data_folders_are_found_beside_the_package_in_a_checkout():
    from fsmem._env.resources import data_dir

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


# ---- issue 11: internal modules are private -------------------------------------------------------

PUBLIC_MODULES = {"__init__", "__main__", "cli", "mcp_server", "claude_memory", "harness"}


def _top_level_modules() -> set[str]:
    return {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
            if (p.is_file() and p.suffix == ".py") or (p.is_dir() and (p / "__init__.py").exists())}


def test_every_top_level_module_but_the_public_ones_is_private():
    modules = _top_level_modules()
    assert PUBLIC_MODULES <= modules
    assert sorted(name for name in modules - PUBLIC_MODULES if not name.startswith("_")) == []
    assert "_store" in modules and "_core" in modules  # the test looks where the modules are


def test_no_public_module_name_is_left_importable_beside_its_private_one():
    import importlib

    for name in sorted(_top_level_modules() - PUBLIC_MODULES):
        if name.startswith("__"):
            continue
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(f"fsmem.{name[1:]}")


def _python_blocks() -> list[tuple[str, str]]:
    repo = PACKAGE.parent
    pages = [repo / "README.md", *sorted((repo / "docs").glob("*.md"))]
    return [(page.name, block) for page in pages if page.name != "internals.md"
            for block in re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.DOTALL)]


def test_what_the_docs_tell_users_to_import_comes_from_the_public_face():
    public = {"fsmem", *(f"fsmem.{name}" for name in PUBLIC_MODULES - {"__init__", "__main__"})}
    blocks = _python_blocks()
    assert len(blocks) >= 5
    for page, block in blocks:
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("fsmem"):
                assert node.module in public, (page, node.module)
                if node.module == "fsmem":
                    assert all(alias.name in fsmem.__all__ for alias in node.names), (page, block)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    assert not alias.name.startswith("fsmem.") or alias.name in public, (page, alias.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "fsmem":
                assert node.attr in fsmem.__all__ or f"fsmem.{node.attr}" in public, (page, node.attr)


def test_the_documented_names_are_those_of_the_private_modules():
    from fsmem import _errors
    from fsmem._llm import model as _llm
    from fsmem._llm import openai as _openai
    from fsmem._memory import prompts as _prompts

    assert fsmem.OpenAICompatibleModel is _openai.OpenAICompatibleModel and fsmem.build_model is _openai.build_model
    assert fsmem.ModelSettings is _llm.ModelSettings and fsmem.memory_section is _prompts.memory_section
    for name in ("LevelParked", "Unsupported", "BadStore"):
        assert getattr(fsmem, name) is getattr(_errors, name)


def test_fsmem_review_is_the_review_runner(tmp_path):
    from fsmem._llm.model import ScriptedModel, tool_call
    from fsmem._memory.review import ReviewResult

    memory = fsmem.open(tmp_path / "bakery", create=True)
    (memory.root / "MEMORY.md").write_text("# Rules\n")
    added = "# Rules\n- Titles end with | Rye & Ember.\n"
    model = ScriptedModel({"role": "assistant", "content": None, "tool_calls": [
        tool_call("memory", {"command": "write", "path": "MEMORY.md", "content": added})]}, "Kept it.")
    conversation = [{"role": "user", "content": "Titles always end with | Rye & Ember."},
                    {"role": "assistant", "content": "Understood."}]
    result = fsmem.review(memory, conversation, model, fsmem.Scope.chat(), max_calls=3)
    assert isinstance(result, ReviewResult)
    assert [a.path for a in result.applied] == ["MEMORY.md"] and memory.read("MEMORY.md") == added
    assert len(model.calls) == 2 and model.calls[0]["tools"]
