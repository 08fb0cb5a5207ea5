"""The curator's pure rules: when a pass runs, and which skills it archives. No model, no clock of its own.

- A pass runs once the memory has been idle for 2 hours and the last pass is 7 days old; the first pass
  ever only records itself, so a new memory loses nothing on its first day.
- It archives a skill the review made (``origin: review``) that nobody read or changed for 30 days,
  counted from its creation when it was never used. A person's skill is never archived.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

__all__ = ["IDLE", "EVERY", "UNUSED", "SkillState", "pass_due", "to_archive", "parse_time"]

IDLE = timedelta(hours=2)
EVERY = timedelta(days=7)
UNUSED = timedelta(days=30)

Due = Literal["first", "due", "recent", "busy"]


def parse_time(text: str) -> datetime:
    """An ISO time as fsmem writes it (``…Z``), aware of its zone."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass(frozen=True)
class SkillState:
    """What the curator knows of one skill."""

    folder: str  # skills/weekly-report, agents/seo-3f9a1c2e/skills/meta-tags
    by_review: bool
    created: datetime
    last_used: datetime | None = None  # a read of one of its files
    last_changed: datetime | None = None

    @property
    def last_activity(self) -> datetime:
        return max(t for t in (self.created, self.last_used, self.last_changed) if t is not None)


def pass_due(now: datetime, last_pass: datetime | None, last_activity: datetime | None) -> Due:
    """Whether a pass runs now: ``first`` (record the pass, archive nothing), ``due``, ``recent`` (the
    last pass is under 7 days old) or ``busy`` (memory was used in the last 2 hours).

    >>> from datetime import UTC
    >>> now = datetime(2026, 12, 1, tzinfo=UTC)
    >>> pass_due(now, None, None), pass_due(now, now - timedelta(days=8), now - timedelta(hours=3))
    ('first', 'due')
    """
    if last_pass is None:
        return "first"
    if now - last_pass < EVERY:
        return "recent"
    if last_activity is not None and now - last_activity < IDLE:
        return "busy"
    return "due"


def to_archive(skills: Iterable[SkillState], now: datetime) -> list[str]:
    """The folders of the review's skills idle for 30 days, in order; a person's are never among them."""
    return sorted(s.folder for s in skills if s.by_review and now - s.last_activity >= UNUSED)
