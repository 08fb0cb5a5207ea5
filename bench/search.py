"""Search benchmarks: fsmem's index against SQLite FTS5 bm25() and ripgrep, on generated corpora.

    python -m bench.search --sizes 1000,10000          # or: bin/bench search ...
    python -m bench.search --quick                     # 1,000 and 10,000 files only

For each size it generates a corpus of markdown files (Zipf-distributed words, headings, lists,
front matter, facts), then reports medians and p95 of: in-process top-10 search with snippets
(fsmem, FTS5, ripgrep), cold `fsmem search` against cold `rg`, write-to-searchable latency, full
rebuild speed and index size. Ratios are against baselines measured in the same run.
"""

from __future__ import annotations

import argparse
import compileall
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RACY_AGE_S = 2.1  # core.search.RACY_WINDOW_NS, and a little more

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

COMMON = (
    "the of and to in a is that for it as was with be by on not he this are or his from at which but "
    "have an they you were her she there been one all we their has would when if so no will more what "
    "about up out them some could into than then its only other new time these two may first any like "
    "now my such make over our even most after also did many before must through back years where much "
    "your way well down should because each just those people how too little state good very make world "
    "still own see men work long get here between both life being under never day same another know while "
    "last might us great old year off come since against go came right used take three"
).split()
DOMAIN = (
    "deploy staging release client brand title meta description keyword ranking agent routine memory "
    "sitemap canonical redirect budget invoice deadline launch campaign audience persona tone voice "
    "headline snippet schema crawl index backlink anchor outreach report dashboard metric conversion "
    "funnel checkout pricing discount newsletter webinar roadmap sprint backlog ticket review approval "
    "policy refund shipping warehouse supplier contract legal privacy consent cookie analytics"
).split()
SYLLABLES = "ka lo mi ne ru sa te vi do fa gu hi jo ku le ma no pe ri so tu va we xi yo za".split()


def vocabulary(rng: random.Random, size: int = 30000) -> list[str]:
    words = list(dict.fromkeys(COMMON + DOMAIN))
    seen = set(words)
    while len(words) < size:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def zipf_weights(n: int, s: float = 1.07) -> list[float]:
    total = 0.0
    cumulative = []
    for rank in range(1, n + 1):
        total += 1.0 / rank ** s
        cumulative.append(total)
    return cumulative


def sentence(rng: random.Random, words: list[str], cum: list[float]) -> str:
    chosen = rng.choices(words, cum_weights=cum, k=rng.randint(6, 18))
    return " ".join(chosen).capitalize() + "."


def make_file(rng: random.Random, words: list[str], cum: list[float], index: int) -> tuple[str, str]:
    """(relative path, text) of one realistic memory file."""
    kind = rng.random()
    if kind < 0.15:
        said = f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        subject = rng.choice(DOMAIN).capitalize()
        history = rng.random() < 0.3
        path = f"notes/memory/{'history/' if history else ''}f{index:06d}.md"
        extra = f"until: 2026-12-01\nreplaced_by: f{index + 1:06d}\n" if history else ""
        text = (f"---\nid: f{index:06d}\nsubject: {subject}\nattribute: {rng.choice(DOMAIN)}\n"
                f"source: chat\nsaid: {said}\n{extra}---\n{sentence(rng, words, cum)}\n")
        return path, text
    folder = f"topics/{rng.choice(DOMAIN)}/{index // 100:04d}"
    if kind < 0.25:
        folder = f"agents/agent-{index // 500:04x}{index % 7:04x}"
    lines = [f"# {' '.join(rng.choices(words[:3000], k=rng.randint(2, 5))).title()}", ""]
    if rng.random() < 0.2:
        lines = ["---", f"tags: [{rng.choice(DOMAIN)}, {rng.choice(DOMAIN)}]", "---", *lines]
    for _ in range(rng.randint(2, 5)):
        lines.append(f"## {' '.join(rng.choices(words[:3000], k=3)).title()}")
        for _ in range(rng.randint(1, 3)):
            lines.append(sentence(rng, words, cum))
        for _ in range(rng.randint(0, 4)):
            lines.append(f"- {sentence(rng, words, cum)}")
        lines.append("")
    return f"{folder}/note{index:06d}.md", "\n".join(lines) + "\n"


def generate(root: Path, count: int, seed: int = 7) -> tuple[int, list[str], list[float]]:
    rng = random.Random(seed)
    words = vocabulary(rng)
    cum = zipf_weights(len(words))
    total = 0
    for i in range(count):
        path, text = make_file(rng, words, cum, i)
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode()
        target.write_bytes(data)
        total += len(data)
    (root / ".fsmem").mkdir(exist_ok=True)
    return total, words, cum


def queries(words: list[str], rng: random.Random, n: int = 20) -> list[str]:
    """Mid-frequency words (ranks 200-5000), one or two at a time: what a model looks for."""
    out = []
    for i in range(n):
        picks = rng.sample(words[200:5000], 2 if i % 2 else 1)
        out.append(" ".join(picks))
    return out


def stats(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return statistics.median(ordered), p95


def timed(fn, *args, **kwargs) -> float:
    start = time.perf_counter()
    fn(*args, **kwargs)
    return (time.perf_counter() - start) * 1000


def fts5_build(root: Path, db_path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db_path)
    conn.execute("CREATE VIRTUAL TABLE docs USING fts5(path UNINDEXED, title, body)")
    rows = []
    for path in sorted(p for p in root.rglob("*.md") if ".fsmem" not in p.parts):
        text = path.read_text("utf-8")
        title = next((line.lstrip("# ") for line in text.splitlines() if line.startswith("#")), path.stem)
        rows.append((path.relative_to(root).as_posix(), title, text))
    conn.executemany("INSERT INTO docs VALUES (?, ?, ?)", rows)
    conn.commit()
    return conn


FTS5_TOP10 = ("SELECT path, snippet(docs, 2, '', '', '…', 24) FROM docs WHERE docs MATCH ? "
              "ORDER BY bm25(docs, 0.0, 2.0, 1.0) LIMIT 10")  # path, title, body


def fts5_search(conn: sqlite3.Connection, query: str) -> list:
    """What fsmem's text mode does, in FTS5: all words (the last as a prefix), any word if none."""
    rows = fts5_all_words(conn, query)
    if rows or len(query.split()) == 1:
        return rows
    return conn.execute(FTS5_TOP10, (" OR ".join(fts5_terms(query)),)).fetchall()


def fts5_all_words(conn: sqlite3.Connection, query: str) -> list:
    """All words only: nothing at all when no file holds every word (a narrower question)."""
    return conn.execute(FTS5_TOP10, (" ".join(fts5_terms(query)),)).fetchall()


def fts5_terms(query: str) -> list[str]:
    words = [f'"{word}"' for word in query.split()]
    words[-1] += "*"
    return words


def rg_search(root: Path, query: str) -> None:
    pattern = "|".join(query.split())
    subprocess.run(["rg", "-i", "-l", "--no-messages", "-g", "*.md", pattern, str(root)],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def fsmem_cold(root: Path, query: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run([sys.executable, "-m", "fsmem", "search", query, "--root", str(root)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env)
    if done.returncode not in (0, 1):  # 1: nothing matched, as grep says it
        raise subprocess.CalledProcessError(done.returncode, done.args)


def bench_size(count: int, reps: int, workdir: Path) -> dict:
    from fsmem.index import Index
    from fsmem.watch import Watcher

    root = workdir / f"corpus-{count}"
    root.mkdir()
    started = time.perf_counter()
    corpus_bytes, words, _ = generate(root, count)
    gen_s = time.perf_counter() - started
    # Files written within the last two seconds are "racy" (hashed by every comparison until settled):
    # a corpus a person edits is older than that, so let it age before indexing it.
    time.sleep(max(0.0, RACY_AGE_S - gen_s))
    rng = random.Random(11)
    qs = queries(words, rng)
    out: dict = {"files": count, "corpus_bytes": corpus_bytes, "generate_s": gen_s}

    index = Index(root)
    rebuild_ms = timed(index.rebuild)
    out["rebuild_files_per_s"] = count / (rebuild_ms / 1000)
    gen = index_generation_bytes(root)
    out["index_bytes"] = gen

    conn = fts5_build(root, workdir / f"fts-{count}.db")

    for q in qs:  # warm caches for every engine alike
        index.search(q, fresh=False)
        fts5_search(conn, q)
    # fsmem and FTS5 alternate, query by query, so load from other jobs falls on both alike.
    fsmem_samples, fts5_samples = [], []
    answered = {q for q in qs if fts5_all_words(conn, q)}  # some file holds every word
    fsmem_answered, fts5_answered = [], []
    for _ in range(reps):
        for q in qs:
            fsmem_samples.append(timed(index.search, q, fresh=False))
            fts5_samples.append(timed(fts5_search, conn, q))
            if q in answered:
                fsmem_answered.append(fsmem_samples[-1])
                fts5_answered.append(fts5_samples[-1])
    out["fsmem"] = stats(fsmem_samples)
    out["answered"] = (len(answered), stats(fsmem_answered), stats(fts5_answered))
    out["fsmem_checked"] = stats([timed(index.search, q) for q in qs[:max(3, reps)]])
    out["compare_cached"] = stats([timed(index.compare) for _ in range(5)])
    out["compare_full"] = stats([timed(full_compare, index) for _ in range(3)])
    out["fts5"] = stats(fts5_samples)
    out["fts5_all_words"] = stats([timed(fts5_all_words, conn, q) for q in qs for _ in range(reps)])
    out["queries"] = len(qs)
    rg_qs = qs[: 6 if count >= 100_000 else 10]
    out["rg"] = stats([timed(rg_search, root, q) for q in rg_qs])

    cold_qs = qs[:8]
    cold, cold_rg = [], []
    for q in cold_qs:  # alternating with rg, as above
        cold.append(timed(fsmem_cold, root, q))
        cold_rg.append(timed(rg_search, root, q))
    out["fsmem_cold"] = stats(cold)
    watched = []
    with Watcher(Index(root), heartbeat=0.5):
        time.sleep(1.0)
        for q in cold_qs:
            watched.append(timed(fsmem_cold, root, q))
            cold_rg.append(timed(rg_search, root, q))
    out["fsmem_cold_watched"] = stats(watched)
    out["rg_cold"] = stats(cold_rg)

    out["write_to_searchable"] = stats(write_latencies(root, 20))
    conn.close()
    shutil.rmtree(root, ignore_errors=True)
    return out


def full_compare(index) -> None:
    """The comparison without its walk cache (the first search after any change pays this)."""
    from fsmem.index_state import WALK_CACHE

    assert index._manifest is not None
    (index._manifest.file.parent / WALK_CACHE).unlink(missing_ok=True)
    index.compare()


def write_latencies(root: Path, n: int) -> list[float]:
    """A write through the memory tool, then a search (no comparison) that finds its new word."""
    import fsmem

    memory = fsmem.open(root)
    run = memory.run(thread_id="bench")
    samples = []
    for i in range(n):
        word = f"zqxbench{i}word"
        start = time.perf_counter()
        result = run.call({"command": "write", "path": f"bench/w{i}.md", "content": f"# W {i}\n\n{word}\n"})
        assert result["ok"], result
        hits = memory.index.search(word, fresh=False)
        samples.append((time.perf_counter() - start) * 1000)
        assert hits and hits[0].path == f"bench/w{i}.md", hits
    return samples


def index_generation_bytes(root: Path) -> int:
    base = root / ".fsmem" / "index"
    return sum(p.stat().st_size for p in base.rglob("*") if p.is_file())


def render(results: list[dict]) -> str:
    rows = []
    header = ("| files | fsmem search p50/p95 ms | FTS5 p50/p95 ms | FTS5 ÷ fsmem | rg p50 ms | rg ÷ fsmem "
              "| cold fsmem p50 (no watcher / watcher) ms | cold rg p50 ms | cold fsmem ÷ cold rg, watcher (without) "
              "| write→searchable p50/p95 ms | rebuild files/s | index / corpus |")
    rows.append(header)
    rows.append("|" + "---|" * (header.count("|") - 1))
    for r in results:
        f50, f95 = r["fsmem"]
        s50, s95 = r["fts5"]
        g50, _ = r["rg"]
        c50, _ = r["fsmem_cold"]
        w50, _ = r["fsmem_cold_watched"]
        rc50, _ = r["rg_cold"]
        l50, l95 = r["write_to_searchable"]
        rows.append(
            f"| {r['files']:,} | {f50:.2f} / {f95:.2f} | {s50:.2f} / {s95:.2f} | {s50 / f50:.2f}× "
            f"| {g50:.0f} | {g50 / f50:.0f}× | {c50:.0f} / {w50:.0f} | {rc50:.0f} "
            f"| {w50 / rc50:.2f}× ({c50 / rc50:.2f}×) | {l50:.1f} / {l95:.1f} "
            f"| {r['rebuild_files_per_s']:,.0f} | {r['index_bytes'] / r['corpus_bytes']:.2f} "
            f"({r['index_bytes'] / 1e6:.1f} / {r['corpus_bytes'] / 1e6:.1f} MB) |"
        )
    extra = [f"- {r['files']:,} files: in-process search *with* the size/mtime comparison (no watcher): "
             f"p50 {r['fsmem_checked'][0]:.1f} ms, p95 {r['fsmem_checked'][1]:.1f} ms; the comparison alone: "
             f"p50 {r['compare_cached'][0]:.1f} ms with its walk cache, {r['compare_full'][0]:.1f} ms without. "
             f"FTS5 asked for all words only (no file at all for {r['queries'] - r['answered'][0]} of "
             f"{r['queries']} queries): p50 {r['fts5_all_words'][0]:.2f} ms. On the {r['answered'][0]} queries "
             f"that some file answers with all words (the same work for both): fsmem p50 "
             f"{r['answered'][1][0]:.2f} ms, FTS5 {r['answered'][2][0]:.2f} ms "
             f"({r['answered'][2][0] / r['answered'][1][0]:.2f}×)"
             for r in results]
    return "\n".join(rows + [""] + extra)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench search", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=None, help="comma-separated corpus sizes (default 1000,10000,100000)")
    parser.add_argument("--quick", action="store_true", help="1,000 and 10,000 files, fewer repetitions")
    parser.add_argument("--reps", type=int, default=None, help="repetitions of each query")
    args = parser.parse_args(argv)
    if shutil.which("rg") is None:
        print("ripgrep (rg) is needed for the baseline: apt-get install -y ripgrep", file=sys.stderr)
        return 2
    # A cold start is a new process, not new code: an installed fsmem has its bytecode compiled, so
    # make sure this checkout's is too (PYTHONDONTWRITEBYTECODE or stale files would add ~15 ms a run).
    compileall.compile_dir(str(REPO / "fsmem"), quiet=1)
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else (
        [1000, 10000] if args.quick else [1000, 10000, 100000])
    reps = args.reps or (3 if args.quick else 5)
    results = []
    with tempfile.TemporaryDirectory(prefix="fsmem-bench-") as temp:
        for size in sizes:
            print(f"[search] {size:,} files …", file=sys.stderr, flush=True)
            results.append(bench_size(size, reps, Path(temp)))
    print(render(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
