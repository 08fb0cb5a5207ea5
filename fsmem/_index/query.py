"""The index's query side: a text query and its filters become tantivy clauses; hits come back ranked,
facts that hold before replaced ones, each with a snippet cut by tantivy's generator."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime

import tantivy
from tantivy import Occur, Query

from fsmem._core.search import (
    SearchHit,
    content_words,
    fact_note,
    glob_to_regex,
    parse_since,
    split_query,
)
from fsmem._core.when import check_moment
from fsmem._errors import BadRequest
from fsmem._index.delta import BALLAST_WORD, Delta

TITLE_BOOST = 2.0
META_BOOST = 0.5
PREFIX_EXPANSIONS = 16
SNIPPET_CHARS = 180

_TEXT_FIELDS = (("title", TITLE_BOOST), ("body", 1.0), ("meta", META_BOOST))

Globs = Iterable[str] | str | None
Weigh = Callable[[str, Sequence[str]], float]  # a clause's factor by field and tokens (``fsmem._index.delta``)
Filters = list[tuple[Occur, Query]]


class TextQuery:
    """One search over a searcher of the store (its schema and analyzer)."""

    def __init__(self, schema: tantivy.Schema, analyzer: tantivy.TextAnalyzer) -> None:
        self.schema = schema
        self.analyzer = analyzer
        self._replaced = Query.term_query(schema, "kind", "replaced_fact")

    def search(
        self,
        searcher: tantivy.Searcher,
        query: str,
        filters: Filters,
        limit: int = 10,
        delta: Delta | None = None,
    ) -> list[SearchHit]:
        """Any of the words, ranked by BM25 (a file with more of them, and rarer ones, first), and every
        quoted phrase; replaced facts only after the rest.
        ``filters`` come from :meth:`filters` (made first, so a bad glob or date changes nothing).
        With ``delta`` (what changed since the last commit), its documents stand for the committed ones of
        their paths, ranked with them as one ranking (``fsmem._index.delta``)."""
        if delta is None:
            text_query = Query.boolean_query(self.clauses(query, [searcher]))
            found = self._ranked(searcher, [(Occur.Must, text_query), *filters], limit)
            if not found:
                return []
            snippets = self._snippets(searcher, text_query)
            return [_hit(doc, score, snippets) for score, doc in found]
        sources = [(searcher, [*filters, delta.hide])]
        if delta.searcher is not None:
            sources.append((delta.searcher, [*filters, delta.no_ballast]))
        searchers = [source for source, _ in sources]
        holding: list[tuple[float, tantivy.Document, tantivy.Searcher, Query]] = []
        replaced: list[tuple[float, tantivy.Document, tantivy.Searcher, Query]] = []
        for source, extra in sources:
            text_query = Query.boolean_query(self.clauses(query, searchers, delta.weights.for_searcher(source)))
            for score, doc in self._ranked(source, [(Occur.Must, text_query), *extra], limit):
                (replaced if _is_replaced(doc) else holding).append((score, doc, source, text_query))
        ranked = [*sorted(holding, key=_by_score), *sorted(replaced, key=_by_score)][:limit]
        generators: dict[int, tantivy.SnippetGenerator] = {}
        out = []
        for score, doc, source, text_query in ranked:
            if id(source) not in generators:
                generators[id(source)] = self._snippets(source, text_query)
            out.append(_hit(doc, score, generators[id(source)]))
        return out

    def _snippets(self, searcher: tantivy.Searcher, text_query: Query) -> tantivy.SnippetGenerator:
        snippets = tantivy.SnippetGenerator.create(searcher, text_query, self.schema, "body")
        snippets.set_max_num_chars(SNIPPET_CHARS)
        return snippets

    def linking_to(
        self, searcher: tantivy.Searcher, keys: Iterable[str], limit: int, delta: Delta | None = None
    ) -> list[str]:
        """Paths of the files whose links carry any of ``keys`` (``core.links.link_keys``), at most ``limit``."""
        terms = [Query.term_query(self.schema, "links", key) for key in dict.fromkeys(keys)]
        if not terms:
            return []
        wanted = Query.boolean_query([(Occur.Should, term) for term in terms])
        paths: set[str] = set()
        for source, extra in _sources(searcher, delta):
            found = source.search(Query.boolean_query([(Occur.Must, wanted), *extra]), limit, count=False)
            paths.update(str(source.doc(address).get_first("path")) for _, address in found.hits)
        return sorted(paths)[:limit]

    def _ranked(
        self, searcher: tantivy.Searcher, base: list[tuple[Occur, Query]], limit: int
    ) -> list[tuple[float, tantivy.Document]]:
        """The best ``limit`` documents, those that hold first, then replaced facts.

        One search usually settles it: when its best ``limit`` hold no replaced fact, or are every
        match there is, no other order is possible. Otherwise the files that hold are searched alone
        (a ``MustNot`` leaves their scores as they were) and replaced facts fill the places left.
        """
        doc = searcher.doc
        hits = searcher.search(Query.boolean_query(base), limit, count=False).hits
        found = [(score, doc(address)) for score, address in hits]
        replaced = [hit for hit in found if _is_replaced(hit[1])]
        if not replaced:
            return found
        holding = [hit for hit in found if not _is_replaced(hit[1])]
        if len(found) < limit:
            return holding + replaced
        hits = searcher.search(Query.boolean_query([*base, (Occur.MustNot, self._replaced)]), limit, count=False).hits
        found = [(score, doc(address)) for score, address in hits]
        if len(found) < limit:
            only_replaced = Query.boost_query(self._replaced, 0.0)  # a filter: it adds nothing to scores
            hits = searcher.search(
                Query.boolean_query([*base, (Occur.Must, only_replaced)]), limit - len(found), count=False
            ).hits
            found += [(score, doc(address)) for score, address in hits]
        return found

    def hits_for(
        self, searcher: tantivy.Searcher, paths: Iterable[str], filters: Filters, delta: Delta | None = None
    ) -> dict[str, SearchHit]:
        """The hits of ``paths`` that pass ``filters`` (score 0, snippet from the body's beginning):
        files found by meaning alone."""
        wanted = [Query.term_query(self.schema, "path", path) for path in paths]
        if not wanted:
            return {}
        base = [(Occur.Must, Query.boolean_query([(Occur.Should, term) for term in wanted])), *filters]
        out = {}
        for source, extra in _sources(searcher, delta):
            found = source.search(Query.boolean_query([*base, *extra]), len(wanted), count=False).hits
            out.update({hit.path: hit for hit in (_hit(source.doc(address), 0.0, None) for _, address in found)})
        return out

    def clauses(
        self, query: str, searchers: Sequence[tantivy.Searcher], weigh: Weigh | None = None
    ) -> list[tuple[Occur, Query]]:
        """The query's clauses: one per word (the last also as a prefix of words in any of ``searchers``),
        any of them; and one per quoted phrase, each required (quotes ask for those words, in that order).
        ``weigh``: a factor for each clause's boost (by field and tokens), so two searchers rank alike."""
        if not isinstance(query, str):
            raise BadRequest("query must be text")
        parts = content_words(split_query(query))
        clauses: list[tuple[Occur, Query]] = []
        last = len(parts.words) - 1
        for text, is_prefix, occur in [
            *((word, parts.last_is_prefix and i == last, Occur.Should) for i, word in enumerate(parts.words)),
            *((phrase, False, Occur.Must) for phrase in parts.phrases),
        ]:
            tokens: list[str | tuple[int, str]] = list(self.analyzer.analyze(text))
            if len(tokens) == 1:
                clauses.append((occur, self._term_clause(str(tokens[0]), searchers if is_prefix else (), weigh)))
            elif tokens:
                words = [str(token) for token in tokens]
                phrases = [
                    (
                        Occur.Should,
                        Query.boost_query(
                            Query.phrase_query(self.schema, field, tokens),
                            boost * (weigh(field, words) if weigh else 1.0),
                        ),
                    )
                    for field, boost in _TEXT_FIELDS
                ]
                clauses.append((occur, Query.boolean_query(phrases)))
        if not clauses:
            raise BadRequest(f'the query {query!r} has no words to search for: give at least one word or "a phrase"')
        return clauses

    def _term_clause(self, token: str, prefix_from: Sequence[tantivy.Searcher], weigh: Weigh | None) -> Query:
        """The word in any text field; with ``prefix_from``, also up to ``PREFIX_EXPANSIONS`` words it
        begins in each field (weighted 0.7), the first in order of those any of the searchers holds."""
        subs: list[Query] = []
        for field, boost in _TEXT_FIELDS:
            terms = [(token, boost)]
            if prefix_from and field != "meta":
                counts: dict[str, int] = {}
                for searcher in prefix_from:  # tantivy's order: the most frequent first, then by name
                    for term, count in searcher.terms_with_prefix(field, token, limit=PREFIX_EXPANSIONS):
                        if term != token and term != BALLAST_WORD:
                            counts[term] = counts.get(term, 0) + count
                longer = sorted(counts, key=lambda term: (-counts[term], term))[:PREFIX_EXPANSIONS]
                terms.extend((term, boost * 0.7) for term in longer)
            subs.extend(
                Query.boost_query(
                    Query.term_query(self.schema, field, term), weight * (weigh(field, [term]) if weigh else 1.0)
                )
                for term, weight in terms
            )
        return Query.boolean_query([(Occur.Should, sub) for sub in subs])

    def filters(self, include: Globs, exclude: Globs, since: datetime | str | None) -> list[tuple[Occur, Query]]:
        filters: list[tuple[Occur, Query]] = []
        includes = [include] if isinstance(include, str) else list(include or [])
        excludes = [exclude] if isinstance(exclude, str) else list(exclude or [])
        if includes:
            filters.append(
                (Occur.Must, Query.boolean_query([(Occur.Should, self._glob(pattern)) for pattern in includes]))
            )
        filters.extend((Occur.MustNot, self._glob(pattern)) for pattern in excludes)
        if since is not None:
            moment = parse_since(since, datetime.now(UTC)) if isinstance(since, str) else check_moment(since)
            filters.append(
                (Occur.Must, Query.range_query(self.schema, "modified", tantivy.FieldType.Date, lower_bound=moment))
            )
        return filters

    def _glob(self, pattern: str) -> Query:
        try:
            return Query.regex_query(self.schema, "path", glob_to_regex(pattern))
        except ValueError as error:
            raise BadRequest(
                f"the pattern {pattern!r} is not a usable glob ({error}); use *, ** and ? as in 'seo/**' or '*.md'"
            ) from error


def _sources(searcher: tantivy.Searcher, delta: Delta | None) -> list[tuple[tantivy.Searcher, Filters]]:
    """Where a search looks: the committed searcher (less what ``delta`` replaces), and the delta's."""
    if delta is None:
        return [(searcher, [])]
    out: list[tuple[tantivy.Searcher, Filters]] = [(searcher, [delta.hide])]
    if delta.searcher is not None:
        out.append((delta.searcher, [delta.no_ballast]))
    return out


def _by_score(hit: tuple[float, object, object, object]) -> float:
    return -hit[0]


def _hit(doc: tantivy.Document, score: float, snippets: tantivy.SnippetGenerator | None) -> SearchHit:
    """A hit: the best window of its body (tantivy's generator), or its beginning when the body is
    short or the match was only in the title or metadata."""
    get = doc.get_first
    body = get("body") or ""
    snippet = snippets.snippet_from_doc(doc) if snippets is not None and len(body) > SNIPPET_CHARS else None
    fragment = snippet.fragment() if snippet is not None else ""
    if snippet is not None and fragment.strip():  # newlines before the window's first byte (one byte in UTF-8)
        lines_before = body.encode("utf-8").count(b"\n", 0, snippet.fragment_range().start)
    else:
        stripped = body.lstrip()
        fragment = stripped[:SNIPPET_CHARS]
        lines_before = body.count("\n", 0, len(body) - len(stripped))
    text = " ".join(fragment.split())
    kind = str(get("kind"))
    if kind in ("fact", "replaced_fact"):
        text += fact_note(kind, _utc(get("said")), _utc(get("until")))
    return SearchHit(
        str(get("path")),
        str(get("title")),
        kind,
        str(get("level")),
        round(score, 4),
        text,
        _utc(get("modified")),
        int(get("body_line") or 1) + lines_before,
        problem=get("problem"),
    )


def _utc(moment: datetime | None) -> datetime | None:
    return moment.replace(tzinfo=UTC) if moment is not None and moment.tzinfo is None else moment


def _is_replaced(doc: tantivy.Document) -> bool:
    return doc.get_first("kind") == "replaced_fact"
