"""An agent whose every acknowledged write a person overwrites at once (tests/store/folder/test_live_copy.py).

    python tests/procs/ack_writer.py ROOT PATH ROUNDS WATCH

Each round: reads PATH through the tool (the run sees the person's last save), writes a line of its
own, prints ``{"ack": version, "content": text}`` the moment the write returns, then waits for a line
on stdin (the person has saved over it) before the next round. With WATCH ``1`` a search first starts
this process's watcher, so its events for the write and the save arrive within one debounce.
"""

from __future__ import annotations

import sys
from pathlib import Path

import fsmem
from fsmem._env.config import Settings
from tests.procs.common import emit


def main(root: str, path: str, rounds: int, watch: bool) -> int:
    memory = fsmem.open(root, settings=Settings(watch=watch))
    run = memory.run(fsmem.Scope.chat(), thread_id="agent")
    if watch:
        memory.search("anything")  # starts the watcher
    for number in range(rounds):
        seen = run.call({"command": "read", "path": path})
        text = Path(root, path).read_text(encoding="utf-8") if seen["ok"] else "# Notes\n\n"
        content = text + f"- agent line {number}\n"
        result = run.call({"command": "write", "path": path, "content": content})
        assert result["ok"], result
        emit(ack=result["version"], content=content)
        if not sys.stdin.readline():
            break
    memory.close()
    emit(done=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"))
