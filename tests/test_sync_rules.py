"""`fsmem sync` keeps the rules the tool keeps (fsmem/sync.py): a conflict that cannot finish keeps the
person's text once, not once a pass; a top file deleted by hand is emptied, a level folder deleted by
hand comes back, a fact file changes only through the facts API. Real PostgreSQL, real folders."""

from __future__ import annotations

import errno
import json
import uuid
from pathlib import Path

import pytest

import fsmem.sync as sync_module
from fsmem.sync import Sync


@pytest.fixture
def store(postgres):
    from fsmem.pg_store import PgStore

    with PgStore.open(postgres, f"rules-{uuid.uuid4().hex[:8]}") as opened:
        yield opened


def put(store, path: str, text: str, expect=None) -> str:
    with store.change("write", thread="t-1") as tx:
        return tx.write(path, text.encode(), **({} if expect is None else {"expect": expect}))


# ---- a conflict that cannot finish -------------------------------------------------------------------


def test_the_same_text_is_kept_once_as_a_version_of_a_path(store) -> None:
    put(store, "notes/x.md", "db\n")
    first = store.keep_version("notes/x.md", b"the person's text\n", "conflict")
    again = store.keep_version("notes/x.md", b"the person's text\n", "conflict")
    assert first == again and [kept.command for kept in store.versions("notes/x.md")] == ["conflict"]
    other = store.keep_version("notes/x.md", b"another text\n", "conflict")
    assert other != first and len(store.versions("notes/x.md")) == 2


def test_a_conflict_whose_note_cannot_be_written_keeps_the_text_once_and_evicts_no_history(
    tmp_path: Path, store, monkeypatch
) -> None:
    version = None
    for number in range(5):  # a file with a real history: four kept versions
        version = put(store, "notes/x.md", f"db v{number}\n", expect=version)
    history = [(kept.command, kept.version) for kept in store.versions("notes/x.md")]
    folder = tmp_path / "mirror"
    store.versions_kept = len(history) + 1  # the cap one above what is kept: each extra copy evicts
    with Sync.open(folder, store) as mirror:
        mirror.run_once(None)
        (folder / "notes/x.md").write_text("the person's text\n")
        put(store, "notes/x.md", "db v5\n")
        history = [(kept.command, kept.version) for kept in store.versions("notes/x.md")]
        real = sync_module.write_atomic

        def disk_full_for_notes(path, data, **options):
            if ".conflict" in Path(path).name:
                raise OSError(errno.ENOSPC, "No space left on device")
            return real(path, data, **options)

        monkeypatch.setattr(sync_module, "write_atomic", disk_full_for_notes)
        for _ in range(4):
            report = mirror.run_once(None)
            assert report.errors == ["notes/x.md: [Errno 28] No space left on device"]
        kept = [(k.command, k.version) for k in store.versions("notes/x.md")]
        mine = sync_module.version_of(b"the person's text\n")
        assert kept[0] == ("conflict", mine) and kept[1:] == history[: len(kept) - 1]
        assert len(kept) == store.versions_kept and sum(command == "conflict" for command, _ in kept) == 1
        assert (folder / "notes/x.md").read_text() == "the person's text\n"  # nothing of theirs lost
        assert json.loads((folder / ".fsmem-sync/state.json").read_text())["kept"] == {"notes/x.md": mine}
        monkeypatch.undo()  # room again: the conflict finishes
        report = mirror.run_once(None)
        assert report.conflicts == ["notes/x.md.conflict"] and report.errors == []
        assert f"Your text is kept as version {mine}" in (folder / "notes/x.md.conflict").read_text()
        assert (folder / "notes/x.md").read_text() == "db v5\n"
        assert [(k.command, k.version) for k in store.versions("notes/x.md")] == kept
        assert json.loads((folder / ".fsmem-sync/state.json").read_text())["kept"] == {}
