"""Many machines, simulated: worker processes, each with its own cache folder, on one PostgreSQL project.

    python -m tests.procs.pg_soak SECONDS [--url CONNINFO [--pg-dir DIR]] [--workers 8]
    (or bin/soak --postgres SECONDS [CONNINFO DIR])

Each worker (a real process, ``fsmem.open(url, project=..., cache=<its own folder>)``, as if on its own
machine) repeats, at random, through ``run.call`` and the ``Memory`` API:

- a line: appends its own unique token line to a shared file (``shared/sNNN.md``), read first and
  written with the version it read (CONFLICT: read again);
- a write, rename or delete of its own files (``own/w<N>/*.md``, one unique token each);
- a fact kept (``facts.keep``; subject ``w<N>``, three attributes);
- a search for a token of its own, or for one another worker journaled as acknowledged.

Every step is journaled (``try`` before, ``ack`` after, fsynced before the next step; an outcome left
unknown by a lost connection is ``observed`` afterwards by reading the rows again). Mid-run two workers
are killed with SIGKILL and the server is restarted (``pg_ctl restart -m fast``, when the cluster's
folder is known). The audit then checks, from the journals and the rows:

- every acknowledged change is accounted for: each acknowledged line is in its shared file once (and
  no line nobody tried is there), each worker's own files hold exactly what its journal says (a step a
  kill left undecided may have applied or not), each acknowledged write, rename and delete is in the
  log with its versions, each worker's current fact per attribute is its last acknowledged one (or a
  later undecided one) and every acknowledged fact can be read;
- every search returned what the rows held at its start: a token acknowledged before the search began
  and not touched again before it ended must be found (no stale miss), and a hit's path must have held
  the token at some moment during the search (no phantom).

A folder edited by hand rides along (issue 12): a real ``fsmem sync DIR --store URL --project NAME``
process runs for the whole run (through the kills and the server's restart), and a person process
edits DIR as editors do (write a temp file and rename it over, or rewrite in place in two pieces
with a pause between; checking just before it saves that the file is still what it read), appending
one unique line per save to files of its own (``hand/p<N>.md``) and to ``shared/hand.md``, which the
workers change too, so both sides change one file and conflicts happen. Each save is journaled
(fsynced) before the next. After the run sync is given time to settle (the folder and the rows
agree), stopped, and run once more (``--once``); then every hand save is accounted for: its line is
in the file's row, or the person's text is kept as a version (command ``conflict``) and in a
``FILE.conflict…`` note in DIR. A worker's line a hand save took out of ``shared/hand.md`` is
accounted for only when the log shows that hand save replacing a version that held it, with bytes
the person journaled, saved after the line was tried (an editor that never saw the change
overwrote it: counted, never silent).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
WORKERS = 8
KILLED = 2
LINES_PER_FILE = 40  # a worker's k-th line goes to shared/s<k // 40>: 8 workers fill a file to ~8 KiB
OWN_NAMES = 6  # own/w<N>/f0.md .. f5.md
FACT_ATTRIBUTES = 3
UNKNOWN = ("STORAGE", "BUSY", "TIMEOUT")  # the outcome of the step is unknown: observed afterwards
ALL_OPS = ("line", "write", "rename", "delete", "fact", "search")
WEIGHTS = {"line": 4, "write": 4, "rename": 1, "delete": 1, "fact": 1, "search": 3}
INF = float("inf")
HAND_SHARED = "shared/hand.md"  # edited by the person in the sync folder and by the workers' lines
HAND_OWN = ("hand/p0.md", "hand/p1.md", "hand/p2.md")  # edited by the person only
HAND_LINES = 60  # a worker's lines into HAND_SHARED (one in four of its lines, up to this many)
SETTLE_DEADLINE = 180.0  # seconds sync may take to agree with the rows after the run


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["FSMEM_WATCH"] = "0"
    env["FSMEM_VERSIONS_KEPT"] = "1000000"  # the audit looks for every replaced and every conflicting text
    return env


def open_memory(target: str, project: str | None, cache: Path | None):
    """The store under soak: a PostgreSQL project (each worker its own cache), or a folder root."""
    import fsmem

    if project is None:
        return fsmem.open(target, create=True)
    return fsmem.open(target, create=True, project=project, cache=cache)


class Journal:
    """One worker's record, append-only; ``ack`` lines are fsynced before the worker goes on."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def __call__(self, sync: bool = False, **entry: Any) -> None:
        entry.setdefault("t", time.time())
        os.write(self.fd, (json.dumps(entry) + "\n").encode())
        if sync:
            os.fsync(self.fd)


def read_journal(path: Path) -> list[dict[str, Any]]:
    """Whole lines only: a worker killed mid-write leaves at most a torn last line."""
    entries = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            entries.append(json.loads(line))
        except ValueError:
            continue
    return entries


# --- a worker --------------------------------------------------------------------------------------


def token_of(data: bytes | None) -> str | None:
    """The token an own file holds (its second line), or None when it does not exist."""
    if data is None:
        return None
    lines = data.decode("utf-8", "replace").splitlines()
    return lines[1] if len(lines) > 1 else ""


class Worker:
    def __init__(
        self,
        target: str,
        project: str | None,
        number: int,
        cache: Path,
        journal: Path,
        journals: Path,
        ops: tuple[str, ...],
    ) -> None:
        from fsmem import Scope

        self.memory = open_memory(target, project, cache)
        self.n = number
        self.name = f"w{number}"
        self.run = self.memory.run(Scope.chat(), thread_id=self.name)
        self.journal = Journal(journal)
        self.journals = journals
        self.rng = random.Random(number)
        self.ops = ops
        self.hand = "hand" in ops  # some lines go to the file the person edits in the sync folder
        self.own: dict[str, str] = {}  # path -> token: only this worker changes own/w<N>/
        self.counts: Counter[str] = Counter()

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        result = self.run.call(request)
        self.counts[f"{request['command']}:{'ok' if result['ok'] else result['error']['code']}"] += 1
        return result

    def fatal(self, what: str, result: Any) -> None:
        self.journal(sync=True, kind="fatal", what=what, result=result)
        raise SystemExit(f"{self.name}: {what}: {result}")

    def loop(self, end: float) -> None:
        choices = [op for op in ALL_OPS if op in self.ops]
        weights = [WEIGHTS[op] for op in choices]
        while time.time() < end:
            op = self.rng.choices(choices, weights)[0]
            getattr(self, op)(end)
        self.journal(sync=True, kind="done", counts=dict(self.counts))

    # ---- a line in a shared file ----

    def line(self, end: float) -> None:
        k = self.counts["lines"]
        self.counts["lines"] += 1
        token = f"lnw{self.n}k{k:05d}z"
        path = f"shared/s{k // LINES_PER_FILE:03d}.md"
        if self.hand and self.counts["hand_lines"] < HAND_LINES and self.rng.random() < 0.25:
            self.counts["hand_lines"] += 1
            path = HAND_SHARED
        self.journal(kind="try", op="line", path=path, token=token)
        while time.time() < end + 30:
            read = self.call({"command": "read", "path": path})
            if read["ok"]:
                if token in read["content"].split():  # an earlier try whose outcome was unknown landed
                    self.journal(sync=True, kind="observed", op="line", path=path, token=token, present=True)
                    return
                content = read["content"] + f"- {token}\n"
            elif read["error"]["code"] == "NOT_FOUND":
                content = f"# Shared {path}\n\n- {token}\n"
            elif read["error"]["code"] in UNKNOWN:
                time.sleep(0.1)
                continue
            else:
                self.fatal("read of a shared file", read)
            result = self.call({"command": "write", "path": path, "content": content})
            if result["ok"]:
                self.journal(sync=True, kind="ack", op="line", path=path, token=token, version=result["version"])
                return
            if result["error"]["code"] in UNKNOWN:
                time.sleep(0.1)
            elif result["error"]["code"] not in ("CONFLICT", "NOT_READ"):
                self.fatal("write of a shared file", result)

    # ---- own files: write, rename, delete ----

    def _new_token(self) -> str:
        self.counts["tokens"] += 1
        return f"tokw{self.n}g{self.counts['tokens']:05d}z"

    def _observe(self, op: str, paths: list[str]) -> None:
        """After an unknown outcome: read the rows again until they answer, and believe them."""
        while True:
            try:
                seen = {path: token_of(self.memory.drive.read(path)) for path in paths}
                break
            except Exception as error:  # noqa: BLE001 - the server is restarting: wait for it
                self.counts[f"observe:{type(error).__name__}"] += 1
                time.sleep(0.2)
        for path, token in seen.items():
            if token is None:
                self.own.pop(path, None)
            else:
                self.own[path] = token
        self.journal(sync=True, kind="observed", op=op, held=seen)

    def write(self, end: float) -> None:
        path = f"own/{self.name}/f{self.rng.randrange(OWN_NAMES)}.md"
        token = self._new_token()
        read = self.call({"command": "read", "path": path})
        if not read["ok"] and read["error"]["code"] in UNKNOWN:
            return
        if not read["ok"] and read["error"]["code"] != "NOT_FOUND":
            self.fatal("read of an own file", read)
        if token_of(read["content"].encode() if read["ok"] else None) != self.own.get(path):
            self.fatal("an own file holds what this worker never wrote", {"path": path, "read": read})
        self.journal(kind="try", op="write", path=path, token=token, before=self.own.get(path))
        result = self.call({"command": "write", "path": path, "content": f"# {self.name}\n{token}\n"})
        if result["ok"]:
            self.own[path] = token
            self.journal(sync=True, kind="ack", op="write", path=path, token=token, version=result["version"])
        elif result["error"]["code"] in UNKNOWN:
            self._observe("write", [path])
        else:
            self.fatal("write of an own file", result)

    def rename(self, end: float) -> None:
        free = [f"own/{self.name}/f{i}.md" for i in range(OWN_NAMES)]
        free = [path for path in free if path not in self.own]
        if not self.own or not free:
            return
        source, destination = self.rng.choice(sorted(self.own)), self.rng.choice(free)
        if not self.call({"command": "read", "path": source})["ok"]:
            return
        self.journal(kind="try", op="rename", path=source, new_path=destination, token=self.own[source])
        result = self.call({"command": "rename", "path": source, "new_path": destination})
        if result["ok"]:
            self.own[destination] = self.own.pop(source)
            self.journal(
                sync=True, kind="ack", op="rename", path=source, new_path=destination, token=self.own[destination]
            )
        elif result["error"]["code"] in UNKNOWN:
            self._observe("rename", [source, destination])
        else:
            self.fatal("rename of an own file", result)

    def delete(self, end: float) -> None:
        if not self.own:
            return
        path = self.rng.choice(sorted(self.own))
        if not self.call({"command": "read", "path": path})["ok"]:
            return
        self.journal(kind="try", op="delete", path=path, token=self.own[path])
        result = self.call({"command": "delete", "path": path})
        if result["ok"]:
            token = self.own.pop(path)
            self.journal(sync=True, kind="ack", op="delete", path=path, token=token, version=None)
        elif result["error"]["code"] in UNKNOWN:
            self._observe("delete", [path])
        else:
            self.fatal("delete of an own file", result)

    # ---- facts ----

    def fact(self, end: float) -> None:
        from fsmem._errors import FsmemError

        k = self.counts["facts"]
        self.counts["facts"] += 1
        attribute, text = f"a{k % FACT_ATTRIBUTES}", f"Worker {self.n} says number {k}."
        self.journal(kind="try", op="fact", subject=self.name, attribute=attribute, text=text)
        try:
            kept = self.memory.facts.keep(self.name, attribute, text)
        except FsmemError as error:
            if error.code not in UNKNOWN:
                self.fatal("facts.keep", {"code": error.code, "message": error.message})
            self.journal(sync=True, kind="error", op="fact", code=error.code)
            return
        self.journal(
            sync=True,
            kind="ack",
            op="fact",
            subject=self.name,
            attribute=attribute,
            text=text,
            id=kept.fact.id,
            outcome=kept.outcome,
        )

    # ---- searches ----

    def search(self, end: float) -> None:
        token = self._a_token()
        if token is None:
            return
        began = time.time()
        result = self.call({"command": "search", "query": token, "limit": 20})
        ended = time.time()
        if result["ok"]:
            hits = [hit["path"] for hit in result["hits"]]
            self.journal(sync=True, kind="search", token=token, t0=began, t1=ended, hits=hits)
        elif result["error"]["code"] not in UNKNOWN:
            self.fatal("search", result)

    def _a_token(self) -> str | None:
        """A token of this worker's own files, or one another worker journaled as acknowledged."""
        if self.own and self.rng.random() < 0.4:
            return self.own[self.rng.choice(sorted(self.own))]
        others = sorted(self.journals.glob("w*.jsonl"))
        if not others:
            return None
        with open(self.rng.choice(others), "rb") as handle:
            handle.seek(max(0, os.fstat(handle.fileno()).st_size - 8192))
            tail = handle.read().decode("utf-8", "replace").splitlines()[1:]
        tokens = []
        for line in tail:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("kind") == "ack" and entry.get("token"):
                tokens.append(entry["token"])
        return self.rng.choice(tokens) if tokens else None


def worker_main(argv: list[str]) -> int:
    target, project, number, cache, journal, go, ops = argv
    journals = Path(journal).parent
    worker = Worker(target, project or None, int(number), Path(cache), Path(journal), journals, tuple(ops.split(",")))
    Path(f"{journal}.ready").touch()
    while not Path(go).exists():
        time.sleep(0.005)
    worker.loop(float(Path(go).read_text()))
    return 0


# --- the person editing the sync folder by hand -------------------------------------------------------


def _stamp(seen: os.stat_result | None) -> tuple[int, int, int] | None:
    return None if seen is None else (seen.st_ino, seen.st_size, seen.st_mtime_ns)


def person_main(argv: list[str]) -> int:
    """Edit files in the sync folder as a person's editor does, until the end; journal each save."""
    from fsmem._core.versions import version_of

    folder, journal_path, go = Path(argv[0]), Path(argv[1]), Path(argv[2])
    journal = Journal(journal_path)
    rng = random.Random("person")
    Path(f"{journal_path}.ready").touch()
    while not go.exists():
        time.sleep(0.005)
    end = float(go.read_text())
    count = 0
    redone: Counter[str] = Counter()
    while time.time() < end:
        time.sleep(rng.uniform(0.02, 0.12))
        path = HAND_SHARED if rng.random() < 0.4 else rng.choice(HAND_OWN)
        file = folder / path
        began = time.time()
        try:
            seen = os.stat(file)
            data: bytes | None = file.read_bytes()
        except FileNotFoundError:
            seen, data = None, None
        if data is not None and not data.endswith(b"\n"):
            redone["torn"] += 1  # caught while sync swapped it in? read again later
            continue
        line = f"hand{count:05d}z"
        new = (data if data is not None else f"# Hand {path}\n\n".encode()) + f"- {line}\n".encode()
        style = "rename" if data is None or count % 2 == 0 else "in-place"
        try:
            now = os.stat(file)
        except FileNotFoundError:
            now = None
        if _stamp(now) != _stamp(seen):
            redone["changed since read"] += 1  # "the file has changed since reading it": read it again
            continue
        checked = time.time()
        if style == "rename":
            file.parent.mkdir(parents=True, exist_ok=True)
            temp = file.with_name(f".{file.name}.swp")
            temp.write_bytes(new)
            if data is None:
                try:
                    os.link(temp, file)  # a new file: never over one that appeared meanwhile
                except FileExistsError:
                    temp.unlink()
                    redone["appeared meanwhile"] += 1
                    continue
                temp.unlink()
            else:
                os.rename(temp, file)
        else:
            fd = os.open(file, os.O_WRONLY | os.O_TRUNC)
            try:
                half = len(new) // 2  # written in two pieces, as an editor writes a big buffer
                os.write(fd, new[:half])
                time.sleep(rng.uniform(0, 0.01))
                os.write(fd, new[half:])
                try:
                    replaced = os.stat(file).st_ino != os.fstat(fd).st_ino
                except FileNotFoundError:
                    replaced = True
                if replaced:
                    # sync swapped the file out while the editor wrote into it: the save went into a
                    # file that no longer has this name (the limit in docs/safety.md), seen by the editor
                    style = "in-place, into a replaced file"
            finally:
                os.close(fd)
        journal(
            sync=True,
            kind="save",
            path=path,
            line=line,
            style=style,
            began=began,
            checked=checked,
            at=time.time(),
            version=version_of(new),
        )
        count += 1
    journal(sync=True, kind="done", redone=dict(redone))
    return 0


def hand_settled(url: str, project: str, folder: Path) -> bool:
    """Whether the sync folder and the rows hold the same memory files, byte for byte."""
    from fsmem._core.versions import version_of
    from fsmem._store.postgres.store import PgStore
    from fsmem._memory.sync_folder import mirrored

    with PgStore.open(url, project, create=False) as store:
        there = {path: version for path, version in store.file_versions().items() if mirrored(path)}
    here = {}
    for top, folders, names in os.walk(folder):
        folders[:] = [name for name in folders if not name.startswith(".")]
        for name in names:
            relative = Path(top, name).relative_to(folder).as_posix()
            if mirrored(relative):
                try:
                    here[relative] = version_of(Path(top, name).read_bytes())
                except FileNotFoundError:
                    return False
    return here == there


# --- the audit -------------------------------------------------------------------------------------


@dataclass
class Held:
    """A token in a path: from when it may (``start``) and surely (``sure``) held, until when it may
    have stopped (``leaves``) and surely had (``gone``)."""

    token: str
    path: str
    start: float
    sure: float = INF
    leaves: float = INF
    gone: float = INF


def _holdings(entries: list[dict[str, Any]]) -> list[Held]:
    """Replay one worker's journal into the intervals its tokens held their paths. Its steps are
    sequential: each ``try`` ends in an ``ack``, an ``observed`` (outcome unknown, the rows read
    again) or nothing (killed)."""
    held: list[Held] = []
    current: dict[str, Held] = {}  # path -> what it holds, as far as the journal knows
    placing: list[Held] = []  # what the step tried and not yet settled would place
    for entry in entries:
        kind, op, t = entry.get("kind"), entry.get("op"), entry.get("t", 0.0)
        if op == "line":
            if kind == "try":
                held.append(Held(entry["token"], entry["path"], t))
            elif kind in ("ack", "observed"):
                line = next(i for i in reversed(held) if i.token == entry["token"])
                line.sure = min(line.sure, t)
        elif op in ("write", "rename", "delete") and kind == "try":
            for path in (entry["path"], entry.get("new_path")):
                if path in current:
                    current[path].leaves = t
            target = entry.get("new_path") or entry["path"]
            placing = [Held(entry["token"], target, t)] if op in ("write", "rename") else []
            held.extend(placing)
        elif op in ("write", "rename", "delete") and kind == "ack":
            gone = [entry["path"]] if op != "write" or entry["path"] in current else []
            for path in gone:
                current.pop(path).gone = t
            if placing:
                placing[0].sure = t
                current[placing[0].path] = placing[0]
            placing = []
        elif op in ("write", "rename", "delete") and kind == "observed":
            for path, token in entry["held"].items():
                old = current.get(path)
                if old is not None and old.token == token:
                    old.leaves = INF  # the step did not touch it after all
                elif old is not None:
                    current.pop(path).gone = t
                if token is not None and path not in current:
                    new = next(i for i in placing if i.token == token and i.path == path)
                    new.sure = t
                    current[path] = new
            for new in placing:
                if current.get(new.path) is not new:
                    new.leaves = new.gone = new.start  # never placed
            placing = []
    return held


def _iso_seconds(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp).timestamp()


def audit(
    target: str, project: str | None, journals: Path, killed: list[int], hand_dir: Path | None = None
) -> dict[str, Any]:
    from fsmem._core.versions import version_of
    from fsmem._errors import FsmemError

    problems: list[str] = []
    by_worker = {int(p.stem[1:]): read_journal(p) for p in sorted(journals.glob("w*.jsonl"))}
    entries = [dict(e, worker=n) for n, items in by_worker.items() for e in items]
    problems += [f"w{e['worker']} failed: {e['what']}: {e['result']}" for e in entries if e["kind"] == "fatal"]
    for n, items in by_worker.items():
        if n not in killed and not any(e["kind"] == "done" for e in items):
            problems.append(f"w{n} was not killed but did not finish")

    memory = open_memory(target, project, journals.parent / "audit-cache")
    files = {entry.path: memory.drive.read(entry.path) for entry in memory.drive.walk_files("")}
    holdings = {n: _holdings(items) for n, items in by_worker.items()}
    every = [item for items in holdings.values() for item in items]
    by_token: dict[str, list[Held]] = defaultdict(list)
    for item in every:
        by_token[item.token].append(item)

    # lines: each acknowledged line once in its file; no line nobody tried
    lines_in: dict[str, list[str]] = {}
    for path, data in files.items():
        if path.startswith("shared/"):
            lines_in[path] = [line[2:] for line in (data or b"").decode().splitlines() if line.startswith("- ")]
    tried_lines = {item.token: item.path for item in every if item.token.startswith("ln")}
    person = read_journal(journals / "person.jsonl") if hand_dir is not None else []
    hand_saves = [e for e in person if e["kind"] == "save"]
    tried_lines.update({save["line"]: save["path"] for save in hand_saves})
    log = list(memory.log())
    # what the file both sides edit held, by version: its row and every kept version (all are kept)
    hand_texts: dict[str, list[str]] = {}
    for info in memory.versions(HAND_SHARED) if hand_dir is not None else []:
        hand_texts[info.version] = (memory.drive.read_version(info) or b"").decode("utf-8", "replace").split()
    if files.get(HAND_SHARED) is not None:
        hand_texts[version_of(files[HAND_SHARED] or b"")] = (files[HAND_SHARED] or b"").decode().split()
    saved_at = {save["version"]: save["at"] for save in hand_saves}
    hand_pushes = [e for e in log if e.command == "hand_edit" and e.path == HAND_SHARED]
    overwritten = 0
    acked_lines = [e for e in entries if e.get("op") == "line" and e["kind"] in ("ack", "observed")]
    for entry in acked_lines:
        count = lines_in.get(entry["path"], []).count(entry["token"])
        if count == 0 and entry["path"] == HAND_SHARED:
            token = entry["token"]
            tried = min(item.start for item in by_token[token])
            push = next(
                (
                    e
                    for e in hand_pushes
                    if token in hand_texts.get(e.before or "", [])
                    and e.after in hand_texts
                    and token not in hand_texts[e.after or ""]
                    and saved_at.get(e.after or "", -INF) >= tried
                ),
                None,
            )
            if push is not None:  # a person's editor that never saw the line saved over it: counted
                overwritten += 1
                for item in by_token[token]:
                    item.leaves = item.gone = _iso_seconds(push.time)
                continue
        if count != 1:
            problems.append(f"acknowledged line {entry['token']} is {count} times in {entry['path']}")

    # hand saves: each line in its file's row, or the person's text kept as a conflict version and note
    hand = Counter[str]()
    conflict_texts: dict[str, list[str]] = {}
    for path in {save["path"] for save in hand_saves}:
        conflict_texts[path] = [
            (memory.drive.read_version(info) or b"").decode("utf-8", "replace")
            for info in memory.versions(path)
            if info.command == "conflict"
        ]
        hand["conflict_versions_kept"] += len(conflict_texts[path])
    notes: dict[str, list[str]] = defaultdict(list)
    if hand_dir is not None:
        for note in sorted(hand_dir.rglob("*.conflict*")):
            name = note.relative_to(hand_dir).as_posix()
            notes[name.rsplit(".conflict", 1)[0]].append(note.read_text(encoding="utf-8", errors="replace"))
            hand["conflict_notes"] += 1
    for save in hand_saves:
        path, marker = save["path"], f"- {save['line']}\n"
        hand[f"style:{save['style']}"] += 1
        if marker in (files.get(path) or b"").decode("utf-8", "replace"):
            hand["in_row"] += 1
        elif any(marker in text for text in conflict_texts.get(path, [])) and any(
            marker in text for text in notes.get(path, [])
        ):
            hand["kept_as_conflict"] += 1
            hand[f"kept_as_conflict:{path}"] += 1
        elif save["style"] == "in-place, into a replaced file":
            hand["into_a_replaced_file"] += 1  # the editor saw its save land in a file with no name
        else:
            problems.append(
                f"hand save {save['line']} of {path} is neither in its row nor kept as a conflict version and note"
            )
    if hand_dir is not None and not any(e["kind"] == "done" for e in person):
        problems.append("the person did not finish")
    for path, tokens in lines_in.items():
        for token in tokens:
            if tried_lines.get(token) != path:
                problems.append(f"{path} holds line {token}, which no worker tried there")

    # own files: exactly what each journal says (a step a kill left undecided may have applied or not)
    for n, items in holdings.items():
        prefix = f"own/w{n}/"
        for path, data in files.items():
            if path.startswith(prefix):
                token = token_of(data)
                if not any(i.path == path and i.token == token and i.gone == INF for i in items):
                    problems.append(f"{path} holds {token!r}, which its journal does not leave there")
        for item in items:
            if item.path.startswith(prefix) and item.sure < INF and item.leaves == INF:
                if token_of(files.get(item.path)) != item.token:
                    problems.append(
                        f"{item.path} should hold {item.token} (acknowledged) but holds "
                        f"{token_of(files.get(item.path))!r}"
                    )

    # the log holds every acknowledged write, rename and delete, with its versions
    logged = {(e.command, e.path, e.new_path, e.after) for e in log}
    for entry in entries:
        if entry["kind"] != "ack" or entry.get("op") not in ("line", "write", "rename", "delete"):
            continue
        if entry["op"] == "rename":
            if not any(c == "rename" and p == entry["path"] and q == entry["new_path"] for c, p, q, _ in logged):
                problems.append(f"acknowledged rename {entry['path']} -> {entry['new_path']} is not in the log")
        elif (("write" if entry["op"] != "delete" else "delete"), entry["path"], None, entry["version"]) not in logged:
            problems.append(f"acknowledged {entry['op']} of {entry['path']} ({entry['version']}) is not in the log")
    threads = Counter(e.thread for e in log)
    for n, items in by_worker.items():
        acks = sum(1 for e in items if e["kind"] == "ack" and e.get("op") in ("line", "write", "rename", "delete"))
        if threads[f"w{n}"] < acks:
            problems.append(f"the log has {threads[f'w{n}']} changes of w{n}, fewer than its {acks} acknowledged")

    # facts: the current one per attribute is the last acknowledged (or a later undecided) keep
    fact_checks = 0
    if any(e.get("op") == "fact" for e in entries):
        for n, items in by_worker.items():
            try:
                current = {f.attribute: f.text for f in memory.facts.current(f"w{n}")}
            except FsmemError as error:
                problems.append(f"facts of w{n} cannot be read: {error.message}")
                continue
            for attribute in {e["attribute"] for e in items if e.get("op") == "fact" and e["kind"] == "try"}:
                tries = [e for e in items if e.get("op") == "fact" and e.get("attribute") == attribute]
                acked = [i for i, e in enumerate(tries) if e["kind"] == "ack"]
                allowed = {e["text"] for e in tries[(acked[-1] if acked else 0) :] if "text" in e}
                if current.get(attribute) not in allowed | (set() if acked else {None}):
                    problems.append(
                        f"w{n}'s current {attribute} is {current.get(attribute)!r}, not one of {sorted(allowed)}"
                    )
                fact_checks += 1
            for entry in items:
                if entry.get("op") == "fact" and entry["kind"] == "ack":
                    try:
                        memory.facts.get(entry["id"])
                    except FsmemError as error:
                        problems.append(f"acknowledged fact {entry['id']} cannot be read: {error.message}")

    # searches: no stale miss, no phantom hit
    searches = [e for e in entries if e["kind"] == "search"]
    must_find = 0
    for search in searches:
        t0, t1, token = search["t0"], search["t1"], search["token"]
        for item in by_token.get(token, []):
            if item.sure < t0 and item.leaves > t1:
                must_find += 1
                if item.path not in search["hits"]:
                    problems.append(
                        f"stale: w{search['worker']}'s search for {token} at {t0:.3f} missed "
                        f"{item.path}, which held it since {item.sure:.3f} (hits {search['hits']})"
                    )
        for path in search["hits"]:
            if not any(i.path == path and i.start <= t1 and i.gone >= t0 for i in by_token.get(token, [])):
                problems.append(
                    f"phantom: w{search['worker']}'s search for {token} at {t0:.3f} found {path}, "
                    "which did not hold it then"
                )

    kept_ok = 0
    for path in [p for p in files if p.startswith("own/")][:20]:
        for info in memory.versions(path):
            data = memory.drive.read_version(info)
            if version_of(data) != info.version:
                problems.append(f"kept version {info.version} of {path} does not hash to its name")
            kept_ok += 1
    memory.close()
    acks = Counter(e["op"] for e in entries if e["kind"] == "ack")
    return {
        "workers": len(by_worker),
        "killed": killed,
        "acknowledged": dict(acks),
        "unknown_outcomes_observed": sum(1 for e in entries if e["kind"] == "observed"),
        "errors": dict(Counter(f"{e['op']}:{e['code']}" for e in entries if e["kind"] == "error")),
        "searches": len(searches),
        "search_hits_that_had_to_be_found": must_find,
        "fact_attributes_checked": fact_checks,
        "log_entries": len(log),
        "files": len(files),
        "kept_versions_hashed": kept_ok,
        "hand_saves": len(hand_saves),
        "hand": dict(hand),
        "person_redone": next((e.get("redone", {}) for e in person if e["kind"] == "done"), {}),
        "worker_lines_overwritten_by_a_racing_hand_save": overwritten,
        "problems": problems,
    }


# --- running it ------------------------------------------------------------------------------------


def soak(
    seconds: float,
    target: str,
    project: str | None = None,
    restart: Callable[[], None] | None = None,
    workers: int = WORKERS,
    kill: int = KILLED,
    ops: tuple[str, ...] = ALL_OPS,
    scratch: Path | None = None,
    sync: bool = True,
) -> dict[str, Any]:
    """Run the soak and audit it. ``target``: a PostgreSQL URL with ``project`` (a new one when None is
    given for a URL), or a folder root. ``restart``: restarts the server (``pg_ctl restart -m fast``).
    ``sync``: a ``fsmem sync`` folder edited by hand rides along (PostgreSQL only)."""
    is_pg = target.startswith(("postgresql://", "postgres://")) or "=" in target
    if is_pg and project is None:
        project = f"soak-{uuid.uuid4().hex[:8]}"
    scratch = Path(scratch or tempfile.mkdtemp(prefix="fsmem-pgsoak-"))
    journals = scratch / "journals"
    journals.mkdir(parents=True, exist_ok=True)
    open_memory(target, project, scratch / "setup-cache").close()  # the project exists before anyone starts
    go = scratch / "go"
    hand = HandFolder(scratch, target, project or "", go, journals) if sync and is_pg else None
    if hand is not None:
        ops = (*ops, "hand")
    procs = []
    for n in range(workers):
        args = [
            target,
            project or "",
            str(n),
            str(scratch / f"cache-w{n}"),
            str(journals / f"w{n}.jsonl"),
            str(go),
            ",".join(ops),
        ]
        procs.append(
            subprocess.Popen([sys.executable, "-m", "tests.procs.pg_soak", "--worker", *args], cwd=REPO, env=_env())
        )
    killed: list[int] = []
    restarted = False
    try:
        deadline = time.time() + 120
        while not all((journals / f"w{n}.jsonl.ready").exists() for n in range(workers)):
            if time.time() > deadline or any(p.poll() is not None for p in procs):
                raise RuntimeError("the workers did not all start: " + str([p.poll() for p in procs]))
            time.sleep(0.05)
        if hand is not None:
            hand.wait_ready(deadline)
        start = time.time()
        end = start + seconds
        (scratch / "go.tmp").write_text(repr(end))
        os.rename(scratch / "go.tmp", go)
        time.sleep(seconds * 0.3)
        for n in range(min(kill, workers)):
            os.kill(procs[n].pid, signal.SIGKILL)
            killed.append(n)
        time.sleep(seconds * 0.15)
        if restart is not None:
            restart()
            restarted = True
        codes = [proc.wait(timeout=seconds + 300) for proc in procs]
        sync_report = hand.finish() if hand is not None else {}
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
        if hand is not None:
            hand.kill()
    report = audit(target, project, journals, killed, hand.folder if hand is not None else None)
    report["seconds"] = seconds
    report["project"] = project
    report["server_restarted"] = restarted
    bad = {n: code for n, code in enumerate(codes) if n not in killed and code != 0}
    if bad:
        report["problems"].insert(0, f"workers exited with {bad}")
    if sync_report:
        report["problems"][:0] = sync_report.pop("problems")
        report["sync"] = sync_report
    return report


class HandFolder:
    """The ``fsmem sync DIR`` process and the person editing DIR, for the whole run."""

    def __init__(self, scratch: Path, url: str, project: str, go: Path, journals: Path) -> None:
        self.folder, self.url, self.project, self.scratch = scratch / "by-hand", url, project, scratch
        self.folder.mkdir()
        self.journal = journals / "person.jsonl"
        self.sync = self._start_sync(scratch / "sync.out", scratch / "sync.err")
        self.person = subprocess.Popen(
            [sys.executable, "-m", "tests.procs.pg_soak", "--person", str(self.folder), str(self.journal), str(go)],
            cwd=REPO,
            env=_env(),
        )

    def _start_sync(self, out: Path, err: Path, *more: str) -> subprocess.Popen[bytes]:
        command = [sys.executable, "-m", "fsmem", "sync", str(self.folder), "--store", self.url]
        with open(out, "ab") as stdout, open(err, "ab") as stderr:
            return subprocess.Popen(
                [*command, "--project", self.project, "--json", *more],
                cwd=REPO,
                env=_env(),
                stdout=stdout,
                stderr=stderr,
            )

    def wait_ready(self, deadline: float) -> None:
        state = self.folder / ".fsmem-sync" / "state.json"
        while not (state.exists() and Path(f"{self.journal}.ready").exists()):
            if time.time() > deadline or self.sync.poll() is not None or self.person.poll() is not None:
                raise RuntimeError(
                    f"fsmem sync ({self.sync.poll()}) or the person ({self.person.poll()}) did not start: "
                    + (self.scratch / "sync.err").read_text(errors="replace")[-2000:]
                )
            time.sleep(0.05)

    def finish(self) -> dict[str, Any]:
        """After the run: the person done, sync given time to agree with the rows (it must still be
        running: it outlived the kills and the restart), stopped, and one ``--once`` pass more."""
        problems = []
        person = self.person.wait(timeout=120)
        if person != 0:
            problems.append(f"the person exited with {person}")
        began = time.time()
        settled = False
        while time.time() < began + SETTLE_DEADLINE and self.sync.poll() is None:
            try:
                settled = hand_settled(self.url, self.project, self.folder)
            except Exception as error:  # noqa: BLE001 - the server may still be coming back
                problems.append(f"the folder could not be compared: {error}")
                break
            if settled:
                break
            time.sleep(0.5)
        alive = self.sync.poll() is None
        if not alive:
            problems.append(
                f"fsmem sync died during the run (exit {self.sync.returncode}): "
                + (self.scratch / "sync.err").read_text(errors="replace")[-2000:]
            )
        elif not settled:
            problems.append(f"the sync folder and the rows did not agree within {SETTLE_DEADLINE:g} s")
        settle_seconds = time.time() - began
        self.sync.send_signal(signal.SIGTERM)
        stopped = self.sync.wait(timeout=60)
        if alive and stopped != 0:
            problems.append(f"fsmem sync exited with {stopped} on SIGTERM")
        passes = Counter[str]()
        for line in (self.scratch / "sync.out").read_text(errors="replace").splitlines():
            try:
                done = json.loads(line)
            except ValueError:
                continue
            passes["passes"] += 1
            for key in ("pulled", "pushed", "conflicts", "errors"):
                passes[key] += len(done.get(key, []))
        final = self._start_sync(self.scratch / "once.out", self.scratch / "once.err", "--once")
        once = final.wait(timeout=300)
        if once not in (0, 3):
            problems.append(
                f"the last `fsmem sync --once` exited with {once}: "
                + (self.scratch / "once.err").read_text(errors="replace")[-2000:]
            )
        elif not hand_settled(self.url, self.project, self.folder):
            problems.append("after the last `fsmem sync --once` the folder and the rows still differ")
        return {
            "alive_through_the_run": alive,
            "settled_after_s": round(settle_seconds, 2),
            "last_once_exit": once,
            **dict(passes),
            "stderr_warnings": sum(
                "sync pass failed" in line
                for line in (self.scratch / "sync.err").read_text(errors="replace").splitlines()
            ),
            "problems": problems,
        }

    def kill(self) -> None:
        for proc in (self.person, self.sync):
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)


def _restarter(pg_dir: str | None) -> Callable[[], None] | None:
    if pg_dir is None:
        return None

    def restart() -> None:
        subprocess.run([str(REPO / "bin" / "pg-throwaway"), "restart", pg_dir], check=True, timeout=120)

    return restart


def main(argv: list[str]) -> int:
    if argv[:1] == ["--worker"]:
        return worker_main(argv[1:])
    if argv[:1] == ["--person"]:
        return person_main(argv[1:])
    parser = argparse.ArgumentParser(prog="bin/soak --postgres", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("seconds", type=float, nargs="?", default=60.0)
    parser.add_argument("--url", default="", help="a PostgreSQL conninfo (default: a throwaway cluster)")
    parser.add_argument("--pg-dir", default="", help="the folder of the cluster at --url, to restart it")
    parser.add_argument("--workers", type=int, default=WORKERS)
    parser.add_argument("--ops", default=",".join(ALL_OPS), help=f"what the workers do (default: {','.join(ALL_OPS)})")
    options = parser.parse_args(argv)
    folder = None
    url, pg_dir = options.url, options.pg_dir or None
    if not url:
        folder = tempfile.mkdtemp(prefix="fsmem-pg.", dir="/tmp")
        started = subprocess.run(
            [str(REPO / "bin" / "pg-throwaway"), "start", folder], capture_output=True, text=True, check=False
        )
        if started.returncode != 0:
            print(f"no PostgreSQL server could start: {started.stderr.strip()}", file=sys.stderr)
            return 2
        url, pg_dir = started.stdout.strip(), folder
    try:
        report = soak(
            options.seconds, url, restart=_restarter(pg_dir), workers=options.workers, ops=tuple(options.ops.split(","))
        )
    finally:
        if folder:
            subprocess.run([str(REPO / "bin" / "pg-throwaway"), "stop", folder], capture_output=True, check=False)
    print(json.dumps(report, indent=2))
    return 1 if report["problems"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
