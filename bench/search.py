"""Search benchmarks: fsmem's index against SQLite FTS5 bm25() and ripgrep, on generated corpora.

    python -m bench.search --sizes 1000,10000          # or: bin/bench search ...
    python -m bench.search --quick                     # 1,000 and 10,000 files only

For each size it generates a corpus of markdown files (Zipf-distributed words, headings, lists,
front matter, facts), then times what a user's call costs, freshness included, on the path a user
takes: ``memory.search`` in a long-lived process with no explicit watch (after its first search),
against SQLite FTS5 ``bm25()+snippet()`` on the same files; a write in process A until process B's
next search finds it; a cold ``fsmem search`` right after a write, against a cold ``rg``; a hand edit
until the same process finds it; and the RSS growth of a long-lived process over writes and searches.
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

from bench.installed import installed_env, installed_fsmem

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


# The prefix index a user would give FTS5 for queries whose last word is a prefix: every length up to
# the longest last word these queries have (vocabulary words are 2-8 letters), so no prefix query scans
# the term list. Without it FTS5's p95 is about twice as long at 10,000 files.
FTS5_PREFIX = "2 3 4 5 6 7 8"


def fts5_build(root: Path, db_path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db_path)
    conn.execute(
        "CREATE VIRTUAL TABLE docs USING fts5(path UNINDEXED, title, body, "
        f"tokenize = 'porter unicode61', prefix = '{FTS5_PREFIX}')"
    )
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
    """What fsmem's text mode does, in FTS5: any of the words (the last as a prefix), ranked by bm25."""
    return conn.execute(FTS5_TOP10, (" OR ".join(fts5_terms(query)),)).fetchall()


def fts5_terms(query: str) -> list[str]:
    words = [f'"{word}"' for word in query.split()]
    words[-1] += "*"
    return words


def rg_search(root: Path, query: str) -> None:
    """What a person types to find files holding any of the words: ``rg -il`` (all cores, its defaults)."""
    pattern = "|".join(query.split())
    subprocess.run(["rg", "-i", "-l", "--no-messages", "-g", "*.md", pattern, str(root)],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}  # the defaults a user has
    env["PYTHONPATH"] = str(REPO)
    return env


# The cold rows' `fsmem`: the console script of a wheel of this checkout, installed in a venv of its own
# (bench.installed), as a user's shell runs it; set by main() before the first corpus.
SHELL: list[str] = []


def fsmem_cold(root: Path, query: str, *options: str) -> None:
    done = subprocess.run([*SHELL, "search", query, "--root", str(root), *options],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=installed_env())
    if done.returncode not in (0, 1):  # 1: nothing matched, as grep says it
        raise subprocess.CalledProcessError(done.returncode, done.args)


# Process B of "a write in A, found by B's next search": a long-lived process (the harness, `fsmem mcp`)
# that searches with the default calls. It reads a word a line, searches once, answers with the paths.
SEARCHER = """
import sys, fsmem
memory = fsmem.open(sys.argv[1])
memory.search("warm")
print("ready", flush=True)
for line in sys.stdin:
    print(",".join(hit.path for hit in memory.search(line.strip())), flush=True)
memory.close()
"""


def bench_size(count: int, reps: int, workdir: Path) -> dict:
    import fsmem
    from fsmem._index.index import Index

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

    memory = fsmem.open(root)  # as a program opens it: settings from the root, watching by default
    rebuild_ms = timed(memory.index.rebuild)
    out["rebuild_files_per_s"] = count / (rebuild_ms / 1000)
    out["index_bytes"] = index_generation_bytes(root)
    conn = fts5_build(root, workdir / f"fts-{count}.db")

    out["first_search"] = timed(memory.search, qs[0])  # starts the watcher
    for q in qs:  # warm caches for every engine alike
        memory.search(q, mode="words")
        fts5_search(conn, q)
    # fsmem and FTS5 alternate, query by query, so load from other jobs falls on both alike.
    fsmem_samples, fts5_samples = [], []
    for _ in range(reps):
        for q in qs:
            # By words, as FTS5 ranks (with a local model installed the default fuses meaning too).
            fsmem_samples.append(timed(memory.search, q, mode="words"))
            fts5_samples.append(timed(fts5_search, conn, q))
    out["fsmem"] = stats(fsmem_samples)
    out["fts5"] = stats(fts5_samples)
    out["hand_edit"] = stats(hand_edit_latencies(memory, 5))
    memory.close()
    unwatched = Index(memory.drive)
    out["fsmem_compare"] = stats([timed(unwatched.search, q) for q in qs[:5]])  # a process that cannot watch

    out["write_to_other"] = stats(write_to_other_process(root, 20))
    time.sleep(RACY_AGE_S)  # the files just written are settled by the next search, as a person's are
    fsmem_cold(root, "settle")
    out.update(cold_against_rg(root, qs[:10], reps=min(reps, 2)))
    cold, cold_rg = [], []
    run = fsmem.open(root).run(thread_id="bench")
    for i, q in enumerate(qs[:8]):  # each right after a write; alternating with rg, as above
        assert run.call({"command": "write", "path": f"bench/cold{i}.md", "content": f"# C\n\n{q}\n"})["ok"]
        cold.append(timed(fsmem_cold, root, q))
        cold_rg.append(timed(rg_search, root, q))
    out["fsmem_cold"] = stats(cold)
    out["rg_cold"] = stats(cold_rg)
    conn.close()
    shutil.rmtree(root, ignore_errors=True)
    return out


def cold_against_rg(root: Path, qs: list[str], reps: int) -> dict:
    """A cold ``fsmem search`` with nothing changed since the last search and no ``fsmem watch``
    (it compares every file's stamp: one ``lstat`` a file and a folder), by words (``--mode words``,
    what rg does) and as the settings have it (with a local model installed and passages embedded,
    that loads the model), against a cold ``rg``, alternating query by query so the machine's load
    falls on each alike; and the load average before and after."""
    words, default, grep = [], [], []
    before = os.getloadavg()[0]
    for _ in range(reps):
        for q in qs:
            words.append(timed(fsmem_cold, root, q, "--mode", "words"))
            grep.append(timed(rg_search, root, q))
            default.append(timed(fsmem_cold, root, q))
    return {"cold_words": stats(words), "cold_default": stats(default), "rg_alone": stats(grep),
            "load_alone": (before, os.getloadavg()[0])}


def hand_edit_latencies(memory, n: int) -> list[float]:
    """A person saves a file; the same process searches until it finds the new word."""
    samples = []
    for i in range(n):
        word = f"zqxhand{i}word"
        start = time.perf_counter()
        (memory.root / "bench-hand.md").write_text(f"# Hand\n\n{word}\n", encoding="utf-8")
        while not memory.search(word):
            if time.perf_counter() - start > 10:
                raise AssertionError("a hand edit was not found within 10 s")
            time.sleep(0.005)
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def write_to_other_process(root: Path, n: int) -> list[float]:
    """A write through the memory tool here, then process B's next search, which must find it."""
    import fsmem

    run = fsmem.open(root).run(thread_id="bench")
    searcher = subprocess.Popen([sys.executable, "-c", SEARCHER, str(root)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True, env=child_env())
    samples = []
    try:
        assert searcher.stdin is not None and searcher.stdout is not None
        assert searcher.stdout.readline() == "ready\n"
        for i in range(n):
            word = f"zqxbench{i}word"
            start = time.perf_counter()
            result = run.call({"command": "write", "path": f"bench/w{i}.md", "content": f"# W {i}\n\n{word}\n"})
            assert result["ok"], result
            searcher.stdin.write(word + "\n")
            searcher.stdin.flush()
            found = searcher.stdout.readline().strip()
            samples.append((time.perf_counter() - start) * 1000)
            # First: with a local model installed, meaning may bring a near file after it.
            assert found.split(",")[0] == f"bench/w{i}.md", found
    finally:
        searcher.communicate("", timeout=60)
    return samples


RSS_PROBE = """
import sys, fsmem
def rss():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024
memory = fsmem.open(sys.argv[1])
run = memory.run(thread_id="rss")
memory.search("warm")
for i in range(int(sys.argv[3])):  # a warm-up first, so what the first writes allocate once is not counted
    run.call({"command": "write", "path": f"rss/f{i % 50}.md", "content": f"# R\\n\\nword{i}\\n"})
    memory.search(f"word{i}")
before = rss()
for i in range(int(sys.argv[2])):
    run.call({"command": "write", "path": f"rss/f{i % 50}.md", "content": f"# R\\n\\nword{i}\\n"})
    memory.search(f"word{i}")
print(before, rss())
memory.close()
"""


def rss_growth(workdir: Path, n: int) -> tuple[float, float]:
    """RSS (MB) of a long-lived process before and after ``n`` writes and ``n`` searches, after a warm-up
    of as many (200 at most: past it the growth is the row's, not the first writes')."""
    root = workdir / "rss"
    generate(root, 1000)
    done = subprocess.run([sys.executable, "-c", RSS_PROBE, str(root), str(n), str(min(n, 200))], capture_output=True,
                          text=True, env=child_env(), check=True)
    before, after = done.stdout.split()
    shutil.rmtree(root, ignore_errors=True)
    return float(before), float(after)


def index_generation_bytes(root: Path) -> int:
    base = root / ".fsmem" / "index"
    return sum(p.stat().st_size for p in base.rglob("*") if p.is_file())


def render(results: list[dict], rss: tuple[int, float, float] | None) -> str:
    """Every row on the path a user takes, freshness included, beside baselines run in the same process."""
    rows = []
    header = ("| files | `memory.search(mode=\"words\")` p50/p95 ms | FTS5 bm25+snippet p50/p95 ms | FTS5 ÷ fsmem "
              "| write in A → B's next search p50/p95 ms | cold `fsmem search` after a write p50 ms "
              "| cold rg p50 ms | cold fsmem ÷ rg | cold `fsmem search --mode words`, nothing changed, p50 ms "
              "| cold rg p50 ms | ÷ rg | the same with the default mode p50 ms | load before/after "
              "| hand edit found (same process) p50/p95 ms |")
    rows.append(header)
    rows.append("|" + "---|" * (header.count("|") - 1))
    for r in results:
        f50, f95 = r["fsmem"]
        s50, s95 = r["fts5"]
        w50, w95 = r["write_to_other"]
        c50, _ = r["fsmem_cold"]
        rc50, _ = r["rg_cold"]
        h50, h95 = r["hand_edit"]
        a50, _ = r["cold_words"]
        d50, _ = r["cold_default"]
        ra50, _ = r["rg_alone"]
        load = " / ".join(f"{value:.1f}" for value in r["load_alone"])
        rows.append(
            f"| {r['files']:,} | {f50:.2f} / {f95:.2f} | {s50:.2f} / {s95:.2f} | {s50 / f50:.1f}× "
            f"| {w50:.1f} / {w95:.1f} | {c50:.0f} | {rc50:.0f} | {c50 / rc50:.2f}× "
            f"| {a50:.0f} | {ra50:.0f} | {a50 / ra50:.2f}× | {d50:.0f} | {load} | {h50:.0f} / {h95:.0f} |")
    extra = []
    if rss is not None:
        n, before, after = rss
        extra.append(f"- RSS of a long-lived process over {n:,} writes + {n:,} searches: {before:.0f} → "
                     f"{after:.0f} MB ({after - before:+.1f} MB)")
    extra += [f"- {r['files']:,} files: first search (starts the watcher) {r['first_search']:.0f} ms; a process "
              f"that cannot watch compares every search: p50 {r['fsmem_compare'][0]:.1f} ms; rebuild "
              f"{r['rebuild_files_per_s']:,.0f} files/s; index {r['index_bytes'] / 1e6:.1f} MB for "
              f"{r['corpus_bytes'] / 1e6:.1f} MB of files" for r in results]
    return "\n".join(rows + [""] + extra)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench search", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=None, help="comma-separated corpus sizes (default 1000,10000,100000)")
    parser.add_argument("--quick", action="store_true", help="1,000 and 10,000 files, fewer repetitions")
    parser.add_argument("--reps", type=int, default=None, help="repetitions of each query")
    parser.add_argument("--rss", type=int, default=None,
                        help="writes and searches of the RSS row (default 10000; 2000 with --quick; 0: none)")
    args = parser.parse_args(argv)
    if shutil.which("rg") is None:
        print("ripgrep (rg) is needed for the baseline: apt-get install -y ripgrep", file=sys.stderr)
        return 2
    # The cold rows run an installed wheel, whose bytecode pip compiled; the other processes started here
    # (process B, the RSS probe) run this checkout, so compile its bytecode as an installed fsmem has it.
    compileall.compile_dir(str(REPO / "fsmem"), quiet=1)
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else (
        [1000, 10000] if args.quick else [1000, 10000, 100000])
    reps = args.reps or (3 if args.quick else 5)
    results = []
    with tempfile.TemporaryDirectory(prefix="fsmem-bench-") as temp:
        started = time.perf_counter()
        SHELL[:] = [str(installed_fsmem(Path(temp) / "installed"))]
        print(f"[search] installed a wheel of this checkout in a venv of its own for the cold rows "
              f"({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
        for size in sizes:
            print(f"[search] {size:,} files …", file=sys.stderr, flush=True)
            results.append(bench_size(size, reps, Path(temp)))
        n = args.rss if args.rss is not None else (2000 if args.quick else 10000)
        rss = (n, *rss_growth(Path(temp), n)) if n else None
    print(render(results, rss))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
