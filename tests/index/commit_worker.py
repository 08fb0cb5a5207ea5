"""Commits to the index in a loop until killed, for tests/index/test_index_faults.py.

    python tests/index/commit_worker.py ROOT

Each round edits every file by hand (so the commit deletes documents in every segment and writes a
``.del`` file for each) and searches, which commits those edits. Prints ``{"started": true}``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import fsmem
from tests.procs.common import emit

FILES = 40


def main(root: str) -> int:
    memory = fsmem.open(root)
    emit(started=True)
    round_no = 0
    while True:
        round_no += 1
        for no in range(FILES):
            Path(root, "k", f"f{no}.md").write_text(f"# File {no}\n\nround r{round_no} of file {no}\n")
        memory.search(f"r{round_no}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
