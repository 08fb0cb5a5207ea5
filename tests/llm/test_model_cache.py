"""What a new process need not learn again about the local model: its optimised graph (kept once per
user and machine, believed only as made) and its files' hashes (remembered by their stamps)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fsmem._errors import ModelError
from fsmem._llm import model_files, optimized_model
from fsmem._llm.file_stamps import recall, remember, stamp_of
from fsmem._llm.model_files import MODEL_FILE, PINNED, known_sha256, verify
from fsmem._llm.onnx_embed import OnnxEmbedder

TEXTS = ["deploy to staging", "the release train leaves on friday " * 12, "my cat sleeps on the sofa", "x"]


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    return folder / "fsmem" / "models"


@pytest.fixture
def makes(monkeypatch) -> list[Path]:
    """Each optimised copy made (the model's graph optimised again), by the copy's path."""
    made: list[Path] = []
    real = optimized_model._make

    def counting(model, copy, key, options):
        made.append(copy)
        return real(model, copy, key, options)

    monkeypatch.setattr(optimized_model, "_make", counting)
    return made


@pytest.fixture(scope="module")
def original(embedding_model, tmp_path_factory) -> np.ndarray:
    """The vectors of a session made from the model itself, optimised in memory (no cache to keep in:
    one that is not the user's alone is not used)."""
    shared = tmp_path_factory.mktemp("shared-cache")
    (shared / "fsmem" / "models").mkdir(parents=True)
    os.chmod(shared / "fsmem" / "models", 0o755)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(shared))
        embedder = OnnxEmbedder(embedding_model)
        assert list((shared / "fsmem" / "models").glob("*.onnx")) == []
        return embedder.embed(TEXTS)


def _copy(embedding_model: Path) -> Path:
    copy = optimized_model.kept_copy(known_sha256(embedding_model / MODEL_FILE))
    assert copy is not None
    return copy


def test_the_kept_copy_answers_the_original_sessions_vectors_bit_for_bit(embedding_model, cache, makes, original):
    first = OnnxEmbedder(embedding_model).embed(TEXTS)  # makes the copy while it optimises
    copy = _copy(embedding_model)
    assert makes == [copy] and copy.parent == cache
    assert oct(os.stat(copy).st_mode & 0o777) == "0o600" and oct(os.stat(cache).st_mode & 0o777) == "0o700"
    second = OnnxEmbedder(embedding_model).embed(TEXTS)  # opens the copy, optimisation off
    assert makes == [copy]
    assert np.array_equal(first, original) and np.array_equal(second, original)


@pytest.mark.parametrize("harm", ["garbage", "link", "widened", "other key", "garbage, stamp recorded"])
def test_a_copy_not_as_it_was_made_is_made_again_never_used(embedding_model, cache, makes, original, tmp_path, harm):
    OnnxEmbedder(embedding_model)
    copy = _copy(embedding_model)
    if harm == "garbage":
        copy.write_bytes(b"not a model at all")
    elif harm == "link":
        elsewhere = tmp_path / "planted.onnx"
        shutil.copyfile(copy, elsewhere)
        copy.unlink()
        copy.symlink_to(elsewhere)
    elif harm == "widened":
        os.chmod(copy, 0o644)
    elif harm == "other key":
        remember(copy, "made for another onnxruntime", stamp_of(copy))
    else:  # unchanged as far as its stamp tells, yet onnxruntime cannot open it
        copy.write_bytes(b"not a model at all")
        remember(copy, optimized_model.copy_key(known_sha256(embedding_model / MODEL_FILE)), stamp_of(copy))
    again = OnnxEmbedder(embedding_model).embed(TEXTS)
    assert makes == [copy, copy]
    assert np.array_equal(again, original)
    assert not copy.is_symlink() and oct(os.stat(copy).st_mode & 0o777) == "0o600"
    OnnxEmbedder(embedding_model)
    assert makes == [copy, copy]  # the one made again is believed


def test_a_planted_record_is_not_believed(embedding_model, cache, makes):
    OnnxEmbedder(embedding_model)
    records = list(cache.glob("*.stamp"))
    assert records
    for record in records:
        os.chmod(record, 0o644)
    OnnxEmbedder(embedding_model)
    assert len(makes) == 2


@pytest.fixture
def hashes(monkeypatch) -> list[Path]:
    hashed: list[Path] = []
    real = model_files.sha256_of

    def counting(path):
        hashed.append(path)
        return real(path)

    monkeypatch.setattr(model_files, "sha256_of", counting)
    return hashed


def test_an_unchanged_model_is_not_hashed_again(embedding_model, cache, hashes):
    verify(embedding_model)
    assert sorted(path.name for path in hashes) == sorted(pin.name for pin in PINNED)
    verify(embedding_model)
    OnnxEmbedder(embedding_model)  # its name is the model's hash too
    assert len(hashes) == len(PINNED)


def test_a_model_replaced_in_place_with_other_bytes_is_refused(embedding_model, cache, hashes, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(embedding_model, folder)
    for pin in PINNED:  # as verified a while ago (a file copied just now is hashed until it is a tick old)
        remember((folder / pin.name).resolve(), pin.sha256, stamp_of(folder / pin.name))
    verify(folder)
    assert hashes == []
    model = folder / MODEL_FILE
    with model.open("r+b") as handle:  # same size, same inode, other bytes
        handle.seek(1000)
        handle.write(b"\0" * 64)
    with pytest.raises(ModelError, match="is not the pinned file") as refused:
        verify(folder)
    assert refused.value.code == "MODEL_ERROR" and hashes == [model.resolve()]


def test_a_file_changed_within_a_tick_of_its_hashing_is_not_recorded(tmp_path, cache, hashes):
    fresh = tmp_path / "fresh.bin"
    fresh.write_bytes(b"just written")
    known_sha256(fresh)
    known_sha256(fresh)
    assert recall(fresh.resolve()) is None and len(hashes) == 2


def test_a_copy_left_half_written_by_a_process_that_died_is_swept_when_one_is_made(embedding_model, cache, makes):
    cache.mkdir(parents=True, mode=0o700)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    left = cache / f".x_onnx.{int(dead.stdout)}.{'0' * 12}.tmp"
    left.write_bytes(b"half a model")
    OnnxEmbedder(embedding_model)
    assert makes and not left.exists()


def test_fsmem_model_install_loads_the_model_once_and_keeps_its_optimised_graph(embedding_model, tmp_path) -> None:
    folder = tmp_path / "model"
    shutil.copytree(embedding_model, folder)  # every file in place and pinned: install fetches nothing
    cache = tmp_path / "cache"
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    done = subprocess.run(
        [sys.executable, "-m", "fsmem", "model", "install", "--folder", str(folder)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    kept = list((cache / "fsmem" / "models").glob("*.onnx"))
    assert len(kept) == 1 and kept[0].stat().st_mode & 0o777 == 0o600
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(cache))
        assert optimized_model.kept_copy(known_sha256(folder / MODEL_FILE)) == kept[0]
