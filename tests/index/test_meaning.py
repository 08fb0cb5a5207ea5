"""Recall by meaning on the folder store, with the real local model: passages as derived state keyed
by file version, embedded in the background, fused with words, and words alone when the model is away."""

from __future__ import annotations

import socket
import sqlite3
import threading
import time
import warnings
from pathlib import Path

import pytest

import fsmem
from fsmem._env.config import Settings
from fsmem._memory.hybrid import MeaningWarning
from tests.conftest import invoke

PETS = "# Pets\n\nWe adopted a golden retriever puppy in May; she chews every shoe in the house.\n"
TAXES = "# Paperwork\n\nThe quarterly tax forms are due to the accountant next week.\n"
DEPLOY = "# Deploys\n\nWe ship to staging before production, every Friday afternoon.\n"


def _open(root: Path, model: Path, **more: object) -> fsmem.Memory:
    settings = Settings(watch=False, durable=False, embed_model=str(model), **more)  # type: ignore[arg-type]
    return fsmem.open(root, create=True, settings=settings)


@pytest.fixture
def memory(tmp_path: Path, embedding_model: Path):
    memory = _open(tmp_path / "root", embedding_model)
    run = memory.run()
    for path, text in (("pets.md", PETS), ("notes/taxes.md", TAXES), ("deploy.md", DEPLOY)):
        run.call({"command": "write", "path": path, "content": text})
    yield memory
    memory.close()


def paths(found) -> list[str]:
    return [hit.path for hit in found]


def test_a_file_is_found_by_meaning_once_its_passages_are_embedded(memory):
    assert paths(memory.search("dog")) == [] and memory.search("dog").meaning == "partial"
    assert memory.meaning_status()["backlog"] == 4  # MEMORY.md too
    assert memory.embed_pending() == 4
    found = memory.search("dog")
    assert paths(found)[:1] == ["pets.md"] and found.meaning == "full"
    assert found[0].snippet.startswith("# Pets We adopted a golden retriever") and found[0].line == 1
    assert paths(memory.search("dog", mode="words")) == [] and memory.search("dog", mode="words").meaning == "off"
    assert paths(memory.search("canine companion", mode="meaning"))[:1] == ["pets.md"]
    assert paths(memory.search("staging friday", mode="both"))[0] == "deploy.md"  # words still lead
    result = memory.run().call({"command": "search", "query": "dog"})  # the tool: unchanged, the default mode
    assert result["hits"][0]["path"] == "pets.md" and result["meaning"] == "full"


def test_a_passage_never_outlives_its_files_version(memory):
    memory.embed_pending()
    (memory.drive.root / "pets.md").write_text(TAXES.replace("Paperwork", "More paperwork"))  # by hand
    found = memory.search("dog")
    assert "pets.md" not in paths(found) and found.meaning == "partial"
    assert memory.meaning_status()["backlog"] == 1
    assert memory.embed_pending() == 1
    assert "pets.md" not in paths(memory.search("dog"))
    assert set(paths(memory.search("accountant deadline", mode="meaning"))[:2]) == {"pets.md", "notes/taxes.md"}
    run = memory.run()
    run.call({"command": "read", "path": "pets.md"})
    assert run.call({"command": "delete", "path": "pets.md"})["ok"]
    assert memory.embed_pending() == 0 and "pets.md" not in paths(memory.search("paperwork", mode="meaning"))


def test_a_search_holds_the_vectors_and_reads_only_the_passages_it_shows(memory):
    memory.embed_pending()
    meaning = memory.hybrid.meaning()
    view = meaning.view()
    assert view.files == sorted(view.files) and view.passages == len(view.codes) >= len(view.files) == 3  # MEMORY.md: no passage
    assert not hasattr(view, "texts")  # the passages' texts stay in the keep
    near = view.nearest(meaning.embedder.embed_query("dog"), 1)
    assert list(near) == ["pets.md"] and near["pets.md"].n == 0
    assert meaning.passage("pets.md", near["pets.md"]) == (1, PETS.strip().replace("\n\n", "\n"))
    (memory.drive.root / "pets.md").write_text(PETS + "\nShe sleeps by the door.\n")  # by hand, then embedded
    memory.search("dog", mode="words")
    assert memory.embed_pending() == 1
    assert meaning.passage("pets.md", near["pets.md"]) is None  # the view's version is gone: not shown
    assert meaning.view() is not view and paths(memory.search("canine", mode="meaning"))[:1] == ["pets.md"]


def test_files_found_by_meaning_alone_obey_the_filters(memory):
    memory.embed_pending()
    assert "pets.md" not in paths(memory.search("dog", exclude="pets.md"))
    assert paths(memory.search("IRS filing", include="notes/**", mode="meaning")) == ["notes/taxes.md"]
    assert paths(memory.search("dog", since="2020-01-01"))[:1] == ["pets.md"]


def test_a_vector_keep_that_is_not_a_database_is_made_again(memory):
    memory.embed_pending()
    keep = memory.drive.root / ".fsmem" / "index" / "vectors.sqlite3"
    assert keep.stat().st_mode & 0o777 == 0o600
    memory.close()
    keep.write_bytes(b"garbage " * 100)
    for extra in keep.parent.glob("vectors.sqlite3-*"):
        extra.unlink()
    again = fsmem.open(memory.drive.root, settings=memory.settings)
    assert again.search("dog").meaning == "partial" and again.embed_pending() == 4
    assert paths(again.search("dog"))[:1] == ["pets.md"]
    again.close()


class Gated:
    """The real embedder, held at a gate: what happens elsewhere while a batch is being embedded."""

    def __init__(self, real: object) -> None:
        self.real, self.name = real, real.name  # type: ignore[attr-defined]
        self.entered, self.gate = threading.Event(), threading.Event()

    def embed(self, texts):
        self.entered.set()
        assert self.gate.wait(30)
        return self.real.embed(texts)  # type: ignore[attr-defined]

    def embed_query(self, text):
        return self.real.embed_query(text)  # type: ignore[attr-defined]


def test_embedding_runs_in_the_background_and_blocks_neither_writes_nor_searches(memory):
    meaning = memory.hybrid.meaning()
    gated = Gated(meaning.embedder)
    meaning.embedder = gated
    assert memory.start_embedding()
    assert gated.entered.wait(30)  # the worker is inside the model now
    run = memory.run()
    started = time.monotonic()
    run.call({"command": "write", "path": "vet.md", "content": "# Vet\n\nShots for the puppy on Monday.\n"})
    found = memory.search("puppy")
    assert time.monotonic() - started < 5 and set(paths(found)) == {"pets.md", "vet.md"}
    assert found.meaning == "partial"
    gated.gate.set()
    deadline = time.monotonic() + 60
    while memory.meaning_status()["backlog"] and time.monotonic() < deadline:
        time.sleep(0.05)
    status = memory.meaning_status()
    assert (status["meaning"], status["backlog"], status["embedded"], status["worker"]) == ("full", 0, 5, True)
    assert memory.search("dog").meaning == "full"
    memory.close()  # stops the worker; a search after it still answers, and starts nothing
    found = memory.search("dog")
    assert paths(found)[:1] == ["pets.md"] and not memory.meaning_status()["worker"]


def test_close_returns_at_once_under_a_slow_embed_and_the_keep_closes_after_the_worker(memory, monkeypatch):
    """A worker in the middle of a batch the model is slow to embed: close() tells it to stop and returns;
    the worker finishes that file, stops before the next one and closes the keep on its way out."""
    meaning = memory.hybrid.meaning()
    gated = Gated(meaning.embedder)
    meaning.embedder = gated
    keep, events = meaning.keep, []
    real_put, real_close = keep.put, keep.close
    monkeypatch.setattr(keep, "put", lambda *a: events.append("put") or real_put(*a))
    monkeypatch.setattr(
        keep, "close", lambda: events.append(("close", threading.current_thread().name)) or real_close()
    )
    failures: list[threading.ExceptHookArgs] = []
    monkeypatch.setattr(threading, "excepthook", failures.append)
    assert memory.start_embedding()
    assert gated.entered.wait(30)  # the worker is inside the model now
    worker = next(t for t in threading.enumerate() if t.name == "fsmem-embed")
    started = time.monotonic()
    memory.close()
    assert time.monotonic() - started < 5  # a hang guard: it returns in about half a second
    assert worker.is_alive() and all(event == "put" for event in events)  # not closed under the worker
    before = len(events)  # files with no passage, put without the model
    gated.gate.set()
    worker.join(30)
    assert not worker.is_alive() and failures == [] and meaning.failure is None
    assert events[before:] == ["put", ("close", "fsmem-embed")]  # the file it was on is kept; then it stops, closes


def test_a_worker_told_to_stop_is_not_revived_by_the_next_start(memory, monkeypatch):
    """stop() returns while the worker is still in the model; a start() then runs a new worker, and the
    old one still stops after its file: one worker embeds at a time, and the keep closes once, last."""
    meaning = memory.hybrid.meaning()
    gated = Gated(meaning.embedder)
    meaning.embedder = gated
    closes: list[int] = []
    real_close = meaning.keep.close
    monkeypatch.setattr(meaning.keep, "close", lambda: closes.append(threading.active_count()) or real_close())
    meaning.start()
    assert gated.entered.wait(30)
    old = next(t for t in threading.enumerate() if t.name == "fsmem-embed")
    meaning.stop()
    meaning.start()
    gated.gate.set()
    old.join(30)
    assert not old.is_alive()
    deadline = time.monotonic() + 60
    while meaning.backlog() and time.monotonic() < deadline:  # the new worker embeds the rest
        time.sleep(0.05)
    assert meaning.backlog() == [] and meaning.status()["worker"]
    memory.close()
    workers = [t for t in threading.enumerate() if t.name == "fsmem-embed"]
    for worker in workers:
        worker.join(30)
    assert len(closes) == 1 and meaning.failure is None


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_endpoint_means_words_alone_with_one_warning(tmp_path):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    memory = fsmem.open(tmp_path, create=True, settings=Settings(watch=False, embed_endpoint=url, embed_endpoint_model="e"))
    memory.run().call({"command": "write", "path": "deploy.md", "content": DEPLOY})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = [memory.search("staging") for _ in range(3)]
    assert [paths(found) for found in results] == [["deploy.md"]] * 3
    assert [found.meaning for found in results] == ["off"] * 3
    said = [str(w.message) for w in caught if issubclass(w.category, MeaningWarning)]
    assert len(said) == 1 and "could not reach" in said[0] and "words alone" in said[0]
    memory.close()


def test_the_shell_searches_by_mode_and_shows_the_backlog(tmp_path, embedding_model, monkeypatch):
    monkeypatch.setenv("FSMEM_EMBED_MODEL", str(embedding_model))
    root = tmp_path / "root"
    memory = _open(root, embedding_model)
    memory.run().call({"command": "write", "path": "pets.md", "content": PETS})
    status = invoke(root, "index", "status")
    assert status.output.splitlines()[-1] == "meaning:   partial (0 of 2 files embedded, backlog 2)"
    embedded = invoke(root, "index", "embed")
    assert embedded.exit_code == 0 and embedded.output.endswith("Embedded 2 files.\n")
    assert invoke(root, "index", "embed", "--json").output == '{\n  "embedded": 0\n}\n'
    assert invoke(root, "search", "dog", "--mode", "words").exit_code == 1
    found = invoke(root, "search", "dog", "--mode", "meaning")
    assert found.exit_code == 0 and found.output.startswith("pets.md:1")
    assert invoke(root, "index", "status").output.splitlines()[-1] == "meaning:   full (2 of 2 files embedded, backlog 0)"
    bad = invoke(root, "search", "dog", "--mode", "vibes")
    assert bad.exit_code == 2 and "'vibes' is not one of" in bad.output
    memory.close()


def _disk_io_error(*args, **kwargs):
    """What SQLite raises when the disk under the keep fails."""
    raise sqlite3.OperationalError("disk I/O error")


def test_a_keep_that_cannot_be_read_means_words_alone(memory, monkeypatch):
    memory.embed_pending()
    meaning = memory.hybrid.meaning()

    monkeypatch.setattr(meaning.keep, "mark", _disk_io_error)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = memory.search("staging")
    assert paths(found) == ["deploy.md"] and found.meaning == "off"
    assert [str(w.message) for w in caught if issubclass(w.category, MeaningWarning)] == [
        "searching by words alone: recall by meaning is unavailable (OperationalError: disk I/O error)"
    ]


def test_a_passage_that_cannot_be_read_leaves_its_file_out_with_one_warning(memory, monkeypatch):
    memory.embed_pending()
    meaning = memory.hybrid.meaning()

    monkeypatch.setattr(meaning.keep, "passage", _disk_io_error)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = memory.search("canine companion", mode="meaning")  # pets.md by meaning alone: its passage is shown
    assert paths(found) == []
    assert [str(w.message) for w in caught if issubclass(w.category, MeaningWarning)] == [
        "searching by words alone: recall by meaning is unavailable (OperationalError: disk I/O error)"
    ]
    assert paths(memory.search("staging", mode="both")) == ["deploy.md"]  # words meanwhile


def test_the_embedding_is_woken_once_the_change_is_in_the_index(memory, monkeypatch):
    """The worker is woken after the writer's index commit (in the background), so it finds the change
    at once (woken before, it found nothing new and slept its poll)."""
    from fsmem._memory.hybrid import Hybrid

    memory.search("dog")  # the memory's search by meaning is made (and would be woken from now on)
    seen_at_wake: list[list[str]] = []
    index = memory.index

    def wake(self: Hybrid, _paths: object = None) -> None:  # what the committed index holds, caught up on nothing
        seen_at_wake.append(sorted(index.query.hits_for(index.store.searcher(), ["zoo.md"], [])))

    monkeypatch.setattr(Hybrid, "wake", wake)
    memory.run().call({"command": "write", "path": "zoo.md", "content": "# Zoo\n\nA wombat.\n"})
    index.committer.flush(30)  # the commit runs after the write returned; the wake follows it
    assert seen_at_wake == [["zoo.md"]]


def test_a_one_shot_search_loads_no_model_while_nothing_is_embedded(tmp_path, embedding_model):
    """A process that embeds nothing itself (the shell's) and a root with no passage kept: the query's
    vector could change no answer, so the model is not loaded for it; once passages are kept, it is."""
    import subprocess
    import sys

    from tests.conftest import REPO

    memory = _open(tmp_path / "root", embedding_model)
    memory.run().call({"command": "write", "path": "pets.md", "content": PETS})
    memory.close()
    code = (
        "import sys, fsmem\nfrom fsmem._env.config import Settings\n"
        f"m = fsmem.open(sys.argv[1], settings=Settings(watch=False, embed_model={str(embedding_model)!r}))\n"
        "found = m.search('golden retriever puppy')\n"
        "print(found.meaning, [h.path for h in found], 'onnxruntime' in sys.modules)\n"
    )
    run = lambda: subprocess.run(  # noqa: E731
        [sys.executable, "-c", code, str(tmp_path / "root")], capture_output=True, text=True, cwd=REPO
    )
    done = run()
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["partial", "['pets.md']", "False"]
    embedded = _open(tmp_path / "root", embedding_model)
    assert embedded.embed_pending() == 2  # MEMORY.md too
    embedded.close()
    done = run()
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["full", "['pets.md']", "True"]
