"""Benchmarks run by ``bin/bench``: one module per area, each with ``main(argv) -> None``.

Every benchmark measures its baseline in the same run and prints medians, p95 and ratios, so the
numbers are comparable on any machine. Tests never assert on time; these scripts do the measuring.
"""
