"""One side of a two-run race on one file.

    python tests/procs/race_worker.py ROOT PATH NAME GO_FILE

Reads PATH through the tool, prints ``{"read": version}``, waits for GO_FILE, then writes the content
it read plus the line ``from <NAME>`` and prints the result. When the write is refused with CONFLICT it
does what the message asks: reads again and writes its line onto the fresh content, printing that too.
"""

from __future__ import annotations

import sys
from pathlib import Path

import fsmem
from tests.procs.common import emit, wait_for_file


def read_text(run, root: str, path: str) -> tuple[str, str]:
    seen = run.call({"command": "read", "path": path})
    assert seen["ok"], seen
    return seen["version"], Path(root, path).read_text(encoding="utf-8")


def main(root: str, path: str, name: str, go_file: str) -> int:
    memory = fsmem.open(root)
    run = memory.run(fsmem.Scope.chat(), thread_id=name)
    version, text = read_text(run, root, path)
    emit(read=version)
    wait_for_file(Path(go_file))
    first = run.call({"command": "write", "path": path, "content": text + f"from {name}\n"})
    emit(first=first)
    if not first["ok"] and first["error"]["code"] == "CONFLICT":
        _, text = read_text(run, root, path)
        second = run.call({"command": "write", "path": path, "content": text + f"from {name}\n"})
        emit(second=second)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
