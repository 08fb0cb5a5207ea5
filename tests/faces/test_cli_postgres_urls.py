"""A wrong PostgreSQL URL at the shell: one `Error:` line, exit 1 (STORAGE), at once, and none of the
connection pool's retries on the screen. Each case is a real `fsmem init` in a subprocess."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from urllib.parse import quote

import psycopg
from psycopg.conninfo import conninfo_to_dict


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def a_role_with_a_password(url: str):
    """A role the server asks a password of (a scram line in pg_hba.conf for that role alone)."""
    role = f"fsmem_pw_{os.getpid()}"
    with psycopg.connect(url, autocommit=True) as admin:
        hba = str(admin.execute("SHOW hba_file").fetchone()[0])  # type: ignore[index]
        admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'right-one'")
        with open(hba, encoding="utf-8") as file:
            before = file.read()
        try:
            with open(hba, "w", encoding="utf-8") as file:
                file.write(f"local all {role} scram-sha-256\n{before}")
            admin.execute("SELECT pg_reload_conf()")
            yield role
        finally:
            with open(hba, "w", encoding="utf-8") as file:
                file.write(before)
            admin.execute("SELECT pg_reload_conf()")
            admin.execute(f"DROP ROLE {role}")


def fsmem_init(url: str) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FSMEM_", "PG"))}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "fsmem", "init", "--store", url, "--project", "rye"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    return done, time.monotonic() - started


def test_each_wrong_url_answers_in_one_error_line(postgres, tmp_path) -> None:
    parts = conninfo_to_dict(postgres)
    socket_dir = quote(str(parts["host"]), safe="")
    with a_role_with_a_password(postgres) as role:
        wrong = {
            "no server on that port": f"postgresql://127.0.0.1:{free_port()}/fsmem",
            "a wrong password": f"postgresql://{role}:not-it@/{parts['dbname']}?host={socket_dir}",
            "an unknown database": f"postgresql:///no_such_db?host={socket_dir}&user={parts.get('user', '')}",
            "a host that does not resolve": "postgresql://no-such-host.invalid/fsmem",
        }
        said = {
            "no server on that port": "Connection refused",
            "a wrong password": f'password authentication failed for user "{role}"',
            "an unknown database": 'database "no_such_db" does not exist',
            "a host that does not resolve": "failed to resolve host 'no-such-host.invalid'",
        }
        took = {}
        for case, url in wrong.items():
            done, took[case] = fsmem_init(url)
            lines = done.stderr.strip().splitlines()
            assert done.returncode == 1, (case, done.stderr)
            assert done.stdout == "" and len(lines) == 1, (case, done.stderr)  # no pool retries, no traceback
            assert lines[0].startswith("Error: [STORAGE] cannot reach PostgreSQL"), (case, lines)
            assert said[case] in lines[0] and "not-it" not in lines[0], (case, lines)
            assert took[case] < 10, (case, took)  # a hang guard: the target (2 s) is measured, not asserted
        print("seconds to answer:", {case: round(seconds, 2) for case, seconds in took.items()})

        # and the right password opens it
        right = f"postgresql://{role}:right-one@/{parts['dbname']}?host={socket_dir}"
        with psycopg.connect(postgres, autocommit=True) as admin:
            admin.execute(f"GRANT CREATE ON DATABASE {parts['dbname']} TO {role}")
        done, _ = fsmem_init(right)
        assert done.returncode == 0, done.stderr
        with psycopg.connect(postgres, autocommit=True) as admin:
            admin.execute(f"DROP OWNED BY {role} CASCADE")


def test_a_url_libpq_cannot_read_is_one_line_too() -> None:
    done, _ = fsmem_init("postgresql://127.0.0.1:99999/fsmem")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    assert lines[0].startswith("Error: [STORAGE]") and 'invalid port number: "99999"' in lines[0], lines
