"""A sentence-embedding model on this machine: an ONNX file run by onnxruntime, its tokenizer by
``tokenizers`` (both in the ``meaning`` extra; this module is imported only when one is used).

    embedder = OnnxEmbedder(Path("~/.local/share/fsmem/models/all-MiniLM-L6-v2-int8"), threads=1)
    embedder.embed(["deploy to staging", "the release train"])   # float32 (2, 384), each row of length 1

A sentence-transformers model exported to ONNX takes ``input_ids``, ``attention_mask`` (and maybe
``token_type_ids``) and answers the last hidden state; the sentence vector is its mean over the real
tokens (the attention mask), L2-normalised, as the model's own pooling does.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from fsmem._errors import ModelError
from fsmem._llm.model_files import MODEL_FILE, TOKENIZER_FILE, sha256_of

__all__ = ["MAX_TOKENS", "OnnxEmbedder"]

MAX_TOKENS = 256  # the model was trained on 256 word pieces; the tokenizer file says 128 unless told
# Word pieces in one run, padding included: a run's working memory grows with its texts times their
# width (attention: times the width again), and batching gains nothing on two cores. 256: a passage of
# 256 pieces runs alone (+22-51 MB at its peak; eight of them at once took +160-400 MB), while short
# texts (facts, queries) still go several to a run.
RUN_TOKENS = 256


class OnnxEmbedder:
    """The model in ``folder`` (``model.onnx``, ``tokenizer.json``). Loads on creation; thread-safe
    (onnxruntime's ``run`` may be called from several threads; the tokenizer is guarded)."""

    def __init__(self, folder: Path, threads: int = 1, model_sha256: str | None = None) -> None:
        """``model_sha256``: the model file's, when the caller knows it already (the default model's
        pin, just verified), so the file is hashed once a process."""
        model, tokenizer_file = folder / MODEL_FILE, folder / TOKENIZER_FILE
        for path in (model, tokenizer_file):
            if not path.is_file():
                raise ModelError(
                    f"{folder} has no {path.name}: an embedding model folder holds {MODEL_FILE} and "
                    f"{TOKENIZER_FILE} (`fsmem model install` makes the default one)"
                )
        # The vector space is the model file's: another file (a new export, a user's own) is another
        # space, and vectors kept under one are never compared with the other's.
        self.name = f"onnx-{(model_sha256 or sha256_of(model))[:16]}"
        try:
            tokenizer = Tokenizer.from_file(str(tokenizer_file))
        except Exception as error:  # noqa: BLE001 - tokenizers raises its own Exception subclass
            raise ModelError(f"{tokenizer_file} is not a tokenizer file tokenizers can read ({error})") from error
        tokenizer.no_padding()  # each batch is padded to its own longest text below
        tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer = tokenizer
        self._tokenizer_lock = threading.Lock()
        options = ort.SessionOptions()
        # The arena keeps the largest batch's buffers for the process's life; without it memory
        # follows the batch in hand (a few MB), which is what a long-lived agent process wants.
        options.enable_cpu_mem_arena = False
        options.enable_mem_pattern = False
        options.intra_op_num_threads = max(1, threads)
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # idle threads sleep, not spin
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        options.log_severity_level = 3
        try:
            self._session = ort.InferenceSession(str(model), sess_options=options, providers=["CPUExecutionProvider"])
        except Exception as error:  # noqa: BLE001 - onnxruntime's errors have no common public base
            raise ModelError(f"onnxruntime could not load {model} ({error})") from error
        inputs = {item.name for item in self._session.get_inputs()}
        if not {"input_ids", "attention_mask"} <= inputs:
            raise ModelError(
                f"{model} takes {sorted(inputs)}, not input_ids and attention_mask: "
                "it is not a sentence-embedding (BERT-like) export"
            )
        self._token_types = "token_type_ids" in inputs
        self.dimensions = int(self.embed(["dimension probe"]).shape[1])

    def __repr__(self) -> str:
        return f"OnnxEmbedder({self.name!r})"

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalised float32 row per text, in order."""
        if not texts:
            return np.zeros((0, getattr(self, "dimensions", 0)), dtype=np.float32)
        with self._tokenizer_lock:
            encodings = self._tokenizer.encode_batch(list(texts))
        lengths = [len(encoding.ids) for encoding in encodings]
        order = sorted(range(len(texts)), key=lengths.__getitem__)  # like lengths together: less padding
        rows: list[Any] = [None] * len(texts)
        for chunk in _runs(order, lengths):
            width = max(1, lengths[chunk[-1]])
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            for row, i in enumerate(chunk):
                ids[row, : lengths[i]] = encodings[i].ids
                mask[row, : lengths[i]] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if self._token_types:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run(None, feeds)[0]
            for row, vector in zip(chunk, _mean_pool(hidden, mask), strict=True):
                rows[row] = vector
        return np.stack(rows).astype(np.float32, copy=False)


def _runs(order: list[int], lengths: list[int]) -> list[list[int]]:
    """``order`` (texts by length, shortest first) cut into runs of at most ``RUN_TOKENS`` word pieces
    once padded to the run's longest text; a text longer than that runs alone."""
    runs: list[list[int]] = []
    for i in order:
        if runs and (len(runs[-1]) + 1) * max(1, lengths[i]) <= RUN_TOKENS:
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs


def _mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The mean of each text's real tokens (padding left out), scaled to length 1."""
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return pooled / np.clip(norms, 1e-12, None)
