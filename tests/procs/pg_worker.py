"""A worker on the PostgreSQL store, as if on its own machine: its own process, pool and connections.

    python tests/procs/pg_worker.py CONNINFO PROJECT WORKER SECONDS GO_FILE OUT_FILE
    python tests/procs/pg_worker.py CONNINFO PROJECT WORKER hold

Until SECONDS have passed it repeats three changes: +1 on ``counter.md`` (read in the change, which
locks the row), a line ``w<WORKER>-<k>`` appended to ``shared.md`` (read outside the change, written
only if the version is still the one read, retried on CONFLICT), and ``own/w<WORKER>.md`` set to k.
Each change is recorded in OUT_FILE as ``try`` before and ``ack`` once ``change`` returned, so a test
can tell acknowledged changes from ones a kill or a lost connection left undecided. A STORAGE or BUSY
refusal is recorded and the worker goes on; anything else ends it with exit code 1.

``hold`` enters a change, writes ``counter.md`` and prints ``inside``, then waits to be killed.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from fsmem._core.versions import version_of
from fsmem._errors import Busy, Conflict
from fsmem._store.postgres.errors import StoreUnavailable
from fsmem._store.postgres.store import PgStore
from tests.procs.common import emit, wait_for_file


def main(conninfo: str, project: str, worker: int, seconds: float, go_file: str, out_file: str) -> int:
    store = PgStore.open(conninfo, project, pool_size=2, connect_timeout=2)
    emit(ready=worker)
    wait_for_file(Path(go_file))
    out = open(out_file, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 - one line per record

    def record(**fields: object) -> None:
        out.write(json.dumps(fields) + "\n")

    counts = {"conflict": 0, "STORAGE": 0, "BUSY": 0}
    deadline = time.monotonic() + seconds
    k = 0
    while time.monotonic() < deadline:
        for op in ("count", "line", "own"):
            while time.monotonic() < deadline:
                try:
                    record(op=op, k=k, state="try")
                    if op == "count":
                        with store.change("write", thread=f"w{worker}") as tx:
                            tx.write("counter.md", str(int(tx.read("counter.md") or b"0") + 1).encode())
                    elif op == "line":
                        line = f"w{worker}-{k:05d}\n"
                        data = store.read("shared.md") or b""
                        if line.encode() not in data:  # else an undecided earlier try did land
                            with store.change("write", thread=f"w{worker}") as tx:
                                tx.write("shared.md", data + line.encode(), expect=version_of(data))
                    else:
                        with store.change("write", thread=f"w{worker}") as tx:
                            tx.write(f"own/w{worker}.md", str(k).encode())
                    record(op=op, k=k, state="ack")
                    break
                except Conflict:
                    counts["conflict"] += 1
                except (StoreUnavailable, Busy) as error:
                    counts[error.code] += 1
                    record(op=op, k=k, state="error", code=error.code)
                    time.sleep(0.05)
        k += 1
    record(done=worker, **counts)
    out.close()
    store.close()
    return 0


def hold(conninfo: str, project: str, worker: int) -> int:
    store = PgStore.open(conninfo, project)
    with store.change("write", thread=f"w{worker}") as tx:
        tx.read("counter.md")
        tx.write("counter.md", b"999")
        emit(inside=worker)
        time.sleep(600)
    return 0


if __name__ == "__main__":
    if sys.argv[4] == "hold":
        sys.exit(hold(sys.argv[1], sys.argv[2], int(sys.argv[3])))
    conninfo, project, worker, seconds, go_file, out_file = sys.argv[1:]
    sys.exit(main(conninfo, project, int(worker), float(seconds), go_file, out_file))
