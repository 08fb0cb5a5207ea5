"""The embedders: the real local model (loaded once a session), an endpoint over real HTTP, and the
choice and checks of ``build_embedder``."""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest

from fsmem._env.config import Settings
from fsmem._errors import ModelError
from fsmem._llm.embed import build_embedder
from fsmem._llm.endpoint_embed import EndpointEmbedder
from fsmem._llm.model_files import PINNED, installed, verify
from tests.conftest import REPO
from tests.embed_server import Answer, EmbedServer, letters


@pytest.fixture(scope="session")
def local(embedding_model):
    return build_embedder(Settings(embed_model=str(embedding_model)))


def test_the_local_model_puts_a_paraphrase_nearer_than_another_topic(local):
    rows = local.embed(["we ship to staging before production", "releases go to the test servers first",
                        "my cat sleeps on the sofa"])
    assert rows.shape == (3, 384) and rows.dtype == np.float32
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    cosine = rows @ rows.T
    assert cosine[0, 1] > cosine[0, 2] + 0.2


def test_a_vector_does_not_depend_on_the_texts_it_is_batched_with(local):
    # mean pooling over the real tokens only: padding to a longer neighbour changes nothing
    alone = local.embed(["deploy on friday"])[0]
    padded = local.embed(["deploy on friday", "a much longer text " * 20])[0]
    assert np.allclose(alone, padded, atol=1e-4)
    assert np.allclose(local.embed_query("deploy on friday"), alone, atol=1e-6)


def test_a_long_text_is_cut_at_256_tokens_not_128(local):
    # the tokenizer file pads and cuts at 128; fsmem turns padding off and cuts at 256
    words = [f"w{i}" for i in range(400)]
    head_200, head_300 = " ".join(words[:60]), " ".join(words[:110])  # ~2 pieces a word: past 128, within 256
    assert not np.allclose(local.embed([head_200])[0], local.embed([head_300])[0], atol=1e-3)
    past = local.embed([" ".join(words), " ".join(words[:300])])
    assert np.allclose(past[0], past[1], atol=1e-4)  # both cut at 256 pieces: the same text to the model


def test_one_model_is_loaded_once_per_process(embedding_model, local):
    again = build_embedder(Settings(embed_model=str(embedding_model)))
    assert again is local


def test_the_default_model_is_verified_before_use(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert build_embedder(Settings()) is None  # auto, nothing installed: words alone, no error
    folder = tmp_path / "fsmem" / "models" / "all-MiniLM-L6-v2-int8"
    folder.mkdir(parents=True)
    for pin in PINNED:
        (folder / pin.name).write_bytes(b"not the model")
    assert installed(folder)
    with pytest.raises(ModelError, match="is not the pinned file .*fsmem model install"):
        build_embedder(Settings())
    with pytest.raises(ModelError, match="is not the pinned file"):
        verify(folder)


def test_the_default_model_is_hashed_once_a_process_and_named_by_its_pin(tmp_path, monkeypatch, embedding_model, local):
    import shutil

    from fsmem._llm import model_files, onnx_embed

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    shutil.copytree(embedding_model, tmp_path / "fsmem" / "models" / "all-MiniLM-L6-v2-int8")
    hashed: list[str] = []
    real = model_files.sha256_of

    def counted(path):
        hashed.append(path.name)
        return real(path)

    monkeypatch.setattr(model_files, "sha256_of", counted)
    monkeypatch.setattr(onnx_embed, "sha256_of", counted)
    embedder = build_embedder(Settings())
    assert sorted(hashed) == sorted(pin.name for pin in PINNED)  # verify's, once each: not the model again
    model_pin = next(pin.sha256 for pin in PINNED if pin.name == "model.onnx")
    assert embedder.name == f"onnx-{model_pin[:16]}" == local.name  # as a folder of one's own, hashed, is named


def test_meaning_off_builds_nothing_and_a_named_folder_must_hold_a_model(tmp_path, embedding_model):
    assert build_embedder(Settings(meaning="off", embed_model=str(embedding_model))) is None
    with pytest.raises(ModelError, match="has no model.onnx"):
        build_embedder(Settings(embed_model=str(tmp_path)))
    from fsmem._errors import SetupError

    with pytest.raises(SetupError, match="meaning must be one of auto, off"):
        build_embedder(Settings(meaning="maybe"))


def test_the_endpoint_batches_orders_and_normalises(monkeypatch):
    monkeypatch.setenv("EMBED_KEY", "k-123")
    with EmbedServer() as server:
        embedder = build_embedder(Settings(embed_endpoint=server.base_url, embed_endpoint_model="tiny",
                                           embed_api_key_env="EMBED_KEY"))
        assert isinstance(embedder, EndpointEmbedder)
        embedder.batch = 2
        rows = embedder.embed(["abc", "xyz", "aab"])
    assert [len(request["input"]) for request in server.requests] == [2, 1]
    assert {request["path"] for request in server.requests} == {"/v1/embeddings"}
    assert server.requests[0]["auth"] == "Bearer k-123" and server.requests[0]["model"] == "tiny"
    expected = np.array([letters(t) for t in ("abc", "xyz", "aab")], dtype=np.float32)
    assert np.allclose(rows, expected / np.linalg.norm(expected, axis=1, keepdims=True), atol=1e-6)


def test_the_endpoint_waits_as_retry_after_says(monkeypatch):
    waits: list[float] = []
    with EmbedServer() as server:
        server.enqueue(Answer(status=429, headers={"Retry-After": "3"}))
        server.enqueue(Answer(status=503))
        embedder = EndpointEmbedder(server.base_url, "tiny", sleep=waits.append)
        assert embedder.embed(["abc"]).shape == (1, 26)
    assert waits == [3.0, 2.0] and len(server.requests) == 3


def test_the_endpoint_fails_clearly_and_in_time():
    with EmbedServer() as server:
        server.enqueue(Answer(status=429))
        with pytest.raises(ModelError, match="HTTP 429: slow down"):
            EndpointEmbedder(server.base_url, "tiny", retries=0).embed(["a"])
        server.enqueue(Answer(raw=b'{"object": "list"}'))
        with pytest.raises(ModelError, match="without data\\[\\].embedding"):
            EndpointEmbedder(server.base_url, "tiny").embed(["a"])
        server.enqueue(Answer(delay=1.5))
        started = time.monotonic()
        with pytest.raises(ModelError, match="did not answer within 0.3 seconds"):
            EndpointEmbedder(server.base_url, "tiny", timeout=0.3).embed(["a"])
        assert time.monotonic() - started < 1.4
        port = server.base_url
    with pytest.raises(ModelError, match="could not reach .* Is the server running"):
        EndpointEmbedder(port, "tiny").embed(["a"])
    with pytest.raises(ModelError, match="must start with http"):
        EndpointEmbedder("localhost:1/v1", "tiny")


def test_nothing_heavy_is_imported_by_fsmem_or_a_search_without_meaning(tmp_path):
    code = (
        "import sys, fsmem\n"
        f"memory = fsmem.open({str(tmp_path)!r}, create=True)\n"
        "found = memory.search('anything')\n"
        "print(found.meaning, sorted(m for m in ('onnxruntime', 'tokenizers', 'numpy') if m in sys.modules))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "XDG_DATA_HOME": str(tmp_path / "none"), "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["off", "[]"]


def test_a_run_holds_at_most_256_word_pieces_padded_and_a_long_text_runs_alone():
    from fsmem._llm.onnx_embed import RUN_TOKENS, _runs

    lengths = [256, 3, 70, 5, 200, 40, 256, 60, 300]
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    runs = _runs(order, lengths)
    assert sorted(i for run in runs for i in run) == list(range(len(lengths)))  # each text once
    assert [[lengths[i] for i in run] for run in runs] == [[3, 5, 40, 60], [70], [200], [256], [256], [300]]
    assert all(len(run) == 1 or len(run) * max(lengths[i] for i in run) <= RUN_TOKENS for run in runs)


def test_texts_embedded_together_match_each_embedded_alone(local):
    # runs are cut by length: whatever a text is run with, its vector is its own (within 1e-5 of cosine)
    texts = ["deploy on friday", "the quarterly tax forms are due", "w " * 300, "staging first " * 40, "a cat"]
    together = local.embed(texts)
    for text, row in zip(texts, together, strict=True):
        assert float(local.embed([text])[0] @ row) > 1 - 1e-5
