"""Several threads of one process share a root through the same lock as processes do."""

from __future__ import annotations

import threading

import fsmem


def test_threads_appending_through_runs_lose_nothing(tmp_path):
    memory = fsmem.open(tmp_path / "root", create=True)

    def worker(name: str) -> None:
        run = memory.run(thread_id=name)
        done = 0
        while done < 25:
            read = run.call({"command": "read", "path": "MEMORY.md"})
            assert read["ok"], read
            lines = read["text"].split("\n")[1:]
            current = "".join(line.split("\t", 1)[1] + "\n" for line in lines if "\t" in line)
            result = run.call({"command": "write", "path": "MEMORY.md", "content": current + f"{name} {done}\n"})
            if result["ok"]:
                done += 1
            else:
                assert result["error"]["code"] == "CONFLICT", result

    threads = [threading.Thread(target=worker, args=(f"t{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = memory.read("MEMORY.md").splitlines()
    assert sorted(lines) == sorted(f"t{i} {n}" for i in range(4) for n in range(25))
