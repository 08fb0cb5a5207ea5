"""The resident index: `fsmem watch` answers the shell's searches over a socket only its owner may use;
a cold `fsmem search` asks it and loads nothing heavy, and without it answers the same by itself."""

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

import pytest

import fsmem
from fsmem._env.config import Settings
from fsmem._index import resident as wire
from fsmem._index.resident import ask, search_args, settings_mark, socket_path
from fsmem._index.state import watcher_health
from fsmem._memory import resident as resident_module
from fsmem._memory.resident import Resident
from tests.conftest import REPO, run_fsmem, write

MARK = settings_mark(Settings(durable=False))  # the settings the residents below are opened with

QUERIES = [
    ["search", "okapi"],
    ["search", "launch", "plan"],
    ["search", "okapi", "--include", "seo/**"],
    ["search", "okapi", "--exclude", "seo/**", "--limit", "1"],
    ["search", "--regex", "ok[a-z]+i"],
    ["search", "nothingmatcheshere"],
    ["read", "MEMORY.md"],
    ["read", "seo/plan.md", "--start", "2", "--end", "3"],
    ["read"],
    ["read", "missing.md"],
]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    memory = fsmem.open(folder, create=True, settings=Settings(durable=False))
    run = memory.run(thread_id="t-1")
    for path, text in [
        ("MEMORY.md", "# Project\n\nThe okapi launch is on Friday.\n"),
        ("seo/plan.md", "# Plan\n\nLaunch plan: okapi pages first, then the rest.\n"),
        ("notes/zoo.md", "# Zoo\n\nAn okapi, a giraffe's cousin.\n"),
    ]:
        assert run.call({"command": "write", "path": path, "content": text})["ok"]
    memory.close()
    return folder


def answers(root: Path) -> list[tuple[int, object]]:
    out = []
    for query in QUERIES:
        done = run_fsmem(*query, "--json", "--root", str(root))
        out.append((done.returncode, json.loads(done.stdout) if done.stdout.strip() else done.stderr))
    return out


def env() -> dict[str, str]:
    values = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    values["PYTHONPATH"] = str(REPO)
    return values


def test_the_shell_gets_the_same_searches_and_reads_from_a_resident_as_without_one_and_loads_no_tantivy(
    root: Path,
) -> None:
    alone = answers(root)
    assert alone[0][0] == 0 and len(alone[0][1]) == 3 and alone[5] == (0, [])
    assert alone[6][1]["content"].startswith("# Project") and alone[-1][0] != 0
    watch = subprocess.Popen(
        [sys.executable, "-m", "fsmem", "watch", "--root", str(root)],
        env=env(),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not (watcher_health(root / ".fsmem")[0] and socket_path(root / ".fsmem").exists()):
            assert time.monotonic() < deadline and watch.poll() is None, "fsmem watch never started serving"
            time.sleep(0.05)
        assert answers(root) == alone
        for command in (["search", "okapi"], ["read", "MEMORY.md"]):
            code = (
                "import sys\nfrom fsmem.cli import main\n"
                f"try:\n    main({command!r} + ['--root', sys.argv[1]])\nexcept SystemExit:\n    pass\n"
                "print(sorted(m for m in ('tantivy', 'jsonschema', 'watchdog', 'frontmatter', 'regex', "
                "'fsmem._memory.memory') if m in sys.modules), file=sys.stderr)\n"
            )
            done = subprocess.run([sys.executable, "-c", code, str(root)], env=env(), capture_output=True, text=True)
            assert "okapi" in done.stdout and done.stderr.strip().splitlines()[-1] == "[]", done.stderr
    finally:
        watch.send_signal(signal.SIGINT)
        _, stderr = watch.communicate(timeout=20)
    assert watch.returncode == 0, stderr
    assert not socket_path(root / ".fsmem").exists()


def test_the_socket_is_its_owners_alone_and_another_uid_is_refused(root: Path, monkeypatch) -> None:
    memory = fsmem.open(root, settings=Settings(durable=False))
    with Resident(memory) as resident:
        assert resident.serving
        path = socket_path(root / ".fsmem")
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(root / ".fsmem").st_mode) == 0o700
        args = search_args("okapi", regex=False, include=[], exclude=[], since=None, limit=10)
        assert len(ask(root / ".fsmem", "search", args, MARK)["hits"]) == 3
        other = os.geteuid() + 4242
        with monkeypatch.context() as patch:
            patch.setattr(resident_module, "peer_uid", lambda conn: other)  # the server sees another user
            assert ask(root / ".fsmem", "search", args, MARK) is None
            assert resident.refused == 1
        with monkeypatch.context() as patch:
            patch.setattr(wire, "peer_uid", lambda conn: other)  # the asker finds another user's server
            assert ask(root / ".fsmem", "search", args, MARK) is None
        assert len(ask(root / ".fsmem", "search", args, MARK)["hits"]) == 3
    memory.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to connect as another user")
def test_a_process_of_another_user_is_refused_even_through_loosened_permissions(root: Path) -> None:
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="fsmem-peer-", dir="/tmp"))  # no private folder above it
    try:
        moved = base / "root"
        shutil.copytree(root, moved)
        memory = fsmem.open(moved, settings=Settings(durable=False))
        with Resident(memory) as resident:
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
    assert path.exists()
    args = search_args("okapi", regex=False, include=[], exclude=[], since=None, limit=10)
    assert ask(root / ".fsmem", "search", args, MARK) is None
    done = run_fsmem("search", "okapi", "--json", "--root", str(root))
    assert done.returncode == 0 and len(json.loads(done.stdout)) == 3
    memory = fsmem.open(root, settings=Settings(durable=False))
    with Resident(memory) as first:
        assert first.serving and len(ask(root / ".fsmem", "search", args, MARK)["hits"]) == 3
        with Resident(memory) as second:
            assert not second.serving  # one serves; the other does not take its socket
            assert (second.why_not or "").startswith("another process serves them (pid ")
        assert path.exists() and ask(root / ".fsmem", "search", args, MARK) is not None
    assert not path.exists()
    memory.close()


def test_an_idle_resident_holds_no_lock_and_answers_what_another_process_just_wrote(root: Path) -> None:
    memory = fsmem.open(root, settings=Settings(durable=False))
    with Resident(memory):
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
    memory.close()


def test_a_root_deeper_than_a_socket_address_reaches_is_served(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*(["a-rather-long-folder-name"] * 5), "root")
    memory = fsmem.open(deep, create=True, settings=Settings(durable=False))
    write(deep, "MEMORY.md", "# Project\n\nthe okapi\n")
    assert len(str(socket_path(deep / ".fsmem"))) > 108
    with Resident(memory) as resident:
        assert resident.serving
        args = search_args("okapi", regex=False, include=[], exclude=[], since=None, limit=10)
        assert [hit["path"] for hit in ask(deep / ".fsmem", "search", args, MARK)["hits"]] == ["MEMORY.md"]
    memory.close()


def test_fsmem_watch_runs_one_watcher_the_searches_it_serves_use_too(root: Path, monkeypatch) -> None:
    """`fsmem watch` keeps the index current with the process's one watcher (the shared index's): a
    search it serves finds that watcher and starts no second one on the same files."""
    from click.testing import CliRunner

    from fsmem._env.config import load_settings
    from fsmem._index.watch import Watcher
    from fsmem.cli import main
    from fsmem.cli import watch as watch_face

    started: list[Watcher] = []
    real_start = Watcher.start

    def counting_start(self: Watcher) -> Watcher:
        started.append(self)
        return real_start(self)

    def serve_one_search(stop, idle, watcher) -> None:  # instead of blocking: one search served, then stop
        args = search_args("okapi", regex=False, include=[], exclude=[], since=None, limit=5)
        answer = ask(root / ".fsmem", "search", args, settings_mark(load_settings(root)))  # as the shell opens it
        assert answer is not None and answer["ok"] and answer["hits"], answer

    monkeypatch.setattr(Watcher, "start", counting_start)
    monkeypatch.setattr(watch_face, "_until_stopped", serve_one_search)
    done = CliRunner().invoke(main, ["watch", "--root", str(root)], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    assert len(started) == 1


def test_a_resident_answers_only_an_asker_whose_settings_are_its_own(root: Path) -> None:
    """An asker with other settings (another FSMEM_* variable, another config) would get the resident's
    answers, not its own: it is told nothing and searches by itself."""
    import dataclasses

    memory = fsmem.open(root, settings=Settings(durable=False))
    with Resident(memory) as resident:
        assert resident.serving
        args = search_args("okapi", regex=False, include=[], exclude=[], since=None, limit=10)
        assert len(ask(root / ".fsmem", "search", args, MARK)["hits"]) == 3
        words_only = settings_mark(dataclasses.replace(Settings(durable=False), search_mode="words"))
        assert ask(root / ".fsmem", "search", args, words_only) is None
        assert settings_mark(Settings(durable=False, watch=True)) == MARK  # whether one watches is its own affair
        done = run_fsmem("search", "okapi", "--json", "--root", str(root))  # default settings: durable
        assert done.returncode == 0 and len(json.loads(done.stdout)) == 3  # answered by itself, the same
    memory.close()
