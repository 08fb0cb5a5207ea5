"""The memory tool in each form an agent framework expects, generated from ``tool_schema/memory.json``.

``memory.json`` is the one schema; fsmem validates every call against it. The forms a model provider
reads are derived from it here, and ``bin/gen-schemas`` writes them next to it:

    tool_schema/memory.json             the source (JSON Schema 2020-12, with per-command rules)
    tool_schema/openai_function.json    {"type": "function", "function": {name, description, parameters}}
    tool_schema/anthropic_tool.json     {name, description, input_schema}
    tool_schema/openai_function_grammar_safe.json
                                        the OpenAI form without length limits, for local servers
    (MCP, at run time)                  {name, description, inputSchema}

Providers accept less of JSON Schema than a validator does: the Anthropic API refuses an input schema
with ``allOf``/``anyOf``/``oneOf`` at the top level, and clients that forward MCP tool schemas to it
fail with it. So the provider forms keep the properties, ``required`` and ``additionalProperties`` and
drop the top-level combinators and conditionals; the per-command rules they held are still enforced,
because every call is checked against ``memory.json`` itself when it runs.

Local servers that turn a tool schema into a sampling grammar (llama.cpp, llama-cpp-python, vLLM's
guided decoding) expand ``maxLength: 1024`` into a thousand-fold repetition; llama-cpp-python's builder
fails on it and the server crashed. The grammar-safe form drops the length and count limits
(``minLength``, ``maxLength``, ``minItems``, ``maxItems``, ``pattern``) at every depth; fsmem still
enforces each of them when the call runs. The reference harness sends this form.

The description is the tool description prompt (``prompts/tool.md``) when it exists, else the schema's
own ``description``.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

from fsmem._core.requests import TOOL_NAME
from fsmem._env.resources import data_dir

__all__ = [
    "SCHEMA_DIR",
    "GENERATED",
    "load_source",
    "tool_description",
    "portable_input_schema",
    "openai_function",
    "grammar_safe_function",
    "anthropic_tool",
    "mcp_tool",
    "render",
    "generate",
    "stale",
    "main",
]

SCHEMA_DIR = data_dir("tool_schema")
PROMPTS_DIR = data_dir("prompts")
DESCRIPTION_PROMPT = "tool.md"  # the same text fsmem._memory.prompts.tool_description() renders

# Top-level keywords a provider's tool schema does not take: identity, and the combinators and
# conditionals that the Anthropic API refuses at the top level.
_TOP_LEVEL_DROPPED = (
    "$schema",
    "$id",
    "$comment",
    "title",
    "description",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
)


def load_source(schema_dir: Path = SCHEMA_DIR) -> dict[str, Any]:
    return json.loads((schema_dir / "memory.json").read_text(encoding="utf-8"))


def tool_description(source: dict[str, Any], prompts_dir: Path = PROMPTS_DIR) -> str:
    """The text a model reads about the tool: the prompt file when there is one, else the schema's."""
    prompt = prompts_dir / DESCRIPTION_PROMPT
    if prompt.is_file():
        text = prompt.read_text(encoding="utf-8").replace("\r\n", "\n").strip()
        if text:
            return text
    description = source.get("description")
    if not isinstance(description, str) or not description.strip():
        raise ValueError('tool_schema/memory.json has no "description" and prompts/ has no tool description')
    return description.strip()


def portable_input_schema(source: dict[str, Any]) -> dict[str, Any]:
    """The input schema every provider accepts: an object with properties, no top-level combinators."""
    if source.get("type") != "object" or not isinstance(source.get("properties"), dict):
        raise ValueError('tool_schema/memory.json must describe an object with "properties"')
    return {key: copy.deepcopy(value) for key, value in source.items() if key not in _TOP_LEVEL_DROPPED}


def openai_function(source: dict[str, Any], description: str) -> dict[str, Any]:
    """The OpenAI function-calling form (Chat Completions ``tools=[...]``)."""
    return {
        "type": "function",
        "function": {"name": TOOL_NAME, "description": description, "parameters": portable_input_schema(source)},
    }


_LENGTH_LIMITS = frozenset({"minLength", "maxLength", "minItems", "maxItems", "pattern"})


def _without_length_limits(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_length_limits(item) for key, item in value.items() if key not in _LENGTH_LIMITS}
    if isinstance(value, list):
        return [_without_length_limits(item) for item in value]
    return value


def grammar_safe_function(source: dict[str, Any], description: str) -> dict[str, Any]:
    """The OpenAI form without length limits, which grammar-constrained servers choke on."""
    return _without_length_limits(openai_function(source, description))


def anthropic_tool(source: dict[str, Any], description: str) -> dict[str, Any]:
    """The Anthropic Messages API custom-tool form (``tools=[...]``)."""
    return {"name": TOOL_NAME, "description": description, "input_schema": portable_input_schema(source)}


def mcp_tool(source: dict[str, Any], description: str) -> dict[str, Any]:
    """The MCP ``tools/list`` entry (field names as on the wire)."""
    return {"name": TOOL_NAME, "description": description, "inputSchema": portable_input_schema(source)}


def render(value: dict[str, Any]) -> str:
    """The checked-in text of a generated file: stable key order, two-space indent, final newline."""
    return json.dumps(value, ensure_ascii=False, indent=2) + "\n"


def generate(schema_dir: Path = SCHEMA_DIR, prompts_dir: Path = PROMPTS_DIR) -> dict[str, str]:
    """file name → the text it should hold."""
    source = load_source(schema_dir)
    description = tool_description(source, prompts_dir)
    return {
        "openai_function.json": render(openai_function(source, description)),
        "anthropic_tool.json": render(anthropic_tool(source, description)),
        "openai_function_grammar_safe.json": render(grammar_safe_function(source, description)),
    }


GENERATED = ("openai_function.json", "anthropic_tool.json", "openai_function_grammar_safe.json")


def stale(schema_dir: Path = SCHEMA_DIR, prompts_dir: Path = PROMPTS_DIR) -> list[str]:
    """The generated files that are missing or differ from what ``generate`` makes now."""
    wanted = generate(schema_dir, prompts_dir)
    out = []
    for name, text in wanted.items():
        path = schema_dir / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            out.append(name)
    return out


def main(argv: list[str] | None = None) -> int:
    """``bin/gen-schemas [--check]``: write the generated forms, or (with --check) only say if stale."""
    args = sys.argv[1:] if argv is None else argv
    if args not in ([], ["--check"]):
        print("usage: gen-schemas [--check]", file=sys.stderr)
        return 2
    if args == ["--check"]:
        out_of_date = stale()
        for name in out_of_date:
            print(f"tool_schema/{name} is out of date; run bin/gen-schemas", file=sys.stderr)
        return 1 if out_of_date else 0
    for name, text in generate().items():
        (SCHEMA_DIR / name).write_text(text, encoding="utf-8")
        print(f"wrote tool_schema/{name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
