"""The memory tool's JSON Schema (``tool_schema/memory.json``) and validation of requests against it."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from fsmem.errors import BadRequest
from fsmem.resources import data_dir

SCHEMA_DIR = data_dir("tool_schema")


@lru_cache(maxsize=1)
def memory_schema() -> dict[str, Any]:
    return json.loads((SCHEMA_DIR / "memory.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _validator():
    import jsonschema

    return jsonschema.Draft202012Validator(memory_schema())


def check_request(request: Any) -> dict[str, Any]:
    """Raise BadRequest naming every problem unless ``request`` fits the schema."""
    if not isinstance(request, dict):
        raise BadRequest("a memory call must be a JSON object with a \"command\"; see the tool's schema")
    if fits_quickly(request):
        return request
    problems = sorted(_validator().iter_errors(request), key=lambda e: list(e.absolute_path))
    if problems:
        raise BadRequest("the call does not fit the memory tool: " + "; ".join(_describe(p) for p in problems[:5]))
    return request


# ---- the quick path -------------------------------------------------------------------------
#
# A full jsonschema pass costs about a fifth of a tool write's own time. Most calls are well formed,
# so they are first checked against rules read from the same schema file (per-command fields from the
# ``allOf`` if/then blocks, value rules from ``properties``). The quick check only ever says "fits" for
# schema features it understands; anything else goes to jsonschema, which also words every refusal.
# tests/test_schema_quick.py holds that it never accepts what jsonschema refuses.


@lru_cache(maxsize=1)
def _quick_rules() -> tuple[dict[str, Any], dict[str, tuple[frozenset[str], frozenset[str], Any]]]:
    schema = memory_schema()
    per_command = {}
    for rule in schema.get("allOf", []):
        command = rule["if"]["properties"]["command"]["const"]
        then = rule["then"]
        per_command[command] = (frozenset(then["propertyNames"]["enum"]), frozenset(then.get("required", [])),
                                then.get("oneOf"))
    return schema["properties"], per_command


def fits_quickly(request: dict[str, Any]) -> bool:
    """True only when ``request`` certainly fits the schema; False means "ask jsonschema"."""
    try:
        properties, per_command = _quick_rules()
    except (KeyError, TypeError):  # a schema shape this check does not know: always ask jsonschema
        return False
    command = request.get("command")
    rules = per_command.get(command) if isinstance(command, str) else None
    if rules is None:
        return False
    allowed, required, one_of = rules
    keys = request.keys()
    if not (keys <= allowed and required <= keys and keys <= properties.keys()):
        return False
    if one_of is not None and sum(_alternative_fits(alternative, keys) for alternative in one_of) != 1:
        return False
    return all(_value_fits(properties[key], value) for key, value in request.items())


def _alternative_fits(alternative: dict[str, Any], keys) -> bool:
    if set(alternative) - {"required", "not"}:
        return False  # unknown: counted as not fitting, so the call goes to jsonschema
    if not set(alternative.get("required", [])) <= keys:
        return False
    refused = alternative.get("not")
    if refused is None:
        return True
    options = refused.get("anyOf", [refused])
    return not any(set(option.get("required", [])) <= keys for option in options)


_UNDERSTOOD = {"type", "enum", "anyOf", "minLength", "maxLength", "minimum", "maximum", "pattern", "items",
               "maxItems", "description", "default"}


def _value_fits(rule: dict[str, Any], value: Any) -> bool:
    if set(rule) - _UNDERSTOOD:
        return False
    if "anyOf" in rule:
        return any(_value_fits(option, value) for option in rule["anyOf"])
    if "enum" in rule and value not in rule["enum"]:
        return False
    kind = rule.get("type")
    if kind == "string":
        if not isinstance(value, str):
            return False
        if len(value) < rule.get("minLength", 0) or len(value) > rule.get("maxLength", len(value)):
            return False
        return "pattern" not in rule or re.search(rule["pattern"], value) is not None
    if kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            return False
        return rule.get("minimum", value) <= value <= rule.get("maximum", value)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "array":
        if not isinstance(value, list) or len(value) > rule.get("maxItems", len(value)):
            return False
        return all(_value_fits(rule.get("items", {}), item) for item in value)
    return False


def _describe(error) -> str:
    where = ".".join(str(part) for part in error.absolute_path) or "request"
    if error.validator == "propertyNames":
        return f"{where}: {error.instance!r} is not a field of this command"
    if error.validator == "oneOf":
        return "write takes either content, or old_text with new_text (not both)"
    if error.validator == "additionalProperties":
        return f"{where}: {error.message}"
    return f"{where}: {error.message}"
