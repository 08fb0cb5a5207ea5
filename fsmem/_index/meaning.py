"""Recall by meaning over an index: which files' passages are embedded, embedding the rest in the
background, and the passages nearest a query.

    meaning = Meaning(index, embedder, keep)    # keep: FolderVectors, or the database's (PgVectors)
    meaning.start()                             # a thread embeds the backlog, a few files at a time
    near = meaning.view().nearest(vector, k=20) # {path: Near(cosine, version, n)} for the files the index holds now
    meaning.passage(path, near[path])           # (line, text) of that nearest passage, read from the keep
    meaning.status()                            # {"model", "files", "embedded", "backlog", "passages", …}

What is embedded follows the index: the files and versions its manifest holds. A passage is used only
while its file's version is the one the index holds, so a file changed since it was embedded is found
by words alone until its new passages are in (``backlog``). Embedding reads through the store, takes no
lock, and never runs in a search: a search uses what is kept at that moment.

What a search holds in memory and how it ranks: :mod:`fsmem._index.nearest` (the vectors as int8
codes, the answer the float32 vectors give); the view is kept beside the folder's keep for the next
process under the same key (:mod:`fsmem._index.kept_view`). The passages' texts stay in the keep, read for the few
files a search shows by meaning.
"""

from __future__ import annotations

# The keep's SQLite, loaded here, in the thread that builds the meaning, not by its worker: an import
# in the worker holds the GIL for milliseconds the main thread may need (`fsmem watch` installing its
# SIGTERM handler). A one-shot search that builds no meaning loads neither.
import sqlite3  # noqa: F401
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from fsmem._core.chunks import Chunk, chunk_text
from fsmem._core.versions import version_of
from fsmem._env.system import release_heap
from fsmem._errors import FsmemError
from fsmem._index.generations import MAX_INDEXED_BYTES
from fsmem._index.kept_view import load_kept, save_kept
from fsmem._index.nearest import Near, View, load_view
from fsmem._index.state import MANIFEST, file_key
from fsmem._index.vectors import VectorKeep

if TYPE_CHECKING:
    from fsmem._index.index import Index

__all__ = ["FILES_PER_ROUND", "Embeds", "Meaning"]

FILES_PER_ROUND = 8  # files embedded between two looks at what changed (a round of a few seconds)
POLL = 2.0  # seconds the worker sleeps with nothing to embed before it looks again
BACK_OFF = 30.0  # seconds it waits after the model failed
VIEW_FILE = "view"  # beside the keep (vectors.sqlite3.view): the view a new process loads (kept_view)
STOP_WAIT = 0.5  # seconds stop() waits for the worker to end: it stops between two files, never mid-file


class Embeds(Protocol):
    """What meaning needs of an embedder (``fsmem._llm.embed.Embedder``)."""

    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


class Meaning:
    def __init__(self, index: Index, embedder: Embeds, keep: VectorKeep) -> None:
        self.index = index
        self.embedder = embedder
        self.model = embedder.name
        self.keep = keep
        self._mutex = threading.Lock()  # one embedding round at a time in this process
        self._held: tuple[object, dict[str, str]] | None = None
        self._view: View | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()  # the running worker's: each worker is told by its own
        self._wake = threading.Event()
        # who closes the keep: close() when no worker runs, else the worker on its way out
        self._ending = threading.Lock()
        self._workers = 0  # running, the one told to stop included
        self._closing = False
        self.failure: str | None = None  # the worker's last model failure, said once

    # --- what is embedded ------------------------------------------------------------------------

    def live(self) -> dict[str, str]:
        """path → the version the index holds now."""
        manifest = self.index.store.manifest
        if manifest is None:
            self.index.store.open()
            manifest = self.index.store.manifest
        assert manifest is not None
        return {path: entry[1] for path, entry in manifest.load().items()}

    def held(self) -> dict[str, str]:
        mark = self.keep.mark()
        if self._held is None or self._held[0] != mark:
            self._held = (mark, self.keep.held(self.model))
        return self._held[1]

    def backlog(self, live: dict[str, str] | None = None) -> list[str]:
        live = self.live() if live is None else live
        held = self.held()
        return sorted(path for path, version in live.items() if held.get(path) != version)

    def status(self) -> dict[str, Any]:
        live = self.live()
        waiting = self.backlog(live)
        return {
            "model": self.model,
            "files": len(live),
            "embedded": len(live) - len(waiting),
            "backlog": len(waiting),
            "worker": self._thread is not None and self._thread.is_alive(),
            "failure": self.failure,
        }

    # --- embedding -------------------------------------------------------------------------------

    def embed_pending(
        self,
        files: int | None = None,
        progress: Callable[[int, int], None] | None = None,
        stopping: Callable[[], bool] = lambda: False,
    ) -> int:
        """Embed up to ``files`` files of the backlog (all when ``None``), until ``stopping`` says so
        (asked before each file); the number embedded."""
        with self._mutex:
            live = self.live()
            self.keep.prune(self.model, live)
            waiting = self.backlog(live)
            todo = waiting if files is None else waiting[:files]
            done = 0
            for path, got in self.index.drive.index_read(todo, MAX_INDEXED_BYTES):
                if stopping():
                    break
                if got is None or version_of(got[1]) != live[path]:
                    continue  # gone or changed since the index read it: the index's next look says what to embed
                self._embed_file(path, live[path], got[1].decode("utf-8", "replace"))
                done += 1
                if progress is not None:
                    progress(done, len(todo))
            return done

    def _embed_file(self, path: str, version: str, text: str) -> None:
        from fsmem._index.front_matter import file_document

        doc = file_document(path, text)
        chunks = chunk_text(doc.body, first_line=doc.body_line)
        if doc.kind in ("fact", "replaced_fact"):  # the sentence means more with what it is about
            chunks = [Chunk(chunk.line, f"{doc.title}\n{chunk.text}") for chunk in chunks]
        vectors = self.embedder.embed([chunk.text for chunk in chunks]) if chunks else np.zeros((0, 0), np.float32)
        self.keep.put(
            self.model,
            path,
            version,
            [(chunk.line, chunk.text, vectors[i].astype(np.float32).tobytes()) for i, chunk in enumerate(chunks)],
        )

    def start(self) -> None:
        """Embed the backlog in a thread of this process until :meth:`stop`."""
        if self._thread is not None and self._thread.is_alive():
            return  # a search does not wake it: changes do (``wake``), and it looks every POLL seconds
        with self._ending:
            if self._closing:
                return  # closed: nothing starts again
            self._stop = stop = threading.Event()  # a worker told to stop before keeps its own, set
            self._workers += 1
        self._thread = threading.Thread(target=self._run, args=(stop,), name="fsmem-embed", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        """Tell the worker to stop (it does between two files) and wait for it a moment only: a file
        being embedded is finished and kept by the worker on its own."""
        self._stop.set()
        self._wake.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=STOP_WAIT)

    def close(self) -> None:
        """Stop the worker and close the keep: now when no worker runs any more, else by the worker
        itself once it has ended (never under it)."""
        self.stop()
        with self._ending:
            self._closing = True
            if self._workers:
                return
        self.keep.close()

    def _run(self, stop: threading.Event) -> None:
        try:
            self._rounds(stop)
        finally:
            with self._ending:
                self._workers -= 1
                last = self._closing and not self._workers
            if last:
                self.keep.close()

    def _rounds(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                done = self.embed_pending(FILES_PER_ROUND, stopping=stop.is_set)
                self.failure = None
                # The model's buffers for a batch are freed after it, but glibc keeps them in this
                # thread's arena (hundreds of MB for long passages): give them back each round.
                release_heap()
            except FsmemError as error:  # the model is down or refused: words alone meanwhile
                self.failure = error.message  # said once by the next search, shown by `fsmem index status`
                stop.wait(BACK_OFF)
                continue
            except Exception as error:  # noqa: BLE001 - a worker thread that died would leave meaning stale, unsaid
                self.failure = f"{type(error).__name__}: {error}"
                stop.wait(BACK_OFF)
                continue
            if not done:
                self._wake.wait(POLL)
                self._wake.clear()

    # --- searching -------------------------------------------------------------------------------

    def view(self) -> View:
        """What a search uses now: the kept passages of the versions the index holds, and how many files
        wait for theirs. Made again only when the index or the keep changed."""
        key = (self.keep.mark(), file_key(str(self.index.store.folder / MANIFEST)), self.index.store.generation)
        if self._view is not None and self._view.key == key:
            return self._view
        live = self.live()
        self._view = None  # the old vectors go before the new ones are read: one copy in memory at a time
        waiting, kept = len(self.backlog(live)), self.keep.beside(VIEW_FILE)
        view = load_kept(kept, self.keep, self.model, key, waiting) if kept else None
        if view is None:
            view = load_view(self.keep, self.model, live, key, waiting)
            if kept:
                save_kept(kept, self.model, view)  # for the next process: derived, never fsynced
        self._view = view
        return view

    def passage(self, path: str, near: Near) -> tuple[int, str] | None:
        """The line and text of the passage ``near`` names; ``None`` when its file was embedded again since."""
        return self.keep.passage(self.model, path, near.version, near.n)
