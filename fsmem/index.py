"""The full-text index of a root: one tantivy document per markdown file, never stale.

    index = Index(root)                       # or Index(drive, settings)
    index.search("deploy staging", limit=5)   # compares sizes/mtimes first, unless a watcher beats
    index.refresh({"seo/titles.md"})          # under the root lock, after a change through fsmem
    index.reconcile(); index.rebuild(progress); index.status()

This is the only module that imports tantivy. Every write to the index happens under the root's lock
(the one the drive writes under), with a writer made for that batch and dropped after it: tantivy
refuses a second writer at once, and a writer whose commit failed silently drops later commits, so one
is never kept across batches.
"""

from __future__ import annotations

import json
import os
import threading
import time
import warnings
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import tantivy
from tantivy import Occur, Query

from fsmem.core.search import (
    RACY_WINDOW_NS,
    SCHEMA_VERSION,
    FileDoc,
    SearchHit,
    Indexed,
    Plan,
    fact_note,
    file_doc,
    glob_to_regex,
    parse_since,
    plan_reconcile,
    split_query,
)
from fsmem.errors import BadRequest, Busy, IndexError_
from fsmem.ondisk import on_disk
from fsmem.index_state import (
    pending_file,
    BUILDING,
    CURRENT,
    MANIFEST,
    Manifest,
    index_dir,
    new_generation_name,
    read_current,
    read_stable,
    WALK_CACHE,
    load_walk_cache,
    save_walk_cache,
    stamp_of,
    unchanged_since,
    walk_files,
    walk_tree,
    watcher_health,
    write_current,
)

TITLE_BOOST = 2.0
META_BOOST = 0.5
PREFIX_EXPANSIONS = 16
SNIPPET_CHARS = 180
MAX_INDEXED_BYTES = 1 << 20  # hand-made giants are indexed by their first MiB
REFRESH_HEAP = 20_000_000
REBUILD_HEAP = 128_000_000
LOCK_TIMEOUT = 10.0
BIG_BATCH = 1000  # a batch this large gets the rebuild's writer (more memory, both cores)
RECONCILE_CHUNK = 5000  # files re-indexed per hold of the root lock
BUILT_MARKER = "index.built"
LONGEST_WORD = 40  # longer tokens (hashes, base64) are dropped from the index


class IndexWarning(UserWarning):
    """The index was missing, corrupt or from another version, and was rebuilt from the files."""


def _schema() -> tantivy.Schema:
    """Fields searched and filtered on, and what a hit shows (stored as plain fields)."""
    builder = tantivy.SchemaBuilder()
    for name in ("path", "level", "kind"):
        builder.add_text_field(name, stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("folder", tokenizer_name="raw", index_option="basic")
    builder.add_text_field("title", stored=True, tokenizer_name="fsmem")
    builder.add_text_field("body", stored=True, tokenizer_name="fsmem")
    builder.add_text_field("meta", tokenizer_name="fsmem")
    builder.add_date_field("modified", stored=True, indexed=True, fast=True)
    builder.add_date_field("said", stored=True, indexed=True, fast=True)
    builder.add_date_field("until", stored=True)
    builder.add_integer_field("body_line", stored=True)
    return builder.build()


def _analyzer() -> tantivy.TextAnalyzer:
    # Words of letters and digits, lowercased, accents folded (café = cafe), very long tokens dropped.
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(LONGEST_WORD))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .build()
    )


_TEXT_FIELDS = (("title", TITLE_BOOST), ("body", 1.0), ("meta", META_BOOST))


class Index:
    """The index of one root. Cheap to create; opens (or builds) the tantivy index on first use."""

    def __init__(self, drive_or_root: Any, settings: Any = None, *,
                 lock: Callable[[], Any] | None = None) -> None:
        is_path = isinstance(drive_or_root, (str, os.PathLike))
        self.root = Path(drive_or_root if is_path else drive_or_root.root).resolve()
        self.drive = None if is_path else drive_or_root
        self.settings = settings
        # A drive brings its lock (``drive.locked()``): two lock objects on one file in one process
        # would wait for each other forever.
        self._lock_factory = lock or (None if is_path else drive_or_root.locked)
        self._lock: Any = None
        # Threads of one process share this object: the root lock keeps other processes out, the
        # mutex other threads (always taken after the root lock, never before it); how deep this
        # thread is inside the root lock is per thread.
        self._mutex = threading.RLock()
        self._local = threading.local()
        self.schema = _schema()
        self.analyzer = _analyzer()
        self._tv: tantivy.Index | None = None
        self._generation: str | None = None
        self._manifest: Manifest | None = None
        self._current_key: tuple[int, int, int] | None = None
        self.files_seen = 0
        self._current_file = str(index_dir(self.root) / CURRENT)
        self._pending_file = str(pending_file(self.root))
        self._meta_file = ""
        self._meta_key: tuple[int, int, int] | None = None
        self._replaced = Query.term_query(self.schema, "kind", "replaced_fact")

    # --- opening ---------------------------------------------------------------------------------

    def _setting(self, name: str, default: Any) -> Any:
        return getattr(self.settings, name, default) if self.settings is not None else default

    def _open_generation(self, generation: str) -> None:
        folder = index_dir(self.root) / generation
        if not (folder / "meta.json").is_file():
            raise IndexError_(f"index generation {generation} has no meta.json")
        try:
            tv = tantivy.Index.open(str(folder))
        except ValueError as error:
            raise IndexError_(f"tantivy could not open it ({error})") from error
        tv.register_tokenizer("fsmem", self.analyzer)
        self._tv, self._generation = tv, generation
        self._manifest = Manifest(folder / MANIFEST)
        self._meta_key = None
        self._meta_file = str(folder / "meta.json")

    def _reload(self, key: tuple[int, int, int] | None = None) -> None:
        """See the latest commit, from any process; skipped when meta.json (whose stamp is ``key``, if
        the caller has it) has not been replaced."""
        assert self._tv is not None
        key = key or _file_key(self._meta_file)
        if key is None or key != self._meta_key:
            self._tv.reload()
            self._meta_key = key

    def _ensure_open(self) -> None:
        """Follow CURRENT to the live generation; build one (with a warning) when there is none usable."""
        seen = _file_key(self._current_file)
        if seen is not None and seen == self._current_key and self._tv is not None:
            meta = _file_key(self._meta_file)
            if meta is not None:  # CURRENT is replaced whole (new inode) on every swap: same generation
                self._reload(meta)  # and see its latest commit
                return
        with self._mutex:
            problem = self._try_follow_current()
            self._current_key = seen if problem is None else None
        if problem is None:
            return
        with self._locked():
            problem = self._try_follow_current()  # another process may have built it meanwhile
            if problem is None:
                return
            count = self._build_locked()
        if problem != "first":
            warnings.warn(IndexWarning(
                f"the search index {problem}; rebuilt it from the {count} files of the root"), stacklevel=3)

    def _try_follow_current(self) -> str | None:
        """``None`` when open on the live generation, else why not (for the warning)."""
        for _ in range(3):
            current = read_current(self.root)
            if current is None:
                folder = index_dir(self.root)
                if not folder.exists() or not any(folder.iterdir()):
                    return "was missing" if self._had_index() else "first"
                return "was unreadable (no valid CURRENT pointer)"
            if current.get("schema") != SCHEMA_VERSION:
                return f"was built by another version of fsmem (schema {current.get('schema')})"
            generation = current["generation"]
            if generation == self._generation and self._tv is not None and os.path.exists(self._meta_file):
                return None
            try:
                self._open_generation(generation)
                return None
            except IndexError_ as error:
                if read_current(self.root) == current:  # not swapped under us: really broken
                    return f"was corrupt: {error.message}"
        return "kept changing while being opened"

    def _had_index(self) -> bool:
        # A first build leaves a marker beside the index: an index missing where it exists was deleted.
        return (self.root / ".fsmem" / BUILT_MARKER).exists()

    # --- the lock --------------------------------------------------------------------------------

    def _depth(self) -> int:
        return getattr(self._local, "depth", 0)

    @contextmanager
    def _assume_locked(self) -> Iterator[None]:
        """The caller holds the root lock (a drive transaction): nested work must not take it again."""
        with self._mutex:
            self._local.depth = self._depth() + 1
            try:
                yield
            finally:
                self._local.depth -= 1

    def locked(self):
        """``with index.locked():`` holds the root's write lock (``Busy`` after the timeout)."""
        return self._locked()

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """The root's write lock, then this object's mutex (reentrant per thread)."""
        if self._depth():
            with self._assume_locked():
                yield
            return
        with self._acquire_root_lock(), self._mutex:
            self._local.depth = 1
            try:
                yield
            finally:
                self._local.depth = 0

    def _acquire_root_lock(self) -> Any:
        if self._lock_factory is not None:  # the drive's own lock: one lock object per root and process
            return self._lock_factory()
        if self._lock is None:
            import filelock  # costly import: only when the index must change

            (self.root / ".fsmem").mkdir(exist_ok=True)
            self._lock = filelock.FileLock(str(self.root / ".fsmem" / "lock"))
        return self._filelock()

    @contextmanager
    def _filelock(self) -> Iterator[None]:
        timeout = self._setting("lock_timeout", LOCK_TIMEOUT)
        try:
            self._lock.acquire(timeout=timeout)
        except Exception as error:
            if type(error).__name__ == "Timeout":
                raise Busy(f"the memory is busy: another change has held its lock for over {timeout:g}s; "
                           "try again in a moment") from error
            raise
        try:
            yield
        finally:
            self._lock.release()

    # --- writing ---------------------------------------------------------------------------------

    def _writer(self, heap: int = REFRESH_HEAP, threads: int = 1, tv: tantivy.Index | None = None):
        """A writer for one batch, on a freshly opened index.

        tantivy keeps the list of files it manages (``.managed.json``) in memory per opened index and
        rewrites it whole; an index object kept open across other processes' commits would drop their
        files from the list, and their orphans would never be collected. So each batch reopens.
        """
        if tv is None:
            assert self._generation is not None
            try:
                tv = tantivy.Index.open(str(index_dir(self.root) / self._generation))
            except ValueError as error:
                raise IndexError_(f"the index could not be opened for writing ({error}); "
                                  "`fsmem index rebuild` makes a new one from the files") from error
            tv.register_tokenizer("fsmem", self.analyzer)
        deadline = time.monotonic() + self._setting("lock_timeout", LOCK_TIMEOUT)
        while True:
            try:
                return tv.writer(heap_size=heap, num_threads=threads)
            except ValueError as error:
                # Everyone writes under the root lock, so this is a process that bypassed it or a
                # writer still shutting down: wait for it a little.
                if "LockBusy" not in str(error) or time.monotonic() > deadline:
                    raise IndexError_(f"could not open the index for writing: {error}") from error
                time.sleep(0.02)

    def _document(self, doc: FileDoc, modified_ns: int) -> tantivy.Document:
        out = tantivy.Document()
        for name in ("path", "folder", "level", "kind", "title", "body", "meta"):
            out.add_text(name, getattr(doc, name))
        modified = datetime.fromtimestamp(modified_ns / 1e9, timezone.utc)
        out.add_date("modified", modified)
        if doc.said:
            out.add_date("said", doc.said)
        if doc.until:
            out.add_date("until", doc.until)
        out.add_integer("body_line", doc.body_line)
        return out

    def _read(self, path: str) -> tuple[tantivy.Document, Indexed] | None:
        got = read_stable(self.root, path, self._setting("max_indexed_bytes", MAX_INDEXED_BYTES))
        if got is None:
            return None
        from fsmem.core.versions import version_of

        stamp, data = got
        doc = file_doc(path, data.decode("utf-8", "replace"))
        return self._document(doc, stamp.mtime_ns), Indexed(stamp, version_of(data), time.time_ns())

    def _apply(self, changed: Iterable[str], removed: Iterable[str]) -> int:
        """One batch, one commit: (re)index ``changed``, drop ``removed``. Caller holds the lock.

        Files are read as they are added (a batch of thousands never sits in memory whole), and a
        path planned for removal that exists again by now is indexed instead of dropped.
        """
        assert self._tv is not None and self._manifest is not None
        changed = list(changed)
        gone: list[str] = []
        for path in removed:
            (changed if stamp_of(self.root, path) is not None else gone).append(path)
        if not changed and not gone:
            return 0
        added: dict[str, Indexed] = {}
        big = len(changed) > BIG_BATCH
        writer = self._writer(REBUILD_HEAP if big else REFRESH_HEAP, min(2, os.cpu_count() or 1) if big else 1)
        try:
            for path in changed:
                writer.delete_documents_by_term("path", path)
                got = self._read(path)
                if got is None:
                    gone.append(path)
                else:
                    writer.add_document(got[0])
                    added[path] = got[1]
            for path in gone:
                writer.delete_documents_by_term("path", path)
            writer.commit()
            writer.garbage_collect_files()  # segments orphaned by merges or by a crash mid-commit
        except BaseException:
            try:
                writer.rollback()
            except Exception:  # noqa: BLE001 - the writer is dropped below either way
                pass
            raise
        finally:
            try:
                writer.wait_merging_threads()  # consumes the writer: its lock file is released
            except Exception:  # noqa: BLE001
                pass
            del writer
        self._manifest.load()
        self._manifest.append(added, [path for path in gone if path in self._manifest.entries])
        if self._manifest.needs_compaction():
            self._manifest.rewrite(self._manifest.load())
            self._manifest.load()
        self._reload()
        return len(added) + len(gone)

    def refresh(self, paths: Iterable[str]) -> int:
        """Bring ``paths`` (files or folders, root-relative) up to date. Call under the root lock.

        A path that no longer exists is removed, with everything indexed under it; a folder path
        refreshes every file under it. Returns how many documents changed. Outside a drive
        transaction, wrap the call in ``with index.locked():``.
        """
        with self._assume_locked():
            self._ensure_open()
            assert self._manifest is not None
            indexed = self._manifest.load()
            changed: set[str] = set()
            removed: set[str] = set()
            for raw in paths:
                path = raw.strip("/")
                full = on_disk(self.root, path)
                if path and full.is_dir() and not full.is_symlink():
                    present = {f"{path}/{name}" for name in walk_files(full)}
                    changed |= present
                    removed |= {p for p in indexed if p.startswith(path + "/") and p not in present}
                elif full.exists():
                    changed.add(path)
                else:
                    removed |= {p for p in indexed if p == path or p.startswith(path + "/")}
            return self._apply(sorted(changed), sorted(removed - changed))

    def apply_pending(self) -> int:
        """Index the paths changes through fsmem noted since the last search. Returns how many changed."""
        try:
            if os.stat(self._pending_file).st_size == 0:
                return 0
        except FileNotFoundError:
            return 0
        journal = Path(self._pending_file)
        self._ensure_open()
        with self._locked():
            try:
                lines = journal.read_text(encoding="utf-8").splitlines()
            except FileNotFoundError:
                return 0
            paths = set()
            for line in lines:
                try:
                    paths.add(json.loads(line))
                except ValueError:  # a line torn by a crash: the comparison will find that change
                    continue
            changed = self.refresh(paths) if paths else 0
            journal.unlink()
            return changed

    def compare(self) -> Plan:
        """What differs between the files and the index (no lock, no writes).

        ``racy`` in the answer lists entries whose content was hashed and found unchanged, and that
        are now old enough to be settled (recorded as no longer racy) so later comparisons skip them.
        """
        self._ensure_open()  # before the mutex: it may need the root lock, which comes first
        with self._mutex:
            return self._compare_open()

    def _compare_open(self) -> Plan:
        """``compare`` on the generation open now (a rebuild catches up on its new one with it)."""
        assert self._manifest is not None
        if self._unchanged_since_cached_walk():
            return Plan((), (), ())
        indexed = self._manifest.load()
        key = self._manifest.key()
        taken = time.time_ns()
        on_disk, folders = walk_tree(self.root, record=key is not None)
        self.files_seen = len(on_disk)
        plan = plan_reconcile(on_disk, indexed)
        if not plan and not plan.racy and folders is not None and key is not None:
            save_walk_cache(self._manifest.file.parent / WALK_CACHE, key, taken, len(on_disk), folders)
        if not plan.racy:
            return plan
        stale, settle = [], []
        now = time.time_ns()
        for path in plan.racy:
            entry = indexed[path]
            if self._hash_differs(path, entry):
                stale.append(path)
            elif max(entry[0][1], entry[0][2]) + RACY_WINDOW_NS < now:
                settle.append(path)
        return Plan(tuple(sorted(plan.changed + tuple(stale))), plan.removed, tuple(settle))

    def _unchanged_since_cached_walk(self) -> bool:
        """True when the last clean walk still holds: same manifest, every file as it was.

        It lists only the folders that changed since (see ``index_state.unchanged_since``); on any
        difference the caller runs the full comparison.
        """
        assert self._manifest is not None
        cache_file = self._manifest.file.parent / WALK_CACHE
        cached = load_walk_cache(cache_file)
        if cached is None:
            return False
        key, taken_ns, count, folders = cached
        try:
            info = os.stat(self._manifest.file)
        except OSError:
            return False
        if (info.st_ino, info.st_size) != key:
            return False
        started = time.time_ns()
        now = unchanged_since(self.root, taken_ns, folders, RACY_WINDOW_NS)
        if now is None:
            return False
        self.files_seen = count
        if now != folders:  # folders listed again and found the same: remember their new stamps
            save_walk_cache(cache_file, key, started, count, now)
        return True

    def _hash_differs(self, path: str, entry: Indexed) -> bool:
        from fsmem.core.versions import version_of  # hashlib: not on the path of a fresh search

        try:
            data = on_disk(self.root, path).read_bytes()[: self._setting("max_indexed_bytes", MAX_INDEXED_BYTES)]
        except OSError:
            return True
        return version_of(data) != entry[1]

    def reconcile(self) -> Plan:
        """Compare sizes and mtimes with what is indexed; re-index what differs. Returns what it found.

        A large difference (a `git checkout`, a folder of thousands moved in) is applied in chunks,
        the root lock released between them, so writes through fsmem wait seconds, not minutes.
        """
        plan = self.compare()
        if not (plan or plan.racy):
            return plan
        if len(plan.changed) + len(plan.removed) <= RECONCILE_CHUNK:
            with self._locked():
                plan = self.compare()  # another process may have caught up meanwhile
                self._apply(plan.changed, plan.removed)
                self._settle(plan.racy)
            return plan
        changed, removed = list(plan.changed), list(plan.removed)
        while changed or removed:
            with self._locked():
                self._apply(changed[:RECONCILE_CHUNK], removed[:RECONCILE_CHUNK])
            del changed[:RECONCILE_CHUNK], removed[:RECONCILE_CHUNK]
        return plan

    def _settle(self, paths: tuple[str, ...]) -> None:
        """Record verified racy entries as settled (same stamp, same hash, indexed "now")."""
        if not paths:
            return
        assert self._manifest is not None
        entries = self._manifest.load()
        now = time.time_ns()
        self._manifest.append({path: Indexed(entries[path][0], entries[path][1], now) for path in paths
                               if path in entries}, [])

    def ensure_fresh(self) -> None:
        """Apply noted changes; skip the comparison while a healthy watcher keeps the index current."""
        self._ensure_open()
        self.apply_pending()
        healthy, _ = watcher_health(self.root)
        if not healthy:
            self.reconcile()

    # --- rebuilding ------------------------------------------------------------------------------

    def _build_locked(self, progress: Callable[[int, int], None] | None = None) -> int:
        generation, count = self._build_generation(progress)
        self._finish_build(generation)
        return count

    def _build_generation(self, progress: Callable[[int, int], None] | None) -> tuple[str, int]:
        """Fill a new generation from the files, beside the live one (which keeps serving searches)."""
        base = index_dir(self.root)
        base.mkdir(parents=True, exist_ok=True)
        generation = new_generation_name()
        folder = base / generation
        folder.mkdir()
        (folder / BUILDING).write_text(str(os.getpid()))
        tv = tantivy.Index(self.schema, path=str(folder), reuse=False)
        tv.register_tokenizer("fsmem", self.analyzer)
        files = sorted(walk_files(self.root))
        entries: dict[str, Indexed] = {}
        writer = self._writer(REBUILD_HEAP, 1, tv)
        try:
            for done, path in enumerate(files, 1):
                got = self._read(path)
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
        return generation, len(entries)

    def _finish_build(self, generation: str) -> None:
        """Under the lock: catch up with changes made while building, then swap CURRENT to it."""
        self._open_generation(generation)
        plan = self._compare_open()
        self._apply(plan.changed, plan.removed)
        write_current(self.root, generation)
        (index_dir(self.root) / generation / BUILDING).unlink(missing_ok=True)
        marker = self.root / ".fsmem" / BUILT_MARKER
        if not marker.exists():
            marker.write_text("an index of this root was built; if index/ goes missing, say so\n")
        self._collect_generations()

    def _collect_generations(self) -> None:
        """Delete generations that are neither live nor being built by a live process."""
        current = read_current(self.root)
        live = current.get("generation") if current else None
        for folder in index_dir(self.root).iterdir():
            if not folder.is_dir() or folder.name == live:
                continue
            marker = folder / BUILDING
            if marker.exists():
                try:
                    pid = int(marker.read_text() or 0)
                    os.kill(pid, 0)
                    continue  # still being built
                except (ValueError, ProcessLookupError, OSError):
                    pass
            import shutil

            shutil.rmtree(folder, ignore_errors=True)

    def rebuild(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Rebuild from the files beside the live index, then swap it in. Returns the file count.

        Searches keep using the old generation meanwhile; fsmem writes are not blocked by the build,
        only by the short catch-up and swap at the end.
        """
        generation, count = self._build_generation(progress)
        with self._locked():
            self._finish_build(generation)
        return count

    # --- reading ---------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """Documents, files, how many are stale, whether a watcher keeps it current."""
        self._ensure_open()
        self.apply_pending()  # changes made through fsmem are never counted as stale
        assert self._tv is not None
        self._reload()
        plan = self.compare()
        healthy, beat = watcher_health(self.root)
        folder = index_dir(self.root) / str(self._generation)
        size = sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
        return {
            "documents": self._tv.searcher().num_docs,
            "files": self.files_seen,
            "stale": len(plan.changed) + len(plan.removed),
            "watcher": bool(healthy),
            "watcher_pid": beat.get("pid") if beat else None,
            "generation": self._generation,
            "schema": SCHEMA_VERSION,
            "index_bytes": size,
        }

    def search(self, query: str, *, include: Iterable[str] | str | None = None,
               exclude: Iterable[str] | str | None = None, since: datetime | str | None = None,
               limit: int = 10, fresh: bool = True) -> list[SearchHit]:
        """Ranked files for ``query``; facts that hold come before replaced ones."""
        if not isinstance(limit, int) or limit < 1:
            raise BadRequest("limit must be a whole number of at least 1")
        if fresh:
            self.ensure_fresh()
        else:
            self._ensure_open()
            self.apply_pending()  # changes made through fsmem are always searchable
        assert self._tv is not None
        clauses = self._text_clauses(query, self._tv.searcher())
        filters = self._filters(include, exclude, since)
        try:
            return self._run(clauses, filters, limit)
        except ValueError as error:  # a segment file gone or damaged under a live index
            with self._locked():
                self._build_locked()
            warnings.warn(IndexWarning(
                f"the search index was corrupt ({error}); rebuilt it from the files"), stacklevel=2)
            assert self._tv is not None
            return self._run(clauses, filters, limit)

    def _run(self, clauses: list[Query], filters: list[tuple[Occur, Query]],
             limit: int) -> list[SearchHit]:
        """All words first, any word if that finds nothing; replaced facts only after the rest."""
        assert self._tv is not None
        searcher = self._tv.searcher()
        modes = [Occur.Must] if len(clauses) == 1 else [Occur.Must, Occur.Should]
        for occur in modes:
            text_query = Query.boolean_query([(occur, clause) for clause in clauses])
            found = self._ranked(searcher, [(Occur.Must, text_query), *filters], limit)
            if found:
                break
        else:
            return []
        snippets = tantivy.SnippetGenerator.create(searcher, text_query, self.schema, "body")
        snippets.set_max_num_chars(SNIPPET_CHARS)
        return [_hit(doc, score, snippets) for score, doc in found]

    def _ranked(self, searcher: tantivy.Searcher, base: list[tuple[Occur, Query]],
                limit: int) -> list[tuple[float, tantivy.Document]]:
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
        hits = searcher.search(Query.boolean_query(base + [(Occur.MustNot, self._replaced)]), limit,
                               count=False).hits
        found = [(score, doc(address)) for score, address in hits]
        if len(found) < limit:
            only_replaced = Query.boost_query(self._replaced, 0.0)  # a filter: it adds nothing to scores
            hits = searcher.search(Query.boolean_query(base + [(Occur.Must, only_replaced)]),
                                   limit - len(found), count=False).hits
            found += [(score, doc(address)) for score, address in hits]
        return found

    # --- queries ---------------------------------------------------------------------------------

    def _text_clauses(self, query: str, searcher: tantivy.Searcher) -> list[Query]:
        """The query's clauses: one per word (the last also as a prefix) and one per phrase."""
        if not isinstance(query, str):
            raise BadRequest("query must be text")
        parts = split_query(query)
        clauses: list[Query] = []
        last = len(parts.words) - 1
        for text, is_prefix in [*((word, parts.last_is_prefix and position == last)
                                  for position, word in enumerate(parts.words)),
                                *((phrase, False) for phrase in parts.phrases)]:
            tokens = self.analyzer.analyze(text)
            if len(tokens) == 1:
                clauses.append(self._term_clause(tokens[0], searcher if is_prefix else None))
            elif tokens:
                clauses.append(self._phrase_clause(tokens))
        if not clauses:
            raise BadRequest(
                f"the query {query!r} has no words to search for: give at least one word or \"a phrase\"")
        return clauses

    def _term_clause(self, token: str, prefix_from: tantivy.Searcher | None) -> Query:
        """The word in any text field; with ``prefix_from``, also up to ``PREFIX_EXPANSIONS`` words it
        begins in each field (weighted 0.7)."""
        subs = []
        for field, boost in _TEXT_FIELDS:
            subs.append(Query.boost_query(Query.term_query(self.schema, field, token), boost))
            if prefix_from is not None and field != "meta":
                longer = [term for term, _ in prefix_from.terms_with_prefix(field, token, limit=PREFIX_EXPANSIONS)
                          if term != token]
                subs.extend(Query.boost_query(Query.term_query(self.schema, field, term), boost * 0.7)
                            for term in longer)
        return Query.boolean_query([(Occur.Should, sub) for sub in subs])

    def _phrase_clause(self, tokens: list[str]) -> Query:
        return Query.boolean_query([
            (Occur.Should, Query.boost_query(Query.phrase_query(self.schema, field, tokens), boost))
            for field, boost in _TEXT_FIELDS
        ])

    def _filters(self, include: Any, exclude: Any, since: Any) -> list[tuple[Occur, Query]]:
        filters: list[tuple[Occur, Query]] = []
        includes = [include] if isinstance(include, str) else list(include or [])
        excludes = [exclude] if isinstance(exclude, str) else list(exclude or [])
        if includes:
            filters.append((Occur.Must, Query.boolean_query([
                (Occur.Should, self._glob(pattern)) for pattern in includes])))
        filters.extend((Occur.MustNot, self._glob(pattern)) for pattern in excludes)
        if since is not None:
            moment = parse_since(since, datetime.now(timezone.utc)) if isinstance(since, str) else since
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=timezone.utc)
            filters.append((Occur.Must, Query.range_query(
                self.schema, "modified", tantivy.FieldType.Date, lower_bound=moment)))
        return filters

    def _glob(self, pattern: str) -> Query:
        try:
            return Query.regex_query(self.schema, "path", glob_to_regex(pattern))
        except ValueError as error:
            raise BadRequest(f"the pattern {pattern!r} is not a usable glob ({error}); "
                             "use *, ** and ? as in 'seo/**' or '*.md'") from error


def _hit(doc: tantivy.Document, score: float, snippets: tantivy.SnippetGenerator) -> SearchHit:
    """A hit: the best window of its body (tantivy's generator), or its beginning when the body is
    short or the match was only in the title or metadata."""
    body = doc.get_first("body") or ""
    snippet = snippets.snippet_from_doc(doc) if len(body) > SNIPPET_CHARS else None
    if snippet is not None and snippet.fragment().strip():
        fragment = snippet.fragment()
        start = len(body.encode("utf-8")[:snippet.fragment_range().start].decode("utf-8", "ignore"))
    else:
        stripped = body.lstrip()
        start, fragment = len(body) - len(stripped), stripped[:SNIPPET_CHARS]
    text = " ".join(fragment.split())
    kind = doc.get_first("kind")
    if kind == "fact" or kind == "replaced_fact":
        text += fact_note(kind, _utc(doc.get_first("said")), _utc(doc.get_first("until")))
    return SearchHit(doc.get_first("path"), doc.get_first("title"), kind, doc.get_first("level"),
                     round(score, 4), text, _utc(doc.get_first("modified")),
                     doc.get_first("body_line") + body.count("\n", 0, start))


def _utc(moment: datetime | None) -> datetime | None:
    return moment.replace(tzinfo=timezone.utc) if moment is not None and moment.tzinfo is None else moment


def _is_replaced(doc: tantivy.Document) -> bool:
    return doc.get_first("kind") == "replaced_fact"


def _file_key(path: str) -> tuple[int, int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_ino, info.st_mtime_ns, info.st_size

