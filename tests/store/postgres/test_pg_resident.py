"""On PostgreSQL, `fsmem watch --store URL --project P` serves one worker's cache of the project: its
socket in the folder named by that URL and project (under the user's cache), found by the shell
(--store/--project or FSMEM_STORE/FSMEM_PROJECT) the same way, without loading the driver or reading
the URL; started on first use there too."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import fsmem
from fsmem._index.autostart import holder
from fsmem._index.resident import ask, pg_home, socket_path
from tests.conftest import REPO, run_fsmem, run_question


def env(**extra: str) -> dict[str, str]:
    values = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    return {**values, "PYTHONPATH": str(REPO), **extra}


def hits(home: Path, variables: dict[str, str]) -> list[str] | None:
    """The paths the worker's resident finds for `fsmem search okapi --json` asked with these
    variables (the store and project among them), or None when it did not answer."""
    reply = ask(socket_path(home), run_question(Path("/"), "search", "okapi", "--json", environ=variables))
    return None if reply is None or reply["code"] != 0 else [hit["path"] for hit in json.loads(reply["stdout"])]


def wait_until(check, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)


def test_fsmem_watch_serves_one_workers_cache_and_the_shell_finds_it(postgres, tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    os.environ["XDG_CACHE_HOME"] = str(xdg)  # this test's process computes the same cache as its children
    try:
        project = "okapi-pg"
        with fsmem.open(postgres, project=project, create=True) as memory:
            assert memory.run(thread_id="t").call(
                {"command": "write", "path": "zoo.md", "content": "# Zoo\n\nokapi\n"}
            )["ok"]
            cache = memory.drive.cache  # type: ignore[attr-defined]
        variables = {"XDG_CACHE_HOME": str(xdg)}
        home = Path(pg_home(postgres, project, variables))  # the shell's reckoning: the URL and project as written
        assert str(home).startswith(str(xdg / "fsmem" / "residents")) and not home.exists()
        alone = run_fsmem("search", "okapi", "--json", "--store", postgres, "--project", project, env=variables)
        assert alone.returncode == 0, alone.stderr
        named = {"FSMEM_STORE": postgres, "FSMEM_PROJECT": project}
        plain = run_fsmem("search", "okapi", env={**variables, **named})  # no resident yet: its own work
        assert plain.returncode == 0 and "zoo.md" in plain.stdout, plain.stderr
        proc = subprocess.Popen(
            [sys.executable, "-m", "fsmem", "watch", "--store", postgres, "--project", project],
            env=env(**variables),
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_until(lambda: hits(home, named) is not None, "the worker's resident answers")
            assert oct(home.stat().st_mode & 0o777) == "0o700" and oct(home.parent.stat().st_mode & 0o777) == "0o700"
            assert oct(socket_path(home).lstat().st_mode & 0o777) == "0o600"  # the owner's alone
            assert not (cache / ".fsmem" / "resident.sock").exists()  # not in the cache: one home per URL
            # what the resident prints for a shell is, byte for byte, what the shell printed by itself
            reply = ask(socket_path(home), run_question(tmp_path, "search", "okapi", environ=named))
            assert reply is not None and reply["code"] == plain.returncode
            printed = tuple(reply[name].encode("latin-1").decode() for name in ("stdout", "stderr"))
            assert printed == (plain.stdout, plain.stderr)
            again = run_fsmem("search", "okapi", env={**variables, **named})
            assert (again.returncode, again.stdout, again.stderr) == (plain.returncode, plain.stdout, plain.stderr)
            # another project, or the same one with other settings, is not the resident's to answer
            assert hits(home, {**named, "FSMEM_PROJECT": "another"}) is None
            assert hits(home, {**named, "FSMEM_SEARCH_MODE": "words"}) is None
            assert hits(home, {**named, "FSMEM_WATCH_DAEMON": "auto"}) is not None  # its own affair
            assert int(holder(home).split()[0]) == proc.pid
            served = run_fsmem(
                "search", "okapi", "--json", env={**variables, "FSMEM_STORE": postgres, "FSMEM_PROJECT": project}
            )
            assert json.loads(served.stdout) == json.loads(alone.stdout)
            code = (
                "import sys\nfrom fsmem.cli import main\n"
                "try:\n    main(['search', 'okapi'])\nexcept SystemExit:\n    pass\n"
                "print(sorted(m for m in ('psycopg', 'tantivy', 'click', 'fsmem.cli.group') if m in sys.modules), file=sys.stderr)\n"
            )
            shell = subprocess.run(
                [sys.executable, "-c", code],
                env=env(**variables, FSMEM_STORE=postgres, FSMEM_PROJECT=project),
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert "zoo.md" in shell.stdout and shell.stderr.strip().splitlines()[-1] == "[]", shell.stderr
            # another process writes: the resident (LISTEN) answers with it, and holds no lock of its own
            with fsmem.open(postgres, project=project) as writer:
                call = {"command": "write", "path": "new.md", "content": "# New\n\nokapi calf\n"}
                assert writer.run(thread_id="w").call(call)["ok"]
            wait_until(lambda: len(hits(home, named) or []) == 2, "the new file is found")
        finally:
            proc.send_signal(signal.SIGINT)
            _, stderr = proc.communicate(timeout=30)
        assert proc.returncode == 0, stderr
        assert f"Watching project {project} in" in stderr
        assert not socket_path(home).exists()
    finally:
        del os.environ["XDG_CACHE_HOME"]


def test_first_use_on_postgresql_starts_the_workers_resident_with_the_url_kept_out_of_argv(
    postgres, tmp_path: Path
) -> None:
    xdg = tmp_path / "xdg"
    project = "first-use-pg"
    os.environ["XDG_CACHE_HOME"] = str(xdg)
    try:
        with fsmem.open(postgres, project=project, create=True) as memory:
            assert memory.run(thread_id="t").call({"command": "write", "path": "z.md", "content": "# Z\n\nokapi\n"})[
                "ok"
            ]
    finally:
        del os.environ["XDG_CACHE_HOME"]
    variables = {
        "XDG_CACHE_HOME": str(xdg),
        "FSMEM_STORE": postgres,
        "FSMEM_PROJECT": project,
        "FSMEM_WATCH_DAEMON": "auto",
        "FSMEM_WATCH_IDLE": "30",
    }
    done = run_fsmem("search", "okapi", "--json", env=variables)
    assert done.returncode == 0 and len(json.loads(done.stdout)) == 1, done.stderr
    asking = {k: v for k, v in variables.items() if k.startswith("FSMEM_")}
    home = Path(pg_home(postgres, project, variables))
    wait_until(lambda: hits(home, asking) is not None, "the resident started on first use answers")
    pid = int(holder(home).split()[0])
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert b"watch" in argv and not any(postgres.encode() in arg for arg in argv)  # argv is anyone's to read
    finally:
        os.kill(pid, signal.SIGTERM)
    wait_until(lambda: not socket_path(home).exists(), "the resident stopped")
