"""The resident's life, with real processes: one per root (its claim), started on first use
(``watch_daemon = "auto"``), stopped when idle, replaced after ``kill -9``, never holding the root's
write lock, and served by a long-lived process that already watches when no other serves."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import fsmem
from fsmem._env.config import Settings, load_settings
from fsmem._errors import SetupError
from fsmem._index.autostart import LOG_NAME, claim, holder
from fsmem._index.resident import ask, socket_path
from fsmem._memory.resident import Resident, serve
from fsmem.cli.served import answer
from tests.conftest import REPO, run_fsmem, run_question


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    memory = fsmem.open(folder, create=True, settings=Settings(durable=False))
    run = memory.run(thread_id="t-1")
    for path, text in [("MEMORY.md", "# Project\n\nThe okapi launch.\n"), ("notes/zoo.md", "# Zoo\n\nAn okapi.\n")]:
        assert run.call({"command": "write", "path": path, "content": text})["ok"]
    memory.close()
    return folder


def env(**extra: str) -> dict[str, str]:
    values = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    values["PYTHONPATH"] = str(REPO)
    return {**values, **extra}


def wait_until(check: Callable[[], object], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)


def asked(state: Path, variables: dict[str, str] | None = None) -> dict | None:
    """The resident's answer to `fsmem search okapi --json` typed in its root with these variables."""
    return ask(socket_path(state), run_question(state.parent, "search", "okapi", "--json", environ=variables))


def answered(state: Path, variables: dict[str, str] | None = None) -> bool:
    reply = asked(state, variables)
    return reply is not None and reply["code"] == 0 and len(json.loads(reply["stdout"])) == 2


def resident_pid(state: Path) -> int:
    return int(holder(state).split()[0])


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a child of this test that exited stays a zombie until reaped: that is gone too
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()[0] == "Z"


def watch(root: Path, *args: str, **extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "fsmem", "watch", "--root", str(root), *args],
        env=env(**extra),
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def reaped() -> Iterator[list[int]]:
    """Pids of residents a test started detached: killed at the end if still there."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# ---- settings ------------------------------------------------------------------------------------


def test_watch_daemon_and_watch_idle_are_settings_refused_when_wrong(root: Path) -> None:
    assert (Settings().watch_daemon, Settings().watch_idle) == ("off", 900.0)
    assert load_settings(root, {"FSMEM_WATCH_DAEMON": "auto", "FSMEM_WATCH_IDLE": "30"}).watch_idle == 30.0
    (root / ".fsmem" / "config.toml").write_text('watch_daemon = "auto"\nwatch_idle = 60\n')
    assert (load_settings(root, {}).watch_daemon, load_settings(root, {}).watch_idle) == ("auto", 60.0)
    for variables, named in [
        ({"FSMEM_WATCH_DAEMON": "always"}, "watch_daemon must be one of off, auto, not 'always'"),
        ({"FSMEM_WATCH_IDLE": "0"}, "watch_idle must be a number of seconds above 0"),
        ({"FSMEM_WATCH_IDLE": "nan"}, "watch_idle must be a number of seconds above 0"),
    ]:
        with pytest.raises(SetupError, match=named):
            load_settings(root, variables)
    done = run_fsmem("search", "okapi", "--root", str(root), env={"FSMEM_WATCH_DAEMON": "sometimes"})
    assert done.returncode == 2 and "[FSMEM_ERROR] setting watch_daemon must be one of" in done.stderr
    # whether a process starts a resident, or how long one waits, is no part of the answers
    assert Settings(watch_daemon="auto", watch_idle=5).for_answers() == Settings().for_answers()


# ---- one per root -------------------------------------------------------------------------------


def test_two_residents_started_at_once_leave_one_and_the_other_exits_0_at_once(root: Path) -> None:
    first, second = watch(root), watch(root)
    try:
        wait_until(lambda: answered(root / ".fsmem"), "a resident answers")
        # one of the two finds the claim taken and leaves without watching
        wait_until(lambda: first.poll() is not None or second.poll() is not None, "one of them leaves")
        left, stays = (first, second) if first.poll() is not None else (second, first)
        assert left.returncode == 0
        said = left.stderr.read() if left.stderr is not None else ""
        assert "Not watching" in said and "another process serves them (pid" in said, said
        assert stays.poll() is None and resident_pid(root / ".fsmem") == stays.pid
    finally:
        for proc in (first, second):
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                proc.communicate(timeout=30)
    assert not socket_path(root / ".fsmem").exists()
    held = claim(root / ".fsmem", "test")  # let go with its owner
    assert held is not None
    os.close(held)


def test_a_resident_in_this_process_and_one_in_another_never_both_serve(root: Path) -> None:
    memory = fsmem.open(root, settings=Settings(durable=False))
    with Resident(memory, answer) as here:
        assert here.serving
        done = subprocess.run(
            [sys.executable, "-m", "fsmem", "watch", "--root", str(root)],
            env=env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert f"another process serves them (pid {os.getpid()}" in done.stderr
        assert here.serving and socket_path(root / ".fsmem").exists()
    memory.close()


# ---- idle ---------------------------------------------------------------------------------------


def test_a_resident_with_idle_exit_stops_cleanly_after_that_long_without_a_question(root: Path) -> None:
    proc = watch(root, "--idle-exit", "1.5")
    wait_until(lambda: answered(root / ".fsmem"), "the resident answers")
    for _ in range(3):  # each question starts its quiet time again
        time.sleep(0.5)
        assert answered(root / ".fsmem")
    _, stderr = proc.communicate(timeout=60)  # then it stops by itself
    assert proc.returncode == 0, stderr
    assert "Stopped: no question for 1.5 s." in stderr
    assert not socket_path(root / ".fsmem").exists()
    held = claim(root / ".fsmem", "test")
    assert held is not None  # the claim went with it
    os.close(held)


def test_a_plain_fsmem_watch_keeps_running_with_no_question(root: Path) -> None:
    proc = watch(root)
    try:
        wait_until(lambda: answered(root / ".fsmem"), "the resident answers")
        assert proc.poll() is None
        time.sleep(3)  # far past any idle time a test would set: nobody asked it to stop
        assert proc.poll() is None and answered(root / ".fsmem")
        # a shell that would start a resident itself, or let one idle longer, is answered all the same
        assert answered(root / ".fsmem", {"FSMEM_WATCH_DAEMON": "auto", "FSMEM_WATCH_IDLE": "5"})
        assert not answered(root / ".fsmem", {"FSMEM_SEARCH_MODE": "words"})  # one that searches otherwise is not
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert proc.returncode == 0 and not socket_path(root / ".fsmem").exists()


# ---- started on first use -------------------------------------------------------------------------


def test_auto_starts_a_detached_resident_that_answers_the_next_command_and_idles_out(
    root: Path, reaped: list[int]
) -> None:
    state = root / ".fsmem"
    variables = {"FSMEM_WATCH_DAEMON": "auto", "FSMEM_WATCH_IDLE": "3"}
    alone = run_fsmem("search", "okapi", "--json", "--root", str(root), env=variables)
    assert alone.returncode == 0 and len(json.loads(alone.stdout)) == 2  # its own work, this time
    wait_until(lambda: asked(state, variables) is not None, "the resident it started answers")
    pid = resident_pid(state)
    reaped.append(pid)
    assert os.getsid(pid) == pid  # a session of its own: no terminal's hangup reaches it
    assert stat.S_IMODE(os.stat(state / LOG_NAME).st_mode) == 0o600
    assert "started on first use" in (state / LOG_NAME).read_text()
    served = run_fsmem("search", "okapi", "--json", "--root", str(root), env=variables)
    assert json.loads(served.stdout) == json.loads(alone.stdout)
    again = run_fsmem("search", "okapi", "--json", "--root", str(root), env=variables)
    assert again.returncode == 0 and resident_pid(state) == pid  # no second one started
    wait_until(lambda: gone(pid), "the resident stops after watch_idle with no question")
    assert not socket_path(state).exists()
    assert "Stopped: no question for 3 s." in (state / LOG_NAME).read_text()


def test_with_watch_daemon_off_no_resident_is_started(root: Path) -> None:
    for _ in range(2):
        done = run_fsmem("search", "okapi", "--json", "--root", str(root))
        assert done.returncode == 0
    assert not socket_path(root / ".fsmem").exists() and not (root / ".fsmem" / LOG_NAME).exists()


def test_only_a_command_a_resident_would_run_starts_one_and_never_on_the_served_path(
    root: Path, reaped: list[int]
) -> None:
    state = root / ".fsmem"
    variables = {"FSMEM_WATCH_DAEMON": "auto", "FSMEM_WATCH_IDLE": "30"}
    for argv in (["status"], ["index", "status"], ["log"]):  # commands it does not run start none
        done = run_fsmem(*argv, "--root", str(root), env=variables)
        assert done.returncode == 0, done.stderr
    assert not (state / LOG_NAME).exists() and not socket_path(state).exists()
    proc = watch(root, **variables)  # one serves: a command it runs for a shell starts no other
    try:
        wait_until(lambda: answered(state, variables), "the resident answers")
        spawned = state / "resident.spawned"
        for argv in (["search", "okapi"], ["read", "MEMORY.md"], ["facts", "list"]):
            reply = ask(socket_path(state), run_question(root, *argv, environ=variables))
            assert reply is not None and reply["code"] == 0, (argv, reply)
        assert not spawned.exists() and not (state / LOG_NAME).exists()
        assert resident_pid(state) == proc.pid
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)


def test_shells_at_once_on_first_use_leave_one_resident(root: Path, reaped: list[int]) -> None:
    variables = {"FSMEM_WATCH_DAEMON": "auto", "FSMEM_WATCH_IDLE": "30"}
    shells = [
        subprocess.Popen(
            [sys.executable, "-m", "fsmem", "search", "okapi", "--json", "--root", str(root)],
            env=env(**variables),
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for shell in shells:
        out, _ = shell.communicate(timeout=60)
        assert shell.returncode == 0 and len(json.loads(out)) == 2
    state = root / ".fsmem"
    wait_until(lambda: answered(state, variables), "a resident answers")
    pid = resident_pid(state)
    reaped.append(pid)
    others = [p for p in _watchers_of(root) if p != pid]
    wait_until(lambda: all(gone(p) for p in others), "every other resident started leaves")
    assert resident_pid(state) == pid and answered(state, variables)
    os.kill(pid, signal.SIGTERM)
    wait_until(lambda: gone(pid), "the resident stops on SIGTERM")


def _watchers_of(root: Path) -> list[int]:
    """Pids of `fsmem watch --root ROOT` processes on this machine (read from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            args = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"watch" in args and os.fsencode(str(root)) in args:
            found.append(int(entry))
    return found


# ---- crashes and the lock -------------------------------------------------------------------------


def test_a_resident_killed_with_sigkill_is_found_dead_and_replaced_on_first_use(
    root: Path, reaped: list[int]
) -> None:
    state = root / ".fsmem"
    proc = watch(root)
    wait_until(lambda: answered(state), "the resident answers")
    proc.kill()
    proc.wait(timeout=30)
    assert socket_path(state).exists()  # what a killed resident leaves
    assert asked(state) is None  # a stale socket answers nothing
    variables = {"FSMEM_WATCH_DAEMON": "auto", "FSMEM_WATCH_IDLE": "30"}
    done = run_fsmem("search", "okapi", "--json", "--root", str(root), env=variables)
    assert done.returncode == 0 and len(json.loads(done.stdout)) == 2  # by itself, meanwhile
    wait_until(lambda: answered(state, variables), "a new resident replaced the dead one")
    pid = resident_pid(state)
    reaped.append(pid)
    assert pid != proc.pid
    os.kill(pid, signal.SIGKILL)  # and again: a plain `fsmem watch` replaces it too
    wait_until(lambda: gone(pid), "the resident is dead")
    again = watch(root)
    try:
        wait_until(lambda: answered(state), "fsmem watch replaced the dead one")
        assert resident_pid(state) == again.pid
    finally:
        again.send_signal(signal.SIGINT)
        again.communicate(timeout=30)


def test_a_running_resident_never_holds_the_roots_write_lock(root: Path) -> None:
    proc = watch(root)
    try:
        wait_until(lambda: answered(root / ".fsmem"), "the resident answers")
        code = (
            "import sys, fsmem\nm = fsmem.open(sys.argv[1])\n"
            "for i in range(5):\n"
            "    r = m.run().call({'command': 'write', 'path': f'n{i}.md', 'content': f'# N\\nthe numbat {i}\\n'})\n"
            "    assert r['ok'], r\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code, str(root)],
            env=env(FSMEM_LOCK_TIMEOUT="0.5"),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        found = run_fsmem("search", "numbat", "--json", "--root", str(root))
        assert len(json.loads(found.stdout)) == 5
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)


# ---- long-lived processes serve ---------------------------------------------------------------------


def test_a_long_lived_process_stands_by_and_serves_once_the_resident_ends(root: Path) -> None:
    proc = watch(root)
    wait_until(lambda: answered(root / ".fsmem"), "fsmem watch answers")
    memory = fsmem.open(root)
    resident = serve(memory, answer)
    try:
        assert not resident.serving  # another serves: this one stands by
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
        wait_until(lambda: resident.serving, "the standing-by process takes over")
        assert answered(root / ".fsmem")
    finally:
        resident.stop()
        memory.close()
    assert not socket_path(root / ".fsmem").exists()  # the socket goes with the process that served


def test_fsmem_mcp_serves_the_shell_while_its_session_lasts(root: Path) -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "fsmem", "mcp", "--root", str(root)],
        env=env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_until(lambda: answered(root / ".fsmem"), "fsmem mcp answers the shell")
        assert resident_pid(root / ".fsmem") == server.pid
    finally:
        server.communicate(b"", timeout=60)  # the client goes: the session ends
    assert not socket_path(root / ".fsmem").exists()


def test_first_use_never_writes_through_a_link_planted_for_its_log_or_its_claim(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me\n")
    state = root / ".fsmem"
    (state / LOG_NAME).symlink_to(outside)
    done = run_fsmem("search", "okapi", "--json", "--root", str(root), env={"FSMEM_WATCH_DAEMON": "auto"})
    assert done.returncode == 0 and len(json.loads(done.stdout)) == 2  # the command's own work goes on
    assert outside.read_text() == "keep me\n" and not socket_path(state).exists()
    (state / LOG_NAME).unlink()
    (state / "resident.lock").symlink_to(outside)
    with pytest.raises(OSError):
        claim(state, "test")  # a link is never the claim
    proc = watch(root)
    try:
        assert proc.stderr is not None
        said = proc.stderr.readline()  # it watches, and says why it serves nothing
        assert said.startswith("Watching ") and "not serving searches (its claim cannot be taken" in said, said
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
    assert outside.read_text() == "keep me\n" and not socket_path(state).exists()
