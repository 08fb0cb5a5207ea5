"""Write large files through the memory tool in a loop until killed.

    python tests/procs/crash_writer.py ROOT N_FILES FIRST_GEN [files|folders]

``files`` (the default): file ``crash/f<i>.md`` gets ``crash_content(i, gen)`` for gen = FIRST_GEN,
FIRST_GEN+1, ... Every few generations a file is deleted and written again, so deletes are in the mix.

``folders``: each generation writes ``batch/f<i>.md`` for every i, renames the folder to ``moved``,
and deletes it, so a kill can land inside a folder rename or a folder delete.

Prints ``{"started": true}`` once the loop begins; the test kills it with SIGKILL at a random moment.
"""

from __future__ import annotations

import sys

import fsmem
from tests.procs.common import crash_content, emit


def folders(root: str, n_files: int, first_gen: int) -> int:
    run = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="crash-folders")
    emit(started=True)
    gen = first_gen
    while True:
        for name in ("batch", "moved"):  # what a kill in the last round left behind
            run.call({"command": "read", "path": name})
            for i in range(n_files):
                run.call({"command": "read", "path": f"{name}/f{i}.md"})
            result = run.call({"command": "delete", "path": name})
            if not result["ok"] and result["error"]["code"] != "NOT_FOUND":
                emit(fatal=result["error"])
                return 1
        for i in range(n_files):
            result = run.call({"command": "write", "path": f"batch/f{i}.md",
                               "content": crash_content(i, gen, size=6_000)})
            if not result["ok"]:
                emit(fatal=result["error"])
                return 1
        result = run.call({"command": "rename", "path": "batch", "new_path": "moved"})
        if not result["ok"]:
            emit(fatal=result["error"])
            return 1
        gen += 1


def main(root: str, n_files: int, first_gen: int) -> int:
    memory = fsmem.open(root)
    run = memory.run(fsmem.Scope.chat(), thread_id="crash-writer")
    for i in range(n_files):  # a new process has seen nothing yet
        run.call({"command": "read", "path": f"crash/f{i}.md"})
    emit(started=True)
    gen = first_gen
    while True:
        for i in range(n_files):
            path = f"crash/f{i}.md"
            if gen % 7 == 3 and i == gen % n_files:
                result = run.call({"command": "delete", "path": path})
                if not result["ok"] and result["error"]["code"] != "NOT_FOUND":
                    emit(fatal=result["error"])
                    return 1
            result = run.call({"command": "write", "path": path, "content": crash_content(i, gen)})
            if not result["ok"]:
                emit(fatal=result["error"])
                return 1
        gen += 1


if __name__ == "__main__":
    root, n_files, first_gen, *mode = sys.argv[1:]
    job = folders if mode == ["folders"] else main
    sys.exit(job(root, int(n_files), int(first_gen)))
