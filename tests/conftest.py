from __future__ import annotations

import atexit
import errno
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _isolate_fsmem_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No FSMEM_* variable from the developer's shell leaks into a test."""
    isolate_environment(monkeypatch)


def isolate_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment every test runs in (a module-scoped fixture, made before the autouse one, calls
    it inside ``pytest.MonkeyPatch.context()``)."""
    for name in list(os.environ):
        if name.startswith("FSMEM_"):
            monkeypatch.delenv(name, raising=False)
    # A search starts a watcher by default (settings.watch); in-process tests, which rarely close what
    # they open, would pile up inotify instances. Tests of watching turn it on (tests/test_watch*.py).
    monkeypatch.setenv("FSMEM_WATCH", "0")
    # The local embedding model bin/test installs lives in the user's data folder; a test that did not ask
    # for it never finds it there (its searches stay by words, as without the extra). Tests of meaning name
    # it (the ``embedding_model`` fixture).
    monkeypatch.setenv("XDG_DATA_HOME", _NO_DATA)
    # What fsmem derives into the user's cache (a PostgreSQL worker's index, a resident's home) goes
    # to this run's own folder, never the developer's ~/.cache.
    monkeypatch.setenv("XDG_CACHE_HOME", _RUN_CACHE)


_NO_DATA = tempfile.mkdtemp(prefix="fsmem-no-data-")
atexit.register(shutil.rmtree, _NO_DATA, ignore_errors=True)  # empty, and gone with the run
_RUN_CACHE = tempfile.mkdtemp(prefix="fsmem-test-cache-")
atexit.register(shutil.rmtree, _RUN_CACHE, ignore_errors=True)
MODEL_FOLDER = Path(
    os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share", "fsmem", "models", "all-MiniLM-L6-v2-int8"
)  # read before any test's environment is isolated: where fsmem model install put it


@pytest.fixture(scope="session")
def embedding_model() -> Path:
    """The folder of the real local embedding model (``fsmem model install``, which bin/test runs)."""
    from fsmem._llm.model_files import installed

    folder = MODEL_FOLDER
    if not installed(folder):
        pytest.fail(f"no embedding model in {folder}: bin/test installs it (fsmem model install)")
    return folder


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A fresh memory root (test modules may define their own)."""
    import fsmem

    folder = tmp_path / "root"
    fsmem.open(folder, create=True)
    return folder


OKAPI_FILES = [
    ("MEMORY.md", "# Project\n\nThe okapi launch is on Friday.\n"),
    ("seo/plan.md", "# Plan\n\nLaunch plan: okapi pages first, then the rest.\nAnd more.\n"),
    ("notes/zoo.md", "# Zoo\n\nAn okapi, a giraffe's cousin — ünïcode too.\n"),
]


def okapi_root(folder: Path) -> Path:
    """A root made at ``folder`` with three files about an okapi, written through the memory tool."""
    import fsmem

    memory = fsmem.open(folder, create=True)
    run = memory.run(thread_id="t-1")
    for path, text in OKAPI_FILES:
        assert run.call({"command": "write", "path": path, "content": text})["ok"]
    memory.close()
    return folder


def run_question(cwd: Path, *argv: str, environ: dict[str, str] | None = None) -> dict:
    """The ``run`` question a shell in ``cwd`` with these ``FSMEM_*`` variables sends (pipes, UTF-8)."""
    streams = {"tty": False, "encoding": "utf-8", "errors": "strict"}
    return {
        "op": "run",
        "argv": list(argv),
        "prog": "fsmem",
        "cwd": str(cwd),
        "environ": dict(environ or {}),
        "streams": {"stdout": streams, "stderr": streams},
    }


def write(root: Path, path: str, text: str) -> None:
    """Write a file by hand, as a person or another program would (no fsmem involved)."""
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def invoke(root: Path, *args: str, input: str | None = None):
    """One CLI call in this process (click's CliRunner), against ``root``."""
    from click.testing import CliRunner

    from fsmem.cli import main

    return CliRunner().invoke(main, [*args, "--root", str(root)], input=input)


def tree_snapshot(folder: Path) -> dict[str, tuple[str, object]]:
    """Every entry under ``folder`` by kind (never following links): regular files with their bytes,
    links with their target, others (FIFOs, devices) by kind only, never opened. The index's walk
    cache is listed without its bytes: a derived stat cache that any search re-saves while a file is
    younger than the racy window (``RACY_WINDOW_NS``), not memory, index content or history."""
    from fsmem._index.committer import at_rest

    at_rest(30)  # the index's background commits of earlier changes are done first
    seen: dict[str, tuple[str, object]] = {}
    for here, dirs, files in os.walk(folder, followlinks=False):
        for name in dirs + files:
            full = Path(here, name)
            mode = os.lstat(full).st_mode
            key = full.relative_to(folder).as_posix()
            if stat.S_ISREG(mode):
                seen[key] = ("file", None if name == "walk.cache" else full.read_bytes())
            elif stat.S_ISLNK(mode):
                seen[key] = ("link", os.readlink(full))
            else:
                seen[key] = (stat.filemode(mode)[0], None)
    return seen


def run_fsmem(*args: str, input: str | None = None, cwd: Path | None = None,
              env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``python -m fsmem`` as a real, separate process."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "fsmem", *args],
        input=input, capture_output=True, text=True, cwd=cwd, env=full_env, timeout=timeout,
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`smoke_model` tests run against a real model server named by FSMEM_SMOKE_MODEL_URL (see
    bin/smoke-local-model). They are opt-in by design, like a benchmark: without the variable they are
    deselected (reported as such), never skipped as if a required service were missing."""
    if os.environ.get("FSMEM_SMOKE_MODEL_URL"):
        return
    chosen = [item for item in items if item.get_closest_marker("smoke_model") is None]
    if len(chosen) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in chosen])
        items[:] = chosen


# ---- PostgreSQL: a real server for tests/test_pg_*.py ---------------------------------------------
# bin/test starts a throwaway cluster and exports its URL; read here, before the autouse fixture above
# clears FSMEM_* from each test. Run without it (pytest directly), the session starts its own.
PG_URL = os.environ.get("FSMEM_TEST_PG_URL")
PG_DIR = os.environ.get("FSMEM_TEST_PG_DIR")
IN_CI = os.environ.get("CI") == "true"


def no_postgres(reason: str) -> None:
    """Skip on a laptop without PostgreSQL; under CI a test that needs it fails instead."""
    if IN_CI:
        pytest.fail(f"PostgreSQL is needed under CI but {reason}")
    pytest.skip(f"no PostgreSQL server: {reason} (bin/test starts one when PostgreSQL is installed)")


class PgServer:
    def __init__(self, url: str, folder: str | None) -> None:
        self.url, self.folder = url, folder

    def control(self, action: str) -> None:
        """``restart`` (pg_ctl restart -m fast), ``down`` or ``up`` the throwaway cluster (only ours)."""
        if self.folder is None:
            no_postgres("FSMEM_TEST_PG_URL names a server without FSMEM_TEST_PG_DIR, so it cannot be restarted")
        subprocess.run([str(REPO / "bin" / "pg-throwaway"), action, str(self.folder)], check=True, timeout=60)


@pytest.fixture(scope="session")
def pg_server():
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        no_postgres("psycopg is not installed (pip install -e '.[postgres]')")
    if PG_URL:
        yield PgServer(PG_URL, PG_DIR)
        return
    import tempfile

    folder = tempfile.mkdtemp(prefix="fsmem-pg.", dir="/tmp")
    script = str(REPO / "bin" / "pg-throwaway")
    started = subprocess.run([script, "start", folder], capture_output=True, text=True, timeout=120, check=False)
    try:
        if started.returncode != 0:
            no_postgres(f"bin/pg-throwaway could not start one: {started.stderr.strip()}")
        yield PgServer(started.stdout.strip(), folder)
    finally:
        subprocess.run([script, "stop", folder], capture_output=True, timeout=60, check=False)


@pytest.fixture(scope="module")
def postgres(pg_server: PgServer):
    """The connection string of a fresh database for this test module, dropped after it (creating one
    costs ~0.5 s; tests keep apart inside it by project name)."""
    yield from fresh_database(pg_server)


def fresh_database(pg_server: PgServer) -> Iterator[str]:
    """A new database's URL, dropped when the generator ends (a fixture's body)."""
    import uuid

    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    name = f"fsmem_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server.url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield as_url(make_conninfo(pg_server.url, dbname=name))
    with psycopg.connect(pg_server.url, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def as_url(conninfo: str) -> str:
    """A libpq connection string as the ``postgresql://`` URL a user passes to ``fsmem.open``."""
    from urllib.parse import quote, urlencode

    from psycopg.conninfo import conninfo_to_dict

    params = {key: str(value) for key, value in conninfo_to_dict(conninfo).items()}
    user = quote(params.pop("user", ""), safe="")
    dbname = quote(params.pop("dbname", ""), safe="")
    query = urlencode(params)
    return f"postgresql://{user + '@' if user else ''}/{dbname}{'?' + query if query else ''}"


def index_of(root: Path):
    """The index of ``root`` as ``Memory`` composes it (a bare folder gets its ``.fsmem/`` first)."""
    from fsmem._env.config import Settings
    from fsmem._store.folder.drive import Drive
    from fsmem._index.index import Index

    (root / ".fsmem").mkdir(exist_ok=True)
    settings = Settings(watch=False)
    return Index(Drive(root, settings))


# ---- a small real file system, to fill: disk faults (tests/store/folder/test_disk_faults.py, tests/index/) ----


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "fs"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", str(mount)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}); the injected faults below run")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill_disk(folder: Path) -> Path:
    """Take every free page of the file system holding ``folder``; the filler file, to free it later."""
    filler = folder / "filler.bin"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for block in (65536, 4096, 1):
            try:
                while True:
                    os.write(fd, b"\0" * block)
            except OSError as error:
                assert error.errno == errno.ENOSPC
    finally:
        os.close(fd)
    return filler
