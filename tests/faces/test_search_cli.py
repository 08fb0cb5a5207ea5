"""`fsmem search`, `fsmem index status|rebuild`: CliRunner for exact output, real processes for freshness."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import fsmem
from fsmem.cli import main
from fsmem._index.state import index_dir, read_current
from tests.conftest import REPO, run_fsmem, write


@pytest.fixture
def root(tmp_path: Path) -> Path:
    fsmem.open(tmp_path, create=True)
    write(tmp_path, "MEMORY.md", "# Project\n\nWe deploy to staging every Friday.\n")
    write(tmp_path, "seo/titles.md", "# Titles\n\nKeep titles under 60 characters.\n")
    return tmp_path


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_search_prints_ranked_hits_with_snippets(root: Path) -> None:
    result = invoke("search", "deploy", "staging", "--root", str(root))
    assert result.exit_code == 0
    assert result.output == (
        "MEMORY.md:1  Project  [memory]\n"
        "    # Project We deploy to staging every Friday.\n"
    )


def test_search_json_is_stable_for_scripts(root: Path) -> None:
    result = invoke("search", "titles", "--json", "--root", str(root))
    hits = json.loads(result.output)
    assert [sorted(hit) for hit in hits] == [
        ["kind", "level", "line", "modified", "path", "problem", "score", "snippet", "text", "title"]]
    assert (hits[0]["path"], hits[0]["title"], hits[0]["kind"], hits[0]["level"]) == (
        "seo/titles.md", "Titles", "topic", "project")


def test_search_filters(root: Path) -> None:
    write(root, "seo/deploy.md", "# Deploy notes\n\ndeploy checklist\n")
    result = invoke("search", "deploy", "--include", "seo/**", "--root", str(root))
    assert result.output.splitlines()[0] == "seo/deploy.md:1  Deploy notes  [topic]"
    result = invoke("search", "deploy", "--exclude", "seo", "--since", "1d", "--limit", "1", "--root", str(root))
    assert result.output.splitlines()[0] == "MEMORY.md:1  Project  [memory]"


def test_search_without_a_match_says_so(root: Path) -> None:
    assert invoke("search", "zebra", "--root", str(root)).output == "No matches for 'zebra'.\n"


def test_regex_mode_prints_path_line_text(root: Path) -> None:
    result = invoke("search", "--regex", r"under \d+", "--root", str(root))
    assert result.output == "seo/titles.md:3: Keep titles under 60 characters.\n"


def test_bad_input_is_one_clear_error(root: Path) -> None:
    result = CliRunner().invoke(main, ["search", "x", "--since", "soon", "--root", str(root)])
    assert result.exit_code == 1
    assert result.output.startswith('Error: [BAD_REQUEST] since "soon" is not an age or a date.')
    result = CliRunner().invoke(main, ["search", "--regex", "(unclosed", "--root", str(root)])
    assert result.exit_code == 1 and "Error: [BAD_PATTERN]" in result.output


def test_index_status_and_rebuild(root: Path) -> None:
    invoke("search", "x", "--root", str(root))
    write(root, "new.md", "# New\n")
    assert invoke("index", "status", "--root", str(root)).output.splitlines()[:4] == [
        "documents: 2", "files:     3", "stale:     1", "watcher:   not running"]
    result = invoke("index", "rebuild", "--root", str(root))
    assert result.output.endswith("Rebuilt the index from 3 files.\n")
    status = json.loads(invoke("index", "status", "--json", "--root", str(root)).output)
    assert (status["documents"], status["files"], status["stale"], status["watcher"]) == (3, 3, 0, False)


def test_every_search_command_has_help() -> None:
    for args in (["search"], ["index"], ["index", "status"], ["index", "rebuild"], ["watch"]):
        result = invoke(*args, "--help")
        assert result.exit_code == 0 and "--help" in result.output


# --- real processes ------------------------------------------------------------------------------


def search_paths(root: Path, *query: str) -> list[str]:
    result = run_fsmem("search", *query, "--json", "--root", str(root))
    assert result.returncode == 0, result.stderr
    return [hit["path"] for hit in json.loads(result.stdout)]


@pytest.mark.slow
def test_a_hand_edit_is_seen_by_a_new_process(root: Path) -> None:
    assert search_paths(root, "friday") == ["MEMORY.md"]
    write(root, "MEMORY.md", "# Project\n\nWe ship on Mondays.\n")  # same process tree, no fsmem call
    assert search_paths(root, "friday") == []
    assert search_paths(root, "mondays") == ["MEMORY.md"]


@pytest.mark.slow
def test_an_editor_saving_by_rename_is_seen(root: Path) -> None:
    assert search_paths(root, "characters") == ["seo/titles.md"]
    swap = root / "seo/.titles.md.swp"
    swap.write_text("# Titles\n\nKeep titles short and punchy.\n")
    os.replace(swap, root / "seo/titles.md")
    assert search_paths(root, "characters") == []
    assert search_paths(root, "punchy") == ["seo/titles.md"]


@pytest.mark.slow
def test_folders_moved_in_and_out_are_seen(root: Path, tmp_path_factory) -> None:
    assert search_paths(root, "characters") == ["seo/titles.md"]
    outside = tmp_path_factory.mktemp("away")
    shutil.move(str(root / "seo"), str(outside / "seo"))
    write(outside, "brand/voice.md", "# Voice\n\nwarm and precise\n")
    shutil.move(str(outside / "brand"), str(root / "brand"))
    assert search_paths(root, "characters") == []
    assert search_paths(root, "precise") == ["brand/voice.md"]


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["delete", "corrupt"])
def test_a_broken_index_is_rebuilt_with_a_warning(root: Path, damage: str) -> None:
    assert search_paths(root, "friday") == ["MEMORY.md"]
    if damage == "delete":
        shutil.rmtree(index_dir(root / ".fsmem"))
        expected = "Warning: the search index was missing; rebuilt it from the 2 files of the root\n"
    else:
        generation = index_dir(root / ".fsmem") / read_current(root / ".fsmem")["generation"]
        (generation / "meta.json").write_text("{")
        expected = "Warning: the search index was corrupt: tantivy could not open it"
    result = run_fsmem("search", "friday", "--json", "--root", str(root))
    assert result.returncode == 0
    assert result.stderr.startswith(expected)
    assert [hit["path"] for hit in json.loads(result.stdout)] == ["MEMORY.md"]
    assert run_fsmem("search", "friday", "--root", str(root)).stderr == ""  # once


@pytest.mark.slow
def test_writes_through_fsmem_from_two_processes_at_once_are_both_indexed(root: Path) -> None:
    script = (
        "import sys, fsmem\n"
        "memory = fsmem.open(sys.argv[1])\n"
        "run = memory.run(thread_id=sys.argv[2])\n"
        "for i in range(8):\n"
        "    path = f'{sys.argv[2]}/note{i}.md'\n"
        "    result = run.call({'command': 'write', 'path': path, 'content': f'# {sys.argv[2]} {i}\\nword{sys.argv[2]}{i}\\n'})\n"
        "    assert result['ok'], result\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen([sys.executable, "-c", script, str(root), name], env=env)
             for name in ("alpha", "beta")]
    assert [proc.wait(timeout=60) for proc in procs] == [0, 0]
    status = json.loads(run_fsmem("index", "status", "--json", "--root", str(root)).stdout)
    assert (status["documents"], status["stale"]) == (18, 0)
    for name in ("alpha", "beta"):
        for i in range(8):
            assert fsmem.open(root).index.search(f"word{name}{i}", fresh=False)[0].path == f"{name}/note{i}.md"


@pytest.mark.slow
def test_a_write_through_fsmem_is_searchable_when_it_returns(root: Path) -> None:
    result = run_fsmem("write", "seo/meta.md", "--root", str(root), input="# Meta\n\ndescriptions matter\n")
    assert result.returncode == 0, result.stderr
    # Searched without the freshness comparison: only the write's own refresh can have indexed it.
    assert [h.path for h in fsmem.open(root).index.search("descriptions", fresh=False)] == ["seo/meta.md"]


@pytest.mark.slow
def test_the_cold_search_path_imports_only_what_it_needs(root: Path) -> None:
    assert search_paths(root, "friday") == ["MEMORY.md"]  # builds the index (that takes the lock)
    code = (
        "import sys\n"
        "from fsmem.cli import main\n"
        f"try:\n    main(['search', 'friday', '--root', {str(root)!r}])\n"
        "except SystemExit as done:\n    assert not done.code, done.code\n"
        "print(' '.join(sorted(sys.modules)))\n"  # not -X importtime: it misses what importlib loads
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60,
                          env={k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")})
    assert done.returncode == 0, done.stderr
    imported = set(done.stdout.splitlines()[-1].split())
    assert "tantivy" in imported and "click" in imported
    assert "fsmem._memory.memory" in imported  # through Memory, like every other command
    for heavy in ("jsonschema", "frontmatter", "watchdog", "regex", "fsmem._memory.facts", "mcp", "anthropic"):
        assert heavy not in imported
    # Nor what only writing, embedding or fetching the model needs (issue 24: a one-shot search's imports).
    for unused in ("yaml", "sqlite3", "concurrent.futures", "ctypes", "subprocess", "zipfile", "secrets", "logging",
                   "numpy", "fsmem._memory.levels", "fsmem._index.grep"):
        assert unused not in imported, unused


@pytest.mark.slow
def test_concurrent_searches_after_hand_edits_index_each_change_once(root: Path) -> None:
    assert search_paths(root, "friday") == ["MEMORY.md"]
    for i in range(20):
        write(root, f"bulk/n{i}.md", f"# N{i}\n\nbulkword{i}\n")
    write(root, "MEMORY.md", "# Project\n\nWe deploy on Sundays.\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    env["PYTHONPATH"] = str(REPO)
    procs = [subprocess.Popen([sys.executable, "-m", "fsmem", "search", "sundays", "--json", "--root", str(root)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    outputs = [proc.communicate(timeout=60) for proc in procs]
    for (stdout, stderr), proc in zip(outputs, procs):
        assert proc.returncode == 0, stderr
        assert [hit["path"] for hit in json.loads(stdout)] == ["MEMORY.md"]
    status = json.loads(run_fsmem("index", "status", "--json", "--root", str(root)).stdout)
    assert (status["documents"], status["files"], status["stale"]) == (22, 22, 0)


NEVER_USED_BY_A_SEARCH = ("fsmem._core.review", "fsmem._core.extract", "fsmem._memory.review", "fsmem._llm.model", "fsmem._llm.openai",
                          "fsmem._memory.tool", "fsmem._memory.prompts", "fsmem._core.secrets", "fsmem._core.requests",
                          "http.client", "ssl", "email.utils")


def test_a_cold_search_loads_neither_the_model_clients_nor_the_tool_nor_the_review(tmp_path):
    fsmem.open(tmp_path, create=True).run().call({"command": "write", "path": "a.md", "content": "# A\nokapiword\n"})
    code = (
        "import sys\n"
        "from fsmem.cli import main\n"
        f"try:\n    main(['search', 'okapiword', '--root', {str(tmp_path)!r}])\n"
        "except SystemExit as done:\n    assert not done.code, done.code\n"
        f"print(sorted(name for name in sys.modules if name in {NEVER_USED_BY_A_SEARCH!r}))\n"
        "import fsmem\n"
        "print(fsmem.OpenAICompatibleModel.__module__, fsmem.Run.__module__, 'http.client' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    *shown, loaded, later = done.stdout.strip().splitlines()
    assert "a.md" in "\n".join(shown) and loaded == "[]"
    assert later == "fsmem._llm.openai fsmem._memory.tool True"  # still there for whoever asks


def test_help_loads_no_memory_and_no_http_client(tmp_path):
    code = (
        "import sys\n"
        "from fsmem.cli import main\n"
        "try:\n    main(['--help'])\n"
        "except SystemExit as done:\n    assert not done.code, done.code\n"
        "print(sorted(name for name in sys.modules if name in ('fsmem._memory.memory', 'fsmem._store.folder.drive', 'fsmem._memory.levels', "
        "'fsmem._index.index', 'tantivy', 'fsmem._memory.tool', 'fsmem._memory.review', 'fsmem._llm.openai', 'http.client', 'ssl')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert done.returncode == 0, done.stderr
    assert "search" in done.stdout and done.stdout.strip().endswith("\n[]")
