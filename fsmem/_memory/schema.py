"""The memory tool's JSON Schema (``tool_schema/memory.json``) and validation of requests against it."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from fsmem._env.resources import data_dir
from fsmem._errors import BadRequest

SCHEMA_DIR = data_dir("tool_schema")


@lru_cache(maxsize=1)
def memory_schema() -> dict[str, Any]:
    return json.loads((SCHEMA_DIR / "memory.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _validator() -> Any:
    # Built once, on the first call: jsonschema is a heavy import that a process which never runs the
    # tool (the shell's search, facts, versions) should not pay for.
    import jsonschema

    return jsonschema.Draft202012Validator(memory_schema())


def check_request(request: Any) -> dict[str, Any]:
    """Raise BadRequest naming every problem unless ``request`` fits the schema."""
    if not isinstance(request, dict):
        raise BadRequest('a memory call must be a JSON object with a "command"; see the tool\'s schema')
    problems = sorted(_validator().iter_errors(request), key=lambda e: list(e.absolute_path))
    if problems:
        raise BadRequest("the call does not fit the memory tool: " + "; ".join(_describe(p) for p in problems[:5]))
    return request


def _describe(error: Any) -> str:
    where = ".".join(str(part) for part in error.absolute_path) or "request"
    if error.validator == "propertyNames":
        return f"{where}: {error.instance!r} is not a field of this command"
    if error.validator == "oneOf":
        return "write takes either content, or old_text with new_text (not both)"
    if error.validator == "additionalProperties":
        return f"{where}: {error.message}"
    return f"{where}: {error.message}"
