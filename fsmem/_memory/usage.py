"""What model calls cost: one record a call, summed by purpose and by day (``fsmem usage``).

    model = Metered(model, memory.drive.state, "chat")   # every complete() is recorded
    rows = summarize(read_calls(memory.drive.state))     # [Usage(day, purpose, calls, input, output, …)]

Records are lines of ``<state>/usage.jsonl`` (``.fsmem/usage.jsonl`` in a folder; a worker's cache folder
on PostgreSQL, so each worker counts its own calls), appended whole with ``O_APPEND``. Tokens are what the
server reported (``usage``), else an estimate (a character in four), and the record says which. A
record that cannot be written (a read-only root) is logged, never raised: counting never breaks a chat.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fsmem._core.due import input_tokens
from fsmem._store.atomic import append_line, json_lines
from fsmem._store.types import now_iso

__all__ = ["PURPOSES", "USAGE_FILE", "Call", "Metered", "Usage", "read_calls", "record", "summarize"]

PURPOSES = ("chat", "review", "remember")
USAGE_FILE = "usage.jsonl"
_log = logging.getLogger("fsmem.usage")


@dataclass(frozen=True)
class Call:
    """One model call: when, for what, on which model, and its tokens."""

    time: str
    purpose: str
    model: str
    input_tokens: int
    output_tokens: int
    estimated: bool  # the server reported no usage: the tokens are fsmem's estimate


@dataclass(frozen=True)
class Usage:
    """Calls and tokens of one purpose on one day (UTC)."""

    day: str
    purpose: str
    calls: int
    input_tokens: int
    output_tokens: int
    estimated_calls: int


def record(state: Path, call: Call) -> None:
    try:
        append_line(state / USAGE_FILE, asdict(call))
    except OSError as error:
        _log.warning("a model call's usage could not be recorded in %s: %s", state / USAGE_FILE, error)


def read_calls(state: Path) -> Iterator[Call]:
    """Every recorded call, oldest first; a line that is not a record (cut short by a crash) is skipped."""
    for record in json_lines(state / USAGE_FILE):
        try:
            yield Call(**record)  # type: ignore[arg-type]  # a line that is not a mapping: TypeError
        except TypeError:
            continue


def summarize(calls: Iterable[Call]) -> list[Usage]:
    """One row per day and purpose, days oldest first, purposes in :data:`PURPOSES` order."""
    totals: dict[tuple[str, str], list[int]] = {}
    for call in calls:
        row = totals.setdefault((call.time[:10], call.purpose), [0, 0, 0, 0])
        row[0] += 1
        row[1] += call.input_tokens
        row[2] += call.output_tokens
        row[3] += int(call.estimated)
    order = {purpose: index for index, purpose in enumerate(PURPOSES)}
    keys = sorted(totals, key=lambda key: (key[0], order.get(key[1], len(order)), key[1]))
    return [Usage(day, purpose, *totals[(day, purpose)]) for day, purpose in keys]


class Metered:
    """A chat model whose every call is recorded under ``purpose``; ``last`` holds the tokens of the
    latest call: ``(input, output, estimated)``."""

    def __init__(self, model: Any, state: Path, purpose: str) -> None:
        self.model = model
        self.state = state
        self.purpose = purpose
        self.last: tuple[int, int, bool] = (0, 0, True)

    @property
    def context_window(self) -> int | None:
        return getattr(self.model, "context_window", None)

    def complete(self, messages: list[dict], *, tools: list[dict] | None = None, **options: Any) -> dict:
        reply = self.model.complete(messages, tools=tools, **options)
        if isinstance(reply, dict):
            self.last = input_tokens(reply, messages, tools)
            name = str(getattr(self.model, "model", None) or type(self.model).__name__)
            record(self.state, Call(now_iso(), self.purpose, name, *self.last))
        return reply
