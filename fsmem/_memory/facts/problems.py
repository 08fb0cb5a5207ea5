"""What a person should mend in the facts (``Problem``): files that are no fact or cannot be read,
facts that break the rules, two facts holding for one thing, broken chains, changes left half-done;
and for each, what ``fsmem check --repair`` would do about it (``repair``), or None where only a
person can mend it (fsmem never guesses at what a person meant)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from fsmem._core import facts as rules
from fsmem._core.layout import FACTS_DIR
from fsmem._errors import FsmemError

if TYPE_CHECKING:
    from fsmem._core.chains import Resolution

__all__ = ["Problem", "check", "limit_problems", "ID_REPAIR", "FINISH_REPAIR"]

ID_REPAIR = "takes the fact's id from its file's name"
FINISH_REPAIR = "writes the rest of the change, as every read already sees it"


@dataclass(frozen=True)
class Problem:
    """A fact file fsmem cannot use as it is, what to do about it, and what ``--repair`` would do
    (None: a person must mend it). ``subject``: the subject the file names, where it can be read."""

    path: str
    message: str
    repair: str | None = None
    subject: str | None = None

    def to_dict(self) -> dict[str, str | None]:
        return {"path": self.path, "message": self.message, "repair": self.repair, "subject": self.subject}


def limit_problems(
    facts: Iterable[rules.Fact], known: dict[str, tuple[rules.Fact, str | None]] | None = None
) -> list[Problem]:
    """The facts that break a limit (a person wrote more by hand): used as they are, and marked.
    ``known``: what was found of each fact before, by id (kept for the fact it was found of)."""
    found = []
    for fact in facts:
        if known is None:
            message = rules.limit_problem(fact)
        else:
            seen = known.get(fact.id)
            if seen is None or seen[0] is not fact:
                seen = known[fact.id] = (fact, rules.limit_problem(fact))
            message = seen[1]
        if message is not None:
            found.append(Problem(fact.path, message, subject=fact.subject))
    return found


def check(resolution: Resolution, found: Iterable[Problem], now: Callable[[], datetime]) -> list[Problem]:
    """``found`` (the files the last look could not use) and what ``resolution`` breaks, sorted by path."""
    from fsmem._core.chains import rejoinable  # the chains' rules: not for a listing the kept view answers

    problems = list(found)
    for fact in sorted(resolution.facts.values(), key=lambda f: f.id):
        try:
            rules.check_draft(
                fact.subject, fact.attribute, fact.text, fact.source, fact.said, now=max(now(), fact.said)
            )
        except FsmemError as error:  # limits, secrets (the message never repeats one)
            problems.append(Problem(fact.path, error.message, subject=fact.subject))
    for ids in resolution.duplicates():
        fact = resolution.facts[ids[0]]
        problems.append(
            Problem(
                FACTS_DIR,
                f"{len(ids)} facts hold for {fact.subject} / "
                f"{fact.attribute} ({', '.join(ids)}); forget or edit all but one",
                subject=fact.subject,
            )
        )
    for fact in sorted(resolution.facts.values(), key=lambda f: f.id):
        if (
            fact.replaced_by is not None
            and fact.replaced_by not in resolution.facts
            and fact.replaced_by not in resolution.broken
        ):
            joins = rejoinable(resolution, fact.id)
            problems.append(
                Problem(
                    fact.path,
                    f"replaced by {fact.replaced_by}, which is gone; "
                    + (
                        f"{joins.id} holds for the same thing now"
                        if joins is not None
                        else "its history ends here and nothing holds for the same thing now. Forget this fact "
                        "if it no longer matters, or keep what holds now"
                    ),
                    repair=f"joins it to the chain of {joins.id}, by date" if joins is not None else None,
                    subject=fact.subject,
                )
            )
    if resolution.fixes:
        paths = sorted({op.path for op in resolution.fixes})
        problems.append(
            Problem(
                FACTS_DIR,
                f"{len(paths)} fact file(s) left half-changed or linked to facts that are gone "
                f"({', '.join(paths[:5])}{', …' if len(paths) > 5 else ''}); "
                "reads already see the change finished",
                repair=FINISH_REPAIR,
            )
        )
    return sorted(problems, key=lambda p: (p.path, p.message))
