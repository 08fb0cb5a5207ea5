"""The soak: agents, a ``fsmem tool`` caller and a person's editor on the same files, then an audit.

    python -m tests.procs.soak SECONDS [ROOT]          (or bin/soak SECONDS)

Roles, each a real process, for SECONDS:

- 6 API processes (``Memory.run``): read a shared file, append a line of their own, write it with the
  version they read; CONFLICT means read again. Now and then a fact is kept.
- 1 tool process: the same through ``python -m fsmem tool`` (one process per call, JSON on stdin,
  ``expected_version``), as a caller without a session does.
- 1 hand editor: reads a shared file, appends a line, saves it as editors do — by rename (vim with
  backupcopy=no, ``mv``) or in place (truncate and write) — checking just before it saves that the file
  is still what it read, as editors warn "changed since reading".

Every acknowledged change and every hand save is journaled by its process. The audit then checks:
each acknowledged content (by its version) is the file or one of its kept versions — however soon the
editor saved over it, one it never saw included (``versions/`` keeps them all for the soak); each
journaled line is in its file or in a kept version; each kept version hashes to its name; the log
parses, line by line; ``fsmem check`` is clean; a search finds each file by the word only it holds.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
API_PROCESSES = 6
START_FILES = 6
FILE_LIMIT = 24_000
TOOL_FILE = "shared/s0.md"  # written mostly by the `fsmem tool` caller and the editor  # a file this big takes no more lines; a new file is opened instead


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["FSMEM_VERSIONS_KEPT"] = "1000000"  # the audit looks for every replaced content
    env["FSMEM_LOCK_TIMEOUT"] = "30"
    return env


def _paths(root: Path) -> list[str]:
    """The shared files that still take lines; a new one when all are full."""
    folder = root / "shared"
    names = sorted(os.listdir(folder)) if folder.is_dir() else []
    open_files = [f"shared/{name}" for name in names
                  if name.endswith(".md") and not name.startswith(".")
                  and os.path.getsize(folder / name) < FILE_LIMIT]
    return open_files or [f"shared/s{len(names) + n}.md" for n in range(3)]


def _header(path: str) -> str:
    word = "soakfile" + path.rsplit("/", 1)[-1].removesuffix(".md").removeprefix("s")
    return f"# Shared {word}\n\n"


def _journal(file: Path, **entry: object) -> None:
    with open(file, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry) + "\n")


# --- the roles ------------------------------------------------------------------------------------


def api(root: Path, name: str, end: float, journal: Path) -> None:
    import fsmem
    from fsmem._core.versions import version_of

    memory = fsmem.open(root)
    run = memory.run(fsmem.Scope.chat(), thread_id=name)
    rng = random.Random(name)
    count = 0
    while time.time() < end:
        paths = _paths(root)
        if rng.random() < 0.9:  # the tool's file is left mostly to it and the editor: it is slow to ask
            paths = [p for p in paths if p != TOOL_FILE] or paths
        path = rng.choice(paths)
        data = memory.drive.read(path)
        if data is not None and not data.startswith(b"# Shared"):
            continue  # read in the middle of an in-place save: read again (a model would see it torn)
        if data is not None:
            run.mark_seen(path, version_of(data))
        line = f"- {name}-{count}\n"
        content = (data.decode("utf-8") if data is not None else _header(path)) + line
        result = run.call({"command": "write", "path": path, "content": content,
                           **({"create": True} if data is None else {})})
        if result["ok"]:
            _journal(journal, kind="ack", path=path, line=line.strip(), version=result["version"],
                     at=time.time())
            count += 1
            if count % 25 == 0:
                memory.facts.keep(name, "progress", f"{name} has written its line number {count // 25} batch")
        elif result["error"]["code"] not in ("CONFLICT", "EXISTS", "BUSY"):
            _journal(journal, kind="fatal", error=result["error"])
            return
        time.sleep(rng.uniform(0, 0.01))


def tool(root: Path, end: float, journal: Path) -> None:
    from fsmem._core.versions import version_of

    rng = random.Random("tool")
    count = 0
    while time.time() < end:
        paths = _paths(root)
        path = TOOL_FILE if TOOL_FILE in paths else rng.choice(paths)
        try:
            data: bytes | None = (root / path).read_bytes()
        except FileNotFoundError:
            data = None
        if data is not None and not data.startswith(b"# Shared"):
            continue  # read in the middle of an in-place save
        line = f"- tool-{count}\n"
        request = {"command": "write", "path": path,
                   "content": (data.decode("utf-8") if data is not None else _header(path)) + line}
        if data is not None:
            request["expected_version"] = version_of(data)
        done = subprocess.run([sys.executable, "-m", "fsmem", "tool", "--root", str(root), "--thread", "tool"],
                              input=json.dumps(request), capture_output=True, text=True, env=_env(),
                              check=False)
        result = json.loads(done.stdout)
        if result["ok"]:
            _journal(journal, kind="ack", path=path, line=line.strip(), version=result["version"],
                     at=time.time())
            count += 1
        elif result["error"]["code"] not in ("CONFLICT", "NOT_READ", "BUSY"):
            _journal(journal, kind="fatal", error=result["error"])
            return


def editor(root: Path, end: float, journal: Path) -> None:
    rng = random.Random("editor")
    count = 0
    while time.time() < end:
        time.sleep(rng.uniform(0.005, 0.03))
        folder = root / "shared"
        names = [n for n in os.listdir(folder) if n.endswith(".md") and not n.startswith(".")]
        names = [n for n in names if os.path.getsize(folder / n) < FILE_LIMIT]
        if rng.random() < 0.9:  # the tool's file is left mostly to it (see api)
            names = [n for n in names if f"shared/{n}" != TOOL_FILE] or names
        if not names:
            continue
        file = folder / rng.choice(names)
        began = time.time()
        try:
            seen = os.stat(file)
            data = file.read_bytes()
        except FileNotFoundError:
            continue
        if not data.endswith(b"\n"):
            continue  # caught mid-save by someone else: read again later
        line = f"- hand-{count}"
        new = data + line.encode() + b"\n"
        style = "rename" if count % 2 == 0 else "in-place"
        now = os.stat(file)
        if (now.st_ino, now.st_size, now.st_mtime_ns) != (seen.st_ino, seen.st_size, seen.st_mtime_ns):
            continue  # "the file has changed since reading it": read it again
        if style == "rename":
            temp = file.with_name(f"{file.name}.swp")
            temp.write_bytes(new)
            os.rename(temp, file)
        else:
            fd = os.open(file, os.O_WRONLY | os.O_TRUNC)
            try:
                os.write(fd, new)
                if os.fstat(fd).st_nlink == 0:
                    # The save went into a file fsmem had just swapped out and removed: a write into
                    # a file with no name, which no program can see (the limit in docs/safety.md).
                    style = "in-place, into a replaced file"
            finally:
                os.close(fd)
        _journal(journal, kind="hand", path=file.relative_to(root).as_posix(), line=line, style=style,
                 began=began, at=time.time())
        count += 1


# --- the audit ------------------------------------------------------------------------------------


def audit(root: Path, journals: list[Path]) -> dict[str, object]:
    import fsmem
    from fsmem._core.versions import version_of

    entries = [json.loads(line) for journal in journals if journal.exists()
               for line in journal.read_text(encoding="utf-8").splitlines()]
    problems: list[str] = [f"a process failed: {e['error']}" for e in entries if e["kind"] == "fatal"]
    memory = fsmem.open(root)
    held: dict[str, list[str]] = {}  # path -> every content it held that fsmem can give back
    recoverable: dict[str, dict[str, str]] = {}  # path -> version -> how: "file" or the kept version's command
    for path in {e["path"] for e in entries if "path" in e}:
        texts = []
        recoverable[path] = {}
        try:
            live = (root / path).read_bytes()
            texts.append(live.decode("utf-8"))
            recoverable[path][version_of(live)] = "file"
        except FileNotFoundError:
            pass
        for info in memory.versions(path):
            data = info.file.read_bytes()
            if version_of(data) != info.version:
                problems.append(f"kept version {info.file} does not hash to its name")
            texts.append(data.decode("utf-8", "replace"))
            recoverable[path].setdefault(info.version, info.command)
        held[path] = texts
    log_lines = (root / ".fsmem" / "log.jsonl").read_text(encoding="utf-8").splitlines()
    log = []
    for number, line in enumerate(log_lines, 1):
        try:
            log.append(json.loads(line))
        except ValueError:
            problems.append(f"log line {number} does not parse: {line[:80]!r}")
    written_at = {}
    for line in log:
        if line.get("after") and not line.get("hand"):
            written_at.setdefault((line["path"], line["after"]), line["time"])
    hand_saves = [e for e in entries if e["kind"] == "hand"]
    acks = [e for e in entries if e["kind"] == "ack"]
    # Every content fsmem acknowledged, by its version: the file, or a kept version (the ones a
    # person's editor saved over unseen are listed as replaced by hand).
    not_recoverable = [e for e in acks if e["version"] not in recoverable.get(e["path"], {})]
    for entry in not_recoverable:
        overlapped = _editor_overlapped(entry, hand_saves, written_at) * " (an editor's save overlapped the write)"
        problems.append(f"acknowledged content {entry['version']} of {entry['path']} is neither the file nor a "
                        f"kept version{overlapped}")
    saved_over = sum(1 for e in acks if recoverable.get(e["path"], {}).get(e["version"]) in ("hand", "hand_edit"))
    unnamed = 0
    for entry in acks + hand_saves:
        if any(entry["line"] + "\n" in text for text in held.get(entry["path"], [])):
            continue
        if entry.get("style") == "in-place, into a replaced file":
            unnamed += 1  # the editor itself saw its save land in a file without a name
            continue
        problems.append(f"{entry['kind']} line {entry['line']!r} of {entry['path']} is in neither the file "
                        "nor its kept versions")
    checked = subprocess.run([sys.executable, "-m", "fsmem", "check", "--root", str(root)],
                             capture_output=True, text=True, env=_env(), check=False)
    if checked.returncode != 0:
        problems.append(f"fsmem check: {checked.stdout.strip()} {checked.stderr.strip()}")
    files = sorted(p for p in held if (root / p).exists())
    for path in files:
        last = (root / path).read_text(encoding="utf-8").rstrip("\n").rsplit("\n", 1)[-1].lstrip("-# ")
        found = [hit.path for hit in memory.search(last, limit=200)]
        if path not in found:
            problems.append(f"search for {last!r} does not find {path} (found {found})")
    hand_kept = sum(1 for line in log if line.get("hand"))
    return {"acknowledged": len(acks),
            "acknowledged_through_fsmem_tool": sum(1 for e in acks if e["line"].startswith("- tool-")),
            "hand_saves": len(hand_saves),
            "hand_saves_rename": sum(1 for e in hand_saves if e["style"] == "rename"),
            "hand_saves_in_place": sum(1 for e in hand_saves if e["style"].startswith("in-place")),
            "hand_edits_kept_by_writes": hand_kept,
            "acknowledged_not_recoverable": len(not_recoverable),
            "acknowledged_saved_over_by_hand_and_kept": saved_over,
            "hand_saves_into_a_replaced_file": unnamed,
            "log_lines": len(log), "files": len(files), "problems": problems}


def _editor_overlapped(ack: dict, hand_saves: list[dict], written_at: dict) -> bool:
    """Whether an editor save on that file began before the write and ended after it."""
    from datetime import datetime

    stamp = written_at.get((ack["path"], ack["version"]))
    if stamp is None:
        return False
    when = datetime.fromisoformat(stamp).timestamp()  # 3.11 reads the "Z"
    return any(save["path"] == ack["path"] and save["began"] <= when + 0.001 and save["at"] >= when - 0.05
               for save in hand_saves)


# --- running it -----------------------------------------------------------------------------------


def soak(seconds: float, root: Path) -> dict[str, object]:
    import fsmem

    memory = fsmem.open(root, create=True)
    run = memory.run(fsmem.Scope.chat(), thread_id="setup")
    for n in range(START_FILES):
        path = f"shared/s{n}.md"
        assert run.call({"command": "write", "path": path, "content": _header(path)})["ok"]
    end = time.time() + seconds
    journals = root.parent / f"{root.name}-journals"
    journals.mkdir(exist_ok=True)
    roles = [("api", f"api{n}") for n in range(API_PROCESSES)] + [("tool", "tool"), ("editor", "editor")]
    procs = [subprocess.Popen([sys.executable, "-m", "tests.procs.soak", "--role", role, name, str(root),
                               str(end), str(journals / f"{name}.jsonl")], cwd=REPO, env=_env())
             for role, name in roles]
    codes = [proc.wait(timeout=seconds + 300) for proc in procs]
    report = audit(root, sorted(journals.glob("*.jsonl")))
    if any(codes):
        report["problems"].insert(0, f"a process exited with {codes}")  # type: ignore[union-attr]
    return report


def main(argv: list[str]) -> int:
    if argv[:1] == ["--role"]:
        role, name, root, end, journal = argv[1:6]
        if role == "api":
            api(Path(root), name, float(end), Path(journal))
        elif role == "tool":
            tool(Path(root), float(end), Path(journal))
        else:
            editor(Path(root), float(end), Path(journal))
        return 0
    seconds = float(argv[0]) if argv else 60.0
    root = Path(argv[1]) if len(argv) > 1 else Path(tempfile.mkdtemp(prefix="fsmem-soak-")) / "root"
    report = soak(seconds, root)
    print(json.dumps(report, indent=2))
    return 1 if report["problems"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
