"""Review mode (docs/design.md §9): adds apply at once; anything else waits as a proposal for a person."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import fsmem
from fsmem import Conflict, Scope
from fsmem.cli import main
from fsmem._core.review import only_adds


@pytest.fixture
def memory(tmp_path):
    memory = fsmem.open(tmp_path / "root", create=True)
    (memory.root / "MEMORY.md").write_text("# Rules\n- one\n- two\n")
    return memory


def reviewer(memory):
    run = memory.run(Scope.chat(), thread_id="review-1", review=True)
    assert run.call({"command": "read", "path": "MEMORY.md"})["ok"]
    return run


def test_only_adds_rule():
    assert only_adds("a\nb\n", "a\nb\nc\n")
    assert only_adds("", "x\n")
    assert not only_adds("a\nb\n", "a\n")
    assert not only_adds("a\nb\n", "b\na\n")


def test_an_addition_applies_at_once(memory):
    result = reviewer(memory).call({"command": "write", "path": "MEMORY.md",
                                    "content": "# Rules\n- one\n- two\n- three\n"})
    assert result["ok"] and "proposal" not in result
    assert memory.read("MEMORY.md").endswith("- three\n")
    assert memory.proposals() == []


def test_a_replacement_waits_and_approve_applies_it(memory):
    result = reviewer(memory).call({"command": "write", "path": "MEMORY.md", "old_text": "- two", "new_text": "- 2"})
    assert result["ok"] and result["proposal"]
    assert memory.read("MEMORY.md") == "# Rules\n- one\n- two\n"
    [proposal] = memory.proposals()
    assert "-- two" in proposal.diff.replace("- -", "--") or "-- two" in proposal.diff
    memory.approve(proposal.id)
    assert memory.read("MEMORY.md") == "# Rules\n- one\n- 2\n"
    assert memory.proposals() == []


def test_a_refused_change_leaves_no_proposal(memory):
    result = reviewer(memory).call({"command": "write", "path": "MEMORY.md", "old_text": "- nine", "new_text": "x"})
    assert result["error"]["code"] == "EDIT_UNPLACED"
    assert memory.proposals() == []


def test_approve_refuses_when_the_file_changed(memory):
    reviewer(memory).call({"command": "delete", "path": "MEMORY.md"})
    [proposal] = memory.proposals()
    (memory.root / "MEMORY.md").write_text("# Rules\n- changed by a person\n")
    with pytest.raises(Conflict, match="can no longer apply"):
        memory.approve(proposal.id)
    assert memory.read("MEMORY.md") == "# Rules\n- changed by a person\n"


def test_rename_and_delete_wait(memory):
    run = reviewer(memory)
    (memory.root / "topic.md").write_text("t\n")
    assert run.call({"command": "read", "path": "topic.md"})["ok"]
    assert run.call({"command": "rename", "path": "topic.md", "new_path": "moved.md"})["proposal"]
    assert run.call({"command": "delete", "path": "topic.md"})["proposal"]
    assert (memory.root / "topic.md").exists() and not (memory.root / "moved.md").exists()
    assert len(memory.proposals()) == 2


def test_cli_lists_approves_and_discards(memory):
    reviewer(memory).call({"command": "write", "path": "MEMORY.md", "old_text": "- one", "new_text": "- 1"})
    reviewer(memory).call({"command": "write", "path": "MEMORY.md", "old_text": "- two", "new_text": "- 2"})
    first, second = memory.proposals()
    runner = CliRunner()
    listing = runner.invoke(main, ["proposals", "--root", str(memory.root)])
    assert listing.output.splitlines()[0].endswith("change MEMORY.md  [can apply]")
    assert runner.invoke(main, ["proposals", "approve", first.id, "--root", str(memory.root)]).exit_code == 0
    listing = runner.invoke(main, ["proposals", "--root", str(memory.root)])
    assert listing.output.strip().endswith("[stale (MEMORY.md changed)]")
    assert runner.invoke(main, ["proposals", "discard", second.id, "--root", str(memory.root)]).output == \
        f"Discarded {second.id}: change MEMORY.md.\n"
    assert memory.read("MEMORY.md") == "# Rules\n- 1\n- two\n"


def test_a_held_create_from_a_face_applies_on_approve(memory):
    from fsmem._core.requests import Write

    run = reviewer(memory)
    (memory.root / "t.md").write_text("a\nb\n")
    assert run.call({"command": "read", "path": "t.md"})["ok"]
    held = run.execute(Write(path="t.md", content="b\n", literal=True))
    assert held["proposal"]
    memory.approve(held["proposal"])
    assert memory.read("t.md") == "b\n"


def test_drive_read_of_a_folder_is_none(memory):
    (memory.root / "folder").mkdir()
    assert memory.drive.read("folder") is None


def test_proposal_ids_never_read_as_card_numbers(memory):
    from fsmem._core.secrets import find_secret
    from fsmem._memory.proposals import new_id

    assert all(find_secret(f"see proposal {new_id()}") is None for _ in range(200))
