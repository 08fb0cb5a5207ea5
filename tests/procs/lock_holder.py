"""Hold a root's write lock the way another fsmem process would, until told to let go.

    python tests/procs/lock_holder.py LOCK_FILE RELEASE_FILE

Prints ``{"holding": true}`` once the lock is held.
"""

from __future__ import annotations

import sys
from pathlib import Path

from filelock import FileLock

from tests.procs.common import emit, wait_for_file


def main(lock_file: str, release_file: str) -> int:
    with FileLock(lock_file):
        emit(holding=True)
        wait_for_file(Path(release_file), timeout=120)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
