"""What changed since the index's last commit, searched from memory: the delta a search reads for itself
instead of committing it (a commit fsyncs several files, and on a busy disk each fsync waits for the
journal; a search never does).

    ram = RamIndex(store)                                    # one per index, kept: each delta is built in it
    delta = Delta.build(store, ram, changed, removed, searcher, averages)  # the files read now, indexed in RAM
    delta.hidden                                             # paths whose committed documents it replaces

A search then asks both the committed searcher (less ``delta.hidden``) and ``delta.searcher``, and ranks
their hits as one BM25 ranking (``fsmem._index.query``): BM25 depends on the corpus only through each
term's document frequency, the number of documents and each field's average length, so

- each term's clause is weighted by ``Weights.factor``: the idf the committed index will give it once the
  delta is committed (its documents counted, the ones it replaces not), over the idf the searcher at hand
  computes (the committed one, or the delta's own);
- the delta's index is given the committed index's average field lengths, by a few ballast documents
  that no search returns (their one word is never asked for: ``BALLAST_KIND`` is filtered out).

A delta document then scores as it will once committed, to within what committing it moves the averages.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterable, Sequence
from typing import Any

import tantivy
from tantivy import Occur, Query

from fsmem._core.search import Indexed
from fsmem._index.generations import WRITER_HEAP, IndexStore
from fsmem._index.state import READER_RELOAD

SCORED_FIELDS = ("title", "body", "meta")  # fields BM25 ranks on (``fsmem._index.query``'s text fields)
BALLAST_WORD = "fsmemballast"
BALLAST_KIND = "ballast"
MAX_BALLAST = 1000  # a delta of giants against tiny files gets averages this many empty documents allow


class Delta:
    """The documents of ``changed`` as the files are now, in a RAM index, and the paths they hide."""

    def __init__(
        self,
        searcher: tantivy.Searcher | None,
        hidden: frozenset[str],
        entries: dict[str, Indexed],
        weights: Weights,
        schema: Any,
    ) -> None:
        self.searcher = searcher  # None: the delta only removes (deleted files)
        self.hidden = hidden  # every path it stands for (read, or found gone)
        self.entries = entries  # what it read of each file it holds, as a manifest records it
        self.weights = weights
        self.hide = (Occur.MustNot, Query.term_set_query(schema, "path", sorted(hidden)))
        self.no_ballast = (Occur.MustNot, Query.term_query(schema, "kind", BALLAST_KIND))

    @classmethod
    def build(
        cls,
        store: IndexStore,
        ram: RamIndex,
        changed: Iterable[str],
        removed: Iterable[str],
        committed: tantivy.Searcher,
        averages: dict[str, float],
    ) -> Delta:
        docs: list[tantivy.Document] = []
        entries: dict[str, Indexed] = {}
        lengths = dict.fromkeys(SCORED_FIELDS, 0)
        changed = list(changed)
        for path, got in store.read(changed):
            if got is None:
                continue
            doc, entries[path] = got
            docs.append(doc)
            for field in SCORED_FIELDS:
                lengths[field] += sum(len(store.analyzer.analyze(text)) for text in doc.get_all(field))
        hidden = frozenset([*changed, *removed])
        manifest = store.manifest
        held = sum(1 for path in hidden if manifest is not None and path in manifest.entries)
        searcher = ram.holding([*docs, *_ballast(len(docs), lengths, averages)]) if docs else None
        total = max(1, committed.num_docs - held + len(docs))
        return cls(searcher, hidden, entries, Weights(committed, searcher, total), store.schema)

    def overlay(self, held: dict[str, Indexed]) -> dict[str, Indexed]:
        """What the index holds (``held``, the manifest's), with what this delta read in place of it."""
        seen = {path: entry for path, entry in held.items() if path not in self.hidden}
        seen.update(self.entries)
        return seen


class RamIndex:
    """The RAM index deltas are built in, kept with its writer for the index's life: a new index and
    writer for each delta would start tantivy's threads and fault in a fresh heap every time, about
    three times the build, on the path of the search that reads it. Each build replaces what the one
    before held; a searcher of an earlier build stays as it was (tantivy's searchers are snapshots)."""

    def __init__(self, store: IndexStore) -> None:
        self._store = store
        self._mutex = threading.Lock()
        self._kept: tuple[tantivy.Index, tantivy.IndexWriter] | None = None

    def holding(self, docs: Sequence[tantivy.Document]) -> tantivy.Searcher:
        """A searcher of ``docs`` alone."""
        with self._mutex:
            if self._kept is None:
                ram = tantivy.Index(self._store.schema)  # no path: in RAM, and its commit writes nothing to disk
                ram.config_reader(READER_RELOAD)
                ram.register_tokenizer("fsmem", self._store.analyzer)
                self._kept = (ram, ram.writer(heap_size=WRITER_HEAP, num_threads=1))
            ram, writer = self._kept
            writer.delete_all_documents()  # the segments of the build before are dropped whole at the commit
            for doc in docs:
                writer.add_document(doc)
            writer.commit()
            ram.reload()
            return ram.searcher()


class Weights:
    """Each clause's factor, so that the committed searcher and the delta's give the same idf: the one
    the committed index will give once the delta is committed (``total`` documents)."""

    def __init__(self, committed: tantivy.Searcher, delta: tantivy.Searcher | None, total: int) -> None:
        self.committed = committed
        self.delta = delta
        self.total = total
        self._freq: dict[tuple[int, str, str], int] = {}

    def for_searcher(self, searcher: tantivy.Searcher) -> _Factor:
        return _Factor(self, searcher)

    def doc_freq(self, searcher: tantivy.Searcher | None, field: str, token: str) -> int:
        if searcher is None:
            return 0
        key = (id(searcher), field, token)
        found = self._freq.get(key)
        if found is None:
            found = self._freq[key] = searcher.doc_freq(field, token)
        return found

    def factor(self, searcher: tantivy.Searcher, field: str, tokens: Sequence[str]) -> float:
        target = sum(
            idf(self.doc_freq(self.committed, field, t) + self.doc_freq(self.delta, field, t), self.total)
            for t in tokens
        )
        own = sum(idf(self.doc_freq(searcher, field, t), searcher.num_docs) for t in tokens)
        return target / own if own > 0 else 1.0


class _Factor:
    """``Weights.factor`` for one searcher: what ``TextQuery.clauses`` multiplies each boost by."""

    def __init__(self, weights: Weights, searcher: tantivy.Searcher) -> None:
        self.weights = weights
        self.searcher = searcher

    def __call__(self, field: str, tokens: Sequence[str]) -> float:
        return self.weights.factor(self.searcher, field, tokens)


def idf(doc_freq: int, docs: int) -> float:
    """tantivy's BM25 idf (``tantivy::query::bm25::idf``)."""
    return math.log(1.0 + (docs - doc_freq + 0.5) / (doc_freq + 0.5))


def average_lengths(searcher: tantivy.Searcher, schema: Any, analyzer: tantivy.TextAnalyzer) -> dict[str, float]:
    """Each scored field's average length in ``searcher``'s index, as its BM25 uses it. tantivy's Python
    API does not give the token totals, so the score explanation of one hit of a word of a document in
    the index is read (0: no document has a word in that field)."""
    docs = [searcher.doc(address) for _, address in searcher.search(Query.all_query(), 8, count=False).hits]
    out = {}
    for field in SCORED_FIELDS:
        out[field] = 0.0
        for doc in docs:
            words = [word for text in doc.get_all(field) for word in analyzer.analyze(text)]
            if not words:
                continue
            query = Query.term_query(schema, field, words[0])
            hits = searcher.search(query, 1, count=False).hits
            found = _average_in(json.loads(query.explain(searcher, hits[0][1]).to_json())) if hits else None
            if found is not None:
                out[field] = found
                break
    return out


def _average_in(node: dict[str, Any]) -> float | None:
    if str(node.get("description", "")).startswith("avgdl"):
        return float(node["value"])
    for child in node.get("details", ()):
        found = _average_in(child)
        if found is not None:
            return found
    return None


def _ballast(docs: int, lengths: dict[str, int], averages: dict[str, float]) -> list[tantivy.Document]:
    """Documents that bring the delta's average field lengths to ``averages``: one holding the tokens
    missing, and as many empty ones as a delta longer than the average needs."""
    wanted = {field: averages[field] for field in SCORED_FIELDS if averages[field] > 0}
    if not wanted:
        return []
    count = max(1, *(math.ceil(lengths[f] / a) - docs for f, a in wanted.items()))
    count = min(count, MAX_BALLAST)
    full = tantivy.Document()
    full.add_text("kind", BALLAST_KIND)
    for field, average in wanted.items():
        tokens = max(0, round(average * (docs + count) - lengths[field]))
        full.add_text(field, " ".join([BALLAST_WORD] * tokens))
    out = [full]
    for _ in range(count - 1):
        empty = tantivy.Document()
        empty.add_text("kind", BALLAST_KIND)
        out.append(empty)
    return out
