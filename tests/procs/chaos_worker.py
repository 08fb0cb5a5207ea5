"""One kind of change in a loop until killed, for the crash loop (tests/journeys/test_crash_loop.py).

    python tests/procs/chaos_worker.py ROOT OP

OP is one of ``write`` (large files), ``rename`` (a file back and forth), ``delete`` (delete, write
again), ``facts`` (keeps that replace a fact: several files per change), ``rebuild`` (the index) and
``approve`` (a review run's proposal, approved). Every file content is ``crash_content(no, gen)`` for a
generation taken from the clock, so a torn or mixed file can be told. Prints ``{"started": true}``.
"""

from __future__ import annotations

import sys
import time

import fsmem
from tests.procs.common import crash_content, emit


def _gen() -> int:
    return time.time_ns() // 1000


_WORDS = ["gold", "silver", "bronze", "copper", "iron", "tin", "zinc", "lead", "nickel", "cobalt"]


def _word() -> str:  # facts change each time, in words (a long number would look like a card)
    return f"{_WORDS[_gen() % 10]} {_WORDS[(_gen() // 10) % 10]} {_WORDS[(_gen() // 100) % 10]}"


def _write(run: fsmem.Run, path: str, no: int) -> None:
    run.call({"command": "read", "path": path})
    run.call({"command": "write", "path": path, "content": crash_content(no, _gen(), size=12_000)})


def main(root: str, op: str) -> int:
    memory = fsmem.open(root)
    run = memory.run(fsmem.Scope.chat(), thread_id=f"chaos-{op}")
    emit(started=True)
    while True:
        if op == "write":
            for no in range(3):
                _write(run, f"crash/f{no}.md", no)
        elif op == "rename":
            for source, target in (("crash/r.md", "crash/r2.md"), ("crash/r2.md", "crash/r.md")):
                if memory.drive.exists(source):
                    run.call({"command": "read", "path": source})
                    run.call({"command": "rename", "path": source, "new_path": target})
                elif not memory.drive.exists(target):
                    _write(run, source, 7)
        elif op == "delete":
            run.call({"command": "read", "path": "crash/d.md"})
            run.call({"command": "delete", "path": "crash/d.md"})
            _write(run, "crash/d.md", 8)
        elif op == "facts":
            memory.facts.keep("Acme", "plan", f"Acme is on the {_word()} plan")
            memory.facts.keep("Bolt", "owner", f"Bolt is owned by {_word()}")
        elif op == "rebuild":
            memory.index.rebuild()
        elif op == "approve":
            review = memory.run(fsmem.Scope.chat(), thread_id="chaos-review", review=True)
            review.call({"command": "read", "path": "crash/p.md"})
            review.call({"command": "write", "path": "crash/p.md", "content": crash_content(9, _gen(), 8_000)})
            for proposal in memory.proposals():
                try:
                    memory.approve(proposal.id)
                except fsmem.FsmemError:
                    memory.discard(proposal.id)
        else:
            emit(fatal=f"unknown op {op}")
            return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
