"""The kept view (`.fsmem/cache/facts.sqlite`, issue 24): a new process lists facts from it, and it is never
believed where it disagrees with the files. The sequence that gave an earlier facts index lasting wrong
answers is run exactly: hand edits of `replaces:` in a current and a history file, then `facts list`,
then `facts keep`, then `facts list`, each in a new process; and a view file that is corrupt, stale or
of another version."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

import fsmem
from fsmem._memory.facts.facts import Facts
from fsmem._memory.facts.kept import VIEW_FILE, VIEW_FORMAT
from tests.conftest import run_fsmem
from tests.memory.facts_checks import settle


@pytest.fixture
def memory(tmp_path):
    return fsmem.open(tmp_path / "root", create=True)


def _truth(root: Path, tmp: Path, subject: str | None = None) -> list[dict]:
    """What resolving every file from scratch says: the facts folders copied to a root with no state."""
    fresh = tmp / f"truth-{len(list(tmp.iterdir()))}"
    shutil.copytree(root / "notes", fresh / "notes")
    facts = fsmem.open(fresh, create=True).facts
    return [_plain(f.to_dict()) for f in facts.current(subject)]


def _plain(entry: dict) -> dict:
    return {k: entry[k] for k in ("id", "subject", "attribute", "fact", "replaces", "replaced_by", "holds", "path")}


def _listed(root: Path, *args: str) -> list[dict]:
    done = run_fsmem("facts", "list", *args, "--json", "--root", str(root))
    assert done.returncode == 0, done.stderr
    return [_plain(e) for e in json.loads(done.stdout) if not e.get("broken")]


def test_hand_edits_of_replaces_then_list_keep_list_in_new_processes(memory, tmp_path) -> None:
    facts = memory.facts
    first = facts.keep("Ana", "role", "Ana is an intern.", said="2026-01-01").fact
    middle = facts.keep("Ana", "role", "Ana leads the data team.", said="2026-05-01").fact
    last = facts.keep("Ana", "role", "Ana works in research.", said="2026-09-01").fact
    bruno = facts.keep("Bruno", "team", "Bruno is in ops.", said="2026-03-01").fact
    root = memory.root
    assert _listed(root) == _truth(root, tmp_path)  # the kept view answers
    # a person cuts Ana's chain by hand: the current file no longer replaces the middle one, the middle
    # one (history) no longer replaces the first; and links Bruno's current fact to Ana's first, in place
    current = root / f"notes/memory/{last.id}.md"
    current.write_text(current.read_text().replace(f"replaces: [{middle.id}]", "replaces: []"))
    history = root / f"notes/memory/history/{middle.id}.md"
    history.write_text(history.read_text().replace(f"replaces: [{first.id}]", "replaces: []"))
    bruno_file = root / f"notes/memory/{bruno.id}.md"
    bruno_file.write_text(bruno_file.read_text().replace("replaces: []", f"replaces: [{first.id}]"))
    # saved in place, the folders' mark did not move: a listing of every subject may answer once from
    # before the edits (no stat of every file); the check after that answer brings the view up to them
    _listed(root)
    settle(root)
    for args in ((), ("ana",), ("Bruno",)):
        assert _listed(root, *args) == _truth(root, tmp_path, *args), args
    settle(root)
    kept = run_fsmem("facts", "keep", "Ana", "role", "Ana runs research.", "--said", "2026-10-01", "--root", str(root))
    assert kept.returncode == 0, kept.stderr
    for args in ((), ("ana",), ("Bruno",)):
        assert _listed(root, *args) == _truth(root, tmp_path, *args), args
    # the same edits undone by hand, by rename this time (as most editors save), then list, keep, list
    for fid, old, new in (
        (middle.id, "replaces: []", f"replaces: [{first.id}]"),
        (bruno.id, f"replaces: [{first.id}]", "replaces: []"),
    ):
        path = next(root.glob(f"notes/memory/**/{fid}.md"))  # wherever the keep left it
        temp = path.with_name(".swap")
        temp.write_text(path.read_text().replace(old, new))
        temp.replace(path)
    assert _listed(root) == _truth(root, tmp_path)
    facts.keep("Bruno", "team", "Bruno is in research.", said="2026-11-01")  # a long-lived process this time
    for args in ((), ("ana",), ("bruno",)):
        assert _listed(root, *args) == _truth(root, tmp_path, *args), args
    assert [_plain(f.to_dict()) for f in Facts(memory.drive).current()] == _truth(root, tmp_path)


def _sqlite(memory) -> Path:
    return memory.drive.state / VIEW_FILE


def test_a_corrupt_view_or_one_of_another_version_is_made_anew(memory, tmp_path) -> None:
    facts = memory.facts
    facts.keep("Ana", "role", "Ana leads the data team.", said="2026-05-01")
    facts.keep("Ana", "role", "Ana works in research.", said="2026-09-01")
    truth = _truth(memory.root, tmp_path)
    view = _sqlite(memory)
    view.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)  # torn
    assert [_plain(f.to_dict()) for f in Facts(memory.drive).current()] == truth
    assert Facts(memory.drive).listing("ana").facts == Facts(memory.drive).current("ana")
    with sqlite3.connect(view) as conn:  # made anew, and readable
        assert conn.execute("SELECT count(*) FROM facts").fetchone() == (2,)
        conn.execute("UPDATE meta SET value = 'fsmem-facts-0' WHERE name = 'format'")  # another version's
    assert _listed(memory.root) == truth
    with sqlite3.connect(view) as conn:
        assert conn.execute("SELECT value FROM meta WHERE name = 'format'").fetchone() == (VIEW_FORMAT,)
    view.unlink()
    assert _listed(memory.root, "Ana") == truth
    assert view.is_file()


def test_a_stale_view_put_back_is_not_believed(memory, tmp_path) -> None:
    facts = memory.facts
    ana = facts.keep("Ana", "role", "Ana leads the data team.", said="2026-05-01").fact
    facts.current()
    old = _sqlite(memory).read_bytes()
    newer = facts.keep("Ana", "role", "Ana works in research.", said="2026-09-01").fact
    facts.edit(ana.id, fact="Ana led the data team.")
    _sqlite(memory).write_bytes(old)  # a view from before both changes (a backup put back, a copied root)
    assert [f.id for f in Facts(memory.drive).current("ana")] == [newer.id]
    _sqlite(memory).write_bytes(old)
    assert _listed(memory.root) == _truth(memory.root, tmp_path)
    history = Facts(memory.drive).history(newer.id)
    assert [f.text for f in history] == ["Ana works in research.", "Ana led the data team."]


def test_a_view_whose_rows_lie_about_a_file_is_not_believed(memory, tmp_path) -> None:
    """Rows a view holds for a chain are believed only with the stamps of the files they came from."""
    facts = memory.facts
    facts.keep("Ana", "role", "Ana leads the data team.", said="2026-05-01")
    facts.current()
    with sqlite3.connect(_sqlite(memory)) as conn:
        (sources,) = conn.execute("SELECT sources FROM chains").fetchone()
        path = sources.split("\t")[0]
        conn.execute("UPDATE chains SET sources = ?", (f"{path}\t0,0,0",))  # rows kept from another file
        conn.execute("UPDATE facts SET text = replace(text, 'leads', 'left')")
    assert [f.text for f in Facts(memory.drive).current("ana")] == ["Ana leads the data team."]
    assert [f.text for f in Facts(memory.drive).current()] == ["Ana leads the data team."]


def test_a_new_fact_file_and_a_deleted_one_show_at_once(memory, tmp_path) -> None:
    facts = memory.facts
    ana = facts.keep("Ana", "role", "Ana works in research.").fact
    bruno = facts.keep("Bruno", "team", "Bruno is in ops.").fact
    facts.current()
    copy = memory.root / "notes/memory/20260101T000000-0000cafe.md"
    copy.write_text(
        (memory.root / ana.path).read_text().replace(ana.id, "20260101T000000-0000cafe").replace("Ana", "Carla")
    )
    assert [f.id for f in Facts(memory.drive).current("carla")] == ["20260101T000000-0000cafe"]
    (memory.root / bruno.path).unlink()
    assert Facts(memory.drive).current("bruno") == []
    assert _listed(memory.root) == _truth(memory.root, tmp_path)


def test_a_view_behind_another_never_drops_the_rows_of_facts_it_has_not_seen(memory, tmp_path) -> None:
    """Two views save at once: the one that has not seen a fact leaves that fact's chain as it is."""
    from fsmem._core import chains
    from fsmem._memory.facts.kept import KeptView, Read

    facts = memory.facts
    first = facts.keep("Ana", "role", "Ana leads the data team.", said="2026-05-01").fact
    facts.current()
    behind = chains.resolve([("current", first)])  # what a view that looked before the next keep holds
    newer = facts.keep("Ana", "role", "Ana works in research.", said="2026-09-01").fact
    facts.current()
    view = KeptView(memory.drive.state / VIEW_FILE)
    files = {first.path: Read((1, 2, 3), "current", first)}  # the file as it was (moved to the history since)
    behind.changed = {first.id}
    view.save(memory.drive.folders_mark(("notes/memory", "notes/memory/history")), files, behind, [first.path], [])
    with sqlite3.connect(_sqlite(memory)) as conn:
        assert sorted(row[0] for row in conn.execute("SELECT id FROM facts")) == sorted([first.id, newer.id])
    assert [f.id for f in Facts(memory.drive).current("ana")] == [newer.id]


def test_a_same_size_hand_fix_within_the_stamps_tick_shows_in_the_next_listing(memory, monkeypatch) -> None:
    """A fact file fixed in place with text of the same length and its mtime put back keeps its stamp
    (size, mtime, inode): what was read of it within the racy window is read again on the next look,
    by this process's view and by a new one's kept view."""
    from fsmem._store.folder import stamps

    start = time.time_ns()
    monkeypatch.setattr(stamps, "_now_ns", lambda: start)  # every read at the moment the test began
    facts = memory.facts
    ana = facts.keep("Ana", "role", "Ana leads the data team.", said="2026-05-01").fact
    assert [f.text for f in facts.listing("ana").facts] == ["Ana leads the data team."]
    assert [f.text for f in facts.current()] == ["Ana leads the data team."]
    file = memory.root / ana.path
    before = file.stat()
    with open(file, "r+b") as handle:  # in place: same inode, same size
        data = handle.read()
        handle.seek(0)
        handle.write(data.replace(b"Ana leads the", b"Ana heads the"))
    os.utime(file, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = file.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    assert [f.text for f in Facts(memory.drive).listing("ana").facts] == ["Ana heads the data team."]
    assert [f.text for f in facts.listing("ana").facts] == ["Ana heads the data team."]
    assert [f.text for f in facts.current()] == ["Ana heads the data team."]
