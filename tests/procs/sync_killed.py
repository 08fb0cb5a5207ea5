"""A `fsmem sync` pass killed (SIGKILL, by itself) just after a folder write swapped the database's
bytes in, before the state saying so is saved (tests/memory/test_sync_killed.py).

    python tests/procs/sync_killed.py FOLDER URL PROJECT MODE

MODE ``after-swap``: killed as soon as the write returns. ``late-save``: a person's save lands in the
instant before the swap (the swap takes it out), and the kill comes right after the swap.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from fsmem._memory import sync, sync_folder
from fsmem._store.postgres.store import PgStore


def main(folder: str, url: str, project: str, mode: str) -> int:
    if mode == "after-swap":
        real_place = sync.place

        def place_then_die(*args, **kwargs):
            real_place(*args, **kwargs)
            os.kill(os.getpid(), signal.SIGKILL)

        sync.place = place_then_die  # type: ignore[assignment]
    else:
        real_exchange = sync_folder.exchange

        def save_swap_die(first: Path, second: Path) -> bool:
            second.write_text(second.read_text() + "- a person's line, saved as the sync wrote\n")
            swapped = real_exchange(first, second)
            os.kill(os.getpid(), signal.SIGKILL)
            return swapped

        sync_folder.exchange = save_swap_die  # type: ignore[assignment]
    with PgStore.open(url, project, create=False) as store, sync.Sync.open(Path(folder), store) as mirror:
        mirror.run_once(None)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
