"""Benchmark: what the faces add on top of one memory-tool call.

    python -m bench.faces [--repeat 200] [--quick]

Cases, each a read of a 60-line MEMORY.md and an exact replacement in it:
  run.call              the baseline: fsmem's tool called directly
  claude view/replace   fsmem's Claude memory tool (through the SDK's ``call``)
  sdk view/replace      the SDK's own local-filesystem memory tool (no versions, log or guards)
  mcp in-process        the MCP server through ``mcp.Client(server)``: protocol, worker thread
  mcp stdio             ``fsmem mcp`` as a subprocess: JSON over a pipe as a host would use it

Prints median and p95 per case and the ratio of each median to the baseline's, measured in this run.
No timing is asserted anywhere.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Awaitable, Callable
from bench.timing import measure, median_p95

CONTENT = "".join(f"- rule {i}: titles end with | Field Notes, under 60 characters\n" for i in range(60))






async def _measure_async(function: Callable[[], Awaitable[object]], repeat: int) -> list[float]:
    await function()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        await function()
        samples.append(time.perf_counter() - start)
    return samples


def _toggle(call: Callable[[str, str], object]) -> Callable[[], object]:
    """Alternate two replacements so every call really changes the file."""
    state = {"flip": False}

    def step() -> object:
        state["flip"] = not state["flip"]
        old, new = ("rule 7:", "rule seven:") if state["flip"] else ("rule seven:", "rule 7:")
        return call(old, new)
    return step


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="bench.faces")
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="30 rounds per case")
    args = parser.parse_args(argv)
    repeat = 30 if args.quick else args.repeat

    import anyio
    from anthropic.lib.tools._beta_builtin_memory_tool import BetaLocalFilesystemMemoryTool
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    import fsmem
    from fsmem.claude_memory import FsmemMemoryTool
    from fsmem.mcp_server import build_server

    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="fsmem-bench-faces-") as folder:
        memory = fsmem.open(Path(folder) / "root", create=True)
        (memory.root / "MEMORY.md").write_text(CONTENT)
        read = {"command": "read", "path": "MEMORY.md"}

        run = memory.run(thread_id="bench")
        results["run.call read"] = measure(lambda: run.call(read), repeat)
        results["run.call replace"] = measure(_toggle(lambda old, new: run.call(
            {"command": "write", "path": "MEMORY.md", "old_text": old, "new_text": new})), repeat)

        run.call({"command": "write", "path": "MEMORY.md", "content": CONTENT})  # back to the start
        claude = FsmemMemoryTool(memory, thread_id="bench-claude")
        view = {"command": "view", "path": "/memories/MEMORY.md"}
        results["claude view"] = measure(lambda: claude.call(view), repeat)
        results["claude replace"] = measure(_toggle(lambda old, new: claude.call(
            {"command": "str_replace", "path": "/memories/MEMORY.md", "old_str": old, "new_str": new})), repeat)

        sdk = BetaLocalFilesystemMemoryTool(str(Path(folder) / "sdk"))
        sdk.call({"command": "create", "path": "/memories/MEMORY.md", "file_text": CONTENT})
        results["sdk view"] = measure(lambda: sdk.call(view), repeat)
        results["sdk replace"] = measure(_toggle(lambda old, new: sdk.call(
            {"command": "str_replace", "path": "/memories/MEMORY.md", "old_str": old, "new_str": new})), repeat)

        async def over_mcp(target: object, label: str) -> None:
            async with Client(target) as client:
                results[f"{label} read"] = await _measure_async(lambda: client.call_tool("memory", read), repeat)

        anyio.run(over_mcp, build_server(memory, fsmem.Scope.chat()), "mcp in-process")
        repo = Path(__file__).resolve().parent.parent
        stdio = StdioServerParameters(command=sys.executable, args=["-m", "fsmem", "mcp", "--root", str(memory.root)],
                                      env={"PYTHONPATH": str(repo)})
        anyio.run(over_mcp, stdio, "mcp stdio")

    base_read = median_p95(results["run.call read"])[0]
    base_write = median_p95(results["run.call replace"])[0]
    print(f"{'case':<22} {'median':>10} {'p95':>10}  vs run.call")
    for name, samples in results.items():
        median, p95 = median_p95(samples)
        base = base_write if "replace" in name else base_read
        print(f"{name:<22} {median * 1e3:>8.3f}ms {p95 * 1e3:>8.3f}ms  {median / base:>6.2f}x")


if __name__ == "__main__":
    main(sys.argv[1:])
