"""Change proposals kept as files: ``.fsmem/proposals/<id>.json``, one plain record each.

The record is what ``fsmem._memory.proposals.ChangeProposal`` turns into; the folder only keeps it.
A file there that is not such a record (cut short, edited, not UTF-8, a link, a FIFO, too large) is
``BadProposal`` when read, and left as it is: listing shows it as broken, approving it is refused,
a copy stops, ``delete_proposal`` (a person's discard) is the only thing that removes it.
``proposals/`` itself is never followed when it is a link (or anything but a folder): every use of it is
``BadProposal`` until a person moves it away, so nothing is read, written or removed outside the root.
"""

from __future__ import annotations

import json
import os
import stat as stat_module
from pathlib import Path
from typing import Any

from fsmem._errors import BadPath, BadProposal, NotFound, TooLarge
from fsmem._store.atomic import make_dirs, write_atomic
from fsmem._store.disk_faults import storage_error
from fsmem._store.folder.ondisk import is_utf8
from fsmem._store.folder.regular import read_regular
from fsmem._store.proposal_record import record_problem

PROPOSALS_DIR = "proposals"
PROPOSAL_LIMIT = 64 << 20  # bytes: far above any proposal fsmem writes, so a planted giant is never read whole


def _proposal_file(state: Path, proposal_id: str) -> Path | None:
    if not proposal_id or "/" in proposal_id or proposal_id.startswith("."):
        return None
    _checked_folder(state)
    return state / PROPOSALS_DIR / f"{proposal_id}.json"


def _checked_folder(state: Path) -> None:
    """``BadProposal`` when ``proposals/`` is there but is not a plain folder (a link, a file, …)."""
    try:
        mode = os.lstat(state / PROPOSALS_DIR).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as error:
        raise storage_error(f"reading .fsmem/{PROPOSALS_DIR}/", error, changed=False) from error
    if stat_module.S_ISDIR(mode):
        return
    what = "a symbolic link" if stat_module.S_ISLNK(mode) else "not a folder"
    problem = f".fsmem/{PROPOSALS_DIR} is {what}, not the folder fsmem made"
    raise BadProposal(
        f"the proposals cannot be used: {problem}; fsmem neither follows nor changes it. Move it away by hand "
        "(the next proposal makes the folder again)",
        proposal=None,
        problem=problem,
    )


def save_proposal(state: Path, record: dict[str, Any], durable: bool) -> None:
    file = _proposal_file(state, str(record["id"]))
    if file is None:
        raise BadPath(f"{record['id']!r} is not a proposal id")
    data = json.dumps(record, ensure_ascii=False, indent=2).encode("utf-8")
    if len(data) > PROPOSAL_LIMIT:
        raise TooLarge(f"this change would make a proposal of {len(data):,} bytes; propose a smaller change")
    make_dirs(file.parent)
    write_atomic(file, data, durable=durable)


def load_proposal(state: Path, proposal_id: str) -> dict[str, Any] | None:
    """The record kept as ``proposal_id`` (None if there is none); ``BadProposal`` if it is not one."""
    file = _proposal_file(state, proposal_id)
    if file is None:
        return None
    try:
        kind = os.lstat(file).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        raise broken(proposal_id, f"it cannot be read ({error.strerror})") from error
    if stat_module.S_ISLNK(kind):
        raise broken(proposal_id, "it is a symbolic link, not a file fsmem wrote")
    if stat_module.S_ISDIR(kind):
        raise broken(proposal_id, "it is a folder, not a file")
    try:
        data = read_regular(file, f"{PROPOSALS_DIR}/{file.name}", PROPOSAL_LIMIT)
    except TooLarge as error:
        too_large = f"it is more than {PROPOSAL_LIMIT >> 20} MiB, far more than a proposal holds"
        raise broken(proposal_id, too_large) from error
    except BadPath as error:  # a FIFO, a device, a socket, or one that cannot be opened
        raise broken(proposal_id, "it is not a regular file (a FIFO, a device or a socket)") from error
    if data is None:
        return None
    try:
        record = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise broken(proposal_id, f"it is not UTF-8 text (byte {error.start})") from error
    except json.JSONDecodeError as error:
        where = f"line {error.lineno}, column {error.colno}"
        raise broken(proposal_id, f"it is not JSON ({error.msg}: {where})") from error
    except RecursionError as error:
        raise broken(proposal_id, "it nests JSON too deeply to be a proposal") from error
    problem = record_problem(record, proposal_id)
    if problem is not None:
        raise broken(proposal_id, problem)
    return dict(record)


def broken(proposal_id: str, problem: str) -> BadProposal:
    """The refusal of a proposal file that is not a proposal record: it says what is wrong and what to do."""
    return BadProposal(
        f"proposal {proposal_id} (.fsmem/{PROPOSALS_DIR}/{proposal_id}.json) cannot be used: {problem}. "
        f"Mend the file, or drop it with `fsmem proposals discard {proposal_id}`",
        proposal=proposal_id,
        problem=problem,
    )


def proposal_ids(state: Path) -> list[str]:
    """The ids of ``<id>.json`` entries of proposals/, whatever they hold (a dot-name is a crash's temp
    file; a name that is not UTF-8 no id fsmem makes)."""
    _checked_folder(state)
    folder = state / PROPOSALS_DIR
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as error:
        raise storage_error(f"listing .fsmem/{PROPOSALS_DIR}/", error, changed=False) from error
    kept = (name for name in names if name.endswith(".json") and not name.startswith(".") and is_utf8(name))
    return sorted(name.removesuffix(".json") for name in kept)


def delete_proposal(state: Path, proposal_id: str) -> None:
    """Remove a proposal's file, whatever it holds (a link itself, never what it points at)."""
    file = _proposal_file(state, proposal_id)
    try:
        if file is not None:
            os.unlink(file)
            return
    except FileNotFoundError:
        pass
    except OSError as error:  # a folder of that name (EISDIR), or a folder fsmem may not change
        where = f".fsmem/{PROPOSALS_DIR}/{proposal_id}.json"
        raise BadProposal(
            f"proposal {proposal_id} cannot be discarded: {where} cannot be removed ({error.strerror}); "
            "move it away by hand",
            proposal=proposal_id,
            problem=f"it cannot be removed ({error.strerror})",
        ) from error
    raise NotFound(f"there is no proposal {proposal_id!r}; `fsmem proposals` lists them")
