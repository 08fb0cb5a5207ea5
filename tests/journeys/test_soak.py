"""A short soak (``bin/soak`` runs the long one): agents, a ``fsmem tool`` caller and a person's editor
on the same files, then the audit of tests/procs/soak.py — every acknowledged change and every hand save
is in its file or in its kept versions, versions hash to their names, the log parses, ``fsmem check`` is
clean, search finds what the files hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.procs.soak import soak


@pytest.mark.slow
def test_a_short_soak_loses_nothing_anyone_wrote(tmp_path: Path) -> None:
    report = soak(8.0, tmp_path / "root")  # `bin/soak 60` is the long one
    assert report["problems"] == []
    assert report["acknowledged_not_recoverable"] == 0  # however soon the editor saved over it
    assert report["acknowledged"] > 0 and report["hand_saves_rename"] > 0 and report["hand_saves_in_place"] > 0
    print(report)
