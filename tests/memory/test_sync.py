"""`fsmem sync DIR` (fsmem/_memory/sync.py) against a real PostgreSQL server: pulls, pushes of hand edits and
deletes, conflicts that lose nothing, and a real `fsmem sync` process that follows hand saves and
stops cleanly on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from conftest import REPO
from test_copy import pg_url

import fsmem
from fsmem._core.versions import version_of
from fsmem._errors import Busy, SetupError
from fsmem._memory.sync import Sync, decide


@pytest.fixture
def store(postgres):
    from fsmem._store.postgres.store import PgStore

    with PgStore.open(postgres, f"sync-{uuid.uuid4().hex[:8]}") as opened:
        yield opened


@pytest.fixture
def reader(postgres, store):
    """Another worker's view of the same project (its own pool: as if on another machine)."""
    from fsmem._store.postgres.store import PgStore

    with PgStore.open(postgres, store.project, create=False) as opened:
        yield opened


def put(store, path: str, text: str) -> str:
    with store.change("write", thread="t-1") as tx:
        return tx.write(path, text.encode())


def once(folder: Path, store):
    with Sync.open(folder, store) as mirror:
        return mirror.run_once(None)


def files_in(folder: Path) -> dict[str, str]:
    return {
        path.relative_to(folder).as_posix(): path.read_text()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and ".fsmem-sync" not in path.parts
    }


# ---- the plan ----------------------------------------------------------------------------------------


def test_decide_names_what_each_path_needs() -> None:
    assert decide("a", "a", "a") == "none"
    assert decide(None, None, None) == "none"
    assert decide("a", "b", "b") == "agree"
    assert decide("a", "a", "b") == "pull" and decide("a", "a", None) == "pull" and decide(None, None, "b") == "pull"
    assert decide("a", "b", "a") == "push" and decide("a", None, "a") == "push" and decide(None, "b", None) == "push"
    assert decide("a", "b", "c") == "conflict" and decide("a", None, "c") == "conflict"
    assert decide("a", "b", None) == "conflict" and decide(None, "b", "c") == "conflict"


# ---- pull and push -------------------------------------------------------------------------------------


def test_a_pull_makes_the_files_and_a_second_pass_does_nothing(tmp_path, store) -> None:
    put(store, "MEMORY.md", "# Project\n")
    put(store, "seo/titles.md", "# Titles\n")
    report = once(tmp_path / "mirror", store)
    assert report.pulled == ["MEMORY.md", "seo/titles.md"] and not report.pushed and not report.conflicts
    assert files_in(tmp_path / "mirror") == {"MEMORY.md": "# Project\n", "seo/titles.md": "# Titles\n"}
    state = json.loads((tmp_path / "mirror" / ".fsmem-sync" / "state.json").read_text())
    assert state["seq"] == store.newest_seq() > 0
    assert state["files"] == {"MEMORY.md": version_of(b"# Project\n"), "seo/titles.md": version_of(b"# Titles\n")}
    assert not once(tmp_path / "mirror", store).changed


def test_changes_in_the_database_are_pulled_writes_deletes_and_renames(tmp_path, store) -> None:
    put(store, "a.md", "a\n")
    put(store, "old/b.md", "b\n")
    put(store, "c.md", "c\n")
    once(tmp_path / "mirror", store)
    put(store, "a.md", "a, changed\n")
    with store.change("rename") as tx:
        tx.move("old", "new")
    with store.change("delete") as tx:
        tx.delete("c.md")
    with Sync.open(tmp_path / "mirror", store) as mirror:
        report = mirror.run_once(set())  # what the log says changed since the last pass
    assert sorted(report.pulled) == ["a.md", "c.md", "new/b.md", "old/b.md"]
    assert files_in(tmp_path / "mirror") == {"a.md": "a, changed\n", "new/b.md": "b\n"}
    assert not (tmp_path / "mirror" / "old").exists()  # an emptied folder goes with its last file


def test_a_hand_edit_is_pushed_conditionally_and_seen_by_another_worker(tmp_path, store, reader, postgres) -> None:
    first = put(store, "MEMORY.md", "# Project\n")
    folder = tmp_path / "mirror"
    once(folder, store)
    (folder / "MEMORY.md").write_text("# Project\n\n- edited by hand\n")
    (folder / "notes").mkdir()
    (folder / "notes" / "new.md").write_text("made by hand\n")
    (folder / ".MEMORY.md.swp").write_text("editor debris")
    (folder / "photo.png").write_bytes(b"\x89PNG")
    report = once(folder, store)
    assert sorted(report.pushed) == ["MEMORY.md", "notes/new.md"] and not report.conflicts
    assert reader.read("MEMORY.md") == b"# Project\n\n- edited by hand\n"
    assert reader.read("notes/new.md") == b"made by hand\n"
    assert reader.read("photo.png") is None
    change = reader.last_change("MEMORY.md")
    assert change is not None and (change.command, change.before) == ("hand_edit", first)
    assert [kept.version for kept in reader.versions("MEMORY.md")] == [first]
    assert not once(folder, store).changed  # its own pushes come back through the log as nothing new

    memory = fsmem.open(pg_url(postgres), project=store.project, cache=tmp_path / "cache")  # a Memory elsewhere
    assert memory.read("notes/new.md") == "made by hand\n"
    memory.close()


def test_a_deletion_by_hand_is_pushed_as_a_delete_and_versions_keep_the_file(tmp_path, store, reader) -> None:
    version = put(store, "seo/titles.md", "# Titles\n")
    folder = tmp_path / "mirror"
    once(folder, store)
    (folder / "seo" / "titles.md").unlink()
    report = once(folder, store)
    assert report.pushed == ["seo/titles.md"]
    assert reader.read("seo/titles.md") is None
    assert [(k.version, k.command) for k in reader.versions("seo/titles.md")] == [(version, "hand_edit")]
    assert reader.read_kept("seo/titles.md", version) == b"# Titles\n"


def test_a_rename_by_hand_is_pushed_as_a_delete_and_a_new_file(tmp_path, store, reader) -> None:
    version = put(store, "draft.md", "# Draft\n")
    folder = tmp_path / "mirror"
    once(folder, store)
    (folder / "final").mkdir()
    (folder / "draft.md").rename(folder / "final" / "post.md")
    report = once(folder, store)
    assert sorted(report.pushed) == ["draft.md", "final/post.md"]
    assert reader.read("draft.md") is None and reader.read("final/post.md") == b"# Draft\n"
    assert reader.read_kept("draft.md", version) == b"# Draft\n"


# ---- conflicts: nothing lost ---------------------------------------------------------------------------


def test_an_edit_on_both_sides_keeps_the_database_and_the_persons_text(tmp_path, store, reader) -> None:
    put(store, "brand.md", "# Brand\n")
    folder = tmp_path / "mirror"
    once(folder, store)
    theirs = put(store, "brand.md", "# Brand\n\nwarm (from an agent)\n")
    mine = b"# Brand\n\ncold (by hand)\n"
    (folder / "brand.md").write_bytes(mine)
    report = once(folder, store)
    assert report.conflicts == ["brand.md.conflict"] and not report.pushed
    assert reader.read("brand.md") == b"# Brand\n\nwarm (from an agent)\n"  # the database keeps its version
    kept = reader.versions("brand.md")[0]
    assert (kept.version, kept.command) == (version_of(mine), "conflict")
    assert reader.read_kept("brand.md", version_of(mine)) == mine  # the person's text, as a version
    assert (folder / "brand.md").read_text() == "# Brand\n\nwarm (from an agent)\n"
    note = (folder / "brand.md.conflict").read_bytes()
    assert note.endswith(b"----- your text -----\n" + mine)  # exactly as saved
    assert f"version {version_of(mine)}".encode() in note and f"({theirs})".encode() in note
    assert not once(folder, store).changed  # the note is never pushed; nothing else moves

    # a second conflict on the same file gets a note of its own
    put(store, "brand.md", "# Brand v3\n")
    (folder / "brand.md").write_text("# Brand mine again\n")
    assert once(folder, store).conflicts == ["brand.md.conflict-2"]
    assert (folder / "brand.md.conflict").read_bytes() == note


def test_a_save_that_lands_while_a_pull_writes_the_file_is_kept(tmp_path, store, reader, monkeypatch) -> None:
    """The person saves between the pass's comparison and its swap: the swap brings their save out
    under the temp name, and it is kept as a conflict, never overwritten unseen."""
    import fsmem._memory.sync_folder

    put(store, "a.md", "one\n")
    folder = tmp_path / "mirror"
    once(folder, store)
    put(store, "a.md", "two\n")
    real_exchange = fsmem._memory.sync_folder.exchange

    def save_first(temp, target):
        target.write_bytes(b"saved in the window\n")
        return real_exchange(temp, target)

    monkeypatch.setattr(fsmem._memory.sync_folder, "exchange", save_first)
    report = once(folder, store)
    assert report.conflicts == ["a.md.conflict"] and not report.pulled
    assert (folder / "a.md").read_text() == "two\n" and reader.read("a.md") == b"two\n"
    assert reader.read_kept("a.md", version_of(b"saved in the window\n")) == b"saved in the window\n"
    assert (folder / "a.md.conflict").read_bytes().endswith(b"saved in the window\n")


def test_a_save_a_pull_swapped_out_survives_a_store_lost_before_it_is_kept(
    tmp_path, store, reader, monkeypatch
) -> None:
    """The swap brings a person's save out, and the folder holds the database's bytes from then on;
    the store is lost (the server restarting) before the save is kept as a version. The next pass
    keeps it and writes its note, in this process or the next: the pass that swapped it out held the
    only copy."""
    import fsmem._memory.sync_folder
    from fsmem._store.postgres.errors import StoreUnavailable

    put(store, "a.md", "one\n")
    folder = tmp_path / "mirror"
    once(folder, store)
    put(store, "a.md", "two\n")
    mine = b"one\n- saved in the window\n"
    real_exchange = fsmem._memory.sync_folder.exchange

    def save_first(temp, target):
        target.write_bytes(mine)
        return real_exchange(temp, target)

    def server_gone(*args, **kwargs):
        raise StoreUnavailable("PostgreSQL could not be reached (terminating connection due to administrator command)")

    with Sync.open(folder, store) as mirror:
        monkeypatch.setattr(fsmem._memory.sync_folder, "exchange", save_first)
        monkeypatch.setattr(store, "keep_version", server_gone)
        with pytest.raises(StoreUnavailable):
            mirror.run_once(None)
    monkeypatch.undo()
    assert (folder / "a.md").read_text() == "two\n"  # the database's bytes: the save is nowhere here
    report = once(folder, store)  # a sync started again (the state file holds the save)
    assert report.conflicts == ["a.md.conflict"] and report.errors == []
    assert reader.read("a.md") == b"two\n" and reader.read_kept("a.md", version_of(mine)) == mine
    assert (folder / "a.md.conflict").read_bytes().endswith(b"----- your text -----\n" + mine)
    assert not once(folder, store).changed  # done once: nothing left to finish


def test_a_save_in_place_caught_half_way_is_not_pushed_until_it_is_whole(tmp_path, store, reader) -> None:
    """An editor saving in place truncates the file, then writes it: a pass that reads the empty file
    in between must not push it (another worker would build on the empty file and lose what it held)."""
    import threading

    put(store, "a.md", "# A\n\n- one\n")
    folder = tmp_path / "mirror"
    once(folder, store)
    whole = b"# A\n\n- one\n- two, saved in place\n"
    fd = os.open(folder / "a.md", os.O_WRONLY | os.O_TRUNC)  # the save has begun: the file is empty

    def finish() -> None:
        time.sleep(0.05)
        os.write(fd, whole)
        os.close(fd)

    finishing = threading.Thread(target=finish)
    with Sync.open(folder, store) as mirror:
        mirror.settle = 1.0  # twenty times the editor's pause (0.05 s): nothing here depends on timing
        finishing.start()
        report = mirror.run_once({"a.md"})
    finishing.join()
    assert report.pushed == ["a.md"] and not report.conflicts
    assert reader.read("a.md") == whole
    assert [entry.after for entry in reader.log() if entry.command == "hand_edit"] == [version_of(whole)]


def test_the_command_keeps_as_many_versions_as_fsmem_versions_kept_says(tmp_path, store, postgres, monkeypatch) -> None:
    put(store, "a.md", "zero\n")
    folder = tmp_path / "mirror"
    monkeypatch.setenv("FSMEM_VERSIONS_KEPT", "2")
    assert cli("sync", str(folder), "--store", postgres, "--project", store.project, "--once").exit_code == 0
    for n in range(1, 5):
        (folder / "a.md").write_text(f"{n}\n")
        done = cli("sync", str(folder), "--store", postgres, "--project", store.project, "--once")
        assert done.exit_code == 0, done.output
    assert store.read("a.md") == b"4\n"
    assert [kept.version for kept in store.versions("a.md")] == [version_of(b"3\n"), version_of(b"2\n")]


def test_a_save_in_place_under_way_when_a_pull_swaps_the_file_is_kept_whole(
    tmp_path, store, reader, monkeypatch
) -> None:
    """The editor has truncated the file and written half when the pull swaps it out; the rest goes,
    by the editor's open handle, into the file now under the temp name: the pass waits for it to
    stay put and keeps the whole save, not the half."""
    import threading

    import fsmem._memory.sync_folder

    put(store, "a.md", "one\n")
    folder = tmp_path / "mirror"
    once(folder, store)
    put(store, "a.md", "two\n")
    real_exchange = fsmem._memory.sync_folder.exchange
    mine = b"one\n- saved in place, in two pieces\n"
    finishing: list[threading.Thread] = []

    def save_in_place_meanwhile(temp, target):
        fd = os.open(target, os.O_WRONLY | os.O_TRUNC)
        os.write(fd, mine[:5])

        def finish() -> None:
            time.sleep(0.05)
            os.write(fd, mine[5:])
            os.close(fd)

        finishing.append(threading.Thread(target=finish))
        swapped = real_exchange(temp, target)
        finishing[0].start()
        return swapped

    monkeypatch.setattr(fsmem._memory.sync_folder, "exchange", save_in_place_meanwhile)
    with Sync.open(folder, store) as mirror:
        mirror.settle = 1.0  # twenty times the editor's pause (0.05 s): nothing here depends on timing
        report = mirror.run_once(None)
    finishing[0].join()
    assert report.conflicts == ["a.md.conflict"] and not report.pulled
    assert (folder / "a.md").read_text() == "two\n" and reader.read("a.md") == b"two\n"
    assert reader.read_kept("a.md", version_of(mine)) == mine
    assert (folder / "a.md.conflict").read_bytes().endswith(b"----- your text -----\n" + mine)


def test_a_file_deleted_by_hand_but_changed_in_the_database_comes_back(tmp_path, store) -> None:
    put(store, "a.md", "one\n")
    folder = tmp_path / "mirror"
    once(folder, store)
    put(store, "a.md", "two\n")
    (folder / "a.md").unlink()
    report = once(folder, store)
    assert report.conflicts == ["a.md.conflict"]
    assert (folder / "a.md").read_text() == "two\n" and store.read("a.md") == b"two\n"
    assert "You deleted a.md" in (folder / "a.md.conflict").read_text()


def test_a_file_edited_by_hand_but_deleted_in_the_database_is_kept(tmp_path, store, reader) -> None:
    put(store, "a.md", "one\n")
    folder = tmp_path / "mirror"
    once(folder, store)
    with store.change("delete") as tx:
        tx.delete("a.md")
    (folder / "a.md").write_text("mine\n")
    report = once(folder, store)
    assert report.conflicts == ["a.md.conflict"]
    assert reader.read("a.md") is None and not (folder / "a.md").exists()
    assert reader.read_kept("a.md", version_of(b"mine\n")) == b"mine\n"
    assert (folder / "a.md.conflict").read_bytes().endswith(b"mine\n")


def test_a_first_sync_into_a_folder_that_holds_files_merges_them(tmp_path, store, reader) -> None:
    put(store, "same.md", "same\n")
    put(store, "differs.md", "database\n")
    folder = tmp_path / "mirror"
    folder.mkdir()
    (folder / "same.md").write_text("same\n")
    (folder / "differs.md").write_text("folder\n")
    (folder / "only-here.md").write_text("here\n")
    report = once(folder, store)
    assert report.pushed == ["only-here.md"] and report.conflicts == ["differs.md.conflict"]
    assert reader.read_kept("differs.md", version_of(b"folder\n")) == b"folder\n"
    assert files_in(folder)["differs.md"] == "database\n"


# ---- refusals ------------------------------------------------------------------------------------------


def test_one_sync_per_folder_and_never_into_a_root_or_another_projects_folder(tmp_path, store, postgres) -> None:
    from fsmem._store.postgres.store import PgStore

    folder = tmp_path / "mirror"
    with Sync.open(folder, store), pytest.raises(Busy, match="another `fsmem sync` is running"):
        Sync.open(folder, store)
    (tmp_path / "root" / ".fsmem").mkdir(parents=True)
    with pytest.raises(SetupError, match="memory root of its own"):
        Sync.open(tmp_path / "root", store)
    once(folder, store)
    with PgStore.open(postgres, f"other-{uuid.uuid4().hex[:8]}") as other:
        with pytest.raises(SetupError, match="is synced with project"):
            Sync.open(folder, other)


# ---- the command -----------------------------------------------------------------------------------------


def cli(*args: str):
    from click.testing import CliRunner

    from fsmem.cli import main

    return CliRunner().invoke(main, list(args))


def test_sync_once_at_the_shell_exits_3_after_a_conflict(tmp_path, store, postgres) -> None:
    put(store, "a.md", "one\n")
    folder = str(tmp_path / "mirror")
    first = cli("sync", folder, "--store", postgres, "--project", store.project, "--once")
    assert first.exit_code == 0, first.output
    assert first.output == f"Pulled 1, pushed 0, 0 conflicts (up to change {store.newest_seq()}).\n"
    put(store, "a.md", "two\n")
    Path(folder, "a.md").write_text("mine\n")
    second = cli("sync", folder, "--store", postgres, "--project", store.project, "--once", "--json")
    assert second.exit_code == 3
    assert json.loads(second.output)["conflicts"] == ["a.md.conflict"]


def test_sync_needs_a_project_that_exists(tmp_path, postgres) -> None:
    missing = cli("sync", str(tmp_path / "mirror"), "--store", postgres, "--project", "no-such-project", "--once")
    assert missing.exit_code == 2
    assert missing.output.startswith("Error: [NO_ROOT] there is no project 'no-such-project'")
    assert "fsmem init --store URL --project no-such-project" in missing.output
    unnamed = cli("sync", str(tmp_path / "mirror"), "--once")
    assert unnamed.exit_code == 2 and unnamed.output.startswith("Error: [BAD_STORE] ")
    assert not (tmp_path / "mirror").exists()


def test_a_running_sync_follows_both_sides_and_stops_on_sigterm(tmp_path, store, reader, postgres) -> None:
    put(store, "MEMORY.md", "# Project\n")
    folder = tmp_path / "mirror"
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    env.update(PYTHONPATH=str(REPO), FSMEM_STORE=postgres, FSMEM_PROJECT=store.project)
    running = subprocess.Popen(
        [sys.executable, "-m", "fsmem", "sync", str(folder)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def until(check, what: str) -> None:
            deadline = time.monotonic() + 30
            while not check():
                assert running.poll() is None, running.communicate()
                assert time.monotonic() < deadline, f"{what} did not happen"
                time.sleep(0.05)

        until(lambda: (folder / "MEMORY.md").is_file(), "the first pull")
        (folder / "MEMORY.md").write_text("# Project\n\n- saved by hand\n")
        until(lambda: reader.read("MEMORY.md") == b"# Project\n\n- saved by hand\n", "the push of a hand save")
        put(store, "notes/agent.md", "from an agent\n")
        until(lambda: (folder / "notes" / "agent.md").is_file(), "the pull of a new file")
        assert (folder / "notes" / "agent.md").read_text() == "from an agent\n"
    finally:
        running.send_signal(signal.SIGTERM)
        out, err = running.communicate(timeout=30)
    assert running.returncode == 0, err
    assert "pushed MEMORY.md" in out
    with Sync.open(folder, store) as mirror:  # the lock went with the process, its state saved
        assert mirror.base["notes/agent.md"] == version_of(b"from an agent\n")
        assert not mirror.run_once(None).changed


def test_a_running_sync_outlives_a_restart_of_postgresql(tmp_path, store, postgres, pg_server) -> None:
    """A save made while the server restarts is pushed once it is back; a change made after it is
    pulled (the listener reconnects; the passes meanwhile fail and are tried again)."""
    from fsmem._store.postgres.store import PgStore

    put(store, "MEMORY.md", "# Project\n")
    folder = tmp_path / "mirror"
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    env.update(PYTHONPATH=str(REPO), FSMEM_STORE=postgres, FSMEM_PROJECT=store.project)
    running = subprocess.Popen(
        [sys.executable, "-m", "fsmem", "sync", str(folder)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:

        def until(check, what: str) -> None:
            deadline = time.monotonic() + 60
            while not check():
                assert running.poll() is None, running.communicate()
                assert time.monotonic() < deadline, f"{what} did not happen"
                time.sleep(0.1)

        until(lambda: (folder / "MEMORY.md").is_file(), "the first pull")
        pg_server.control("down")
        (folder / "MEMORY.md").write_text("# Project\n\n- saved while the server was down\n")
        time.sleep(1)  # let a pass try, and fail, while it is down
        pg_server.control("up")
        with PgStore.open(postgres, store.project, create=False) as after:
            until(
                lambda: after.read("MEMORY.md") == b"# Project\n\n- saved while the server was down\n",
                "the push after the restart",
            )
            with after.change("write") as tx:
                tx.write("later.md", b"after the restart\n")
            until(lambda: (folder / "later.md").is_file(), "the pull after the restart")
    finally:
        running.send_signal(signal.SIGINT)  # Ctrl-C: as clean as SIGTERM
        running.communicate(timeout=30)
    assert running.returncode == 0
