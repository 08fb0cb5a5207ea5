"""``fsmem._env.system.start_detached`` and ``python_module``: the one way fsmem starts a process it does
not wait for (a resident on first use, the facts' check after a cold answer). Real processes."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from fsmem._env.system import python_module, start_detached


def _started(tmp_path: Path, argv: list[str]) -> str:
    """What ``argv``, started detached with its output to a file, printed once it ended."""
    log = tmp_path / "out.log"
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        pid = start_detached(argv, os.environ, output=fd)
    finally:
        os.close(fd)
    os.waitpid(pid, 0)
    return log.read_text()


def test_a_module_started_from_a_folder_holding_a_planted_package_runs_fsmems(tmp_path: Path, monkeypatch) -> None:
    planted = tmp_path / "here" / "fsmem"
    planted.mkdir(parents=True)
    (planted / "__init__.py").write_text("raise SystemExit('the planted fsmem was imported')\n")
    (planted / "__main__.py").write_text("raise SystemExit('the planted fsmem was imported')\n")
    monkeypatch.chdir(tmp_path / "here")
    said = _started(tmp_path, python_module("fsmem", "--version"))
    assert "planted" not in said and "version" in said, said


def test_it_runs_in_a_session_of_its_own_reading_nothing(tmp_path: Path) -> None:
    probe = "import os, sys; print(repr(sys.stdin.read()), os.getsid(0) == os.getpid())"
    said = _started(tmp_path, [sys.executable, "-c", probe])
    assert said.split() == ["''", "True"], said  # stdin is /dev/null; its session is its own (no terminal)


def test_without_an_output_it_writes_nowhere_and_is_reaped_by_the_next_start(tmp_path: Path) -> None:
    first = start_detached(["/bin/sh", "-c", "echo lost"], os.environ)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # let it end, unreaped
        try:
            with open(f"/proc/{first}/stat") as handle:
                if handle.read().split()[2] == "Z":
                    break
        except FileNotFoundError:
            break
        time.sleep(0.02)
    second = start_detached(["/bin/true"], os.environ)
    assert not os.path.exists(f"/proc/{first}")  # the ended one was reaped by the second start
    os.waitpid(second, 0)
