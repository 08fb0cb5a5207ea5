"""What a one-shot ``Memory.search`` loads (issue 24: a cold search with no resident). A new interpreter
opens the memory and searches once, as ``fsmem search`` does with none running; what it imported is
read from ``sys.modules`` (``-X importtime`` misses what importlib loads lazily)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import fsmem
from fsmem._core.search import RACY_WINDOW_NS
from tests.conftest import REPO, isolate_environment

# What only writing (the root lock's stamp, a level's delete, a build), hashing a file, reading a
# config file, the embedding model, the watcher or the features above search need; and the store's
# records (a listing, versions, the log, proposals, a copy: ten frozen dataclasses, ~7 ms to build).
NEVER_LOADED_COLD = (
    "fsmem._store.types",
    "socket",
    "shutil",
    "tempfile",
    "tomllib",
    "hashlib",
    "sqlite3",
    "numpy",
    "onnxruntime",
    "tokenizers",
    "watchdog",
    "fsmem._index.watch",
    "fsmem._memory.facts",
    "fsmem._memory.proposals",
)

_SEARCH_ONCE = """
import json, sys
import fsmem
memory = fsmem.open(sys.argv[1])
found = memory.search(sys.argv[2])
print(json.dumps({"paths": [hit.path for hit in found], "meaning": found.meaning, "modules": sorted(sys.modules)}))
"""


def _cold_search(root: Path, query: str, **env: str) -> dict:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    environ.update(PYTHONPATH=str(REPO), FSMEM_WATCH="0", **env)
    done = subprocess.run(
        [sys.executable, "-c", _SEARCH_ONCE, str(root), query], capture_output=True, text=True, env=environ, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _indexed_root(root: Path) -> Path:
    """A root of a few files whose index is built and compared clean, past the racy window (files
    changed within a timestamp tick of being read are hashed until it has passed): what a person's
    shell finds a while after the last change."""
    with fsmem.open(root, create=True) as memory:
        run = memory.run()
        for i in range(5):
            assert run.call({"command": "write", "path": f"notes/n{i}.md", "content": f"# N{i}\nquokka{i} tide\n"})["ok"]
        assert [hit.path for hit in memory.search("quokka3")] == ["notes/n3.md"]
    time.sleep(RACY_WINDOW_NS / 1e9 + 0.2)
    with fsmem.open(root) as memory:  # settles them: the walk cache then holds no racy file
        assert [hit.path for hit in memory.search("quokka3")] == ["notes/n3.md"]
    return root


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One settled root for the tests that only search it (a cold search changes no file; each waits
    out the racy window once, not per test)."""
    with pytest.MonkeyPatch.context() as patch:  # made before the test's own environment is
        isolate_environment(patch)
        return _indexed_root(tmp_path_factory.mktemp("cold") / "root")


@pytest.fixture
def indexed_own(tmp_path: Path) -> Path:
    """A settled root of the test's own, for a test that changes it."""
    return _indexed_root(tmp_path / "root")


def test_a_cold_search_by_words_loads_no_write_hash_config_or_meaning_module(indexed: Path) -> None:
    got = _cold_search(indexed, "quokka3", FSMEM_MEANING="off")
    assert got["paths"] == ["notes/n3.md"] and got["meaning"] == "off"
    loaded = set(got["modules"])
    assert "tantivy" in loaded and "fsmem._store.folder.walk" in loaded  # it did search, and compared
    assert sorted(loaded.intersection(NEVER_LOADED_COLD)) == []
    assert "fsmem._llm.embed" not in loaded  # meaning off: not even the model's files are looked for


def test_a_cold_search_with_a_model_in_reach_and_nothing_embedded_loads_no_model(
    indexed: Path, embedding_model: Path
) -> None:
    got = _cold_search(indexed, "quokka3", FSMEM_EMBED_MODEL=str(embedding_model))
    assert got["paths"] == ["notes/n3.md"] and got["meaning"] == "partial"  # words alone: nothing to fuse yet
    unused = set(NEVER_LOADED_COLD) - {"hashlib"}  # the model's files are looked for (fsmem._llm.model_files)
    assert sorted(set(got["modules"]).intersection(unused)) == []


def test_a_config_file_is_still_read_where_one_is(indexed_own: Path) -> None:
    indexed = indexed_own
    (indexed / ".fsmem" / "config.toml").write_text('search_mode = "words"\nmeaning = "off"\n', encoding="utf-8")
    got = _cold_search(indexed, "quokka3")
    assert got["paths"] == ["notes/n3.md"] and got["meaning"] == "off"
    assert "tomllib" in got["modules"]
