"""A file in ``.fsmem/proposals/`` that is not a proposal record (fsmem/_store/folder/proposals.py):
reading it is ``BadProposal`` naming the proposal and what is wrong, never a raw exception, a hang or
a read through a link; the file is left as it is; only a person's discard removes it (a link itself,
never what it points at).

Before this, each of these raised out of ``load_proposal`` as it was (JSONDecodeError,
UnicodeDecodeError, TypeError later in ``ChangeProposal(**record)``), a FIFO blocked for ever and a
link was followed out of the root.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fsmem._env.config import Settings
from fsmem._errors import BadProposal
from fsmem._store.folder.drive import Drive
from fsmem._store.folder.proposals import PROPOSAL_LIMIT
from tests.conftest import tree_snapshot

pytestmark = pytest.mark.timeout(60)  # a FIFO read without O_NONBLOCK would hang: a failure, not a stuck suite

ID = "20261201T170000-abc123"


def record(**changed: object) -> dict[str, object]:
    good: dict[str, object] = {
        "id": ID,
        "made_at": "2026-12-01T17:00:00.000000Z",
        "thread": "t-1",
        "scope": "chat",
        "request": {"command": "write", "path": "MEMORY.md", "content": "# Rules\n- two\n"},
        "base": {"MEMORY.md": "0123456789ab"},
        "summary": "change MEMORY.md",
        "diff": "-one\n+two\n",
        "extra": {},
    }
    good.update(changed)
    return {key: value for key, value in good.items() if value is not ...}


def as_bytes(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, indent=2).encode("utf-8")


GOOD = as_bytes(record())

# name -> (bytes planted as .fsmem/proposals/<ID>.json, a fragment of the problem said)
PLANTED: dict[str, tuple[bytes, str]] = {
    "not JSON": (
        b"{this is not json",
        "it is not JSON (Expecting property name enclosed in double quotes: line 1, column 2)",
    ),
    "cut short": (GOOD[: len(GOOD) // 2], "it is not JSON"),
    "empty": (b"", "it is not JSON (Expecting value: line 1, column 1)"),
    "not UTF-8": (GOOD.replace(b"change MEMORY", b"change \xff\xfe MEMORY"), "it is not UTF-8 text (byte "),
    "a list": (b"[1, 2]", "it holds a list, not a JSON object"),
    "a number": (b"7", "it holds a number, not a JSON object"),
    "a missing key": (as_bytes(record(scope=...)), "it has no scope"),
    "an extra key": (as_bytes(record(colour="red")), "it has fields a proposal has not: colour"),
    "a wrong type": (as_bytes(record(base="MEMORY.md")), "its base is text, not an object"),
    "a null summary": (as_bytes(record(summary=None)), "its summary is null, not text"),
    "another id": (as_bytes(record(id="20261201T170000-ffffff")), "its id is '20261201T170000-ffffff' but"),
    "a lone surrogate": (GOOD.replace(b"change MEMORY", b"change \\udc80 MEMORY"), "not UTF-8 (an escaped lone"),
    "a path out of the root": (as_bytes(record(base={"../x.md": None})), "its base maps '../x.md'"),
    "a request of no command": (as_bytes(record(request={"path": "MEMORY.md"})), "its request is not a memory-tool"),
    "a request of a wrong field": (
        as_bytes(record(request={"command": "write", "path": "MEMORY.md", "colour": 1})),
        "its request is not a memory-tool call",
    ),
    "a request of a wrong type": (
        as_bytes(record(request={"command": "write", "path": "MEMORY.md", "content": 5})),
        "its request's content is a number, which a write never holds",
    ),
}


@pytest.fixture
def drive(tmp_path: Path) -> Drive:
    root = tmp_path / "root"
    root.mkdir()
    (root / "MEMORY.md").write_text("# Rules\n- one\n")
    drive = Drive(root, Settings(durable=False, watch=False))
    (root / ".fsmem").mkdir()
    return drive


def plant(drive: Drive, data: bytes, proposal_id: str = ID) -> Path:
    folder = drive.state / "proposals"
    folder.mkdir(exist_ok=True)
    (folder / f"{proposal_id}.json").write_bytes(data)
    return folder / f"{proposal_id}.json"


def refused(drive: Drive, proposal_id: str = ID) -> BadProposal:
    before = tree_snapshot(drive.root)
    with pytest.raises(BadProposal) as caught:
        drive.load_proposal(proposal_id)
    assert tree_snapshot(drive.root) == before  # left as it is
    error = caught.value
    assert error.code == "BAD_PROPOSAL" and error.details["proposal"] == proposal_id
    assert f".fsmem/proposals/{proposal_id}.json" in error.message
    assert f"`fsmem proposals discard {proposal_id}`" in error.message
    return error


def test_a_good_record_reads_back_as_written(drive: Drive) -> None:
    drive.save_proposal(record())
    assert drive.load_proposal(ID) == record() and drive.proposal_ids() == [ID]


@pytest.mark.parametrize("kind", sorted(PLANTED))
def test_a_planted_file_is_a_coded_refusal_that_says_what_is_wrong(drive: Drive, kind: str) -> None:
    data, problem = PLANTED[kind]
    plant(drive, data)
    assert drive.proposal_ids() == [ID]
    error = refused(drive)
    assert problem in str(error.details["problem"]) and problem in error.message, error


def test_a_link_is_never_followed_even_to_a_good_record(drive: Drive, tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_bytes(GOOD)
    (drive.state / "proposals").mkdir()
    os.symlink(outside, drive.state / "proposals" / f"{ID}.json")
    assert refused(drive).details["problem"] == "it is a symbolic link, not a file fsmem wrote"
    drive.delete_proposal(ID)  # a person's discard: the link goes, what it pointed at stays
    assert outside.read_bytes() == GOOD and drive.proposal_ids() == []


def test_a_fifo_is_refused_without_waiting_for_a_writer(drive: Drive) -> None:
    (drive.state / "proposals").mkdir()
    os.mkfifo(drive.state / "proposals" / f"{ID}.json")
    assert "not a regular file" in str(refused(drive).details["problem"])
    drive.delete_proposal(ID)
    assert drive.proposal_ids() == []


def test_a_file_too_large_to_be_a_proposal_is_refused_without_reading_it_whole(drive: Drive) -> None:
    file = plant(drive, b"")
    with open(file, "r+b") as handle:
        handle.truncate(PROPOSAL_LIMIT + 1)  # sparse: costs no disk
    assert "more than 64 MiB" in str(refused(drive).details["problem"])


def test_a_folder_of_that_name_is_refused_and_a_discard_of_it_is_coded(drive: Drive) -> None:
    (drive.state / "proposals" / f"{ID}.json").mkdir(parents=True)
    assert refused(drive).details["problem"] == "it is a folder, not a file"
    with pytest.raises(BadProposal, match="move it away by hand"):
        drive.delete_proposal(ID)
    assert (drive.state / "proposals" / f"{ID}.json").is_dir()


def test_temp_files_and_names_that_are_not_utf8_are_no_proposals(drive: Drive) -> None:
    plant(drive, GOOD)
    folder = drive.state / "proposals"
    (folder / f".{ID}.json.123.abcdef.tmp").write_bytes(b"{")  # a crash's temp file
    (folder / ".hidden.json").write_bytes(b"{")
    (folder / "notes.txt").write_bytes(b"a person's note")
    os.close(os.open(os.fsencode(folder) + b"/\xff\xfe.json", os.O_CREAT | os.O_WRONLY, 0o600))
    assert drive.proposal_ids() == [ID]
    assert drive.load_proposal(".hidden") is None  # as for an id there is no file for


@pytest.mark.parametrize("planted", ["a link to a folder of good records", "a file"])
def test_the_proposals_folder_itself_is_never_followed(drive: Drive, tmp_path: Path, planted: str) -> None:
    """``.fsmem/proposals`` planted as a link (or a file): listing, reading, saving and discarding are
    each refused, and nothing outside the root is read, written or removed."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / f"{ID}.json").write_bytes(GOOD)
    if planted == "a file":
        (drive.state / "proposals").write_bytes(b"not a folder")
    else:
        os.symlink(outside, drive.state / "proposals")
    before, outside_before = tree_snapshot(drive.root), tree_snapshot(outside)
    for attempt in (drive.proposal_ids, lambda: drive.load_proposal(ID), lambda: drive.save_proposal(record(id="x-1")),
                    lambda: drive.delete_proposal(ID)):
        with pytest.raises(BadProposal, match="Move it away by hand") as caught:
            attempt()
        assert caught.value.code == "BAD_PROPOSAL" and ".fsmem/proposals is " in caught.value.message
    assert tree_snapshot(drive.root) == before and tree_snapshot(outside) == outside_before
