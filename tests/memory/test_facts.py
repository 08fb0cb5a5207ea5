"""Facts on a real folder: files, versions, log, hand edits, broken files, the tool's refusal."""

from __future__ import annotations

import json
import os
import time
from datetime import datetime, timezone

import pytest

import fsmem
from fsmem import Scope
from fsmem._errors import BadFact, FactSensitive, NotFound
from fsmem._memory.facts.facts import Facts
from fsmem._memory.facts.files import parse, render

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=timezone.utc)


@pytest.fixture
def memory(tmp_path):
    return fsmem.open(tmp_path / "root", create=True)


@pytest.fixture
def facts(memory) -> Facts:
    return memory.facts


def _files(memory) -> list[str]:
    base = memory.root / "notes" / "memory"
    return sorted(p.relative_to(memory.root).as_posix() for p in base.rglob("*") if p.is_file())


def test_a_fact_is_a_readable_file_with_a_fixed_key_order(memory) -> None:
    facts = Facts(memory.drive, clock=lambda: NOW)
    kept = facts.keep("Ana", "role", "Ana works in research.", source="chat: Planning", said="2026-10-12")
    assert kept.outcome == "current" and kept.replaced is None
    fid = kept.fact.id
    assert fid.startswith("20261130T100000-")
    assert (memory.root / f"notes/memory/{fid}.md").read_text() == (
        "---\n"
        f"id: {fid}\n"
        "subject: Ana\n"
        "attribute: role\n"
        "source: 'chat: Planning'\n"
        "said: 2026-10-12\n"
        "kept: 2026-11-30T10:00:00Z\n"
        "edited:\n"
        "replaces: []\n"
        "replaced_by:\n"
        "until:\n"
        "---\n"
        "\n"
        "Ana works in research.\n"
    )


@pytest.mark.parametrize("text", ["Ana's note: 'quoted' and \"double\" — ünïcode: yes", "- starts like a list",
                                  "null", "2026-01-01", "a # not a comment", "  "])
def test_any_subject_round_trips_through_the_file(text: str) -> None:
    from fsmem._core.facts import Fact
    subject = text.strip() or "x"
    fact = Fact(id="f1", subject=subject, attribute=subject, text="A sentence.", source=subject,
                said=NOW, kept=NOW)
    assert parse(render(fact), "f1") == fact


def test_ana_across_september_and_october(memory, facts) -> None:
    september = facts.keep("Ana", "role", "Ana leads the data team.", said="2026-09-01")
    october = facts.keep("ana", " Role ", "Ana works in research.", said="2026-10-12")
    assert october.outcome == "current" and october.replaced.id == september.fact.id
    assert october.replaced.until == datetime(2026, 10, 12, tzinfo=timezone.utc)
    assert _files(memory) == [f"notes/memory/{october.fact.id}.md",
                              f"notes/memory/history/{september.fact.id}.md"]
    assert [f.text for f in facts.current("ANA")] == ["Ana works in research."]
    assert [f.id for f in facts.history(september.fact.id)] == [october.fact.id, september.fact.id]
    assert facts.known() == [("Ana", "role")]
    replaced = facts.get(september.fact.id)
    assert replaced.replaced_by == october.fact.id and not replaced.holds


def test_said_earlier_goes_to_history_at_once(memory, facts) -> None:
    october = facts.keep("Ana", "role", "Ana works in research.", said="2026-10-12")
    september = facts.keep("Ana", "role", "Ana leads the data team.", said="2026-09-01")
    assert september.outcome == "history"
    assert september.fact.path == f"notes/memory/history/{september.fact.id}.md"
    assert facts.get(october.fact.id).replaces == (september.fact.id,)
    assert [f.id for f in facts.current()] == [october.fact.id]


def test_the_same_sentence_keeps_nothing_and_writes_nothing(memory, facts) -> None:
    kept = facts.keep("Ana", "role", "Ana works in research.")
    lines = len((memory.root / ".fsmem/log.jsonl").read_text().splitlines())
    again = facts.keep("Ana", "role", "ana works in research.")
    assert again.outcome == "known" and again.fact.id == kept.fact.id
    assert len((memory.root / ".fsmem/log.jsonl").read_text().splitlines()) == lines


def test_changes_are_logged_and_versions_kept(memory, facts) -> None:
    old = facts.keep("Ana", "role", "Ana leads the data team.", said="2026-09-01")
    new = facts.keep("Ana", "role", "Ana works in research.", said="2026-10-12")
    log = [json.loads(line) for line in (memory.root / ".fsmem/log.jsonl").read_text().splitlines()]
    assert [(e["command"], e["path"], e["after"] is None) for e in log] == [
        ("facts.keep", f"notes/memory/{old.fact.id}.md", False),
        ("facts.keep", f"notes/memory/{new.fact.id}.md", False),
        ("facts.keep", f"notes/memory/history/{old.fact.id}.md", False),
        ("facts.keep", f"notes/memory/{old.fact.id}.md", True),
    ]
    deleted = facts.forget(new.fact.id)
    assert [f.id for f in deleted] == [new.fact.id, old.fact.id]
    assert _files(memory) == []
    kept = memory.versions(f"notes/memory/{new.fact.id}.md")
    assert kept and b"Ana works in research." in kept[0].file.read_bytes()


def test_edit_keeps_id_and_history(memory, facts) -> None:
    old = facts.keep("Ana", "role", "Ana leads the data team.", said="2026-09-01")
    new = facts.keep("Ana", "role", "Ana works in reserch.", said="2026-10-12")
    edited = facts.edit(new.fact.id, fact="Ana works in research.")
    assert edited.id == new.fact.id and edited.edited is not None
    assert [f.id for f in facts.history(new.fact.id)] == [new.fact.id, old.fact.id]
    assert "edited: 20" in (memory.root / f"notes/memory/{new.fact.id}.md").read_text()
    moved = facts.edit(new.fact.id, subject="Ana Lima")
    assert moved.subject == "Ana Lima" and facts.current("ana lima")[0].id == new.fact.id
    assert facts.current("ana") == []


def test_forget_of_an_unknown_id_says_how_to_find_one(facts) -> None:
    with pytest.raises(NotFound, match="no fact nope: `fsmem facts list` shows the facts that hold"):
        facts.forget("nope")


def test_refused_facts_change_nothing(memory, facts) -> None:
    with pytest.raises(FactSensitive):
        facts.keep("Bruno", "password", "Bruno uses his dog's name.")
    with pytest.raises(BadFact, match="fact 2: the subject is 121 characters"):
        facts.keep_many([{"subject": "Ana", "attribute": "role", "fact": "Ana works."},
                         {"subject": "x" * 121, "attribute": "role", "fact": "x"}])
    with pytest.raises(FactSensitive) as caught:
        facts.keep_many([{"subject": "Ana", "attribute": "role", "fact": "Ana works."},
                         {"subject": "Bruno", "attribute": "note", "fact": "card 4111 1111 1111 1111"}])
    assert caught.value.message == ("fact 2: the fact looks like a secret: a card number; keep secrets in a "
                                    "secret manager and refer to them by name; nothing was kept")
    assert not (memory.root / "notes").exists()
    assert not (memory.root / ".fsmem/log.jsonl").exists()


def test_keep_many_is_one_change_and_reports_each(memory, facts) -> None:
    results = facts.keep_many([
        {"subject": "Ana", "attribute": "role", "fact": "Ana leads the data team.", "said": "2026-09-01"},
        {"subject": "Ana", "attribute": "role", "fact": "Ana works in research.", "said": "2026-10-12"},
        {"subject": "Bruno", "attribute": "team", "fact": "Bruno is in ops."},
    ])
    assert [r.outcome for r in results] == ["current", "current", "current"]
    assert results[0].fact.holds is False  # moved by the second, reported as it stands now
    assert results[1].replaced.id == results[0].fact.id
    assert len(facts.current()) == 2


def test_a_hand_edit_is_seen_at_once(memory, facts) -> None:
    kept = facts.keep("Ana", "role", "Ana works in research.")
    path = memory.root / f"notes/memory/{kept.fact.id}.md"
    path.write_text(path.read_text().replace("Ana works in research.", "Ana works in research, on search."))
    assert facts.current()[0].text == "Ana works in research, on search."
    assert fsmem.open(memory.root).facts.current()[0].text == "Ana works in research, on search."


def test_broken_files_are_reported_skipped_and_never_crash(memory, facts) -> None:
    ok = facts.keep("Bruno", "team", "Bruno is in ops.")
    old = facts.keep("Ana", "role", "Ana leads the data team.", said="2026-09-01")
    new = facts.keep("Ana", "role", "Ana works in research.", said="2026-10-12")
    broken = memory.root / f"notes/memory/history/{old.fact.id}.md"
    broken.write_text("---\nid: [unclosed\nsubject: Ana\n---\nAna leads the data team.\n")
    (memory.root / "notes/memory/My notes.md").write_text("hello\n")
    (memory.root / "notes/memory/20990101-000000-00000000.md").write_text("no front matter\n")
    assert {f.id for f in facts.current()} == {ok.fact.id, new.fact.id}
    problems = [(p.path, p.message) for p in facts.check()]
    assert (f"notes/memory/history/{old.fact.id}.md",
            "the front matter is not valid YAML (line 3); mend it or restore a version with `fsmem versions`") in problems
    assert ("notes/memory/My notes.md", "not a fact file: facts are named <id>.md (letters, digits, - and _); "
            "keep notes elsewhere, or keep the fact with `fsmem facts keep`") in problems
    assert ("notes/memory/20990101-000000-00000000.md", "the file has no front matter: it should start with a "
            "`---` line, the fields, and another `---` line") in problems
    # other things still change; the broken chain is left for a person to mend
    assert facts.keep("Bruno", "team", "Bruno is in research.").outcome == "current"
    with pytest.raises(BadFact, match="has a file fsmem cannot read; run `fsmem check`"):
        facts.keep("Ana", "role", "Ana leads search.")
    assert broken.read_text().startswith("---\nid: [unclosed")
    with pytest.raises(BadFact, match=f"fact {old.fact.id} cannot be read: its file is damaged"):
        facts.get(old.fact.id)


def test_check_reports_rule_breaks_in_hand_edits(memory, facts) -> None:
    a = facts.keep("Ana", "role", "Ana works in research.")
    b = facts.keep("Bruno", "role", "Bruno is in ops.")
    path_b = memory.root / f"notes/memory/{b.fact.id}.md"
    path_b.write_text(path_b.read_text().replace("subject: Bruno", "subject: ana"))
    path_a = memory.root / f"notes/memory/{a.fact.id}.md"
    path_a.write_text(path_a.read_text().replace("Ana works in research.", "Ana's password is hunter2"))
    messages = [p.message for p in facts.check()]
    assert any(m.startswith("2 facts hold for ") and "forget or edit all but one" in m for m in messages)
    assert any("looks like a secret" in m for m in messages)
    assert not any("hunter2" in m for m in messages)


def test_the_memory_tool_reads_facts_but_never_changes_them(memory, facts) -> None:
    kept = facts.keep("Ana", "role", "Ana works in research.")
    run = memory.run(Scope.chat(), thread_id="t-1")
    path = f"notes/memory/{kept.fact.id}.md"
    read = run.call({"command": "read", "path": path})
    assert read["ok"] and "Ana works in research." in read["text"]
    for call in ({"command": "write", "path": path, "content": "x"},
                 {"command": "write", "path": "notes/memory/new.md", "content": "x"},
                 {"command": "delete", "path": path},
                 {"command": "rename", "path": path, "new_path": "elsewhere.md"}):
        result = run.call(call)
        assert not result["ok"] and result["error"]["code"] == "PROTECTED", call
    assert facts.current()[0].id == kept.fact.id


def test_a_long_lived_view_agrees_with_a_fresh_one_after_hand_edits(memory, facts) -> None:
    ids = [facts.keep("Ana", "role", f"Ana has role {n}.", said=f"2026-0{n}-01").fact.id for n in range(1, 6)]
    facts.keep("Bruno", "team", "Bruno is in ops.")
    base = memory.root / "notes" / "memory"

    def agree() -> None:
        fresh = Facts(memory.drive)
        assert facts.all() == fresh.all()
        assert facts.current() == fresh.current()
        assert [(p.path, p.message) for p in facts.check()] == [(p.path, p.message) for p in fresh.check()]

    agree()
    newest = base / f"{ids[-1]}.md"
    newest.write_text(newest.read_text().replace("Ana has role 5.", "Ana has role five."))
    agree()
    (base / "history" / f"{ids[2]}.md").unlink()  # a person deletes one in the middle
    agree()
    assert [f.text for f in facts.current("ana")] == ["Ana has role five."]  # the older part stays history
    assert [f.id for f in facts.history(ids[1])] == [ids[1], ids[0]]
    assert (f"notes/memory/history/{ids[1]}.md", f"replaced by {ids[2]}, which is gone; {ids[4]} holds for the "
            "same thing now") in [(p.path, p.message) for p in facts.check()]
    newest.write_text(newest.read_text().replace("said: 2026-05-01", "said: 2026-03-15"))  # said earlier now
    agree()
    assert [f.text for f in facts.current("ana")] == ["Ana has role 4."]
    (base / "history" / f"{ids[0]}.md").write_text("---\nbroken: [\n---\n")
    agree()
    (base / "history" / f"{ids[0]}.md").unlink()
    (base / "stray.txt").write_text("x")
    agree()
    assert ("notes/memory/stray.txt", "not a fact file: facts are named <id>.md (letters, digits, - and _); "
            "keep notes elsewhere, or keep the fact with `fsmem facts keep`") in [(p.path, p.message) for p in facts.check()]


from hypothesis import HealthCheck, example, given, settings, strategies as st  # noqa: E402

from fsmem._core.facts import Fact, clean_name, clean_sentence  # noqa: E402

_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_TEXT, _TEXT, _TEXT, _TEXT)
@example("a\x00b", "role: x", "'", "---")
@example("null", "~", "- x", "--- a ---")
@example("\ufeffAna", "#", "&anchor", "\x85")
@example("Ana", "role", "x", "---\nid: other\n---")
def test_any_text_round_trips_through_a_fact_file(subject, attribute, source, sentence) -> None:
    import frontmatter

    from fsmem._core.facts import fact_from_fields

    parts = [clean_name(subject), clean_name(attribute), clean_name(source), clean_sentence(sentence)]
    if not all(parts):
        return
    fact = Fact(id="20261130T100000-0000abcd", subject=parts[0], attribute=parts[1], source=parts[2],
                text=parts[3], said=NOW, kept=NOW, replaces=("20261130T090000-0000abcd",))
    data = render(fact)
    assert parse(data, fact.id) == fact
    post = frontmatter.loads(data.decode())
    assert fact_from_fields(post.metadata, post.content, fact.id) == fact


def test_a_new_process_parses_only_what_changed_since_the_kept_view(memory, facts, monkeypatch) -> None:
    import fsmem._memory.facts.files as module  # the view parses through it
    from fsmem._core.search import RACY_WINDOW_NS
    from fsmem._store.folder import stamps

    # every read after the files' racy window (one within it reads the file again: see tests/store/folder/test_stamps.py)
    monkeypatch.setattr(stamps, "_now_ns", lambda: time.time_ns() + 2 * RACY_WINDOW_NS)
    old = facts.keep("Ana", "role", "Ana leads the data team.", said="2026-09-01")
    new = facts.keep("Ana", "role", "Ana works in research.", said="2026-10-12")
    expected = Facts(memory.drive).all()
    assert (memory.root / ".fsmem/cache/facts.sqlite").is_file()
    parsed: list[str] = []
    real_parse = module.parse
    monkeypatch.setattr(module, "parse", lambda data, fid: parsed.append(fid) or real_parse(data, fid))
    assert Facts(memory.drive).all() == expected and parsed == []
    path = memory.root / new.fact.path
    path.write_text(path.read_text().replace("research.", "research, on search."))
    assert [f.text for f in Facts(memory.drive).current()] == ["Ana works in research, on search."]
    assert parsed == [new.fact.id]
    assert [f.id for f in Facts(memory.drive).all()] == [old.fact.id, new.fact.id]


@pytest.mark.slow
def test_the_facts_bench_runs(tmp_path) -> None:
    import subprocess
    import sys

    from tests.conftest import REPO

    done = subprocess.run([sys.executable, "-m", "bench", "facts", "--facts", "60", "--subjects", "6",
                           "--batch", "20", "--samples", "3"], cwd=REPO, capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    for row in ("built: kept 20 in one change", "keep (one fact, its own change)", "current() - every fact that holds",
                "current(subject)", "current() after a hand edit", "no kept view", "from the kept view",
                "cold rg, every fact's sentence", "cold `fsmem facts list` (a new process)", "target <= 300 ms",
                "cold rg, the files about SUBJECT", "cold `fsmem facts list SUBJECT`", "target <= 50 ms"):
        assert row in done.stdout, row


def test_ids_keep_their_order_when_the_clock_goes_back(memory) -> None:
    from datetime import timedelta

    back = NOW - timedelta(hours=1)
    moments = iter([NOW, NOW, NOW, back, back, back])  # three clock reads a keep
    facts = Facts(memory.drive, clock=lambda: next(moments))
    first = facts.keep("Ana", "role", "Ana works in research.").fact.id
    second = facts.keep("Bruno", "role", "Bruno works in ops.").fact.id
    assert first < second and second.startswith(first[:16])


def test_a_fifo_named_like_a_fact_is_a_problem_and_never_read(memory, facts) -> None:
    kept = facts.keep("Ana", "role", "Ana works in research.")
    fifo = "notes/memory/20261130T100000-deadbeef.md"
    os.mkfifo(memory.root / fifo)  # opening it to read would wait for a writer, forever
    assert [fact.id for fact in facts.current()] == [kept.fact.id]
    assert [problem.message for problem in facts.check() if problem.path == fifo] == [
        "a FIFO, a device or a socket, not a fact file; facts are plain files written by fsmem"
    ]
