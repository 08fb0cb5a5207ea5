"""The curator (issue 22): archives the review's skills nobody used for 30 days; no model, an injected clock."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner

import fsmem
from fsmem import Scope
from fsmem._core.context import message_text
from fsmem._memory.curator import curate, restore, skills_of
from fsmem._memory.skills import record_use
from fsmem.cli import main

NOW = datetime.now(UTC)  # the log's times are real; the clock the curator is given moves on from here
REVIEWED = "skills/pricing-pages/SKILL.md"
PERSONS = "skills/weekly-report/SKILL.md"


def skill(name: str, origin: str | None) -> str:
    line = f"origin: {origin}\n" if origin else ""
    return f"---\nname: {name}\ndescription: How to do {name}.\n{line}---\n# Steps\n1. One.\n"


@pytest.fixture
def memory(tmp_path):
    memory = fsmem.open(tmp_path / "shop", create=True)
    review_run = memory.run(Scope.chat(), thread_id="review-1", review=True)
    assert review_run.call({"command": "write", "path": REVIEWED, "content": skill("pricing-pages", "review")})["ok"]
    person = memory.run(Scope.chat(), thread_id="person")
    assert person.call({"command": "write", "path": PERSONS, "content": skill("weekly-report", None)})["ok"]
    assert curate(memory, NOW).ran == "first"  # the first pass ever: recorded, nothing archived
    return memory


def days(n: float) -> datetime:
    return NOW + timedelta(days=n)


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def test_the_first_pass_ever_only_records_itself(tmp_path):
    memory = fsmem.open(tmp_path / "new", create=True)
    memory.run(Scope.chat(), thread_id="review-1", review=True).call(
        {"command": "write", "path": REVIEWED, "content": skill("pricing-pages", "review")})
    result = curate(memory, days(400))
    assert (result.ran, result.archived) == ("first", ())
    assert memory.drive.exists(REVIEWED)


def test_a_pass_waits_7_days_after_the_last_and_for_2_idle_hours(memory, tmp_path):
    assert curate(memory, days(6.9)).ran == "recent"
    fresh = fsmem.open(tmp_path / "fresh", create=True)
    assert curate(fresh, days(-8)).ran == "first"
    fresh.run(Scope.chat(), thread_id="t").call({"command": "write", "path": "notes.md", "content": "now\n"})
    assert curate(fresh, NOW + timedelta(hours=1)).ran == "busy"  # written an hour before this clock
    assert curate(fresh, NOW + timedelta(hours=3)).ran == "due"
    assert curate(fresh, NOW + timedelta(days=1)).ran == "recent"


def test_the_reviews_unused_skill_is_archived_after_30_days_and_a_persons_never(memory):
    assert curate(memory, days(29)).ran == "due"  # a week after the first pass; 29 days old: kept
    assert memory.drive.exists(REVIEWED)
    result = curate(memory, days(37))
    assert result.ran == "due" and result.archived == ("skills/pricing-pages",)
    assert not memory.drive.exists(REVIEWED) and memory.drive.exists(PERSONS)
    kept = memory.drive.read("skills/.archive/pricing-pages/SKILL.md")
    assert kept is not None and b"origin: review" in kept  # nothing deleted
    assert curate(memory, days(400)).archived == ()  # the person's skill, a year unused, stays
    listing = "".join(message_text(m) for m in memory.run(Scope.chat(), thread_id="x").context([]))
    assert "pricing-pages" not in listing and "weekly-report" in listing
    assert [h.path for h in memory.search("pricing")] == []


def test_a_use_puts_the_archiving_off_for_30_days_from_it(memory):
    record_use(memory.drive.state, "skills/pricing-pages", iso(days(20)))  # read 20 days on
    assert curate(memory, days(37)).archived == ()
    assert curate(memory, days(51)).archived == ("skills/pricing-pages",)


def test_restore_brings_it_back_and_counts_as_a_use(memory):
    curate(memory, days(37))
    path = restore(memory, "pricing-pages", now=days(37))
    assert path == REVIEWED and memory.drive.exists(REVIEWED)
    assert curate(memory, days(45)).archived == ()  # 8 days after its restore
    assert curate(memory, days(68)).archived == ("skills/pricing-pages",)


def test_an_agents_skill_is_archived_in_its_own_folder(memory):
    memory.create_agent("5c81d0e4-7f2a", "SEO")
    run = memory.run(Scope.agent("5c81d0e4-7f2a"), thread_id="review-2", review=True)
    agent_skill = "agents/seo-5c81d0e4/skills/meta-tags/SKILL.md"
    assert run.call({"command": "write", "path": agent_skill, "content": skill("meta-tags", "review")})["ok"]
    result = curate(memory, days(37))
    assert set(result.archived) == {"skills/pricing-pages", "agents/seo-5c81d0e4/skills/meta-tags"}
    assert memory.drive.exists("agents/seo-5c81d0e4/skills/.archive/meta-tags/SKILL.md")


def test_skills_list_shows_who_made_each_and_its_uses(memory):
    found = {s.name: s for s in skills_of(memory)}
    assert (found["pricing-pages"].origin, found["weekly-report"].origin) == ("review", "person")
    assert found["pricing-pages"].last_used is None


def test_the_skills_commands(memory):
    root = str(memory.root)

    def cli(*args):
        result = CliRunner().invoke(main, ["skills", *args, "--root", root])
        assert result.exit_code == 0, result.output
        return result.output

    assert "pricing-pages  skills/pricing-pages/SKILL.md  by review, never used" in cli("list")
    run = memory.run(Scope.chat(), thread_id="person")
    run.call({"command": "read", "path": PERSONS})
    run.call({"command": "write", "path": PERSONS, "content": skill("weekly-report", None) + "2. Two.\n"})
    [kept] = json.loads(cli("versions", "weekly-report", "--json"))
    assert "Reverted skills/weekly-report/SKILL.md" in cli("revert", "weekly-report")
    assert memory.read(PERSONS) == skill("weekly-report", None)
    assert kept["command"] == "write"
    curate(memory, days(37))
    assert "(archived: `fsmem skills restore`)" in cli("list")
    assert cli("restore", "pricing-pages") == f"Restored {REVIEWED}.\n"
    assert memory.drive.exists(REVIEWED)
    missing = CliRunner().invoke(main, ["skills", "restore", "nothing-here", "--root", root])
    assert missing.exit_code == 1 and "NOT_FOUND" in missing.output
