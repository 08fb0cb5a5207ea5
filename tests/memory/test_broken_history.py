"""A proposal file that is not a proposal, and a file planted among the kept versions, met by every path
that reads them: ``memory.proposals()`` / approve / discard, ``fsmem proposals`` (list, show, approve,
discard), ``fsmem status`` and ``fsmem copy`` (folder → folder, folder → PostgreSQL).

Listing shows a broken proposal as broken (its id and what is wrong) and goes on; approving or showing
it is ``BAD_PROPOSAL`` (exit 2) with nothing changed; discarding it is a person's choice and removes
only that file. A copy from a root with one stops with ``BAD_PROPOSAL`` naming the file, before
anything is made at the destination. Before this, each raised out as it was (JSONDecodeError,
TypeError, UnicodeDecodeError), so one broken file made every listing, status and copy fail.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

import fsmem
from fsmem._env.config import Settings
from fsmem._errors import BadProposal, RootNotFound
from fsmem._memory.copy import copy
from fsmem._memory.levels import Scope
from fsmem._store.types import BrokenProposal, ChangeProposal
from fsmem.cli import main
from tests.conftest import as_url, invoke, tree_snapshot

pytestmark = pytest.mark.timeout(60)  # a planted FIFO read without O_NONBLOCK would hang

BROKEN = "20261201T170000-bad001"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A root with one proposal a reviewer made, and one file beside it that is not a proposal."""
    root = tmp_path / "root"
    memory = fsmem.open(root, create=True, settings=Settings(watch=False, durable=False))
    run = memory.run(Scope.chat(), thread_id="t-1")
    assert run.call({"command": "write", "path": "MEMORY.md", "content": "# Rules\n- one\n"})["ok"]
    reviewed = memory.run(Scope.chat(), thread_id="t-2", review=True)
    reviewed.call({"command": "read", "path": "MEMORY.md"})
    assert reviewed.call({"command": "write", "path": "MEMORY.md", "content": "# Rules\n- two\n"})["proposal"]
    memory.close()
    (root / ".fsmem" / "proposals" / f"{BROKEN}.json").write_bytes(b'{"id": "20261201T170000-bad001", "made_')
    return root


def opened(root: Path) -> fsmem.Memory:
    return fsmem.open(root, settings=Settings(watch=False, durable=False))


def test_listing_shows_the_broken_one_as_broken_and_goes_on(root: Path) -> None:
    good, broken = opened(root).proposals()
    assert isinstance(good, ChangeProposal) and good.summary
    assert broken == BrokenProposal(BROKEN, "it is not JSON (Unterminated string starting at: line 1, column 34)")


def test_approving_or_showing_it_is_refused_and_changes_nothing(root: Path) -> None:
    memory = opened(root)
    before = tree_snapshot(root)
    with pytest.raises(BadProposal) as caught:
        memory.approve(BROKEN)
    assert caught.value.details == {"proposal": BROKEN, "problem": memory.proposals()[1].problem}
    for command in ("approve", "show"):
        result = invoke(root, "proposals", command, "20261201T170000-bad")
        assert result.exit_code == 2 and result.output.startswith(
            f"Error: [BAD_PROPOSAL] proposal {BROKEN} (.fsmem/proposals/{BROKEN}.json) cannot be used: it is not JSON"
        ), result.output
    assert tree_snapshot(root) == before


def test_the_shell_lists_it_as_broken_and_the_good_one_still_applies(root: Path) -> None:
    good = opened(root).proposals()[0].id
    listed = invoke(root, "proposals")
    assert listed.exit_code == 0, listed.output
    assert listed.output.splitlines()[1].split()[:3] == [BROKEN, "-", "-"]
    assert "[broken: it is not JSON" in listed.output and "[can apply]" in listed.output
    as_json = json.loads(invoke(root, "proposals", "--json").output)
    assert [entry["id"] for entry in as_json] == [good, BROKEN] and as_json[1]["broken"].startswith("it is not JSON")
    status = invoke(root, "status", "--json")
    assert status.exit_code == 0, status.output
    assert [p["broken"] is None for p in json.loads(status.output)["proposals"]] == [True, False]
    assert f"  {BROKEN}  [broken: it is not JSON" in invoke(root, "status").output
    approved = invoke(root, "proposals", "approve", good)
    assert approved.exit_code == 0, approved.output
    assert (root / "MEMORY.md").read_text() == "# Rules\n- two\n"


def test_a_proposal_whose_file_became_a_fifo_is_stale_and_the_listing_goes_on(root: Path) -> None:
    (root / ".fsmem" / "proposals" / f"{BROKEN}.json").unlink()
    good = opened(root).proposals()[0].id
    (root / "MEMORY.md").unlink()
    os.mkfifo(root / "MEMORY.md")
    listed = invoke(root, "proposals")
    assert listed.exit_code == 0 and listed.output.endswith("[stale (MEMORY.md changed)]\n"), listed.output
    approved = invoke(root, "proposals", "approve", good)
    assert approved.exit_code == 3 and "[CONFLICT]" in approved.output, approved.output


def test_a_person_may_discard_it_and_only_it_goes(root: Path) -> None:
    good = opened(root).proposals()[0].id
    result = invoke(root, "proposals", "discard", BROKEN)
    assert result.exit_code == 0, result.output
    assert (
        result.output == f"Discarded {BROKEN} (it could not be used: it is not JSON (Unterminated string "
        "starting at: line 1, column 34)).\n"
    )
    assert [p.id for p in opened(root).proposals()] == [good]


def test_a_folder_copy_stops_naming_the_file_and_makes_nothing(root: Path, tmp_path: Path) -> None:
    before = tree_snapshot(root)
    result = CliRunner().invoke(main, ["copy", str(root), str(tmp_path / "backup")])
    with pytest.raises(BadProposal) as caught:
        copy(str(root), str(tmp_path / "backup"))
    file = root / ".fsmem" / "proposals" / f"{BROKEN}.json"
    assert caught.value.message.startswith(f"{file} is not a proposal fsmem can copy: it is not JSON (")
    assert "nothing was copied" in caught.value.message and caught.value.details["proposal"] == BROKEN
    assert result.exit_code == 2 and result.output.startswith(f"Error: [BAD_PROPOSAL] {file} is not"), result.output
    assert sorted(os.listdir(tmp_path)) == ["root"]  # no backup, no .backup.copy-* left behind
    assert tree_snapshot(root) == before
    file.unlink()  # mended: the copy goes through
    assert copy(str(root), str(tmp_path / "backup")).proposals == 1


@pytest.mark.parametrize("planted", ["a link", "a FIFO", "an extra key"])
def test_a_copy_into_postgres_stops_before_the_project_is_made(
    root: Path, tmp_path: Path, postgres: str, planted: str
) -> None:
    file = root / ".fsmem" / "proposals" / f"{BROKEN}.json"
    file.unlink()
    if planted == "a link":
        (tmp_path / "outside.json").write_text("{}")
        os.symlink(tmp_path / "outside.json", file)
    elif planted == "a FIFO":
        os.mkfifo(file)
    else:
        good = opened(root).proposals()[0]
        file.write_text(json.dumps({**good.__dict__, "id": BROKEN, "colour": "red"}))
    project = f"broken-{uuid.uuid4().hex[:8]}"
    before = tree_snapshot(root)
    with pytest.raises(BadProposal, match=f"{BROKEN}.json is not a proposal fsmem can copy"):
        copy(str(root), f"{as_url(postgres)}#{project}")
    assert tree_snapshot(root) == before
    with pytest.raises(RootNotFound):  # the project was never made
        copy(f"{as_url(postgres)}#{project}", str(tmp_path / "back"))


def test_a_copy_carries_kept_versions_and_lists_what_was_planted_among_them(root: Path, tmp_path: Path) -> None:
    (root / ".fsmem" / "proposals" / f"{BROKEN}.json").unlink()
    kept = root / ".fsmem" / "versions" / "MEMORY.md"
    real = sorted(name for name in os.listdir(kept) if not name.endswith("-live.md"))  # a live copy is the file
    (tmp_path / "outside.md").write_text("outside the root\n")
    os.symlink(tmp_path / "outside.md", kept / "20261201T170000000000Z-0123456789ab-write.md")
    os.mkfifo(kept / "20261201T170001000000Z-0123456789ac-write.md")
    (kept / "notes.md").write_text("a person's note\n")
    os.close(os.open(os.fsencode(kept) + b"/20261201T170002000000Z-0123456789ae-\xff.md", os.O_CREAT | os.O_WRONLY))
    (kept / ".20261201T170003000000Z-0123456789af-write.md.1.abc.tmp").write_text("a crash's temp file")
    os.mkdir(os.fsencode(root / ".fsmem" / "versions") + b"/\xfe.md")
    os.symlink(tmp_path, root / ".fsmem" / "versions" / "ghost.md")
    before = tree_snapshot(root)
    copied = copy(str(root), str(tmp_path / "backup"))
    assert tree_snapshot(root) == before
    assert sorted(os.listdir(tmp_path / "backup" / ".fsmem" / "versions" / "MEMORY.md")) == real
    assert copied.skipped == sorted(
        [
            ".fsmem/versions/MEMORY.md/20261201T170000000000Z-0123456789ab-write.md",
            ".fsmem/versions/MEMORY.md/20261201T170001000000Z-0123456789ac-write.md",
            ".fsmem/versions/MEMORY.md/20261201T170002000000Z-0123456789ae-\ufffd.md",
            ".fsmem/versions/MEMORY.md/notes.md",
            ".fsmem/versions/\ufffd.md",
            ".fsmem/versions/ghost.md",
        ]
    )
    listed = invoke(root, "versions", "MEMORY.md")
    assert listed.exit_code == 0 and len(listed.output.splitlines()) == len(real), listed.output
