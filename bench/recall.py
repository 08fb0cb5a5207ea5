"""Recall on LoCoMo's dev split: does a question in plain language find the session that answers it?

    python -m bench.recall                       # or: bin/bench recall
    python -m bench.recall --data DIR --k 5      # another copy of the split, another cut-off

The five dev conversations (``shared/data/locomo-dev/`` beside the repository, read in place and never
copied into it) become one root of markdown files, one a session (``conv-26/session-03.md``: a title
with the session's date, then ``Speaker: text`` lines, a shared photo's caption in brackets). Each
question of categories 1-4 (multi-hop, temporal, open-domain, single-hop) is asked of every ranker in
the same run, the rankers taking turns question by question so load from other jobs falls on all alike;
a question is a hit when one of its top ``k`` files holds one of its evidence turns. It prints session
recall@k overall and by category, query p50/p95, and what a question's length costs for each ranker:
p50 of 2 words (the question's two longest) and of 15 (the question, then the next ones' words).

A ranker is a function of the corpus and a scratch folder that yields a function from a question to
paths, best first (``RANKERS``: add a row by adding one).
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.timing import median_p95

REPO = Path(__file__).resolve().parent.parent
DATA = Path("shared/data/locomo-dev")  # found beside the repository or one of its parents
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_SESSION = re.compile(r"session_(\d+)")
_TURN = re.compile(r"D:?(\d+):(\d+)")  # "D8:6; D9:17" holds two; "D:11:26" is D11:26 mistyped
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    answers: frozenset[str]  # paths of the sessions holding an evidence turn


@dataclass(frozen=True)
class Corpus:
    root: Path  # the files written out, one root
    files: dict[str, str]  # path -> text
    questions: tuple[Question, ...]
    unanswerable: int  # questions of categories 1-4 whose evidence names no session there is


class MissingData(Exception):
    """The split is not where it was looked for; the message says where to put it."""


Ranker = Callable[[str], list[str]]  # a question -> paths, best first, at most k
RankerFactory = Callable[[Corpus, Path, int], AbstractContextManager[Ranker]]


def find_data(given: str | None) -> Path:
    """The split's folder: ``given``, else ``shared/data/locomo-dev`` beside the repository or above it."""
    if given is not None:
        places = [Path(given)]
    else:
        places = [parent / DATA for parent in REPO.parents]
    for place in places:
        if (place / "README.md").is_file() or any(place.glob("*.json")):
            return place
    looked = ", ".join(str(place) for place in places[:3])
    raise MissingData(
        f"Error: the LoCoMo dev split is not there (looked in {looked}, …): put its JSON files in "
        f"{DATA} beside the repository, or pass --data DIR"
    )


def session_file(number: int, when: str, turns: list[dict]) -> str:
    lines = [f"# Session {number} · {when}", ""]
    for turn in turns:
        text = turn.get("text", "")
        if turn.get("blip_caption"):
            text += f" [shared a photo: {turn['blip_caption']}]"
        lines.append(f"{turn.get('speaker', '?')}: {text}")
    return "\n".join(lines) + "\n"


def load(data: Path, root: Path) -> Corpus:
    """Write one file a session under ``root`` and gather the questions of categories 1-4."""
    files: dict[str, str] = {}
    questions: list[Question] = []
    unanswerable = 0
    conversations = sorted(data.glob("*.json"))
    if not conversations:
        raise MissingData(f"Error: no conversation (*.json) in {data}")
    for source in conversations:
        record = json.loads(source.read_text("utf-8"))
        record = record.get("conversation", record) | {"qa": record.get("qa", [])}
        folder = f"conv-{source.stem}"
        sessions: dict[int, str] = {}
        for key, turns in record.items():
            match = _SESSION.fullmatch(key)
            if match and isinstance(turns, list) and turns:
                number = int(match.group(1))
                path = f"{folder}/session-{number:02d}.md"
                sessions[number] = path
                files[path] = session_file(number, str(record.get(f"{key}_date_time", "")), turns)
        for qa in record["qa"]:
            if qa.get("category") not in CATEGORIES:
                continue
            turns = [int(m.group(1)) for evidence in qa.get("evidence", []) for m in _TURN.finditer(evidence)]
            answers = frozenset(sessions[n] for n in turns if n in sessions)
            if not answers:
                unanswerable += 1
                continue
            questions.append(Question(str(qa["question"]), int(qa["category"]), answers))
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return Corpus(root, files, tuple(questions), unanswerable)


# --- the rankers ---------------------------------------------------------------------------------


@contextmanager
def fsmem_words(corpus: Corpus, workdir: Path, k: int) -> Iterator[Ranker]:
    """fsmem's search as a program calls it: ``memory.search`` in a long-lived process."""
    import fsmem

    memory = fsmem.open(corpus.root, create=True)
    memory.index.rebuild()
    try:
        yield lambda question: [hit.path for hit in memory.search(question, limit=k, mode="words")]
    finally:
        memory.close()


@contextmanager
def fts5_or(corpus: Corpus, workdir: Path, k: int) -> Iterator[Ranker]:
    """SQLite FTS5 asked for any of the question's words, ranked by ``bm25()`` (title double), with
    ``snippet()`` as fsmem's hits have; the porter stemmer over unicode61 with diacritics removed,
    the fairest of FTS5's own tokenizers for English questions."""
    conn = sqlite3.connect(workdir / "fts5.db")
    conn.execute(
        "CREATE VIRTUAL TABLE docs USING fts5(path UNINDEXED, title, body, "
        "tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    conn.executemany(
        "INSERT INTO docs VALUES (?, ?, ?)",
        [(path, text.split("\n", 1)[0].lstrip("# "), text) for path, text in corpus.files.items()],
    )
    conn.commit()
    sql = (
        "SELECT path, snippet(docs, 2, '', '', '…', 24) FROM docs WHERE docs MATCH ? "
        f"ORDER BY bm25(docs, 0.0, 2.0, 1.0) LIMIT {int(k)}"
    )

    def rank(question: str) -> list[str]:
        words = _WORD.findall(question)
        if not words:
            return []
        return [row[0] for row in conn.execute(sql, (" OR ".join(f'"{word}"' for word in words),))]

    try:
        yield rank
    finally:
        conn.close()


NOTES: list[str] = []  # what a ranker measured besides its questions (printed under the table)


def _fsmem_meaning(mode: str, settings: dict[str, object] | None = None) -> RankerFactory:
    """fsmem's search by ``mode`` with recall by meaning as set up here (the local model ``fsmem model
    install`` keeps, unless ``settings`` name another embedder); the corpus is embedded first, timed."""

    @contextmanager
    def factory(corpus: Corpus, workdir: Path, k: int) -> Iterator[Ranker]:
        import dataclasses

        import fsmem
        from fsmem._env.config import load_settings

        chosen = dataclasses.replace(load_settings(corpus.root), **(settings or {}))  # type: ignore[arg-type]
        memory = fsmem.open(corpus.root, create=True, settings=chosen)
        memory.index.rebuild()
        from fsmem._errors import FsmemError

        started = time.perf_counter()
        try:
            embedded = memory.embed_pending()
        except FsmemError as error:
            NOTES.append(f"- fsmem {mode}{' ' + str(settings) if settings else ''}: {error.message}")
            embedded = 0
        took = time.perf_counter() - started
        meaning = memory.hybrid.meaning()
        if meaning is None:
            NOTES.append(f"- fsmem {mode}: no embedding model (`fsmem model install`): its row is words alone")
        elif embedded:
            passages = meaning.view().passages
            size = memory.hybrid.vectors_bytes()
            NOTES.append(
                f"- embedding {meaning.model}: {embedded} files, {passages} passages in {took:.1f} s "
                f"({passages / took:.1f} passages/s, {embedded / took:.2f} files/s); vectors kept "
                f"{size / 1e6:.1f} MB, {size / embedded * 1000 / 1e6:.1f} MB per 1k files of this corpus"
            )
        try:
            yield lambda question: [hit.path for hit in memory.search(question, limit=k, mode=mode)]
        finally:
            memory.close()

    return factory


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


RANKERS: dict[str, RankerFactory] = {
    "fsmem words": fsmem_words,
    "FTS5 OR (porter)": fts5_or,
    "fsmem meaning": _fsmem_meaning("meaning"),
    "fsmem both": _fsmem_meaning("both"),
    # an embeddings endpoint configured but not answering: words alone, one warning, a few ms more at most
    "fsmem both (endpoint down)": _fsmem_meaning(
        "both", {"embed_endpoint": f"http://127.0.0.1:{_closed_port()}/v1", "embed_endpoint_model": "down"}
    ),
}


# --- the run -------------------------------------------------------------------------------------


@dataclass
class Tally:
    hits: dict[int, int]
    times: list[float]
    short: list[float]  # a question's 2 longest words
    long: list[float]  # 15 words: the question, then the next ones'


def run(corpus: Corpus, names: list[str], k: int, workdir: Path) -> dict[str, Tally]:
    tallies = {name: Tally({c: 0 for c in CATEGORIES}, [], [], []) for name in names}
    questions = corpus.questions
    words = [_WORD.findall(q.text) for q in questions]
    flat = [word for each in words for word in each]
    with _entered(corpus, names, k, workdir) as rankers:
        for rank in rankers.values():  # warm each engine's caches alike
            for question in questions[:20]:
                rank(question.text)
        offset = 0
        for i, question in enumerate(questions):
            short = " ".join(sorted(words[i], key=len, reverse=True)[:2])
            long = " ".join(flat[offset : offset + 15])
            offset += len(words[i])
            order = names if i % 2 == 0 else names[::-1]
            for name in order:
                rank, tally = rankers[name], tallies[name]
                start = time.perf_counter()
                found = rank(question.text)
                tally.times.append(time.perf_counter() - start)
                if question.answers.intersection(found[:k]):
                    tally.hits[question.category] += 1
                tally.short.append(_timed(rank, short))
                tally.long.append(_timed(rank, long))
    return tallies


@contextmanager
def _entered(corpus: Corpus, names: list[str], k: int, workdir: Path) -> Iterator[dict[str, Ranker]]:
    from contextlib import ExitStack

    with ExitStack() as stack:
        rankers = {}
        for name in names:
            scratch = workdir / f"ranker-{len(rankers)}"
            scratch.mkdir()
            rankers[name] = stack.enter_context(RANKERS[name](corpus, scratch, k))
        yield rankers


def _timed(rank: Ranker, query: str) -> float:
    start = time.perf_counter()
    rank(query)
    return time.perf_counter() - start


def render(corpus: Corpus, tallies: dict[str, Tally], k: int) -> str:
    asked = {c: sum(1 for q in corpus.questions if q.category == c) for c in CATEGORIES}
    total = sum(asked.values())
    header = (
        f"| ranker | recall@{k} | "
        + " | ".join(f"{CATEGORIES[c]} ({asked[c]})" for c in CATEGORIES)
        + " | query p50 / p95 ms | 2 words p50 ms | 15 words p50 ms | 15 ÷ 2 words |"
    )
    rows = [header, "|" + "---|" * (header.count("|") - 1)]
    for name, tally in tallies.items():
        p50, p95 = median_p95(tally.times)
        short, long = median_p95(tally.short)[0], median_p95(tally.long)[0]
        by_category = " | ".join(f"{tally.hits[c] / asked[c]:.3f}" if asked[c] else "-" for c in CATEGORIES)
        rows.append(
            f"| {name} | {sum(tally.hits.values()) / total:.3f} | {by_category} | {p50 * 1000:.2f} / "
            f"{p95 * 1000:.2f} | {short * 1000:.2f} | {long * 1000:.2f} | {long / short:.1f}× |"
        )
    rows.append("")
    rows.append(
        f"- {len(corpus.files)} session files, {total} questions of categories 1-4 "
        f"({corpus.unanswerable} more name no session as evidence and are left out)"
    )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench recall", description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help=f"the split's folder (default: {DATA} beside the repository)")
    parser.add_argument("--k", type=int, default=5, help="a hit is an answering session in the top k (default 5)")
    parser.add_argument(
        "--rankers", default=",".join(RANKERS), help=f"comma-separated, of: {', '.join(RANKERS)} (default: all)"
    )
    parser.add_argument("--quick", action="store_true", help="accepted for bin/bench all; the run is short anyway")
    args = parser.parse_args(argv)
    names = [name.strip() for name in args.rankers.split(",") if name.strip()]
    unknown = [name for name in names if name not in RANKERS]
    if unknown or not names:
        print(f"Error: no ranker {unknown[0] if unknown else ''!r}; rankers: {', '.join(RANKERS)}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="fsmem-recall-") as temp:
        workdir = Path(temp)
        root = workdir / "root"
        root.mkdir()
        try:
            corpus = load(find_data(args.data), root)
        except MissingData as missing:
            print(missing, file=sys.stderr)
            return 2
        print(f"[recall] {len(corpus.files)} files, {len(corpus.questions)} questions …", file=sys.stderr, flush=True)
        tallies = run(corpus, names, args.k, workdir)
    print(render(corpus, tallies, args.k))
    print("\n".join(NOTES))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
