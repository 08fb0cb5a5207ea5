"""The embedder interface, and ``build_embedder(settings)``: the one way fsmem makes one.

    embedder = build_embedder(settings)        # None: recall by meaning is off (not set up, or turned off)
    embedder.embed(["deploy to staging"])      # float32 (1, dim), each row of length 1 (cosine = dot)
    embedder.name                              # the vector space: vectors are kept and compared under it

Two providers: a local ONNX model (:mod:`fsmem._llm.onnx_embed`, the ``meaning`` extra) and an
OpenAI-compatible endpoint (:mod:`fsmem._llm.endpoint_embed`). Neither is imported until it is built,
so a process that never embeds loads neither numpy nor onnxruntime.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from fsmem._env.config import Settings
from fsmem._env.resources import install_command
from fsmem._errors import ModelError, SetupError
from fsmem._llm.model_files import MODEL_FILE, PINNED, TOKENIZER_FILE, default_folder, installed, verify

if TYPE_CHECKING:
    import numpy as np

__all__ = ["MEANING_MODES", "Embedder", "build_embedder", "local_model_in_reach", "meaning_wanted"]

MEANING_MODES = ("auto", "off")


class Embedder(Protocol):
    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalised float32 row per text, in order; a :class:`ModelError` when it cannot."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """One text's vector, for a search: bounded tighter than a batch (a search never waits long)."""
        ...


def meaning_wanted(settings: Settings) -> bool:
    """Whether recall by meaning is asked for at all (it may still find no embedder)."""
    if settings.meaning not in MEANING_MODES:
        raise SetupError(f"setting meaning must be one of {', '.join(MEANING_MODES)}, not {settings.meaning!r}")
    return settings.meaning != "off"


def local_model_in_reach(settings: Settings) -> bool:
    """Whether a search by meaning would load a local model (its files and the ``meaning`` extra are
    there), found without loading anything; an endpoint is not a local model."""
    if settings.embed_endpoint or not meaning_wanted(settings):
        return False
    folder = Path(settings.embed_model).expanduser() if settings.embed_model else default_folder()
    return installed(folder) and importlib.util.find_spec("onnxruntime") is not None


def build_embedder(settings: Settings) -> Embedder | None:
    """The embedder the settings name: the endpoint when ``embed_endpoint`` is set, else the local model
    in ``embed_model`` (default: the one ``fsmem model install`` keeps, verified against its pins).
    ``None`` when meaning is off, or left to ``auto`` with no model installed or no ``meaning`` extra;
    a :class:`ModelError` when something named explicitly cannot be used."""
    if not meaning_wanted(settings):
        return None
    if settings.embed_endpoint:
        try:
            from fsmem._llm.endpoint_embed import EndpointEmbedder
        except ImportError as error:
            raise ModelError(f"an embeddings endpoint needs {_extra(error)}") from error
        return EndpointEmbedder(
            settings.embed_endpoint,
            settings.embed_endpoint_model,
            api_key_env=settings.embed_api_key_env,
            timeout=settings.embed_timeout,
        )
    chosen = bool(settings.embed_model)
    folder = Path(settings.embed_model).expanduser() if chosen else default_folder()
    if not chosen and not installed(folder):
        return None  # auto, and nothing installed: words alone, as without the extra
    try:
        from fsmem._llm.onnx_embed import OnnxEmbedder
    except ImportError as error:
        if not chosen:
            return None
        raise ModelError(f"the embedding model in {folder} needs {_extra(error)}") from error
    key = (str(folder.resolve()), settings.embed_threads, _stamp(folder))
    with _LOADING:
        if key not in _LOADED:  # one copy of a model per process (~220 MB), however many memories use it
            pinned = None
            if not chosen:
                verify(folder)  # the default model's files are what was pinned, before a byte of them runs
                pinned = next(pin.sha256 for pin in PINNED if pin.name == MODEL_FILE)
            _LOADED[key] = OnnxEmbedder(folder, threads=settings.embed_threads, model_sha256=pinned)
        return _LOADED[key]


_LOADED: dict[tuple[str, int, tuple[tuple[int, int, int], ...]], Embedder] = {}
_LOADING = threading.Lock()


def _stamp(folder: Path) -> tuple[tuple[int, int, int], ...]:
    """The model files' inode, size and modified time: a file replaced is loaded (and verified) again."""
    stamps = []
    for name in (MODEL_FILE, TOKENIZER_FILE):
        try:
            info = (folder / name).stat()
        except OSError:
            return ()
        stamps.append((info.st_ino, info.st_size, info.st_mtime_ns))
    return tuple(stamps)


def _extra(error: ImportError) -> str:
    return f"the meaning extra ({error}); install it with {install_command('meaning')}"
