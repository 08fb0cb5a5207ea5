"""bin/bench keeps working: a tiny run of the drive part prints every row and the target line.

No timing is asserted (machines are noisy); the numbers themselves are for people, in bin/bench.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bench", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )


def test_drive_bench_runs_and_reports(tmp_path) -> None:
    done = _bench("drive", "--files", "30", "--rounds", "3", "--dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("== drive\nroot of 30 files, 3 timed calls a row")
    for row in (
        "bare plain write",
        "bare durable write",
        "tool read ",
        "tool write (whole file)",
        "tool write (partial edit)",
        "tool write (same file, versions full)",
    ):
        assert f"\n{row}" in out, row
    assert "target: a tool write within 3x the bare durable write: " in out
    assert list(tmp_path.iterdir()) == []  # the scratch root is cleaned up


def test_ui_bench_runs_and_reports() -> None:
    done = _bench("ui", "--files", "30", "--repeat", "2")
    assert done.returncode == 0, done.stderr
    assert "memory files; 2 requests a page; target p50 <= 100 ms" in done.stdout
    for row in ("tool read (baseline)", "levels /", "file ", "history (all)", "proposals (5)", "search "):
        assert f"\n{row}" in done.stdout, row


def test_missing_parts_are_skipped_and_unknown_parts_refused() -> None:
    help_text = _bench("--help")
    usage = "usage: bin/bench [drive|search|facts|context|faces|store|processes|daemon|recall|meaning|ui|all]"
    assert help_text.returncode == 0 and help_text.stdout.startswith(usage)
    unknown = _bench("nonsense")
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("Error: no benchmark part 'nonsense'.")


def test_recall_bench_runs_every_ranker_on_a_split(tmp_path) -> None:
    """A split shaped like LoCoMo's: every ranker's row, recall by category, the length-cost columns."""
    turns = [
        {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a puppy named Biscuit."},
        {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely!", "blip_caption": "a photo of a dog"},
    ]
    later = [{"speaker": "Ana", "dia_id": "D2:1", "text": "We moved to Lisbon in spring."}]
    split = {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1": turns,
        "session_1_date_time": "8 May, 2023",
        "session_2": later,
        "session_2_date_time": "9 June, 2023",
        "session_3_date_time": "never held",
        "qa": [
            {"question": "What is the name of Ana's puppy?", "evidence": ["D1:1"], "category": 4},
            {"question": "Where did Ana move to?", "evidence": ["D2:1"], "category": 1},
            {"question": "Is this adversarial?", "evidence": ["D1:2"], "category": 5},
            {"question": "No evidence here?", "evidence": ["D"], "category": 2},
        ],
    }
    (tmp_path / "7.json").write_text(json.dumps(split))
    done = _bench("recall", "--data", str(tmp_path))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "== recall"
    categories = "multi-hop (1) | temporal (0) | open-domain (0) | single-hop (1)"
    assert lines[1].startswith(f"| ranker | recall@5 | {categories} |")
    rows = {line.split(" | ")[0]: line.split(" | ")[1:] for line in lines[3:5]}
    assert set(rows) == {"| fsmem words", "| FTS5 OR (porter)"}
    assert all(row[0] == "1.000" for row in rows.values())  # two files: each answer is in the top 5
    assert "- 2 session files, 2 questions of categories 1-4 (1 more name no session as evidence" in done.stdout


def test_recall_bench_says_where_the_split_goes(tmp_path) -> None:
    done = _bench("recall", "--data", str(tmp_path / "nowhere"))
    assert done.returncode == 2
    assert done.stderr.startswith("Error: the LoCoMo dev split is not there (looked in ")
    assert "pass --data DIR" in done.stderr


def test_daemon_bench_runs_and_reports_the_rss_rows_and_first_use() -> None:
    done = _bench("daemon", "--files", "40", "--no-meaning", "--settle", "0.5")  # the settled row, after 0.5 s
    assert done.returncode == 0, done.stderr
    assert "| files | meaning | RSS MB served / settled | anon MB settled | peak MB | ≤ 150 MB |" in done.stdout
    assert "\n| 40 | off | " in done.stdout
    assert "| files | first use: cold search alone ms | until the resident answers ms | next cold search ms |" in done.stdout


def test_facts_bench_runs_the_cold_rows_with_and_without_a_resident(tmp_path) -> None:
    """A tiny run of the facts part: the cold rows through the installed wheel, then the same with
    `fsmem watch` serving (started, answered, stopped), each with its target column."""
    done = _bench("facts", "--quick", "--facts", "200", "--subjects", "20", "--root", str(tmp_path / "root"))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "facts bench: 200 facts about 20 subjects in " in out
    assert "`fsmem watch` answers (" in out
    for row, target in (
        ("cold `fsmem facts list` (a new process)", 300),
        ("cold `fsmem facts list SUBJECT`", 50),
        ("cold `fsmem facts list`, `fsmem watch` serving", 300),
        ("cold `fsmem facts list SUBJECT`, `fsmem watch` serving", 50),
    ):
        line = next(line for line in out.splitlines() if line.strip().startswith(row + " "))
        assert f"target <= {target} ms: " in line, line
    assert out.count("(user + system of the resident, a mean an answer)") == 2
    assert not (tmp_path / "root" / ".fsmem" / "resident.sock").exists()  # the resident was stopped
