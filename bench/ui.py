"""Benchmark: the pages of ``fsmem ui`` on a folder of 1,000 files, timed on the server.

    python -m bench.ui [--files 1000] [--repeat 40] [--quick]

Each page is requested through the app in this process (Starlette's TestClient: no browser, no
network), after one untimed request that warms caches. The baseline is the memory tool's own read of
the file the file page shows, in the same run: a page's ratio to it is what the page adds. The issue's
target is a p50 of 100 ms or less for every page. No timing is asserted anywhere.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench.timing import measure, median_p95

AGENT_ID = "3f9a1c2e-77aa-4b1e-9d3c-5a0e8f1b2c3d"
TARGET_MS = 100.0


def _make(root: Path, files: int):
    import fsmem
    from fsmem import Scope

    memory = fsmem.open(root, create=True)
    memory.create_agent(AGENT_ID, "SEO")
    for n in range(4):
        memory.create_routine(AGENT_ID, f"routine-{n}-0000-0000", f"Routine {n}")
    run = memory.run(Scope.chat(), thread_id="bench")
    run.call({"command": "read", "path": "MEMORY.md"})
    run.call({"command": "write", "path": "MEMORY.md", "content": "# Project\n" + "- a rule of the house\n" * 40})
    for n in range(files - 6):  # the project and agent top files, and the four routines' NOTES.md
        body = "".join(f"- note {n}.{line}: titles end with | Field Notes, keep them short\n" for line in range(30))
        path = f"topics/t{n // 20:02d}/f{n % 20:02d}.md"
        run.call({"command": "write", "path": path, "content": f"# Topic {n}\n{body}"})
    for n in range(40):
        memory.facts.keep(f"page {n % 10}", f"attribute {n}", f"It holds value {n}", source="bench")
    reviewer = memory.run(Scope.chat(), thread_id="review", review=True)
    for n in range(5):
        path = f"topics/t00/f{n:02d}.md"
        reviewer.call({"command": "read", "path": path})
        reviewer.call({"command": "write", "path": path, "old_text": f"note {n}.3:", "new_text": f"note {n}.three:"})
    for _ in range(3):  # kept versions to compare
        run.call({"command": "read", "path": "topics/t01/f01.md"})
        text = memory.read("topics/t01/f01.md")
        run.call({"command": "write", "path": "topics/t01/f01.md", "content": text + "- one more line\n"})
    return memory


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="bench.ui")
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=40)
    parser.add_argument("--quick", action="store_true", help="10 rounds per page")
    args = parser.parse_args(argv)
    repeat = 10 if args.quick else args.repeat

    from starlette.testclient import TestClient

    from fsmem.cli.ui.app import build_app
    from fsmem.cli.ui.guard import Keys

    with tempfile.TemporaryDirectory(prefix="fsmem-bench-ui-") as folder:
        memory = _make(Path(folder) / "root", args.files)
        files = sum(1 for _ in (Path(folder) / "root").rglob("*.md") if ".fsmem" not in _.parts)
        keys = Keys("bench-token-0123456789", 80, frozenset({"testserver"}))
        client = TestClient(build_app(memory, keys))
        client.get(f"/?token={keys.token}")
        shown = "topics/t01/f01.md"
        run = memory.run(thread_id="bench-read")
        baseline = measure(lambda: run.call({"command": "read", "path": shown}), repeat)
        pages = {
            "levels /": "/",
            "folder /": "/files?path=",
            "folder of 20 files": "/files?path=topics/t00",
            "file": f"/files?path={shown}",
            "edit form": f"/edit?path={shown}",
            "history (all)": "/history",
            "history of a file": f"/history?path={shown}",
            "versions + diff": f"/versions?path={shown}",
            "facts": "/facts",
            "proposals (5)": "/proposals",
            "search": "/search?q=field+notes",
            "scope of a routine": f"/scope?agent={AGENT_ID}&routine=routine-0-0000-0000",
        }
        results: dict[str, list[float]] = {}
        for name, url in pages.items():

            def get(url: str = url) -> None:
                answer = client.get(url)
                assert answer.status_code == 200, (url, answer.status_code)

            results[name] = measure(get, repeat)
        memory.close()

    base, _ = median_p95(baseline)
    print(f"{files} memory files; {repeat} requests a page; target p50 <= {TARGET_MS:.0f} ms")
    print(f"{'page':<24} {'p50 ms':>8} {'p95 ms':>8} {'× tool read':>12}  target")
    print(f"{'tool read (baseline)':<24} {base * 1000:8.2f} {median_p95(baseline)[1] * 1000:8.2f} {1.0:12.1f}")
    for name, samples in results.items():
        median, p95 = median_p95(samples)
        verdict = "ok" if median * 1000 <= TARGET_MS else "SLOW"
        print(f"{name:<24} {median * 1000:8.2f} {p95 * 1000:8.2f} {median / base:12.1f}  {verdict}")
