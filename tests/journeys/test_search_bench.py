"""bench/search.py keeps working: a tiny run prints the table. No timing is asserted."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep is the baseline: apt-get install ripgrep")
def test_search_bench_runs_and_reports() -> None:
    done = subprocess.run([sys.executable, "-m", "bench.search", "--sizes", "80", "--reps", "1", "--rss", "20"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith('| files | `memory.search(mode="words")` p50/p95 ms | FTS5 bm25+snippet p50/p95 ms |')
    for column in ("cold `fsmem search --mode words`, nothing changed, p50 ms", "the same with the default mode",
                   "load before/after"):
        assert column in lines[0], column
    assert lines[2].startswith("| 80 | ")
    assert len(lines[2].split("|")) == len(lines[0].split("|"))  # a value in every column
    assert "RSS of a long-lived process over 20 writes + 20 searches" in done.stdout
    assert "installed a wheel of this checkout in a venv of its own for the cold rows" in done.stderr


def test_corpus_generator_writes_realistic_markdown(tmp_path) -> None:
    from bench.search import generate

    total, words, _ = generate(tmp_path, 50)
    files = sorted(p for p in tmp_path.rglob("*.md"))
    assert len(files) == 50 and total == sum(p.stat().st_size for p in files)
    texts = [p.read_text() for p in files]
    assert any(t.startswith("---\nid: f") for t in texts)  # facts with front matter
    assert any("\n## " in t and "\n- " in t for t in texts)  # headings and lists
    assert len(words) == 30000


def test_the_fts5_baseline_has_a_prefix_index_and_answers_with_snippets(tmp_path) -> None:
    """The baseline a user would set up: a prefix index for the last word's prefix, snippet() per row."""
    from bench.search import fts5_build, fts5_search, generate

    generate(tmp_path / "corpus", 50)
    conn = fts5_build(tmp_path / "corpus", tmp_path / "fts.db")
    (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'docs'").fetchone()
    assert "prefix = '2 3 4 5 6 7 8'" in sql
    rows = fts5_search(conn, "the of")
    assert rows and all(isinstance(path, str) and isinstance(snippet, str) and snippet for path, snippet in rows)
    conn.close()
