"""The curator's pure rules: when a pass runs, and which skills it archives (an injected clock)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fsmem._core.curator import SkillState, pass_due, to_archive

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


def ago(days: float = 0, hours: float = 0) -> datetime:
    return NOW - timedelta(days=days, hours=hours)


def test_when_a_pass_runs():
    assert pass_due(NOW, None, ago(days=300)) == "first"
    assert pass_due(NOW, ago(days=6, hours=23), ago(days=3)) == "recent"
    assert pass_due(NOW, ago(days=7), ago(hours=1, days=0)) == "busy"
    assert pass_due(NOW, ago(days=7), ago(hours=2)) == "due"
    assert pass_due(NOW, ago(days=7), None) == "due"


def test_what_is_archived_counts_from_the_last_use_or_change_else_the_creation():
    states = [
        SkillState("skills/old-unused", True, ago(days=30)),
        SkillState("skills/young", True, ago(days=29, hours=23)),
        SkillState("skills/read-lately", True, ago(days=90), last_used=ago(days=10)),
        SkillState("skills/changed-lately", True, ago(days=90), last_changed=ago(days=2)),
        SkillState("skills/read-long-ago", True, ago(days=90), last_used=ago(days=31)),
        SkillState("skills/a-persons", False, ago(days=900)),
    ]
    assert to_archive(states, NOW) == ["skills/old-unused", "skills/read-long-ago"]
