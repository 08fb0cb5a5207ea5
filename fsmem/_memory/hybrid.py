"""Search by words and by meaning, fused, for one memory (``Memory.search`` with ``mode``).

    hybrid = Hybrid(memory.index, settings)
    hybrid.search("what did we decide about the launch", "both", 10, words=lambda depth: [...], filters=...)

The embedder is built on the first search that wants meaning (``fsmem._llm.embed.build_embedder``):
none set up means words alone, silently; one set up that cannot be used (a folder without a model, a
server that does not answer) means words alone with one warning, and a model that failed is left alone
for ``DOWN_FOR`` seconds, so a search then costs what words alone cost. Passages are embedded in the
background of a process that lives (``settings.watch``), never by a search.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fsmem._core.fusion import SearchResults, fuse, holding_first
from fsmem._core.search import SearchHit
from fsmem._env.config import Settings
from fsmem._errors import FsmemError
from fsmem._index.state import index_dir
from fsmem._index.vectors import FolderVectors, VectorKeep
from fsmem._store.folder.drive import Drive

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    from fsmem._index.index import Index
    from fsmem._index.meaning import Meaning
    from fsmem._index.nearest import Near

__all__ = ["FUSE_DEPTH", "Hybrid", "MeaningWarning"]

FUSE_DEPTH = 20  # files meaning brings to the fusion
WORDS_DEPTH = 10  # files words bring (each with its snippet: more cost more than the model's vector)
MIN_COSINE = 0.25  # a file words did not find comes by meaning alone only this near (MiniLM: unrelated ≈ 0-0.15)
DOWN_FOR = 30.0  # seconds a model that failed is not asked again
VECTORS_FILE = "vectors.sqlite3"


class MeaningWarning(UserWarning):
    """Recall by meaning is set up but cannot be used now: the search went on by words alone."""


def keep_of(index: Index) -> VectorKeep:
    """Where the index's store keeps passages: a SQLite file beside the folder's generations, or the
    database's rows (a new worker finds them embedded)."""
    if isinstance(index.drive, Drive):
        return FolderVectors(index_dir(index.state) / VECTORS_FILE)
    from fsmem._index.pg_vectors import PgVectors  # psycopg: only for a store that is PostgreSQL's
    from fsmem._store.postgres.drive import PgDrive

    if not isinstance(index.drive, PgDrive):
        raise TypeError(f"no passage vectors for a store of type {type(index.drive).__name__}")
    return PgVectors(index.drive)


class Hybrid:
    def __init__(self, index: Index, settings: Settings) -> None:
        self.index = index
        self.settings = settings
        self._mutex = threading.Lock()
        self._meaning: Meaning | None = None
        self._built = False
        self._down_until = 0.0
        self._warned = False
        self._pool: ThreadPoolExecutor | None = None  # the query's vector, made while words search
        self._keep: VectorKeep | None = None  # where passages are kept: made once, the meaning's too
        self._stopped = False  # the memory was closed: searches go on, nothing starts in the background
        index.committer.after.append(lambda: self.wake())  # each commit may hold passages to embed

    def meaning(self) -> Meaning | None:
        """The memory's meaning (built once), or ``None`` when it is off or cannot be set up."""
        if self._built:
            return self._meaning
        from fsmem._llm.embed import build_embedder, meaning_wanted  # model files: only once meaning is asked

        with self._mutex:
            if not self._built:
                try:
                    embedder = build_embedder(self.settings) if meaning_wanted(self.settings) else None
                except FsmemError as error:
                    self._warn(error.message)
                    embedder = None
                if embedder is not None:
                    from fsmem._index.meaning import Meaning  # numpy: only once there is an embedder

                    self._keep = self._keep or keep_of(self.index)
                    self._meaning = Meaning(self.index, embedder, self._keep)
                self._built = True
        return self._meaning

    def wake(self, _paths: object = None) -> None:
        """A change was committed: the worker, if one runs, embeds it soon."""
        if self._meaning is not None:
            self._meaning.wake()

    def start(self) -> bool:
        """Embed in the background of this process; ``False`` when there is no meaning to embed for."""
        meaning = self.meaning()
        if meaning is not None:
            meaning.start()
        return meaning is not None

    def stop(self) -> None:
        self._stopped = True
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False)
        if self._meaning is not None:
            self._meaning.close()  # the keep is closed once its worker has ended
        elif self._keep is not None:
            self._keep.close()  # only asked whether it held anything

    def vectors_bytes(self) -> int:
        """What the folder's keep takes on disk (0 on PostgreSQL, where the rows are the database's)."""
        meaning = self.meaning()
        return meaning.keep.size() if meaning is not None and isinstance(meaning.keep, FolderVectors) else 0

    def status(self) -> dict[str, Any]:
        meaning = self.meaning()
        if meaning is None:
            return {"meaning": "off"}
        return {"meaning": "full" if not meaning.backlog() else "partial", **meaning.status()}

    def search(
        self,
        query: str,
        mode: str,
        limit: int,
        words: Callable[[int], list[SearchHit]],
        filters: Callable[[], list[Any]],
    ) -> SearchResults:
        """``words(depth)`` is the words search (it brings the index up to date first); ``filters()`` the
        index's clauses for include, exclude and since, which files found by meaning alone pass too.
        With meaning off (``settings.meaning``), no embedding module is even imported."""
        if mode == "words" or self.settings.meaning == "off":
            return SearchResults(words(limit), "off")
        if self._nothing_embedded():
            return SearchResults(words(limit), "partial")
        meaning = self.meaning()
        if meaning is None or time.monotonic() < self._down_until:
            return SearchResults(words(limit), "off")
        depth = max(limit, FUSE_DEPTH)
        if self.settings.watch and not self._stopped:
            meaning.start()
        if meaning.failure:
            self._warn(meaning.failure)
        from concurrent.futures import ThreadPoolExecutor  # only once the query's vector is wanted

        with self._mutex:
            pool = self._pool = self._pool or ThreadPoolExecutor(1, thread_name_prefix="fsmem-query-vector")
        asked = pool.submit(meaning.embedder.embed_query, query)  # the model runs while words search
        word_hits = words(max(limit, WORDS_DEPTH))
        try:
            vector = asked.result()
            view = meaning.view()  # the keep may fail too (a read-only or full disk, the database away)
            nearest = view.nearest(vector, depth)  # which reads the keep again, for a few files
        except Exception as error:  # noqa: BLE001 - meaning is an aid: whatever fails, words answer
            self._down(error)
            return SearchResults(word_hits[:limit], "off")
        known = {hit.path: hit for hit in word_hits}
        newer = self.index.changed_since_commit()  # their passages may be older than the files: words only
        near = {
            path: found
            for path, found in nearest.items()
            if (found.cosine >= MIN_COSINE or (mode == "both" and path in known)) and path not in newer
        }
        if mode == "meaning":
            order = sorted(((path, found.cosine) for path, found in near.items()), key=lambda item: (-item[1], item[0]))
        else:
            by_words = {hit.path: hit.score for hit in word_hits}
            order = fuse(by_words, {path: found.cosine for path, found in near.items()}, self.settings.meaning_weight)
        missing = [path for path, _ in order[: depth * 2] if path not in known]
        if missing:
            known.update(self._meaning_hits(meaning, missing, near, filters))
        hits = [known[path]._replace(score=round(score, 4)) for path, score in order if path in known]
        whole = not view.waiting and not newer  # a file changed since the commit is not embedded yet
        return SearchResults(holding_first(hits)[:limit], "full" if whole else "partial")

    def _nothing_embedded(self) -> bool:
        """A process that embeds nothing itself (a one-shot command) before any passage is kept: the
        query's vector could change no answer, so the local model is not loaded for it (most of a cold
        search's time). An endpoint costs nothing to ask of, and is asked (a server down is said)."""
        from fsmem._llm.embed import local_model_in_reach

        if self._built or self.settings.watch or not local_model_in_reach(self.settings):
            return False
        if self._keep is None:
            self._keep = keep_of(self.index)
        try:
            return not self._keep.holds_any()
        except FsmemError:  # the keep cannot tell now (busy): the search by meaning fails and says so, once
            return False

    def _meaning_hits(
        self, meaning: Meaning, paths: list[str], near: dict[str, Near], filters: Callable[[], list[Any]]
    ) -> dict[str, SearchHit]:
        """Hits for files found by meaning alone (those the filters let through), shown by their passage
        (a file embedded again since the view was made is left out: its new passages are for the next)."""
        from fsmem._index.query import SNIPPET_CHARS  # tantivy's: loaded by the index already

        found = self.index.hits_for(paths, filters())
        shown = {}
        for path, hit in found.items():
            if hit.kind in ("fact", "replaced_fact"):  # a sentence, shown whole with whether it holds
                shown[path] = hit
                continue
            try:
                passage = meaning.passage(path, near[path])
            except Exception as error:  # noqa: BLE001 - the keep went away since: the file is left out, said
                self._down(error)
                passage = None
            if passage is None:
                continue
            line, text = passage
            snippet = " ".join(text.split())
            cut = snippet if len(snippet) <= SNIPPET_CHARS else snippet[:SNIPPET_CHARS].rsplit(" ", 1)[0] + " …"
            shown[path] = hit._replace(snippet=cut, line=line)
        return shown

    def _down(self, error: Exception) -> None:
        """Meaning failed in a search: said once, and not asked again for ``DOWN_FOR`` seconds."""
        self._down_until = time.monotonic() + DOWN_FOR
        self._warn(error.message if isinstance(error, FsmemError) else f"{type(error).__name__}: {error}")

    def _warn(self, reason: str) -> None:
        if self._warned:
            return
        self._warned = True
        warnings.warn(
            MeaningWarning(f"searching by words alone: recall by meaning is unavailable ({reason})"), stacklevel=4
        )
