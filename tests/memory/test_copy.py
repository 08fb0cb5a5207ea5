"""`fsmem copy SRC DST` (fsmem/_memory/copy.py): a whole project between a folder and PostgreSQL, both ways.

Round trips keep files, kept versions (bytes, time, command, order), the log and proposals; a
destination that holds memory or a source that is not there is refused with nothing written; a copy
that fails or is killed part-way leaves the destination as it was.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import asdict
from pathlib import Path
from urllib.parse import quote

from conftest import REPO, run_fsmem, tree_snapshot

import fsmem
from fsmem._env.config import Settings
from fsmem._store.folder.drive import Drive
from fsmem._memory.levels import Scope


def cli(*args: str):
    """One `fsmem` call in this process (click's CliRunner); copy takes no --root."""
    from click.testing import CliRunner

    from fsmem.cli import main

    return CliRunner().invoke(main, list(args))


def pg_url(conninfo: str, project: str | None = None) -> str:
    """The ``postgres`` fixture's connection string as the URL `fsmem copy` takes."""
    from psycopg.conninfo import conninfo_to_dict

    parts = conninfo_to_dict(conninfo)
    query = "&".join(f"{key}={quote(str(value), safe='/')}" for key, value in parts.items() if key != "dbname")
    url = f"postgresql:///{parts['dbname']}?{query}"
    return f"{url}#{project}" if project else url


def new_project() -> str:
    return f"copy-{uuid.uuid4().hex[:8]}"


def made_root(folder: Path) -> Path:
    """A root with history: writes by two threads, a rename, a delete, an agent, a proposal."""
    memory = fsmem.open(folder, create=True, settings=Settings(watch=False, durable=False))
    run = memory.run(Scope.chat(), thread_id="t-1")
    assert run.call({"command": "write", "path": "MEMORY.md", "content": "# Rye & Ember\n\n- bakery\n"})["ok"]
    for n in range(3):
        assert run.call({"command": "write", "path": "seo/titles.md", "content": f"# Titles {n}\n"})["ok"]
    assert run.call({"command": "write", "path": "gone.md", "content": "soon gone\n"})["ok"]
    assert run.call({"command": "delete", "path": "gone.md"})["ok"]
    assert run.call({"command": "write", "path": "old/name.txt", "content": "moved\n"})["ok"]
    assert run.call({"command": "rename", "path": "old/name.txt", "new_path": "new/name.txt"})["ok"]
    memory.create_agent("3f9a1c2e-aaaa-bbbb", "SEO")
    other = memory.run(Scope.chat(), thread_id="t-2")
    other.call({"command": "read", "path": "MEMORY.md"})
    assert other.call({"command": "write", "path": "MEMORY.md", "content": "# Rye & Ember\n\n- bakery\n- Lisbon\n"})[
        "ok"
    ]
    reviewed = memory.run(Scope.chat(), thread_id="t-3", review=True)
    reviewed.call({"command": "read", "path": "seo/titles.md"})
    assert reviewed.call({"command": "write", "path": "seo/titles.md", "content": "# Better titles\n"})["ok"]
    assert [proposal.id for proposal in memory.proposals()]
    memory.close()
    return folder


def history(drive: Drive) -> dict[str, object]:
    """What a copy must keep of a folder root, in a comparable form."""
    files = {
        path: value
        for path, value in tree_snapshot(drive.root).items()
        if not path.startswith(".fsmem") and value[0] == "file"
    }
    versions = {}
    for folder, _, _ in os.walk(drive.state / "versions"):
        path = Path(folder).relative_to(drive.state / "versions").as_posix()
        listed = drive.versions(path)  # a live copy the file still holds is no version: not listed, not copied
        if listed:
            versions[path] = [(k.version, k.kept_at, k.command, k.file.read_bytes()) for k in listed]
    return {
        "files": files,
        "mtimes": {path: int(os.stat(drive.root / path).st_mtime) for path in files},
        "versions": versions,
        "log": list(drive.log()),
        "proposals": [drive.load_proposal(proposal_id) for proposal_id in drive.proposal_ids()],
    }


# ---- round trips ----------------------------------------------------------------------------------


def test_folder_to_postgres_to_folder_keeps_files_versions_log_and_proposals(tmp_path, postgres) -> None:
    from fsmem._store.postgres.store import PgStore

    source = made_root(tmp_path / "source")
    before = history(Drive(source, Settings()))
    project = new_project()

    imported = cli("copy", str(source), pg_url(postgres, project))
    assert imported.exit_code == 0, imported.output
    assert "Copied 5 files, 5 kept versions, 10 log entries and 1 proposals" in imported.output

    with PgStore.open(postgres, project, create=False) as store:
        assert store.read("MEMORY.md") == b"# Rye & Ember\n\n- bakery\n- Lisbon\n"
        assert [entry for entry in store.log()] == before["log"]
        titles = store.versions("seo/titles.md")
        assert [(k.version, k.kept_at, k.command) for k in titles] == [
            (version, kept_at, command) for version, kept_at, command, _ in before["versions"]["seo/titles.md"]
        ]
        assert store.read_kept("gone.md", titles[0].version) is None  # each path keeps its own
        assert [k.command for k in store.versions("gone.md")] == ["delete"]
        assert [asdict(proposal) for proposal in store.proposals()] == before["proposals"]
        assert store.newest_seq() == len(before["log"])
    on_postgres = fsmem.open(pg_url(postgres), project=project, cache=tmp_path / "cache")  # the tool's view of it
    assert on_postgres.read("MEMORY.md") == "# Rye & Ember\n\n- bakery\n- Lisbon\n"
    assert [kept.version for kept in on_postgres.versions("seo/titles.md")] == [
        version for version, *_ in before["versions"]["seo/titles.md"]
    ]
    on_postgres.close()

    exported = run_fsmem("copy", pg_url(postgres), str(tmp_path / "back"), "--project", project)
    assert exported.returncode == 0, exported.stderr
    after = history(Drive(tmp_path / "back", Settings()))
    assert after == before

    # The copy is a root like any other: it opens, searches (its index is rebuilt) and keeps working.
    memory = fsmem.open(tmp_path / "back", settings=Settings(watch=False, durable=False))
    assert [hit.path for hit in memory.search("Lisbon")] == ["MEMORY.md"]
    assert memory.versions("seo/titles.md")[0].version == before["versions"]["seo/titles.md"][0][0]
    memory.close()


def test_folder_to_folder_copies_a_backup(tmp_path) -> None:
    source = made_root(tmp_path / "source")
    before = history(Drive(source, Settings()))
    result = cli("copy", str(source), str(tmp_path / "backup"), "--json")
    assert result.exit_code == 0, result.output
    assert '"versions": 5' in result.output
    assert history(Drive(tmp_path / "backup", Settings())) == before
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".")]  # no temp folder left


def test_a_hand_made_folder_with_no_log_copies_and_what_is_not_memory_is_left_out(tmp_path, postgres) -> None:
    from fsmem._memory.copy import place
    from fsmem._store.postgres.store import PgStore

    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / "MEMORY.md").write_text("# Mine\n")
    (folder / "sub" / "list.txt").write_text("eggs\n")
    (folder / "photo.png").write_bytes(b"\x89PNG")
    (folder / ".MEMORY.md.swp").write_bytes(b"swap")
    (folder / "link.md").symlink_to(folder / "MEMORY.md")
    project = new_project()
    result = cli("copy", str(folder), pg_url(postgres, project))
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"Copied 2 files, 0 kept versions, 0 log entries and 0 proposals to {place(pg_url(postgres, project))}.",
        "Left out, not memory: link.md, photo.png",
    ]
    with PgStore.open(postgres, project, create=False) as store:
        assert [entry.path for entry in store.entries("")] == ["MEMORY.md", "sub"]
        assert store.read("sub/list.txt") == b"eggs\n"
        assert list(store.log()) == [] and store.newest_seq() == 0
    assert sorted(os.listdir(folder)) == [".MEMORY.md.swp", "MEMORY.md", "link.md", "photo.png", "sub"]  # a read


# ---- refusals: nothing written ----------------------------------------------------------------------


def test_a_destination_folder_that_is_not_empty_is_refused(tmp_path) -> None:
    source = made_root(tmp_path / "source")
    target = tmp_path / "target"
    target.mkdir()
    (target / "keep.md").write_text("mine\n")
    before = tree_snapshot(target)
    result = cli("copy", str(source), str(target))
    assert result.exit_code == 1
    assert result.output.startswith("Error: [EXISTS] ") and "not empty" in result.output
    assert tree_snapshot(target) == before
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".")]


def test_an_empty_destination_folder_is_filled(tmp_path) -> None:
    source = made_root(tmp_path / "source")
    (tmp_path / "empty").mkdir()
    assert cli("copy", str(source), str(tmp_path / "empty")).exit_code == 0
    assert (tmp_path / "empty" / ".fsmem" / "log.jsonl").read_bytes() == (source / ".fsmem" / "log.jsonl").read_bytes()


def test_a_project_that_holds_memory_is_refused_and_left_as_it_was(tmp_path, postgres) -> None:
    from fsmem._store.postgres.store import PgStore

    project = new_project()
    with PgStore.open(postgres, project) as store:
        with store.change("write") as tx:
            tx.write("MEMORY.md", b"# Theirs\n")
        before = store.export_project()
    source = made_root(tmp_path / "source")
    result = cli("copy", str(source), pg_url(postgres, project))
    assert result.exit_code == 1
    assert result.output.startswith("Error: [EXISTS] ") and "already holds memory" in result.output
    with PgStore.open(postgres, project, create=False) as store:
        assert store.export_project() == before


def test_a_source_that_does_not_exist_is_refused(tmp_path, postgres) -> None:
    result = cli("copy", str(tmp_path / "nowhere"), str(tmp_path / "out"))
    assert result.exit_code == 2
    assert result.output.startswith("Error: [NO_ROOT] ") and "nowhere" in result.output
    assert not (tmp_path / "out").exists()

    missing = new_project()
    result = cli("copy", pg_url(postgres, missing), str(tmp_path / "out"))
    assert result.exit_code == 2 and result.output.startswith("Error: [NO_ROOT] ")
    assert not (tmp_path / "out").exists()


def test_a_postgres_side_without_a_project_is_a_usage_error(tmp_path, postgres) -> None:
    source = made_root(tmp_path / "source")
    result = cli("copy", str(source), pg_url(postgres))
    assert result.exit_code == 2
    assert result.output.startswith("Error: [BAD_STORE] ") and "add it to the URL as #NAME" in result.output


def test_the_project_may_come_from_fsmem_project(tmp_path, postgres, monkeypatch) -> None:
    from fsmem._store.postgres.store import PgStore

    source = made_root(tmp_path / "source")
    project = new_project()
    monkeypatch.setenv("FSMEM_PROJECT", project)
    assert cli("copy", str(source), pg_url(postgres)).exit_code == 0
    with PgStore.open(postgres, project, create=False) as store:
        assert store.read("seo/titles.md") == b"# Titles 2\n"


def test_a_password_in_the_url_is_never_shown() -> None:
    from fsmem._memory.copy import place

    where = place("postgresql://worker:hunter2@db.internal/fsmem#rye")
    assert str(where) == "project 'rye' in postgresql://db.internal/fsmem"
    assert where.url == "postgresql://worker:hunter2@db.internal/fsmem"


# ---- failures part-way ------------------------------------------------------------------------------


def test_a_folder_copy_that_fails_part_way_leaves_no_destination(tmp_path, postgres) -> None:
    """A project the folder cannot hold ("a" a file and a folder at once, put in by hand): some files
    are written, then one fails; the temp folder goes, the destination never appears."""
    import psycopg

    from fsmem._store.postgres.store import PgStore

    project = new_project()
    with PgStore.open(postgres, project) as store:
        with store.change("write") as tx:
            tx.write("MEMORY.md", b"# Fine\n")
        with psycopg.connect(postgres, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO fsmem.files (project, path, content, version) VALUES (%s, 'a', 'x', 'v'), "
                "(%s, 'a/b.md', 'y', 'w')",
                (store.project_id, store.project_id),
            )
    result = cli("copy", pg_url(postgres, project), str(tmp_path / "out"))
    assert result.exit_code == 1
    assert result.output.startswith("Error: [STORAGE] copying into ") and "nothing was changed" in result.output
    assert sorted(os.listdir(tmp_path)) == []


def test_a_copy_into_postgres_killed_mid_transaction_writes_nothing(tmp_path, postgres) -> None:
    """The copy is held inside its transaction (a row it inserts is locked by another, uncommitted
    one), killed with SIGKILL there, and the project is still empty."""
    import psycopg

    from fsmem._store.postgres.store import PgStore

    source = made_root(tmp_path / "source")
    (source / "zz.md").write_text("last\n")
    project = new_project()
    with PgStore.open(postgres, project) as store:
        project_id = store.project_id
    blocker = psycopg.connect(postgres)
    try:
        blocker.execute(
            "INSERT INTO fsmem.files (project, path, content, version) VALUES (%s, 'zz.md', 'b', 'v')", (project_id,)
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
        env["PYTHONPATH"] = str(REPO)
        copying = subprocess.Popen(
            [sys.executable, "-m", "fsmem", "copy", str(source), pg_url(postgres, project)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 30
        with psycopg.connect(postgres, autocommit=True) as watcher:
            while True:  # until the copy waits on the row lock, inside its transaction
                waiting = watcher.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO fsmem.files%%'"
                ).fetchone()
                if waiting and waiting[0]:
                    break
                assert copying.poll() is None, copying.communicate()
                assert time.monotonic() < deadline, "the copy never reached its inserts"
                time.sleep(0.05)
        copying.send_signal(signal.SIGKILL)
        copying.wait(timeout=30)
    finally:
        blocker.rollback()
        blocker.close()
    with PgStore.open(postgres, project, create=False) as store:
        assert store.export_project().empty
    # and the same copy, not held, goes through
    assert cli("copy", str(source), pg_url(postgres, project)).exit_code == 0


def test_a_name_that_is_not_utf8_is_left_out_and_listed(tmp_path, postgres) -> None:
    """A file or folder whose name is not UTF-8 (made by hand) cannot be a row nor a tool path: the copy
    leaves it out and says so, readable, instead of failing with an encoding error."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "MEMORY.md").write_text("# Mine\n")
    os.mkdir(os.path.join(os.fsencode(folder), b"caf\xe9"))
    with open(os.path.join(os.fsencode(folder), b"r\xe9sum\xe9.md"), "wb") as handle:
        handle.write(b"old\n")
    project = new_project()
    result = cli("copy", str(folder), pg_url(postgres, project))
    assert result.exit_code == 0, result.output
    assert "Left out, not memory: caf\ufffd, r\ufffdsum\ufffd.md" in result.output


def test_level_identities_travel_so_look_alike_agents_keep_their_own_folders(tmp_path, postgres) -> None:
    """Two agent ids that share their first 8 characters get two folders told apart only by their
    hidden identities (``<folder>/.fsmem-level``): folder -> PostgreSQL -> folder keeps both."""
    from fsmem._memory import levels as _levels

    first, second = "3f9a1c2e-aaaa-1111", "3f9a1c2e-bbbb-2222"
    source = tmp_path / "source"
    memory = fsmem.open(source, create=True, settings=Settings(watch=False, durable=False))
    folders = {agent: memory.create_agent(agent, "SEO") for agent in (first, second)}
    assert folders[first] != folders[second]
    for agent in (first, second):
        run = memory.run(Scope.agent(agent), thread_id=f"t-{agent}")
        top = memory.scope_files(Scope.agent(agent))[-1]
        assert run.call({"command": "write", "path": top, "content": f"# Agent {agent}\n"})["ok"], top
        note = f"{folders[agent]}/notes.md"
        assert run.call({"command": "write", "path": note, "content": f"only {agent}\n"})["ok"]
    memory.close()
    project = new_project()

    assert cli("copy", str(source), pg_url(postgres, project)).exit_code == 0
    on_postgres = fsmem.open(pg_url(postgres), project=project, cache=tmp_path / "cache")
    assert run_fsmem("copy", pg_url(postgres), str(tmp_path / "back"), "--project", project).returncode == 0
    back = fsmem.open(tmp_path / "back", settings=Settings(watch=False, durable=False))

    for copied in (on_postgres, back):
        for agent in (first, second):
            assert _levels.find_agent(copied, agent) == folders[agent]
            top = copied.scope_files(Scope.agent(agent))[-1]
            assert top.startswith(folders[agent] + "/")
            assert copied.read(top) == f"# Agent {agent}\n"
            assert copied.read(f"{folders[agent]}/notes.md") == f"only {agent}\n"
        copied.close()
    assert (tmp_path / "back" / folders[first] / ".fsmem-level").read_bytes() == (
        source / folders[first] / ".fsmem-level"
    ).read_bytes()


def test_a_folder_copy_killed_part_way_leaves_a_temp_folder_the_next_copy_removes(tmp_path) -> None:
    """SIGKILL while the copy writes its temp folder: the next copy into that folder removes the
    leftover (its exact name, its flock free) and nothing else: not a live copy's, not another root's,
    not a person's files that look alike."""
    import fcntl

    source = tmp_path / "source"
    (source / "many").mkdir(parents=True)
    (source / "MEMORY.md").write_text("# Many\n")
    for n in range(600):
        (source / "many" / f"n{n}.md").write_text(f"note {n}\n" * 20)
    kept = {
        ".out.copy-notes": "dir",
        ".out.copy-abcdefgh.md": "file",
        ".other.copy-abcdefgh": "dir",
        ".out.copy-live0000": "dir",
        "out.copy-abcdefgh": "dir",
    }
    for name, kind in kept.items():
        (tmp_path / name).mkdir() if kind == "dir" else (tmp_path / name).write_text("a person's\n")
    live = os.open(tmp_path / ".out.copy-live0000", os.O_RDONLY)  # a copy still running holds its flock
    fcntl.flock(live, fcntl.LOCK_EX)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    copying = subprocess.Popen(
        [sys.executable, "-m", "fsmem", "copy", str(source), str(tmp_path / "out")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    leftovers: list[str] = []
    while not leftovers:  # until the copy's temp folder holds some of the files
        leftovers = [
            name
            for name in os.listdir(tmp_path)
            if name.startswith(".out.copy-") and name not in kept and os.path.isdir(tmp_path / name / "many")
        ]
        assert copying.poll() is None, copying.communicate()
        assert time.monotonic() < deadline, "the copy never began writing"
        time.sleep(0.002)
    copying.send_signal(signal.SIGKILL)
    copying.wait(timeout=30)
    assert len(leftovers) == 1 and os.path.isdir(tmp_path / leftovers[0]) and not (tmp_path / "out").exists()

    result = cli("copy", str(source), str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    assert sorted(os.listdir(tmp_path)) == sorted([*kept, "out", "source"])
    assert (tmp_path / "out" / "many" / "n599.md").read_text() == "note 599\n" * 20
    os.close(live)


def test_proposal_files_come_back_from_postgres_byte_for_byte(tmp_path, postgres) -> None:
    """folder → PostgreSQL → folder: every proposal file holds the same bytes, keys in their order
    (jsonb would sort them by length), text with non-ASCII, CRLF and nested objects as it was."""
    source = made_root(tmp_path / "source")
    record = {
        "id": "20261201T170000-zzzz",
        "made_at": "2026-12-01T17:00:00Z",
        "thread": "t-9",
        "scope": "chat",
        "request": {"path": "seo/é.md", "command": "write", "content": "línea 1\r\nlinha 2\n"},
        "base": {"zz.md": None, "a.md": "v1"},
        "summary": "wrïte\tseo/é.md",
        "diff": "-a\r\n+b\n",
        "extra": {"kind": "write", "after": "x", "zeta": 1.5, "alpha": {"b": [1, {"z": None, "a": True}], "a": "ü"}},
    }
    Drive(source, Settings()).save_proposal(record)
    folder = source / ".fsmem" / "proposals"
    before = {name: (folder / name).read_bytes() for name in sorted(os.listdir(folder))}
    assert len(before) == 2
    project = new_project()
    assert cli("copy", str(source), pg_url(postgres, project)).exit_code == 0
    assert cli("copy", pg_url(postgres, project), str(tmp_path / "back")).exit_code == 0
    back = tmp_path / "back" / ".fsmem" / "proposals"
    assert {name: (back / name).read_bytes() for name in sorted(os.listdir(back))} == before

    # and a proposal kept on PostgreSQL is read back as it was saved, keys in order
    on_postgres = fsmem.open(pg_url(postgres), project=project, cache=tmp_path / "cache")
    assert json.dumps(on_postgres.drive.load_proposal(record["id"])) == json.dumps(record)
    on_postgres.close()
