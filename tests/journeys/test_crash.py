"""Crashes: a process killed mid-write, or a write that fails half way, leaves every file whole.

docs/design.md §5: a crash at any point leaves the old file or the new one whole, never a mix.
"""

from __future__ import annotations

import errno
import json
import os
import random
import re
import signal
import time
from pathlib import Path

import pytest

import fsmem
import fsmem._store.atomic
from fsmem._core.versions import version_of
from fsmem._store.folder.parking import PARKED_PREFIX
from tests.procs.common import crash_content, parse_crash_header, read_json_line, snapshot, spawn

N_FILES = 4
KEPT_NAME = re.compile(r"^[0-9TZ]+-([0-9a-f]{12})(?:-[a-z_]+)?\.md$")




def assert_whole(root: Path, path: str, allowed_gens: range) -> None:
    """The file is absent (deleted) or exactly one content the writer ever wrote."""
    full = root / path
    if not full.exists():
        return
    text = full.read_bytes().decode("utf-8")  # a torn write may not even be UTF-8: that fails here
    header = parse_crash_header(text)
    assert header is not None, f"{path} starts with {text[:80]!r}"
    file_no, gen = header
    assert path == f"crash/f{file_no}.md"
    assert gen in allowed_gens, (path, gen)
    assert text == crash_content(file_no, gen), f"{path} is torn: {len(text)} chars, generation {gen}"


def assert_versions_whole(root: Path) -> None:
    """Every kept version still hashes to the version its name gives.

    Kept files are named ``<time>-<version>-<command>.md`` under ``.fsmem/versions/<path>/``.
    """
    kept = root / ".fsmem" / "versions"
    for full in kept.rglob("*.md"):
        named = KEPT_NAME.match(full.name)
        if full.name.startswith(".") or not named:
            continue  # not a kept version (a temp file the kill left is allowed here, never shown)
        assert version_of(full.read_bytes()) == named.group(1), f"kept version {full} is torn"


def visible_names(root: Path, folder: str) -> str:
    run = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="inspector")
    listing = run.call({"command": "read", "path": folder})
    assert listing["ok"], listing
    return listing["text"]


@pytest.mark.slow
def test_sigkill_in_the_middle_of_writes_leaves_every_file_whole(root: Path) -> None:
    rng = random.Random(20261130)
    for round_no in range(5):
        first_gen = round_no * 1_000_000
        proc = spawn("crash_writer.py", root, N_FILES, first_gen)
        try:
            assert read_json_line(proc) == {"started": True}
            deadline = time.monotonic() + 60  # the loop's first write may take a while on a loaded machine
            while not (root / "crash").is_dir() and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(rng.uniform(0.05, 0.6))  # a random moment inside the write loop
            assert proc.poll() is None, proc.stderr.read()
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL

        allowed = range(0, first_gen + 10_000_000)
        for i in range(N_FILES):
            assert_whole(root, f"crash/f{i}.md", allowed)
        assert_versions_whole(root)

        # The tool sees only the memory files: no temp file, nothing half made.
        disk_names = set(os.listdir(root / "crash"))
        listing = visible_names(root, "crash")
        for name in disk_names:
            if name.startswith("f") and name.endswith(".md"):
                continue
            assert name not in listing, f"leftover {name!r} is shown to the model"
        hits = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="inspector").call(
            {"command": "search", "query": "crash file", "regex": True})
        assert hits["ok"], hits
        for name in disk_names - {f"f{i}.md" for i in range(N_FILES)}:
            assert name not in json.dumps(hits), f"search found leftover {name!r}"

    # The root opens and works after the last kill: a new process can take the lock and write.
    memory = fsmem.open(root)
    run = memory.run(fsmem.Scope.chat(), thread_id="after")
    assert run.call({"command": "read", "path": "crash/f0.md"})["ok"] or not (root / "crash/f0.md").exists()
    result = run.call({"command": "write", "path": "crash/after.md", "content": "# After the crash\n"})
    assert result["ok"], result
    log = (root / ".fsmem" / "log.jsonl").read_text(encoding="utf-8")
    # A line torn by the kill must not swallow the next one: the newest line is whole and is ours.
    assert json.loads(log.splitlines()[-1])["path"] == "crash/after.md"


@pytest.mark.slow
def test_sigkill_inside_folder_renames_and_deletes_loses_nothing(root: Path) -> None:
    """A kill inside a folder rename or delete leaves whole files, and every content stays reachable."""
    rng = random.Random(7)
    n_files = 12
    for round_no in range(4):
        first_gen = round_no * 1_000_000
        looker = fsmem.open(root)
        changes_before = len(list(looker.log()))
        proc = spawn("crash_writer.py", root, n_files, first_gen, "folders")
        try:
            assert read_json_line(proc) == {"started": True}
            # the random moment counts from the writer's first change of this round: a kill before it
            # (a slow start under load) would leave this round nothing to audit
            deadline = time.monotonic() + 60
            while len(list(looker.log())) == changes_before:
                assert proc.poll() is None, proc.stderr.read()
                assert time.monotonic() < deadline, "the writer made no change in 60 s"
                time.sleep(0.01)
            time.sleep(rng.uniform(0.1, 0.8))
            assert proc.poll() is None, proc.stderr.read()
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)

        memory = fsmem.open(root)
        for folder in ("batch", "moved"):
            for i in range(n_files):
                full = root / folder / f"f{i}.md"
                if not full.exists():
                    continue
                text = full.read_text(encoding="utf-8")
                header = parse_crash_header(text)
                assert header is not None and header[0] == i, f"{full} starts with {text[:60]!r}"
                assert text == crash_content(i, header[1], size=6_000), f"{full} is torn"
        assert_versions_whole(root)
        # Nothing is lost: the newest logged content of each file is on disk (in either folder) or kept.
        # The log as fsmem reads it: a line the kill tore in its append is no change of record.
        entries = list(memory.log())
        assert len(entries) > changes_before
        for i in range(n_files):
            written = [e.after for e in entries if e.command == "write" and e.path == f"batch/f{i}.md"]
            if not written:
                continue
            reachable = {version_of((root / folder / f"f{i}.md").read_bytes())
                         for folder in ("batch", "moved") if (root / folder / f"f{i}.md").exists()}
            for folder in ("batch", "moved"):
                reachable |= {v.version for v in memory.versions(f"{folder}/f{i}.md")}
            assert written[-1] in reachable, f"the last content of f{i} is neither on disk nor kept"
        # The tool can clean up whatever the kill left half done.
        run = memory.run(fsmem.Scope.chat(), thread_id="cleanup")
        for folder in ("batch", "moved"):
            if (root / folder).exists():
                for i in range(n_files):
                    run.call({"command": "read", "path": f"{folder}/f{i}.md"})
                assert run.call({"command": "delete", "path": folder})["ok"]


def test_sigkill_inside_a_deleting_block_puts_the_folder_back_on_next_open(root: Path) -> None:
    """A harness that dies between moving an agent's folder aside and its own delete loses nothing."""
    agent_id = "3f9a1c2e-77"
    memory = fsmem.open(root)
    folder = memory.create_agent(agent_id, "SEO")
    run = memory.run(fsmem.Scope.agent(agent_id), thread_id="t-1")
    files = {f"{folder}/MEMORY.md": "# SEO\n- hold /stories\n", f"{folder}/titles.md": "# Titles\n"}
    for path, text in files.items():
        assert run.call({"command": "write", "path": path, "content": text})["ok"]
    before = snapshot(root / folder)

    proc = spawn("lifecycle_worker.py", root, agent_id)
    try:
        inside = read_json_line(proc)
        assert inside["inside"] is True and inside["held"] == files
        assert not (root / folder).exists()  # parked while the harness does its part
        other = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="other")
        assert other.call({"command": "read", "path": f"{folder}/MEMORY.md"})["error"]["code"] == "NOT_FOUND"
        refused = other.call({"command": "write", "path": f"{folder}/late.md", "content": "# Late\n"})
        assert refused["error"]["code"] == "PROTECTED", refused
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)

    reopened = fsmem.open(root)  # finds the folder the dead process parked, and puts it back
    assert snapshot(root / folder) == before
    assert reopened.scope_files(fsmem.Scope.agent(agent_id))[-1] == f"{folder}/MEMORY.md"
    assert not list((root / ".fsmem").glob(f"{PARKED_PREFIX}*")), "the parked copy was left behind"


# --- failures inside the write path, in-process ----------------------------------------------


def _fail_replace(*args, **kwargs):
    raise OSError(errno.EIO, "simulated I/O error in os.replace")


def _fail_fsync(fd):
    raise OSError(errno.EIO, "simulated I/O error in fsync")


@pytest.mark.parametrize("broken", ["replace", "fsync"])
def test_a_write_that_fails_half_way_leaves_the_old_file_and_no_temp_file(
    root: Path, monkeypatch: pytest.MonkeyPatch, broken: str
) -> None:
    run = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="t-1")
    first = run.call({"command": "write", "path": "topic/brand.md", "content": crash_content(0, 1)})
    assert first["ok"], first
    before_folder = sorted(os.listdir(root / "topic"))
    log_before = (root / ".fsmem" / "log.jsonl").read_bytes()

    with monkeypatch.context() as patch:
        if broken == "replace":
            patch.setattr(os, "replace", _fail_replace)
            patch.setattr(fsmem._store.atomic, "_rename2", _fail_replace)  # the swap a write makes instead
        else:
            patch.setattr(os, "fsync", _fail_fsync)
        failed = run.call({"command": "write", "path": "topic/brand.md", "content": crash_content(0, 2)})
        assert failed["error"]["code"] == "STORAGE", failed  # a coded refusal, never a raw OSError
        assert "nothing was changed" in failed["error"]["message"]

    assert (root / "topic/brand.md").read_text(encoding="utf-8") == crash_content(0, 1)
    assert sorted(os.listdir(root / "topic")) == before_folder, "a temp file was left behind"
    assert (root / ".fsmem" / "log.jsonl").read_bytes() == log_before, "a failed write was logged"
    # The lock was released and the run still knows the version on disk: the next write goes through.
    again = run.call({"command": "write", "path": "topic/brand.md", "content": crash_content(0, 3)})
    assert again["ok"], again
    assert (root / "topic/brand.md").read_text(encoding="utf-8") == crash_content(0, 3)


def test_leftover_hidden_files_are_invisible_to_the_tool(root: Path) -> None:
    """What a crash can leave (a temp file beside its target) is never read, listed or searched."""
    run = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="t-1")
    assert run.call({"command": "write", "path": "topic/brand.md", "content": "# Brand\n"})["ok"]
    (root / "topic" / ".brand.md.tmp-4242").write_text("# half written needle-xyzzy\n", encoding="utf-8")
    (root / "topic" / ".~brand.md").write_text("needle-xyzzy\n", encoding="utf-8")

    for folder in ("", "topic"):
        listing = run.call({"command": "read", "path": folder})
        assert listing["ok"]
        assert ".brand.md.tmp-4242" not in listing["text"] and ".~brand.md" not in listing["text"]
        assert "brand.md" in listing["text"]
    for regex in (True, False):
        found = run.call({"command": "search", "query": "needle-xyzzy", "regex": regex})
        assert found["ok"], found
        assert not found.get("hits") and "half written" not in found["text"], found


def test_a_torn_last_log_line_does_not_break_the_log(root: Path) -> None:
    run = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="t-1")
    assert run.call({"command": "write", "path": "a.md", "content": "# A\n"})["ok"]
    log = root / ".fsmem" / "log.jsonl"
    with open(log, "ab") as handle:  # what a kill in the middle of the append leaves
        handle.write(b'{"time": "2026-11-30T00:00:00+00:00", "command": "wri')
    second = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="t-2")
    assert second.call({"command": "write", "path": "b.md", "content": "# B\n"})["ok"]
    entries = fsmem.open(root).drive.log()
    assert [getattr(e, "path", None) or e["path"] for e in entries][-2:] == ["a.md", "b.md"]
    # The conflict message still finds who changed a file.
    third = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="t-3")
    assert third.call({"command": "read", "path": "b.md"})["ok"]
    assert second.call({"command": "write", "path": "b.md", "content": "# B2\n"})["ok"]
    late = third.call({"command": "write", "path": "b.md", "content": "# B3\n"})
    assert late["error"]["code"] == "CONFLICT" and "t-2" in late["error"]["message"]
