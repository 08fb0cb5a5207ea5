"""What a person should mend in the facts (``Problem``): files that are no fact or cannot be read,
facts that break the rules, two facts holding for one thing, broken chains, changes left half-done."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from fsmem._core import facts as rules
from fsmem._core.chains import Resolution
from fsmem._core.layout import FACTS_DIR
from fsmem._errors import FsmemError

__all__ = ["Problem", "check"]


@dataclass(frozen=True)
class Problem:
    """A fact file fsmem cannot use as it is, and what to do about it."""

    path: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


def check(resolution: Resolution, found: Iterable[Problem], now: Callable[[], datetime]) -> list[Problem]:
    """``found`` (the files the last look could not use) and what ``resolution`` breaks, sorted by path."""
    problems = list(found)
    for fact in sorted(resolution.facts.values(), key=lambda f: f.id):
        try:
            rules.check_draft(
                fact.subject, fact.attribute, fact.text, fact.source, fact.said, now=max(now(), fact.said)
            )
        except FsmemError as error:  # limits, secrets (the message never repeats one)
            problems.append(Problem(fact.path, error.message))
    for ids in resolution.duplicates():
        fact = resolution.facts[ids[0]]
        problems.append(
            Problem(
                FACTS_DIR,
                f"{len(ids)} facts hold for {fact.subject} / "
                f"{fact.attribute} ({', '.join(ids)}); forget or edit all but one",
            )
        )
    for fact in sorted(resolution.facts.values(), key=lambda f: f.id):
        if (
            fact.replaced_by is not None
            and fact.replaced_by not in resolution.facts
            and fact.replaced_by not in resolution.broken
        ):
            problems.append(
                Problem(
                    fact.path,
                    f"replaced by {fact.replaced_by}, which is gone; "
                    "its history ends here. Forget this fact if it no longer "
                    "matters",
                )
            )
    if resolution.fixes:
        paths = sorted({op.path for op in resolution.fixes})
        problems.append(
            Problem(
                FACTS_DIR,
                f"{len(paths)} fact file(s) left half-changed "
                f"({', '.join(paths[:5])}{', …' if len(paths) > 5 else ''}); "
                "reads already see the change finished; `fsmem check --repair` "
                "or the next change writes it",
            )
        )
    return sorted(problems, key=lambda p: (p.path, p.message))
