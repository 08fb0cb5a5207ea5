"""Enter ``with memory.deleting_agent(ID)`` and stay inside until killed.

    python tests/procs/lifecycle_worker.py ROOT AGENT_ID

Prints ``{"inside": true, "held": {...}}`` once the folder is parked, then sleeps: the test kills it
with SIGKILL, as a harness that crashes in the middle of its own delete would be.
"""

from __future__ import annotations

import sys
import time

import fsmem
from tests.procs.common import emit


def main(root: str, agent_id: str) -> int:
    memory = fsmem.open(root)
    with memory.deleting_agent(agent_id) as held:
        emit(inside=True, held=held)
        while True:
            time.sleep(1)


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
