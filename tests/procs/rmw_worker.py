"""Read-modify-write one file through the memory tool, N times, retrying on CONFLICT.

    python tests/procs/rmw_worker.py ROOT PATH WORKER N GO_FILE

Each success appends the line ``w<WORKER>-<k>`` (k counts this worker's successes) and prints
``{"ok": k, "version": <after>}``; the last line is a summary. Any refusal other than CONFLICT (or BUSY,
when the lock is slow to come) ends the worker with exit code 1, naming it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import fsmem
from fsmem._core.versions import version_of
from tests.procs.common import emit, wait_for_file


def main(root: str, path: str, worker: int, n: int, go_file: str) -> int:
    memory = fsmem.open(root)
    run = memory.run(fsmem.Scope.chat(), thread_id=f"rmw-{worker}")
    emit(ready=worker)
    wait_for_file(Path(go_file))
    versions: list[str] = []
    conflicts = busy = rereads = 0
    while len(versions) < n:
        seen = run.call({"command": "read", "path": path})
        if not seen["ok"]:
            emit(fatal=seen["error"])
            return 1
        data = Path(root, path).read_bytes()
        if version_of(data) != seen["version"]:
            rereads += 1  # a write landed between the tool's read and ours: read again
            continue
        line = f"w{worker}-{len(versions):04d}\n"
        result = run.call({"command": "write", "path": path, "content": data.decode() + line})
        if result["ok"]:
            versions.append(result["version"])
            emit(ok=len(versions) - 1, version=result["version"])
        elif result["error"]["code"] == "CONFLICT":
            conflicts += 1
        elif result["error"]["code"] == "BUSY":
            busy += 1
        else:
            emit(fatal=result["error"])
            return 1
    emit(done=worker, versions=versions, conflicts=conflicts, busy=busy, rereads=rereads)
    return 0


if __name__ == "__main__":
    root, path, worker, n, go_file = sys.argv[1:]
    sys.exit(main(root, path, int(worker), int(n), go_file))
