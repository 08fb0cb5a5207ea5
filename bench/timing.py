"""Timing helpers shared by the bench parts: samples of a call, and their median and p95."""

from __future__ import annotations

import statistics
import time
from typing import Callable, Sequence


def measure(function: Callable[[], object], repeat: int, *, warm: bool = True) -> list[float]:
    """Seconds each of ``repeat`` calls took (after one untimed call that warms caches)."""
    if warm:
        function()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return samples


def median_p95(samples: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
