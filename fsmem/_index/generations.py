"""The index's store: tantivy generations on disk, opened and followed, written a batch at a time.

This is the only module that imports tantivy besides ``fsmem._index.query``. Every write to the index is one
``Batch``: tantivy's own writer lock (one writer per index, across processes) keeps batches apart, so
an index write never waits for the root lock a change through fsmem holds, and a search never waits
behind a writer. What a batch indexed is recorded in the generation's manifest before its writer is
released, so the manifest never claims more than the index holds; a commit that fails ends in a rebuilt
generation, never an index that stays broken (``faults``: what a commit cut short leaves, swept by the
next batch). Rebuilding swaps a new generation in
under the feed's lock (the folder: its root lock, the one lock there is; PostgreSQL: the cache's).
Everything here lives under the memory store's ``state`` and reads the memory through the store.
"""

from __future__ import annotations

import os
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import tantivy

from fsmem._core.search import SCHEMA_VERSION, FileDoc, Indexed
from fsmem._core.versions import version_of
from fsmem._env.system import release_heap
from fsmem._errors import Busy, FsmemError, IndexError_, Storage
from fsmem._index import faults
from fsmem._index.feed import IndexFeed
from fsmem._index.state import (
    BUILDING,
    CURRENT,
    MANIFEST,
    READER_RELOAD,
    Manifest,
    file_key,
    index_dir,
    new_generation_name,
    read_current,
    write_applied,
    write_current,
)
from fsmem._store.atomic import make_dirs
from fsmem._store.folder.walk import WALK_CACHE
from fsmem._store.interface import Store

MAX_INDEXED_BYTES = 1 << 20  # hand-made giants are indexed by their first MiB
LONGEST_WORD = 40  # longer tokens (hashes, base64) are left out of the index
WRITER_HEAP = 15_000_000  # tantivy's smallest: a batch is a few files; memory stays flat
BIG_HEAP = 128_000_000  # a batch of thousands (a rebuild, a checkout) gets more, and both cores
BIG_BATCH = 1000
BUILT_MARKER = "index.built"


class IndexWarning(UserWarning):
    """The index was missing, corrupt or from another version, and was rebuilt from the memory."""


class CommitFailed(Exception):  # noqa: N818 - never leaves the batch: it becomes a rebuild
    """tantivy refused a batch's commit (``error``); the batch ends in a rebuilt generation."""

    def __init__(self, error: ValueError) -> None:
        super().__init__(str(error))
        self.error = error


def schema() -> tantivy.Schema:
    """Fields searched and filtered on, and what a hit shows, stored as plain fields. ``head`` (the
    text before the body) and ``body`` together are the text last indexed: a hand edit found later
    keeps it as a version."""
    builder = tantivy.SchemaBuilder()
    for name in ("path", "level", "kind"):
        builder.add_text_field(name, stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("folder", tokenizer_name="raw", index_option="basic")
    builder.add_text_field("title", stored=True, tokenizer_name="fsmem")
    builder.add_text_field("body", stored=True, tokenizer_name="fsmem")
    builder.add_text_field("meta", tokenizer_name="fsmem")
    builder.add_text_field("links", tokenizer_name="raw", index_option="basic")  # core.links.link_keys
    builder.add_text_field("head", stored=True, index_option="basic", tokenizer_name="raw")
    builder.add_date_field("modified", stored=True, indexed=True, fast=True)
    builder.add_date_field("said", stored=True, indexed=True, fast=True)
    builder.add_date_field("until", stored=True)
    builder.add_integer_field("body_line", stored=True)
    builder.add_text_field("problem", stored=True, index_option="basic", tokenizer_name="raw")  # a broken fact's
    return builder.build()


def analyzer() -> tantivy.TextAnalyzer:
    # Words of letters and digits, lowercased, accents folded (café = cafe), very long tokens dropped.
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(LONGEST_WORD))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


class IndexStore:
    """The live generation of one memory's index: open it, search it, write batches to it, rebuild it."""

    def __init__(self, drive: Store, feed: IndexFeed) -> None:
        self.drive = drive
        self.feed = feed
        self.state = drive.state
        self.settings = drive.settings  # the one Settings of the memory
        self.schema = schema()
        self.analyzer = analyzer()
        self.manifest: Manifest | None = None
        self.generation: str | None = None
        self._tv: tantivy.Index | None = None
        # Threads of one process share the open generation; this guards which one it is (a thread
        # never waits on it for longer than an open).
        self._mutex = threading.Lock()
        # Threads of one process write their batches in turn, waiting here rather than polling for
        # tantivy's writer lock; a batch that follows another often finds its work done.
        self._batching = threading.RLock()
        self._current_file = str(index_dir(self.state) / CURRENT)
        self._current_key: tuple[int, int, int] | None = None
        self._meta_file = ""
        self._meta_key: tuple[int, int, int] | None = None
        self._pinned = False

    # --- opening ---------------------------------------------------------------------------------

    def searcher(self) -> tantivy.Searcher:
        """A searcher on the latest commit of the live generation (built first when there is none)."""
        return self.open().searcher()

    def open(self) -> tantivy.Index:
        """Follow CURRENT to the live generation and see its latest commit; build one, with a
        warning, when there is none usable."""
        tv = self._tv
        if self._pinned and tv is not None:  # a rebuild catching up on the generation it will swap in
            return tv
        seen = file_key(self._current_file)
        if seen is not None and seen == self._current_key and tv is not None:
            meta = file_key(self._meta_file)
            if meta is not None:  # CURRENT is replaced whole on every swap: same generation
                if meta != self._meta_key:
                    tv.reload()
                    self._meta_key = meta
                return tv
        with self._mutex:
            problem = self._follow_current()
            self._current_key = seen if problem is None else None
        if problem is not None:
            with self.feed.locked():
                problem = self._follow_current()  # another process may have built it meanwhile
                if problem is not None:
                    count = self.build_locked()
                    if problem != "first":
                        warnings.warn(
                            IndexWarning(
                                f"the search index {problem}; rebuilt it from the {count} files of {self.feed.origin}"
                            ),
                            stacklevel=4,
                        )
        assert self._tv is not None
        self._tv.reload()
        self._meta_key = file_key(self._meta_file)
        return self._tv

    def _follow_current(self) -> str | None:
        """``None`` when open on the live generation, else why not (for the warning)."""
        for _ in range(3):
            current = read_current(self.state)
            if current is None:
                folder = index_dir(self.state)
                if not folder.exists() or not any(folder.iterdir()):
                    # this process had it open, or one built it here before: it was lost, not new
                    known = self.generation is not None or (self.state / BUILT_MARKER).exists()
                    return "was missing" if known else "first"
                return "was unreadable (no valid CURRENT pointer)"
            if current.get("schema") != SCHEMA_VERSION:
                return f"was built by another version of fsmem (schema {current.get('schema')})"
            generation = current["generation"]
            if generation == self.generation and self._tv is not None and os.path.exists(self._meta_file):
                return None
            try:
                self._open_generation(generation)
                return None
            except IndexError_ as error:
                if read_current(self.state) == current:  # not swapped under us: really broken
                    return f"was corrupt: {error.message}"
        return "kept changing while being opened"

    def _open_generation(self, generation: str) -> None:
        folder = index_dir(self.state) / generation
        if not (folder / "meta.json").is_file():
            raise IndexError_(f"index generation {generation} has no meta.json")
        try:
            tv = tantivy.Index.open(str(folder))
        except ValueError as error:
            raise IndexError_(f"tantivy could not open it ({error})") from error
        tv.config_reader(READER_RELOAD)
        tv.register_tokenizer("fsmem", self.analyzer)
        manifest = Manifest(folder / MANIFEST)
        manifest.check()  # DamagedManifest (an IndexError_): what the index holds is unknown, so rebuilt
        self._tv, self.generation = tv, generation
        self.manifest = manifest
        self._meta_file = str(folder / "meta.json")
        self._meta_key = None

    @property
    def commit_key(self) -> object:
        """What tells one commit of the live generation from the next (its meta.json as last seen)."""
        return self._meta_key

    @property
    def folder(self) -> Path:
        return index_dir(self.state) / str(self.generation)

    @property
    def walk_cache(self) -> Path:
        return self.folder / WALK_CACHE

    def num_docs(self) -> int:
        return self.searcher().num_docs

    # --- writing ---------------------------------------------------------------------------------

    @contextmanager
    def batch(self, big: bool = False) -> Iterator[Batch]:
        """One batch, one commit, under tantivy's writer lock (waited for up to ``lock_timeout``)."""
        failed: CommitFailed | None = None
        self.open()  # a build it needs takes the feed's lock: never while holding the batches' turn
        with self._batching:
            self.open()
            assert self.generation is not None
            writer = self._writer(self.generation, big)
            batch = Batch(self, writer)
            try:
                yield batch
                batch.commit()
            except BaseException as error:
                try:
                    writer.rollback()
                except Exception:  # noqa: BLE001, S110 - the writer is dropped below either way
                    pass
                if not isinstance(error, CommitFailed) or self._pinned:
                    raise
                failed = error
            finally:
                try:
                    writer.wait_merging_threads()  # consumes the writer: its lock is released
                except Exception:  # noqa: BLE001, S110
                    pass
                del writer
                release_heap()
        if failed is not None:
            self._rebuild_after(failed)
        elif batch.touched:
            self.open()

    def _rebuild_after(self, failed: CommitFailed) -> None:
        """A commit failed: the generation may hold what it half wrote, so a new one is built from the
        memory (it holds what the batch meant to index: the files are read again) and swapped in. Not
        on a full or failing disk: a rebuild could not be written either; the generation keeps its last
        commit (what the failed one half wrote is swept by the next batch) and the fault is refused."""
        fault = faults.disk_fault(failed.error, "committing to the search index")
        if fault is not None:
            raise fault from failed.error
        with self.feed.locked():
            count = self.build_locked()
        warnings.warn(
            IndexWarning(
                f"the search index could not commit ({failed.error}); "
                f"rebuilt it from the {count} files of {self.feed.origin}"
            ),
            stacklevel=5,
        )

    def _writer(self, generation: str, big: bool) -> tantivy.IndexWriter:
        """A writer for one batch, on an index opened after the previous batch ended.

        tantivy keeps the list of files it manages (``.managed.json``) in memory per opened index and
        rewrites it whole: a writer on an index opened before another batch committed would drop that
        batch's files from the list, and their orphans would never be collected. So each batch
        reopens, and reopens again when another batch wrote while it waited for the writer.
        """
        folder = index_dir(self.state) / generation
        deadline = time.monotonic() + self.settings.lock_timeout
        while True:
            before = file_key(str(folder / ".managed.json"))
            try:
                tv = tantivy.Index.open(str(folder))
            except ValueError as error:
                raise IndexError_(
                    f"the index could not be opened for writing ({error}); "
                    "`fsmem index rebuild` makes a new one from the files"
                ) from error
            tv.register_tokenizer("fsmem", self.analyzer)
            writer = self._new_writer(tv, big, deadline)
            if file_key(str(folder / ".managed.json")) == before:
                faults.sweep_strays(folder)  # under the writer's lock: what a commit cut short left
                return writer
            writer.wait_merging_threads()  # another batch wrote in between: drop it, open again

    def _new_writer(self, tv: tantivy.Index, big: bool, deadline: float | None = None) -> tantivy.IndexWriter:
        deadline = deadline or time.monotonic() + self.settings.lock_timeout
        heap, threads = (BIG_HEAP, min(2, os.cpu_count() or 1)) if big else (WRITER_HEAP, 1)
        while True:
            try:
                return tv.writer(heap_size=heap, num_threads=threads)
            except ValueError as error:
                # Another batch (this process or another) is being written: it is short.
                if "LockBusy" not in str(error) or time.monotonic() > deadline:
                    raise IndexError_(f"could not open the index for writing: {error}") from error
                time.sleep(0.005)

    # --- rebuilding ------------------------------------------------------------------------------

    def rebuild(
        self, progress: Callable[[int, int], None] | None = None, catch_up: Callable[[], None] | None = None
    ) -> int:
        """Rebuild from the memory beside the live index, then swap it in (under the feed's lock, after
        ``catch_up`` brought it level with changes made meanwhile). Returns the file count."""
        generation, count, mark = self._build_generation(progress)
        with self.feed.locked():
            self._finish_build(generation, mark, catch_up)
        return count

    def build_locked(self, catch_up: Callable[[], None] | None = None) -> int:
        generation, count, mark = self._build_generation(None)
        self._finish_build(generation, mark, catch_up)
        return count

    def _build_generation(self, progress: Callable[[int, int], None] | None) -> tuple[str, int, object]:
        """Fill a new generation from the memory, beside the live one (which keeps serving searches).
        Returns it, its file count, and the feed's mark taken before the memory was read: the feed's
        lock may not hold writers off (PostgreSQL's does not), so what the build may have missed is
        applied after it from there."""
        base = index_dir(self.state)
        make_dirs(base)  # the state too, 0700, when it was removed (a worker's cache folder)
        generation = new_generation_name()
        folder = base / generation
        folder.mkdir()
        try:
            return self._fill_generation(folder, generation, progress)
        except BaseException:
            import shutil  # a build or a collection: never a search's path

            shutil.rmtree(folder, ignore_errors=True)  # a live process's half build is never collected
            raise

    def _fill_generation(
        self, folder: Path, generation: str, progress: Callable[[int, int], None] | None
    ) -> tuple[str, int, object]:
        (folder / BUILDING).write_text(str(os.getpid()))
        tv = tantivy.Index(self.schema, path=str(folder), reuse=False)
        tv.config_reader(READER_RELOAD)
        tv.register_tokenizer("fsmem", self.analyzer)
        mark = self.feed.mark()
        files = sorted(entry.path for entry in self.drive.walk_files() if _indexable(entry.path))
        entries: dict[str, Indexed] = {}
        writer = self._new_writer(tv, big=True)
        try:
            for done, (path, got) in enumerate(self.read(files), 1):
                if got is not None:
                    writer.add_document(got[0])
                    entries[path] = got[1]
                if progress and (done % 200 == 0 or done == len(files)):
                    progress(done, len(files))
            writer.commit()
        finally:
            writer.wait_merging_threads()
            del writer
        Manifest(folder / MANIFEST).rewrite(entries)
        return generation, len(entries), mark

    def _finish_build(self, generation: str, mark: object, catch_up: Callable[[], None] | None) -> None:
        """Under the feed's lock: catch up with changes made while building, then swap CURRENT to it."""
        with self._mutex:
            self._open_generation(generation)
            self._pinned = True
        try:
            if catch_up is not None:
                catch_up()
        finally:
            self._pinned = False
        write_applied(self.folder, mark, self.feed.durable_marks)  # all noted so far was caught up with
        write_current(self.state, generation)
        (self.folder / BUILDING).unlink(missing_ok=True)
        marker = self.state / BUILT_MARKER
        if not marker.exists():
            marker.write_text("an index of this memory was built; if index/ goes missing, say so\n")
        self._collect_generations()

    def _collect_generations(self) -> None:
        """Delete generations that are neither live nor being built by a live process."""
        current = read_current(self.state)
        live = current.get("generation") if current else None
        for folder in index_dir(self.state).iterdir():
            if not folder.is_dir() or folder.name == live:
                continue
            marker = folder / BUILDING
            if marker.exists():
                try:
                    os.kill(int(marker.read_text() or 0), 0)
                    continue  # still being built
                except (ValueError, ProcessLookupError, OSError):
                    pass
            import shutil  # only with an old generation to remove

            shutil.rmtree(folder, ignore_errors=True)

    def files_under(self, path: str) -> set[str] | None:
        """The memory files under ``path`` when it is a folder (the store's walk), else ``None``."""
        try:
            if not self.drive.is_dir(path):
                return None
            return {entry.path for entry in self.drive.walk_files(path)}
        except (Storage, Busy):  # the store did not answer: taken as "nothing there", a batch would
            raise  # drop what the folder holds, and its mark would say it had read it all
        except FsmemError:  # refused (a link leading out, a name no tool could give) or gone meanwhile
            return None

    def expand(self, paths: Iterable[str], files: bool = False) -> tuple[list[str], list[str]]:
        """The files to (re)read for ``paths`` (files or folders, root-relative; ``""`` the whole memory),
        and the paths held that are gone: a path that no longer exists goes with everything under it; a
        folder path stands for every file under it. ``files``: every path but ``""`` names a file."""
        assert self.manifest is not None
        manifest = self.manifest
        indexed = manifest.load()
        changed: set[str] = set()
        removed: set[str] = set()
        for raw in paths:
            path = raw.strip("/")
            if files and path:  # a file: read, or found gone, when it is read
                changed.add(path)
                continue
            present = self.files_under(path)
            held = not path or manifest.holds_under(path)  # else no path held lies under it
            if present is not None:
                prefix = path + "/" if path else ""
                changed |= present
                if held:
                    removed |= {p for p in indexed if p.startswith(prefix) and p not in present}
            else:  # a file (read, or found gone, when it is read), or nothing any more
                changed.add(path)
                if held:
                    removed |= {p for p in indexed if p.startswith(path + "/")}
        return sorted(changed), sorted(removed - changed)

    # --- documents -------------------------------------------------------------------------------

    def read(self, paths: Iterable[str]) -> Iterator[tuple[str, tuple[tantivy.Document, Indexed] | None]]:
        """Each path with its file's document and what the manifest records for it (``None``: gone,
        or no memory file), read through the store a few at a time."""
        from fsmem._index.front_matter import file_document  # python-frontmatter: not for a search with nothing to read

        paths = list(paths)
        reads = self.drive.index_read([path for path in paths if _indexable(path)], MAX_INDEXED_BYTES)
        for path in paths:
            got = next(reads)[1] if _indexable(path) else None
            if got is None:
                yield path, None
                continue
            stamp, data = got
            try:
                text, utf8 = data.decode("utf-8"), True
            except UnicodeDecodeError:
                text, utf8 = data.decode("utf-8", "replace"), False
            doc = file_document(path, text, utf8=utf8)
            yield (
                path,
                (
                    self._document(doc, text[: len(text) - len(doc.body)], stamp.mtime_ns),
                    Indexed(stamp, version_of(data), time.time_ns()),
                ),
            )

    def _document(self, doc: FileDoc, head: str, modified_ns: int) -> tantivy.Document:
        out = tantivy.Document()
        for name in ("path", "folder", "level", "kind", "title", "body", "meta"):
            out.add_text(name, getattr(doc, name))
        out.add_text("head", head)
        for key in doc.links:
            out.add_text("links", key)
        out.add_date("modified", datetime.fromtimestamp(modified_ns / 1e9, UTC))
        if doc.said:
            out.add_date("said", doc.said)
        if doc.until:
            out.add_date("until", doc.until)
        out.add_integer("body_line", doc.body_line)
        if doc.problem is not None:
            out.add_text("problem", doc.problem)
        return out

    def text_seen(self, path: str) -> bytes | None:
        """The text the index last read for ``path`` (``None`` when it holds none)."""
        searcher = self.searcher()
        query = tantivy.Query.term_query(self.schema, "path", path)
        hits = searcher.search(query, 1).hits
        if not hits:
            return None
        doc = searcher.doc(hits[0][1])
        return ((doc.get_first("head") or "") + (doc.get_first("body") or "")).encode("utf-8")


class Batch:
    """What one writer does before its commit: (re)index paths, drop paths, note the pending mark."""

    def __init__(self, store: IndexStore, writer: tantivy.IndexWriter) -> None:
        self.store = store
        self.writer = writer
        assert store.manifest is not None
        self.manifest = store.manifest
        self.added: dict[str, Indexed] = {}
        self.gone: list[str] = []
        self.applied: object = None  # how far into the store's feed this batch reaches (its mark)
        self.touched = False

    def seen(self) -> dict[str, Indexed]:
        """What the index holds (read inside the batch: no other batch changes it meanwhile)."""
        return self.manifest.load()

    def apply(self, changed: Iterable[str], removed: Iterable[str]) -> int:
        """(Re)index ``changed``, drop ``removed``. A path planned for removal that exists again by now
        is indexed instead; files are read as they are added (thousands never sit in memory whole)."""
        held = self.seen()
        indexed = dropped = 0
        for path, got in self.store.read(dict.fromkeys([*changed, *removed])):  # a path read as gone is dropped
            self.writer.delete_documents_by_term("path", path)
            if got is None:
                self.gone.append(path)
                dropped += path in held
            else:
                self.writer.add_document(got[0])
                self.added[path] = got[1]
                indexed += 1
        return indexed + dropped

    def refresh(self, paths: Iterable[str], files: bool = False) -> int:
        """Bring ``paths`` (files or folders, root-relative; ``""`` the whole memory) up to date: a path
        that no longer exists is removed with everything under it; a folder path refreshes every file
        under it. ``files``: every path but ``""`` names a file (none needs listing as a folder)."""
        changed, removed = self.store.expand(paths, files)
        return self.apply(changed, removed)

    def settle(self, paths: Iterable[str]) -> None:
        """Record verified racy entries as settled (same stamp, same hash, indexed "now")."""
        entries = self.seen()
        now = time.time_ns()
        for path in paths:
            if path in entries and path not in self.added:
                self.added[path] = Indexed(entries[path][0], entries[path][1], now)

    def commit(self) -> None:
        if self.added or self.gone:
            try:
                self.writer.commit()
            except ValueError as error:
                raise CommitFailed(error) from error
            self.writer.garbage_collect_files()  # segments orphaned by merges or by a crash mid-commit
            self.touched = True
        self.manifest.load()
        self.manifest.append(self.added, [path for path in self.gone if path in self.manifest.entries])
        if self.manifest.needs_compaction():
            self.manifest.rewrite(self.manifest.load())
            self.manifest.load()
        if self.applied is not None:
            write_applied(self.store.folder, self.applied, self.store.feed.durable_marks)


def _indexable(path: str) -> bool:
    """Whether the manifest (lines of tab-separated fields) and tantivy (UTF-8) can hold ``path``: a
    name with undecodable bytes or a line break is listed by the folder, but no tool could name it."""
    if "\n" in path or "\t" in path:
        return False
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
