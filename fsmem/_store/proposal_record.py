"""What a kept proposal record must be to be shown, approved or copied: the rule both the folder
store's reader and a copy apply to what they find (``.fsmem/proposals/<id>.json`` may have been cut
short, edited or planted by hand).

    record_problem({"id": "p-1", ...}, "p-1")   # None: a record ``ChangeProposal(**record)`` takes
    record_problem({"id": "p-1"}, "p-1")        # "it has no made_at, scope, …"
"""

from __future__ import annotations

import json
from dataclasses import MISSING, fields
from typing import Any

from fsmem._core.paths import normalize_path
from fsmem._core.requests import parse_request
from fsmem._errors import FsmemError
from fsmem._store.types import ChangeProposal

# The JSON kind each field of ChangeProposal holds (the record is ``asdict`` of one).
_KINDS: dict[str, tuple[type, ...]] = {
    "id": (str,),
    "made_at": (str,),
    "thread": (str, type(None)),
    "scope": (str,),
    "request": (dict,),
    "base": (dict,),
    "summary": (str,),
    "diff": (str,),
    "extra": (dict,),
}
# What each annotation of a request's fields (``fsmem._core.requests``) allows.
_FIELD_KINDS: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "str | None": (str, type(None)),
    "int | None": (int, type(None)),
    "bool": (bool,),
    "tuple[str, ...]": (tuple,),
}
_REQUIRED = [f.name for f in fields(ChangeProposal) if f.default is MISSING and f.default_factory is MISSING]
_JSON_NAMES = {
    str: "text",
    dict: "an object",
    list: "a list",
    bool: "true or false",
    int: "a number",
    float: "a number",
}


def record_problem(record: Any, proposal_id: str) -> str | None:
    """What keeps ``record`` (read from the proposal named ``proposal_id``) from being a proposal
    ``approve`` could apply, said for a person; None when it is one."""
    if not isinstance(record, dict):
        return f"it holds {_kind(record)}, not a JSON object"
    missing = [name for name in _REQUIRED if name not in record]
    if missing:
        return f"it has no {', '.join(missing)}"
    unknown = sorted(str(name) for name in record if name not in _KINDS)
    if unknown:
        return f"it has fields a proposal has not: {', '.join(unknown)}"
    for name, value in record.items():
        if not isinstance(value, _KINDS[name]):
            wanted = " or ".join("null" if kind is type(None) else _JSON_NAMES[kind] for kind in _KINDS[name])
            return f"its {name} is {_kind(value)}, not {wanted}"
    if _has_surrogate(record):
        return "it holds text that is not UTF-8 (an escaped lone surrogate)"
    if record["id"] != proposal_id:
        return f"its id is {record['id']!r} but its file is named {proposal_id}.json"
    for path, version in record["base"].items():
        if not _is_path(path) or not isinstance(version, (str, type(None))):
            return f"its base maps {path!r} to {_kind(version)}; it maps each path to the version it held (or null)"
    folder = record.get("extra", {}).get("folder")
    if folder is not None and not _is_path(folder):
        return f"its extra.folder {folder!r} is not a memory path"
    try:
        request = parse_request(record["request"])
    except (FsmemError, KeyError, TypeError, ValueError) as error:
        why = error.message if isinstance(error, FsmemError) else f"{type(error).__name__}: {error}"
        return f"its request is not a memory-tool call ({why})"
    for part in fields(request):  # parsing names the fields; their values are checked here
        value = getattr(request, part.name)
        if not isinstance(value, _FIELD_KINDS.get(str(part.type), object)):
            return f"its request's {part.name} is {_kind(value)}, which a {record['request']['command']} never holds"
    return None


def _has_surrogate(record: dict[str, Any]) -> bool:
    """Whether a string anywhere in ``record`` holds a lone surrogate (JSON may escape one as \\udc80)."""
    try:
        json.dumps(record, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _is_path(path: object) -> bool:
    try:
        return normalize_path(path) == path
    except FsmemError:
        return False


def _kind(value: object) -> str:
    if value is None:
        return "null"
    return _JSON_NAMES.get(type(value), type(value).__name__)
