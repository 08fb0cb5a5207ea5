"""A worker's search cache folder that is a file, or cannot be made: a coded refusal saying what to do,
never a raw OSError, and no connection left open."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid

import psycopg
import pytest

import fsmem
from fsmem._errors import BadStore


def connections(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
        return int(row[0]) if row else 0


@pytest.mark.parametrize("where", ["the file", "under the file"])
def test_a_cache_that_is_a_file_is_bad_store(postgres, tmp_path, where) -> None:
    blocking = tmp_path / "cache"
    blocking.write_text("a person's notes\n")
    cache = blocking if where == "the file" else blocking / "rye"
    before = connections(postgres)
    with pytest.raises(BadStore) as refused:
        fsmem.open(postgres, project=f"rye-{uuid.uuid4().hex[:6]}", create=True, cache=cache)
    message = refused.value.message
    assert f"{blocking} is a file, not a folder" in message and "cache=DIR" in message and "move that file" in message
    assert blocking.read_text() == "a person's notes\n"
    deadline = time.monotonic() + 10  # a backend leaves pg_stat_activity a moment after its client went
    while connections(postgres) > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert connections(postgres) <= before  # the pool was closed


def test_a_cache_that_cannot_be_made_is_bad_store(postgres, tmp_path) -> None:
    if os.geteuid() == 0:  # root may write anywhere a mode allows nothing: a folder the kernel refuses
        cache = "/sys/fsmem-cache-test/rye"
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        cache = str(locked / "rye")
    with pytest.raises(BadStore, match=r"cannot be used \((Operation not permitted|Permission denied)\)"):
        fsmem.open(postgres, project=f"rye-{uuid.uuid4().hex[:6]}", create=True, cache=cache)


def test_the_cli_says_it_in_one_line_when_the_default_cache_is_under_a_file(postgres, tmp_path) -> None:
    (tmp_path / "xdg").write_text("")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg"), "FSMEM_STORE": postgres}
    done = subprocess.run(
        [sys.executable, "-m", "fsmem", "init", "--project", "rye-cli"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("Error: [BAD_STORE] the search cache folder"), lines
    assert f"{tmp_path / 'xdg'} is a file, not a folder" in lines[0]


def test_two_spellings_of_one_project_share_its_default_cache(postgres, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    with (
        fsmem.open(postgres, project="Rye  Bread", create=True) as first,
        fsmem.open(postgres, project="rye bread") as again,
    ):
        assert first.drive.cache == again.drive.cache  # type: ignore[attr-defined]
        assert first.drive.cache.name.startswith("Rye--Bread-")  # type: ignore[attr-defined]


def test_the_label_and_the_default_cache_keep_the_server_and_database_never_the_user_or_password() -> None:
    from fsmem._store.postgres.cache import default_cache, redacted

    assert redacted("postgresql://me:s3cret@db.internal:5433/fsmem?sslmode=require") == (
        "postgresql://db.internal:5433/fsmem"
    )
    assert redacted("user=me password='s3 cret' host=db.internal dbname=fsmem") == "postgresql://db.internal/fsmem"
    assert redacted("postgresql:///fsmem?host=/tmp/pg") == "postgresql:///tmp/pg/fsmem"
    assert redacted("no url at all: me:s3cret@db.internal") == "db.internal"  # what follows its last @
    one, other = "postgresql://me:s3cret@db.internal/fsmem", "postgresql://you:other@db.internal/fsmem"
    assert default_cache(one, "rye") == default_cache(other, "rye") != default_cache(one, "oat")
    assert "s3cret" not in str(default_cache(one, "rye"))
