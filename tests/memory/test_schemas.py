"""The tool forms in tool_schema/ are generated from memory.json and stay in step with it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import jsonschema
import pytest

from fsmem._memory import tool_forms as _tool_forms
from fsmem._memory.tool_forms import (
    SCHEMA_DIR,
    anthropic_tool,
    generate,
    load_source,
    mcp_tool,
    openai_function,
    portable_input_schema,
    stale,
    tool_description,
)
from tests.conftest import REPO

COMBINATORS = {"allOf", "anyOf", "oneOf", "not", "if", "then", "else"}

VALID_CALLS = [
    {"command": "read", "path": "/"},
    {"command": "read", "path": "MEMORY.md", "start_line": 2, "end_line": 9},
    {"command": "write", "path": "seo/titles.md", "content": "# Titles\n"},
    {"command": "write", "path": "a.md", "old_text": "x", "new_text": "", "expected_version": "0123456789ab"},
    {"command": "rename", "path": "a.md", "new_path": "b/a.md"},
    {"command": "delete", "path": "b", "expected_version": "0123456789ab"},
    {"command": "search", "query": "titles", "regex": False, "include": ["seo/**"], "exclude": "x.md",
     "since": "8w", "limit": 5},
]


def test_the_checked_in_forms_are_up_to_date():
    assert stale() == [], "run bin/gen-schemas"
    for name, text in generate().items():
        assert (SCHEMA_DIR / name).read_text(encoding="utf-8") == text


def test_the_check_script_passes_on_the_repo():
    result = subprocess.run([sys.executable, str(REPO / "bin" / "gen-schemas"), "--check"],
                            capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_openai_function_form():
    source = load_source()
    form = json.loads((SCHEMA_DIR / "openai_function.json").read_text(encoding="utf-8"))
    assert list(form) == ["type", "function"] and form["type"] == "function"
    function = form["function"]
    assert list(function) == ["name", "description", "parameters"]
    assert function["name"] == "memory"
    assert function["description"] == tool_description(source)
    assert function["parameters"]["properties"] == source["properties"]
    assert function["parameters"]["required"] == source["required"] == ["command"]
    assert function["parameters"]["additionalProperties"] is False


def test_anthropic_tool_form():
    source = load_source()
    form = json.loads((SCHEMA_DIR / "anthropic_tool.json").read_text(encoding="utf-8"))
    assert list(form) == ["name", "description", "input_schema"]
    assert form["name"] == "memory" and form["description"] == tool_description(source)
    assert form["input_schema"]["type"] == "object"
    assert form["input_schema"]["properties"] == source["properties"]


@pytest.mark.parametrize("form", [
    lambda s, d: openai_function(s, d)["function"]["parameters"],
    lambda s, d: anthropic_tool(s, d)["input_schema"],
    lambda s, d: mcp_tool(s, d)["inputSchema"],
], ids=["openai", "anthropic", "mcp"])
def test_every_form_is_a_plain_object_schema_providers_accept(form):
    source = load_source()
    schema = form(source, "d")
    # The Anthropic API refuses allOf/anyOf/oneOf at the top of an input schema, and so do hosts that
    # forward MCP tool schemas to it; identity keywords mean nothing to a provider.
    assert not COMBINATORS & set(schema)
    assert not {"$schema", "$id", "title", "description"} & set(schema)
    assert schema["type"] == "object"
    jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("call", VALID_CALLS, ids=lambda c: c["command"])
def test_what_memory_json_accepts_every_form_accepts(call):
    source = load_source()
    jsonschema.validate(call, source)
    jsonschema.validate(call, portable_input_schema(source))


def test_the_portable_form_still_refuses_unknown_fields_and_commands():
    schema = portable_input_schema(load_source())
    for call in ({"command": "read", "path": "/", "colour": "red"}, {"command": "fly"}, {"path": "/"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(call, schema)


def test_the_source_is_not_changed_by_generation():
    source = load_source()
    before = json.dumps(source, sort_keys=True)
    portable_input_schema(source)["properties"]["command"]["enum"].append("fly")
    assert json.dumps(source, sort_keys=True) == before


def test_a_tool_description_prompt_wins_over_the_schema_description(tmp_path):
    source = load_source()
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    assert tool_description(source, prompts) == source["description"]
    (prompts / _tool_forms.DESCRIPTION_PROMPT).write_text("\nUse memory well.\n", encoding="utf-8")
    assert tool_description(source, prompts) == "Use memory well."
    (prompts / _tool_forms.DESCRIPTION_PROMPT).write_text("  \n", encoding="utf-8")
    assert tool_description(source, prompts) == source["description"]
    with pytest.raises(ValueError, match="no \"description\""):
        tool_description({"type": "object", "properties": {}}, prompts)


def test_stale_names_what_changed(tmp_path):
    schemas = tmp_path / "tool_schema"
    shutil.copytree(SCHEMA_DIR, schemas)
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    if (REPO / "prompts" / _tool_forms.DESCRIPTION_PROMPT).is_file():
        shutil.copy(REPO / "prompts" / _tool_forms.DESCRIPTION_PROMPT, prompts)
    assert stale(schemas, prompts) == []
    source = json.loads((schemas / "memory.json").read_text())
    source["properties"]["limit"]["maximum"] = 50
    (schemas / "memory.json").write_text(json.dumps(source))
    assert stale(schemas, prompts) == ["openai_function.json", "anthropic_tool.json",
                                       "openai_function_grammar_safe.json"]
    (schemas / "anthropic_tool.json").unlink()
    for name, text in generate(schemas, prompts).items():
        (schemas / name).write_text(text)
    assert stale(schemas, prompts) == []


def test_a_schema_that_is_not_an_object_is_refused():
    with pytest.raises(ValueError, match="must describe an object"):
        portable_input_schema({"oneOf": [{"type": "object"}]})


def test_main_usage():
    assert _tool_forms.main(["--bogus"]) == 2


def test_the_description_is_the_one_the_harness_gives_the_model():
    prompts = pytest.importorskip("fsmem._memory.prompts")
    assert tool_description(load_source()) == prompts.tool_description()
