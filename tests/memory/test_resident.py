"""The resident: `fsmem watch` runs the shell's read-only commands over a socket only its owner may use;
what it prints is what the shell would have printed; anything it should not answer, the shell runs."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import fsmem
from fsmem._env.config import load_settings
from fsmem._index import resident as wire
from fsmem._index.resident import ask, socket_path
from fsmem._index.state import watcher_health
from fsmem._memory import resident as resident_module
from fsmem._memory.memory import Memory
from fsmem._memory.resident import Resident
from fsmem.cli.served import answer
from tests.conftest import REPO, okapi_root, run_fsmem, run_question, write


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return okapi_root(tmp_path / "root")


def opened(root: Path) -> Memory:
    """The memory as `fsmem watch` opens it: the root's settings, as a shell with no FSMEM_* has them."""
    return fsmem.open(root, settings=load_settings(root, {}))


class Recording:
    """The CLI's answer, each answer kept: whether the resident ran the command."""

    def __init__(self) -> None:
        self.answers: list[dict[str, Any]] = []

    def __call__(self, memory: Memory, question: Any) -> dict[str, Any]:
        reply = answer(memory, question)
        self.answers.append(reply)
        return reply

    def served(self) -> int:
        return sum(1 for reply in self.answers if reply["ok"])


def question(root: Path, *argv: str, cwd: Path | None = None) -> dict[str, Any]:
    return run_question(cwd or root, *argv)


def env() -> dict[str, str]:
    values = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    values["PYTHONPATH"] = str(REPO)
    return values


def test_fsmem_watch_runs_the_shells_commands_and_stops_serving_when_stopped(root: Path) -> None:
    alone = run_fsmem("search", "okapi", "--root", str(root))
    watch = subprocess.Popen(
        [sys.executable, "-m", "fsmem", "watch", "--root", str(root)], env=env(), stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 30
        while not (watcher_health(root / ".fsmem")[0] and socket_path(root / ".fsmem").exists()):
            assert time.monotonic() < deadline and watch.poll() is None, "fsmem watch never started serving"
            time.sleep(0.05)
        reply = ask(socket_path(root / ".fsmem"), question(root, "search", "okapi"))
        assert reply is not None and reply["code"] == 0
        assert reply["stdout"].encode("latin-1").decode("utf-8") == alone.stdout  # bytes, a character each
        assert run_fsmem("search", "okapi", "--root", str(root)).stdout == alone.stdout
    finally:
        watch.send_signal(signal.SIGINT)
        _, stderr = watch.communicate(timeout=20)
    assert watch.returncode == 0, stderr
    assert not socket_path(root / ".fsmem").exists()


def test_the_socket_is_its_owners_alone_and_another_uid_is_refused_both_ways(root: Path, monkeypatch) -> None:
    memory = opened(root)
    path = socket_path(root / ".fsmem")
    with Resident(memory, answer) as resident:
        assert resident.serving
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(root / ".fsmem").st_mode) == 0o700
        asked = question(root, "search", "okapi")
        assert ask(path, asked)["code"] == 0
        other = os.geteuid() + 4242
        with monkeypatch.context() as patch:
            patch.setattr(resident_module, "peer_uid", lambda conn: other)  # the server sees another user
            assert ask(path, asked) is None
            assert resident.refused == 1
        with monkeypatch.context() as patch:
            patch.setattr(wire, "peer_uid", lambda conn: other)  # the asker finds another user's server
            assert ask(path, asked) is None
        assert ask(path, asked)["code"] == 0
    memory.close()


def test_a_link_planted_as_the_socket_is_never_followed(root: Path, tmp_path: Path) -> None:
    """A symlink (or a plain file) where the socket should be is no resident: the shell runs the
    command itself and asks nothing of what the link names."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = socket.socket(socket.AF_UNIX)
    target.bind(str(elsewhere / "listener.sock"))
    target.listen(1)
    target.settimeout(0.5)
    path = socket_path(root / ".fsmem")
    os.symlink(elsewhere / "listener.sock", path)
    try:
        assert ask(path, question(root, "search", "okapi")) is None
        done = run_fsmem("search", "okapi", "--json", "--root", str(root))
        assert done.returncode == 0 and len(json.loads(done.stdout)) == 3
        with pytest.raises(TimeoutError):
            target.accept()  # nobody connected through the link
    finally:
        target.close()
    path.unlink()
    path.write_text("not a socket")
    assert ask(path, question(root, "search", "okapi")) is None


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to connect as another user")
def test_a_process_of_another_user_is_refused_even_through_loosened_permissions(root: Path) -> None:
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="fsmem-peer-", dir="/tmp"))  # no private folder above it
    try:
        moved = base / "root"
        shutil.copytree(root, moved)
        memory = opened(moved)
        with Resident(memory, answer) as resident:
            path = socket_path(moved / ".fsmem")
            for folder in (base, moved, moved / ".fsmem"):
                os.chmod(folder, 0o711)
            os.chmod(path, 0o666)
            code = (
                "import os, socket, sys\nos.setgid(65534)\nos.setuid(65534)\n"
                "s = socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\n"
                "print(s.recv(4096).decode())\n"  # turned away before it could ask
            )
            done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
            assert json.loads(done.stdout) == {"ok": False, "why": "refused: another user"}
            assert resident.refused == 1
        memory.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_stale_socket_is_passed_over_then_replaced_and_a_live_one_is_left_alone(root: Path) -> None:
    path = socket_path(root / ".fsmem")
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(path))  # bound and closed without a listener: what a killed resident leaves
    dead.close()
    assert path.exists() and ask(path, question(root, "search", "okapi")) is None
    done = run_fsmem("search", "okapi", "--json", "--root", str(root))
    assert done.returncode == 0 and len(json.loads(done.stdout)) == 3
    memory = opened(root)
    with Resident(memory, answer) as first:
        assert first.serving and ask(path, question(root, "search", "okapi"))["code"] == 0
        with Resident(memory, answer) as second:
            assert not second.serving  # one serves; the other does not take its socket
            assert (second.why_not or "").startswith("another process serves them (pid ")
        assert path.exists() and ask(path, question(root, "search", "okapi")) is not None
    assert not path.exists()
    memory.close()


def test_an_idle_resident_holds_no_lock_and_answers_what_another_process_just_wrote(root: Path) -> None:
    memory = opened(root)
    recording = Recording()
    with Resident(memory, recording):
        code = (
            "import sys, fsmem\nm = fsmem.open(sys.argv[1])\n"
            "r = m.run().call({'command': 'write', 'path': 'new.md', 'content': '# New\\nthe numbat\\n'})\n"
            "assert r['ok'], r\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code, str(root)],
            env={**env(), "FSMEM_LOCK_TIMEOUT": "1"},
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        found = run_fsmem("search", "numbat", "--json", "--root", str(root))
        assert [hit["path"] for hit in json.loads(found.stdout)] == ["new.md"]
        assert recording.served() == 1
    memory.close()


def test_a_root_deeper_than_a_socket_address_reaches_is_served(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*(["a-rather-long-folder-name"] * 5), "root")
    fsmem.open(deep, create=True).close()
    write(deep, "MEMORY.md", "# Project\n\nthe okapi\n")
    assert len(str(socket_path(deep / ".fsmem"))) > 108
    memory = opened(deep)
    with Resident(memory, answer) as resident:
        assert resident.serving
        reply = ask(socket_path(deep / ".fsmem"), question(deep, "search", "okapi", "--json"))
        assert [hit["path"] for hit in json.loads(reply["stdout"])] == ["MEMORY.md"]
    memory.close()


def test_fsmem_watch_runs_one_watcher_the_commands_it_runs_use_too(root: Path, monkeypatch) -> None:
    """`fsmem watch` keeps the index current with the process's one watcher (the shared index's): a
    command it runs uses its memory, and starts no second watcher or index on the same files."""
    from click.testing import CliRunner

    from fsmem._index.watch import Watcher
    from fsmem.cli import main
    from fsmem.cli import watch as watch_face

    started: list[Watcher] = []
    real_start = Watcher.start
    opened_memories: list[object] = []
    real_open = fsmem.open

    def counting_start(self: Watcher) -> Watcher:
        started.append(self)
        return real_start(self)

    def counting_open(*args: Any, **kwargs: Any) -> Memory:
        opened_memories.append(args)
        return real_open(*args, **kwargs)

    def serve_two_commands(stop, idle, watcher) -> None:  # instead of blocking: two commands run, then stop
        for argv in (["search", "okapi"], ["read", "MEMORY.md"]):
            reply = ask(socket_path(root / ".fsmem"), question(root, *argv))
            assert reply is not None and reply["code"] == 0 and "okapi" in reply["stdout"], reply

    monkeypatch.setattr(Watcher, "start", counting_start)
    monkeypatch.setattr(watch_face, "_until_stopped", serve_two_commands)
    monkeypatch.setattr(fsmem, "open", counting_open)
    monkeypatch.delenv("FSMEM_WATCH")  # as a shell with no FSMEM_* variable starts it
    done = CliRunner().invoke(main, ["watch", "--root", str(root)], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    assert len(started) == 1 and len(opened_memories) == 1  # the watch's own: none per question


def test_a_resident_runs_only_its_own_roots_read_only_commands_with_its_own_settings(
    root: Path, tmp_path: Path
) -> None:
    """Another root, other settings, a command that writes, a garbled question: refused, nothing done."""
    other = tmp_path / "other"
    fsmem.open(other, create=True).close()
    memory = opened(root)
    recording = Recording()
    path = socket_path(root / ".fsmem")
    with Resident(memory, recording):
        assert ask(path, question(root, "search", "okapi"))["code"] == 0
        assert ask(path, question(root, "search", "okapi", "--root", str(other))) is None
        assert ask(path, question(other, "search", "okapi")) is None  # typed in the other root
        assert ask(path, {**question(root, "search", "okapi"), "environ": {"FSMEM_SEARCH_MODE": "words"}}) is None
        for argv in (["write", "x.md"], ["init", str(tmp_path / "new")], ["facts", "forget", "f1"], ["search", "-h"]):
            assert ask(path, question(root, *argv)) is None
        for garbled in ({"op": "search", "args": {}}, {**question(root, "read"), "argv": "read"}, [1, 2]):
            assert ask(path, garbled) is None  # type: ignore[arg-type]
        assert ask(path, {**question(root, "read"), "streams": {"stdout": {"tty": False}}}) is None
        assert recording.served() == 1
        assert not (root / "x.md").exists() and not (tmp_path / "new").exists()
        # the settings of the root's own config are the asker's too: a change there is seen
        (root / ".fsmem" / "config.toml").write_text('search_mode = "words"\n', encoding="utf-8")
        assert ask(path, question(root, "search", "okapi")) is None
    memory.close()


def test_a_command_typed_in_a_folder_of_the_root_reads_from_there(root: Path) -> None:
    memory = opened(root)
    path = socket_path(root / ".fsmem")
    with Resident(memory, answer):
        reply = ask(path, question(root, "read", "plan.md", cwd=root / "seo"))
        assert reply["code"] == 0 and "Launch plan" in reply["stdout"]
        reply = ask(path, question(root, "read", "--root", "..", "../MEMORY.md", cwd=root / "seo"))
        assert reply["code"] == 0 and "okapi launch" in reply["stdout"]  # --root .. taken from there too
    memory.close()


def test_shells_asking_at_once_are_each_answered_in_turn_with_their_own_output(root: Path) -> None:
    commands = [["search", "okapi"], ["read", "MEMORY.md"], ["search", "--regex", "ok.pi"], ["read", "missing.md"]] * 2
    alone = [run_fsmem(*command, cwd=root) for command in commands]
    memory = opened(root)
    recording = Recording()
    with Resident(memory, recording):
        shells = [
            subprocess.Popen(
                [sys.executable, "-m", "fsmem", *command],
                cwd=root,
                env=env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for command in commands
        ]
        together = [(shell.communicate(timeout=120), shell.returncode) for shell in shells]
    memory.close()
    assert recording.served() == len(commands)
    assert together == [((done.stdout, done.stderr), done.returncode) for done in alone]


def test_a_resident_killed_mid_life_leaves_the_shell_running_its_commands_itself(root: Path) -> None:
    alone = run_fsmem("search", "okapi", "--root", str(root))
    watch = subprocess.Popen(
        [sys.executable, "-m", "fsmem", "watch", "--root", str(root)], env=env(), stderr=subprocess.DEVNULL
    )
    path = socket_path(root / ".fsmem")
    deadline = time.monotonic() + 30
    while ask(path, question(root, "search", "okapi")) is None:
        assert time.monotonic() < deadline and watch.poll() is None, "fsmem watch never started serving"
        time.sleep(0.05)
    watch.kill()  # kill -9: its socket stays behind, with nothing listening
    watch.wait(timeout=20)
    assert path.exists() and ask(path, question(root, "search", "okapi")) is None
    again = run_fsmem("search", "okapi", "--root", str(root))
    assert (again.returncode, again.stdout, again.stderr) == (alone.returncode, alone.stdout, alone.stderr)


def test_a_command_run_for_a_shell_leaves_the_processs_other_threads_their_own_streams(
    root: Path, monkeypatch, capsys
) -> None:
    """A long-lived face that serves (`fsmem chat`, `fsmem mcp`) goes on printing and reading while
    the resident runs a shell's command: only the thread running it has the shell's streams."""
    import threading

    memory = opened(root)
    real_search = Memory.search
    seen: dict[str, bool] = {}

    def search_beside_another_thread(self: Memory, *args: Any, **kwargs: Any) -> Any:
        def the_chat_goes_on() -> None:
            print("the chat goes on")
            print("a note of the chat's", file=sys.stderr)
            seen["its stdin"] = not hasattr(sys.stdin, "getvalue")  # the process's, not the shell's empty one

        seen["the shell's stdin"] = hasattr(sys.stdin, "getvalue")
        other = threading.Thread(target=the_chat_goes_on)
        other.start()
        other.join()
        return real_search(self, *args, **kwargs)

    monkeypatch.setattr(Memory, "search", search_beside_another_thread)
    capsys.readouterr()
    reply = answer(memory, question(root, "search", "okapi"))
    assert reply["ok"] and reply["code"] == 0 and "okapi" in reply["stdout"], reply
    assert "the chat" not in reply["stdout"] + reply["stderr"]
    printed = capsys.readouterr()  # the process's own streams
    assert "the chat goes on" in printed.out and "a note of the chat's" in printed.err
    assert seen == {"the shell's stdin": True, "its stdin": True}
    memory.close()
