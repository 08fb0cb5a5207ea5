"""A new process's `fsmem facts list [SUBJECT]` from the kept view alone (fsmem._memory.facts.cold, issue
24), the check after its answer (fsmem._memory.facts.recheck), and a long-lived process that follows
its watcher's word. Real files and real processes: every answer is compared with what a view built
from scratch says of the same files."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import fsmem
from fsmem._core.layout import STATE_DIR
from fsmem._memory.facts.facts import Facts
from fsmem._memory.facts.kept import VIEW_FILE
from tests.conftest import REPO, run_fsmem
from tests.memory.facts_checks import settle


@pytest.fixture
def memory(tmp_path):
    return fsmem.open(tmp_path / "root", create=True)


def _truth(root: Path, tmp: Path, subject: str | None = None) -> list[dict]:
    """What a view built from scratch says: the facts folders copied to a root with no state."""
    fresh = tmp / f"truth-{len(list(tmp.iterdir()))}"
    shutil.copytree(root / "notes", fresh / "notes", symlinks=True)
    listing = fsmem.open(fresh, create=True).facts.listing(subject)
    return [_plain(f.to_dict()) for f in listing.facts] + [{"broken": p.path} for p in listing.broken]


def _plain(entry: dict) -> dict:
    if entry.get("broken"):
        return {"broken": entry["path"]}
    return {k: entry[k] for k in ("id", "subject", "attribute", "fact", "replaces", "replaced_by", "holds", "path")}


def _listed(root: Path, *args: str) -> list[dict]:
    done = run_fsmem("facts", "list", *args, "--json", "--root", str(root))
    assert done.returncode == 0, done.stderr
    return [_plain(e) for e in json.loads(done.stdout)]


def _view(root: Path) -> Path:
    return root / STATE_DIR / VIEW_FILE


def _in_place(file: Path, old: str, new: str) -> None:
    """A person's save in place: the same inode, the folder's mtime unmoved."""
    data = file.read_text()
    assert old in data
    with open(file, "r+", encoding="utf-8") as handle:
        handle.write(data.replace(old, new))
        handle.truncate()


def _probe(root: Path, *args: str) -> str:
    """`fsmem facts list ARGS` in a new process, and which heavy modules it loaded."""
    probe = (
        "import sys\n"
        "from fsmem.cli import main\n"
        "try:\n"
        "    main(['facts', 'list', *sys.argv[2:], '--root', sys.argv[1]], standalone_mode=False)\n"
        "finally:\n"
        "    heavy = ('yaml', 'tantivy', 'frontmatter', 'jsonschema', 'fsmem._memory.memory',\n"
        "             'fsmem._store.folder.drive', 'fsmem._memory.facts.view', 'fsmem._core.chains')\n"
        "    loaded = [m for m in heavy if m in sys.modules]\n"
        "    print('LOADED', loaded)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(root), *args], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert done.returncode == 0, done.stderr
    settle(root)
    return done.stdout


def test_a_cold_listing_loads_no_yaml_index_or_memory(memory, monkeypatch) -> None:
    from fsmem._store.folder import stamps

    later = time.time_ns() + 10_000_000_000
    monkeypatch.setattr(stamps, "_now_ns", lambda: later)  # written long ago, as the racy rule sees it
    memory.facts.keep("Ana", "role", "Ana works in research.")
    memory.facts.current()
    for args in (("ana",), ()):
        out = _probe(memory.root, *args)
        assert "Ana works in research." in out
        assert "LOADED []" in out


def test_a_subject_kept_a_moment_ago_is_listed_from_the_view_by_its_files_versions(memory, tmp_path) -> None:
    """Just written, the files' stamps are kept as no stat gives them (their racy window): the view
    vouches for them by the versions written, read and hashed, not by a look at every file."""
    memory.facts.keep("Ana", "role", "Ana leads the data team.", said="2026-05-01")
    memory.facts.keep("Ana", "role", "Ana works in research.", said="2026-09-01")
    out = _probe(memory.root, "ana")
    assert "Ana works in research." in out and "Ana leads" not in out
    assert "LOADED []" in out
    assert _listed(memory.root, "ana") == _truth(memory.root, tmp_path, "ana")


def test_a_save_in_place_of_another_subjects_file_shows_after_the_check(memory, tmp_path) -> None:
    """Neither the folders' mark nor Ana's files tell that Bruno's file now names Ana: the answer may be
    from before, once; the check after it brings the view up, and every answer after is right."""
    facts = memory.facts
    facts.keep("Ana", "role", "Ana works in research.", said="2026-01-01")
    bruno = facts.keep("Bruno", "team", "Bruno is in ops.", said="2026-02-01").fact
    root = memory.root
    assert _listed(root, "ana") == _truth(root, tmp_path, "ana")
    settle(root)
    _in_place(root / bruno.path, "subject: Bruno", "subject: Ana  ")  # two more characters: any size will do
    _listed(root, "ana")
    settle(root)
    for args in (("ana",), ("bruno",), ()):
        assert _listed(root, *args) == _truth(root, tmp_path, *args), args
    assert any(f["id"] == bruno.id for f in _listed(root, "ana"))
    # a file broken in place: every subject's listing names it, from the answer after the check on
    _in_place(root / bruno.path, "---\nid:", "--\nid:")
    _listed(root)
    settle(root)
    for args in (("ana",), ("bruno",), ()):
        assert _listed(root, *args) == _truth(root, tmp_path, *args), args
    assert {"broken": bruno.path} in _listed(root, "carla")


def test_an_in_place_save_keeping_size_and_mtime_shows_in_the_next_answer(memory, tmp_path, monkeypatch) -> None:
    """The file was kept within the racy window of its write, so the view keeps a stamp no stat gives:
    a save of the same size with the same mtime (a coarse clock's second) is read again."""
    from fsmem._store.folder import stamps

    start = time.time_ns()
    monkeypatch.setattr(stamps, "_now_ns", lambda: start)  # this process writes and reads at the start
    ana = memory.facts.keep("Ana", "role", "Ana leads the data team.", said="2026-05-01").fact
    root = memory.root
    file = root / ana.path
    before = file.stat()
    _in_place(file, "Ana leads the", "Ana heads the")
    os.utime(file, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = file.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    assert [f["fact"] for f in _listed(root, "ana")] == ["Ana heads the data team."]
    settle(root)
    assert _listed(root) == _truth(root, tmp_path)


def test_a_hand_deleted_chain_member_and_a_hand_renamed_file_show_at_once(memory, tmp_path) -> None:
    facts = memory.facts
    first = facts.keep("Ana", "role", "Ana is an intern.", said="2026-01-01").fact
    facts.keep("Ana", "role", "Ana leads the data team.", said="2026-05-01")
    last = facts.keep("Ana", "role", "Ana works in research.", said="2026-09-01").fact
    root = memory.root
    assert _listed(root, "ana") == _truth(root, tmp_path, "ana")
    (root / "notes/memory/history" / f"{first.id}.md").unlink()  # a chain member deleted by hand
    for args in (("ana",), ()):
        assert _listed(root, *args) == _truth(root, tmp_path, *args), args
    (root / last.path).rename(root / "notes/memory/not-a-fact.md")  # renamed by hand: no fact's name now
    for args in (("ana",), (), ("bruno",)):
        assert _listed(root, *args) == _truth(root, tmp_path, *args), args
    (root / "notes/memory/not-a-fact.md").rename(root / last.path)  # and back
    for args in (("ana",), ()):
        assert _listed(root, *args) == _truth(root, tmp_path, *args), args
    settle(root)


def test_a_corrupt_view_is_rebuilt(memory, tmp_path) -> None:
    memory.facts.keep("Ana", "role", "Ana works in research.")
    memory.facts.current()
    _view(memory.root).write_bytes(b"SQLite format 3\x00" + b"\x00" * 90 + b"garbage" * 40)
    for args in (("ana",), ()):
        assert _listed(memory.root, *args) == _truth(memory.root, tmp_path, *args)
    settle(memory.root)
    assert _view(memory.root).is_file()


def test_a_view_planted_from_another_root_is_not_believed(tmp_path) -> None:
    mine = fsmem.open(tmp_path / "mine", create=True)
    other = fsmem.open(tmp_path / "other", create=True)
    mine.facts.keep("Ana", "role", "Ana works in research.")
    other.facts.keep("Ana", "role", "Ana works in sales.")
    other.facts.keep("Bruno", "team", "Bruno is in ops.")
    mine.facts.current()
    other.facts.current()
    shutil.copyfile(_view(other.root), _view(mine.root))
    for args in (("ana",), ("bruno",), ()):
        assert _listed(mine.root, *args) == _truth(mine.root, tmp_path, *args), args
    settle(mine.root)


def test_a_view_that_is_a_link_is_never_followed(memory, tmp_path) -> None:
    memory.facts.keep("Ana", "role", "Ana works in research.")
    memory.facts.current()
    outside = tmp_path / "outside.sqlite"
    shutil.copyfile(_view(memory.root), outside)
    memory.facts.keep("Ana", "role", "Ana works in sales.")  # the copy outside is behind now
    before = outside.read_bytes()
    _view(memory.root).unlink()
    _view(memory.root).symlink_to(outside)
    for args in (("ana",), ()):
        assert _listed(memory.root, *args) == _truth(memory.root, tmp_path, *args)
    settle(memory.root)
    assert outside.read_bytes() == before  # never written through
    assert not _view(memory.root).is_symlink() and _view(memory.root).is_file()


def test_a_cache_folder_that_is_a_link_is_never_written_through(memory, tmp_path) -> None:
    memory.facts.keep("Ana", "role", "Ana works in research.")
    cache = _view(memory.root).parent
    shutil.rmtree(cache)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cache.symlink_to(elsewhere)
    assert _listed(memory.root) == _truth(memory.root, tmp_path)
    assert _listed(memory.root, "ana") == _truth(memory.root, tmp_path, "ana")
    settle(memory.root) if not cache.is_symlink() else None
    assert not (elsewhere / "facts.sqlite").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_another_users_view_is_not_believed(memory, tmp_path) -> None:
    memory.facts.keep("Ana", "role", "Ana works in research.")
    memory.facts.current()
    view = _view(memory.root)
    with __import__("sqlite3").connect(view) as conn:  # rows that lie, in a file another user owns
        conn.execute("UPDATE facts SET text = 'Ana works in sales.'")
    os.chown(view, 65534, 65534)
    for args in (("ana",), ()):
        assert _listed(memory.root, *args) == _truth(memory.root, tmp_path, *args)
    settle(memory.root)
    assert view.stat().st_uid == os.geteuid()  # made anew, this user's


_KEEPER = """
import sys
import fsmem
from fsmem._env.config import Settings
memory = fsmem.open(sys.argv[1], settings=Settings(durable=False))
name, count = sys.argv[2], int(sys.argv[3])
for number in range(count):
    memory.facts.keep(f"{name} {number % 7}", "role", f"{name} {number % 7} has role {number}.",
                      said=f"2026-01-{1 + number % 28:02d}")
    memory.facts.keep("Shared", name, f"Shared has {name} {number}.", said=f"2026-02-{1 + number % 28:02d}")
print("done", flush=True)
"""


def _keeper(root: Path, name: str, count: int) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    env["PYTHONPATH"] = str(REPO)
    return subprocess.Popen(
        [sys.executable, "-c", _KEEPER, str(root), name, str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_two_processes_keeping_at_once_leave_a_view_that_answers_right(memory, tmp_path) -> None:
    memory.facts.keep("Ana", "role", "Ana works in research.")
    keepers = [_keeper(memory.root, name, 25) for name in ("Ana", "Bruno")]
    for keeper in keepers:
        out, err = keeper.communicate(timeout=240)
        assert keeper.returncode == 0, err
    root = memory.root
    for args in ((), ("shared",), ("ana 3",), ("bruno 5",)):
        assert _listed(root, *args) == _truth(root, tmp_path, *args), args
    settle(root)


def test_a_keeper_killed_mid_change_leaves_a_view_that_is_rebuilt_or_right(memory, tmp_path) -> None:
    memory.facts.keep("Ana", "role", "Ana works in research.")
    root = memory.root
    for delay in (0.4, 0.7, 1.0):
        keeper = _keeper(root, "Carla", 400)
        time.sleep(delay)  # well inside its keeps: each one writes files, then the view
        keeper.send_signal(signal.SIGKILL)
        keeper.wait(timeout=30)
        for args in ((), ("shared",), ("carla 2",)):
            assert _listed(root, *args) == _truth(root, tmp_path, *args), (delay, args)
        settle(root)


def test_a_process_whose_watcher_runs_follows_its_word_not_every_files_stat(memory, monkeypatch) -> None:
    """Memory with its watcher: after one full look, listings stat only what the watcher named, and a
    person's save in place, a new file and a deleted one show once the watcher has heard them."""
    facts = memory.facts
    ana = facts.keep("Ana", "role", "Ana leads the data team.", said="2026-05-01").fact
    bruno = facts.keep("Bruno", "team", "Bruno is in ops.", said="2026-03-01").fact
    memory.watch()
    facts.current()
    facts.current()  # listening now, from a full look on
    scans: list[object] = []
    drive = memory.drive
    real = drive.stamps
    monkeypatch.setattr(drive, "stamps", lambda folders: scans.append(folders) or real(folders))
    root = memory.root

    def until(check) -> None:
        deadline = time.monotonic() + 30
        while not check():
            assert time.monotonic() < deadline, "the watcher's word never came"
            time.sleep(0.02)

    _in_place(root / bruno.path, "subject: Bruno", "subject: Ana")  # in place, to another subject
    until(lambda: [f.id for f in facts.current("ana")] == [bruno.id, ana.id])
    assert [f.id for f in facts.current("bruno")] == []
    new = root / "notes/memory/20260101T000000-0000cafe.md"
    new.write_text((root / ana.path).read_text().replace(ana.id, "20260101T000000-0000cafe").replace("Ana", "Carla"))
    until(lambda: [f.id for f in facts.current("carla")] == ["20260101T000000-0000cafe"])
    assert scans == []  # no stat of every fact file: only what the watcher named
    (root / bruno.path).unlink()  # gone by hand: the one look that stats every file (a link may stand there now)
    until(lambda: sorted(f.id for f in facts.listing(None).facts) == sorted([ana.id, "20260101T000000-0000cafe"]))
    assert [f.to_dict() for f in facts.current()] == [f.to_dict() for f in Facts(drive).current()]
    memory.close()


def test_a_watching_process_lists_every_subject_by_its_watchers_word_from_its_first_listing(
    memory, monkeypatch
) -> None:
    """A resident serving the shell's `fsmem facts list` (its memory watched, no look yet): the first
    listing is its full look, the later ones stat no file at all (a peek at the kept view would stat
    every file for each), and a person's save in place shows once the watcher has heard it."""
    facts = memory.facts
    ana = facts.keep("Ana", "role", "Ana leads the data team.", said="2026-05-01").fact
    facts.keep("Bruno", "team", "Bruno is in ops.", said="2026-03-01")
    watching = fsmem.open(memory.root)  # another process's memory: its view has not looked yet
    watching.watch()
    drive = watching.drive
    real_stamps, real_stamp = drive.stamps, drive.stamp
    scans: list[object] = []
    monkeypatch.setattr(drive, "stamps", lambda folders: scans.append(folders) or real_stamps(folders))
    monkeypatch.setattr(drive, "stamp", lambda path: scans.append(path) or real_stamp(path))
    first = watching.facts.listing()
    assert [f.id for f in first.facts] == [f.id for f in Facts(memory.drive).current()]
    assert watching.facts._view.resolution is not None  # its full look, not a peek at the kept view
    scans.clear()
    for _ in range(3):
        assert watching.facts.listing().facts == first.facts
    assert scans == []
    _in_place(memory.root / ana.path, "leads the data team", "leads the research team")
    deadline = time.monotonic() + 30
    while "Ana leads the research team." not in [f.text for f in watching.facts.listing().facts]:
        assert time.monotonic() < deadline, "the watcher's word never came"
        time.sleep(0.02)
    assert scans == [ana.path]  # the one file the watcher named
    watching.close()


def test_a_watching_process_lists_a_file_broken_and_mended_by_hand(memory) -> None:
    """Its listings name a fact file a person broke in place as broken, about its subject and about
    every subject, and no longer once it is mended."""
    facts = memory.facts
    ana = facts.keep("Ana", "role", "Ana leads the data team.").fact
    bruno = facts.keep("Bruno", "team", "Bruno is in ops.").fact
    memory.watch()
    facts.listing()
    file = memory.root / ana.path
    good = file.read_text()

    def until(check) -> None:
        deadline = time.monotonic() + 30
        while not check():
            assert time.monotonic() < deadline, "the watcher's word never came"
            time.sleep(0.02)

    _in_place(file, "subject: Ana", "subject: [Ana")  # YAML that does not parse
    until(lambda: [p.path for p in facts.listing("ana").broken] == [ana.path])
    assert [p.path for p in facts.listing().broken] == [ana.path]
    assert [f.id for f in facts.listing().facts] == [bruno.id]
    _in_place(file, "subject: [Ana", "subject: Ana")
    until(lambda: not facts.listing("ana").broken)
    assert [f.id for f in facts.listing("ana").facts] == [ana.id] and file.read_text() == good
    assert not facts.listing().broken
    memory.close()


def test_a_checker_killed_mid_look_leaves_the_view_rebuilt_or_right(memory, tmp_path) -> None:
    """The check after an answer, killed while it brings the view up to many saves in place: the next
    check (after the next answer) finishes the work, and the answers after it are right."""
    from fsmem._memory.facts.recheck import ASKED_FILE

    kept = memory.facts.keep_many(
        [{"subject": f"P{n % 9}", "attribute": f"a{n}", "fact": f"P{n % 9} has a{n} one."} for n in range(300)]
    )
    root = memory.root
    memory.facts.current()
    for number, result in enumerate(kept):
        if number % 2 == 0:
            _in_place(root / result.fact.path, " one.", " two.")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    env["PYTHONPATH"] = str(REPO)
    for delay in (0.3, 0.6):
        (root / STATE_DIR / ASKED_FILE).touch()
        checker = subprocess.Popen([sys.executable, "-m", "fsmem._memory.facts.recheck", str(root)], env=env)
        time.sleep(delay)
        checker.send_signal(signal.SIGKILL)
        checker.wait(timeout=30)
    _listed(root)  # an answer: it asks for the check again
    settle(root)
    for args in ((), ("p3",)):
        assert _listed(root, *args) == _truth(root, tmp_path, *args), args
    settle(root)


def test_links_planted_for_the_checks_files_do_not_turn_the_checks_off(memory, tmp_path) -> None:
    from fsmem._memory.facts.recheck import ASKED_FILE, RUNNING_FILE

    bruno = memory.facts.keep("Bruno", "team", "Bruno is in ops.").fact
    memory.facts.current()
    root = memory.root
    target = tmp_path / "target"
    target.write_text("left alone\n")
    for name in (ASKED_FILE, RUNNING_FILE):
        (root / STATE_DIR / name).symlink_to(target)
    _in_place(root / bruno.path, "Bruno is in ops.", "Bruno is in sales.")
    _listed(root)
    settle(root)
    assert _listed(root) == _truth(root, tmp_path)
    assert target.read_text() == "left alone\n"
    settle(root)


def test_a_view_deleted_under_a_running_process_is_written_whole_by_its_next_change(memory, tmp_path) -> None:
    """The process's next save finds no view: it writes every row, not only the chains it changed
    (rows for one subject and a mark would make every other subject look empty)."""
    facts = memory.facts
    facts.keep("Ana", "role", "Ana works in research.")
    facts.keep("Bruno", "team", "Bruno is in ops.")
    facts.current()
    _view(memory.root).unlink()
    facts.keep("Carla", "team", "Carla is in sales.")
    for args in (("ana",), ("bruno",), ("carla",), ()):
        assert _listed(memory.root, *args) == _truth(memory.root, tmp_path, *args), args
    settle(memory.root)


def test_a_view_of_another_schema_under_this_format_is_made_anew_whole(memory, tmp_path) -> None:
    import sqlite3

    memory.facts.keep("Ana", "role", "Ana works in research.")
    memory.facts.current()
    with sqlite3.connect(_view(memory.root)) as conn:  # rows this version cannot read or write
        conn.execute("ALTER TABLE files DROP COLUMN version")
    assert _listed(memory.root, "ana") == _truth(memory.root, tmp_path, "ana")
    out = _probe(memory.root, "ana")  # the view was made anew, whole: a new process answers from it
    assert "Ana works in research." in out and "LOADED []" in out
