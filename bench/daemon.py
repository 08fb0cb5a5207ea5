"""The resident's footprint and life: the memory `fsmem watch` holds at 1k, 10k and 100k files, and how
soon a resident started on first use answers.

    python -m bench.daemon --files 1000,10000,100000     # or: bin/bench daemon ...
    python -m bench.daemon --quick                       # 1,000 and 10,000 files

- *RSS*: `fsmem watch` on a generated corpus (the search part's generator) whose index is built, once
  it watches and has answered a few cold `fsmem search`es, then after 10 s of quiet (``--settle``): the resident set
  (VmRSS), its anonymous part (what the process itself holds; the rest is the index's mapped files,
  which the kernel may drop) and the peak (VmHWM). Recall by meaning off, then as a user with the
  local model installed has it (the resident embeds in the background), when the model is there, and
  then with every file embedded ("auto, all embedded": each passage is put in the keep through
  meaning's own path, with random unit vectors under the model's name: a vector's memory does not
  depend on its values, and embedding 100,000 files for real takes hours).
- *first use*: with ``FSMEM_WATCH_DAEMON=auto``, a cold `fsmem search` on a root with no resident
  (it does its own work and starts one), then the time until the resident answers, and the next
  cold search, served.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.search import child_env, generate

TARGET_MB = 150


def status_mb(pid: int) -> dict[str, int]:
    out = {}
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM", "RssAnon"):
                out[name] = int(value.split()[0]) // 1024
    return out


def cold_search(root: Path, query: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "fsmem", "search", query, "--root", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        check=False,
    )
    return (time.perf_counter() - start) * 1000


def serving(root: Path, env: dict[str, str]) -> bool:
    """Whether a resident runs a shell's `fsmem search zzz` with the environment ``env``."""
    from fsmem._index.resident import ask, socket_file

    streams = {"tty": False, "encoding": "utf-8", "errors": "strict"}
    question = {
        "op": "run",
        "argv": ["search", "zzz", "--root", str(root)],
        "prog": "fsmem",
        "cwd": str(root),
        "environ": {name: value for name, value in env.items() if name.startswith("FSMEM_")},
        "streams": {"stdout": streams, "stderr": streams},
    }
    return ask(socket_file(str(root / ".fsmem")), question) is not None


def resident_rss(root: Path, env: dict[str, str], settle_s: float) -> dict[str, dict[str, int]]:
    said = root.parent / f"{root.name}-watch.log"
    with open(said, "ab") as log:
        watch = subprocess.Popen([sys.executable, "-m", "fsmem", "watch", "--root", str(root)], env=env, stderr=log)
    try:
        deadline = time.monotonic() + 600
        while not serving(root, env):
            if time.monotonic() > deadline or watch.poll() is not None:
                raise RuntimeError(f"fsmem watch did not start serving: {said.read_text()[-2000:]}")
            time.sleep(0.1)
        for query in ("plan", "launch okapi", "the", "week report", "zebra"):
            cold_search(root, query, env)
        served = status_mb(watch.pid)
        time.sleep(settle_s)
        return {"served": served, "settled": status_mb(watch.pid)}
    finally:
        watch.terminate()  # SIGTERM: a bench run in the background ignores SIGINT, and so do its children
        if watch.wait(timeout=120) != 0:
            print(f"fsmem watch said: {said.read_text()[-2000:]}", file=sys.stderr)


def first_use(root: Path) -> dict[str, float]:
    env = {**child_env(), "FSMEM_WATCH_DAEMON": "auto", "FSMEM_WATCH_IDLE": "60"}
    alone = cold_search(root, "plan", env)
    start = time.perf_counter()
    while not serving(root, env):
        if time.perf_counter() - start > 600:
            raise RuntimeError("no resident started on first use")
        time.sleep(0.02)
    ready = (time.perf_counter() - start) * 1000
    served = min(cold_search(root, "plan", env) for _ in range(3))
    from fsmem._index.autostart import holder

    os.kill(int(holder(root / ".fsmem").split()[0]), signal.SIGTERM)
    return {"alone": alone, "ready": ready, "served": served}


class RandomVectors:
    """An embedder under the local model's name whose vectors are random unit rows."""

    def __init__(self, name: str, dimensions: int = 384) -> None:
        import numpy as np

        self.name, self.dimensions, self._rng = name, dimensions, np.random.default_rng(3)

    def embed(self, texts):
        import numpy as np

        rows = self._rng.standard_normal((len(texts), self.dimensions)).astype(np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    def embed_query(self, text):
        return self.embed([text])[0]


def embed_all(root: Path) -> int:
    """Put every file's passages in the root's keep as the local model's, with random vectors."""
    import fsmem
    from fsmem._env.config import Settings
    from fsmem._index.meaning import Meaning
    from fsmem._llm.model_files import MODEL_FILE, default_folder, sha256_of
    from fsmem._memory.hybrid import keep_of

    name = f"onnx-{sha256_of(default_folder() / MODEL_FILE)[:16]}"  # the name OnnxEmbedder gives it
    memory = fsmem.open(root, settings=Settings(watch=False, meaning="off"))
    try:
        meaning = Meaning(memory.index, RandomVectors(name), keep_of(memory.index))
        done = meaning.embed_pending()
        meaning.close()
        return done
    finally:
        memory.close()


def model_installed() -> bool:
    from fsmem._llm.model_files import installed

    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return installed(base / "fsmem" / "models" / "all-MiniLM-L6-v2-int8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bin/bench daemon")
    parser.add_argument("--files", default="1000,10000,100000", help="corpus sizes, comma-separated")
    parser.add_argument("--quick", action="store_true", help="1,000 and 10,000 files")
    parser.add_argument("--no-meaning", action="store_true", help="leave out the rows with recall by meaning on")
    parser.add_argument("--settle", type=float, default=10.0, help="seconds of quiet before the settled RSS (10)")
    options = parser.parse_args(argv)
    sizes = [1000, 10000] if options.quick else [int(n) for n in options.files.split(",")]
    with_meaning = not options.no_meaning and model_installed()
    print(f"load: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores")
    print("| files | meaning | RSS MB served / settled | anon MB settled | peak MB | ≤ 150 MB |")
    print("|---|---|---|---|---|---|")
    work = Path(tempfile.mkdtemp(prefix="fsmem-bench-daemon-"))
    try:
        uses = {}
        for count in sizes:
            root = work / f"c{count}"
            generate(root, count)
            subprocess.run(
                [sys.executable, "-m", "fsmem", "index", "rebuild", "--root", str(root), "--json"],
                env=child_env(),
                stdout=subprocess.DEVNULL,
                check=True,
            )
            for meaning in ("off", "auto", "auto, all embedded") if with_meaning else ("off",):
                if meaning == "auto, all embedded":
                    uses[count] = first_use(root)  # as before: with the few files the resident embedded
                    embed_all(root)
                got = resident_rss(root, {**child_env(), "FSMEM_MEANING": meaning.split(",")[0]}, options.settle)
                served, settled = got["served"], got["settled"]
                peak = settled["VmHWM"]
                print(
                    f"| {count:,} | {meaning} | {served['VmRSS']} / {settled['VmRSS']} | {settled['RssAnon']} "
                    f"| {peak} | {'yes' if settled['VmRSS'] <= TARGET_MB else 'no'} |",
                    flush=True,
                )
            if count not in uses:
                uses[count] = first_use(root)
        print("\n| files | first use: cold search alone ms | until the resident answers ms | next cold search ms |")
        print("|---|---|---|---|")
        for count, use in uses.items():
            print(f"| {count:,} | {use['alone']:.0f} | {use['ready']:.0f} | {use['served']:.0f} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
