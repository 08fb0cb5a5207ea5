"""Change proposals kept as files: ``.fsmem/proposals/<id>.json``, one plain record each.

The record is what ``fsmem._memory.proposals.ChangeProposal`` turns into; the folder only keeps it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from fsmem._errors import BadPath, NotFound
from fsmem._store.atomic import make_dirs, write_atomic

PROPOSALS_DIR = "proposals"


def _proposal_file(state: Path, proposal_id: str) -> Path | None:
    if not proposal_id or "/" in proposal_id or proposal_id.startswith("."):
        return None
    return state / PROPOSALS_DIR / f"{proposal_id}.json"


def save_proposal(state: Path, record: dict[str, Any], durable: bool) -> None:
    file = _proposal_file(state, str(record["id"]))
    if file is None:
        raise BadPath(f"{record['id']!r} is not a proposal id")
    make_dirs(file.parent)
    data = json.dumps(record, ensure_ascii=False, indent=2).encode("utf-8")
    write_atomic(file, data, durable=durable)


def load_proposal(state: Path, proposal_id: str) -> dict[str, Any] | None:
    file = _proposal_file(state, proposal_id)
    try:
        return None if file is None else dict(json.loads(file.read_text(encoding="utf-8")))
    except (FileNotFoundError, NotADirectoryError):
        return None


def proposal_ids(state: Path) -> list[str]:
    folder = state / PROPOSALS_DIR
    return sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []


def delete_proposal(state: Path, proposal_id: str) -> None:
    file = _proposal_file(state, proposal_id)
    try:
        if file is not None:
            os.unlink(file)
            return
    except FileNotFoundError:
        pass
    raise NotFound(f"there is no proposal {proposal_id!r}; `fsmem proposals` lists them")
