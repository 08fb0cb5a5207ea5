"""``fsmem facts …`` and ``fsmem check`` through CliRunner (exact output) and one real process."""

from __future__ import annotations

import json

from click.testing import CliRunner

import fsmem
from fsmem.cli import main
from tests.conftest import invoke, run_fsmem






def keep_json(root, *args) -> dict:
    result = invoke(root, "facts", "keep", *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_keep_says_what_became_of_the_fact(root) -> None:
    first = invoke(root, "facts", "keep", "Ana", "role", "Ana leads the data team.", "--said", "2026-09-01")
    assert first.exit_code == 0, first.output
    old_id = fsmem.open(root).facts.current()[0].id
    assert first.output == f"Kept {old_id}: Ana / role: Ana leads the data team.\n"
    second = invoke(root, "facts", "keep", "ana", "ROLE", "Ana works in research.", "--said", "2026-10-12",
                    "--source", "chat: Planning")
    new_id = fsmem.open(root).facts.current()[0].id
    assert second.output == (
        f"Kept {new_id}: Ana / role: Ana works in research.\n"
        f"It replaces {old_id}, now in the history: Ana leads the data team. (held 2026-09-01 to 2026-10-12)\n")
    third = invoke(root, "facts", "keep", "Ana", "role", "Ana is an intern.", "--said", "2026-08-01")
    intern = [f for f in fsmem.open(root).facts.all() if f.text == "Ana is an intern."][0]
    assert third.output == (f"Kept {intern.id} in the history at once: Ana / role: Ana is an intern. "
                            f"(held 2026-08-01 to 2026-09-01; {old_id} was said later)\n")
    again = invoke(root, "facts", "keep", "Ana", "role", "Ana works in research.")
    assert again.output == f"Already known as {new_id}: Ana works in research. Nothing was kept.\n"


def test_keep_json_is_the_result(root) -> None:
    data = keep_json(root, "Ana", "role", "Ana works in research.", "--said", "2026-10-12")
    assert data["outcome"] == "current" and data["replaced"] is None
    fact = data["fact"]
    assert {k: fact[k] for k in ("subject", "attribute", "fact", "said", "source", "holds", "replaces",
                                 "replaced_by", "until", "edited")} == {
        "subject": "Ana", "attribute": "role", "fact": "Ana works in research.", "said": "2026-10-12",
        "source": "added by hand", "holds": True, "replaces": [], "replaced_by": None, "until": None,
        "edited": None}
    assert fact["path"] == f"notes/memory/{fact['id']}.md"


def test_list_show_history_known(root) -> None:
    old = keep_json(root, "Ana", "role", "Ana leads the data team.", "--said", "2026-09-01")["fact"]["id"]
    new = keep_json(root, "Ana", "role", "Ana works in research.", "--said", "2026-10-12",
                    "--source", "chat: Planning")["fact"]["id"]
    bruno = keep_json(root, "Bruno", "team", "Bruno is in ops.", "--said", "2026-11-01")["fact"]["id"]
    assert invoke(root, "facts", "list").output == (
        f"{new}  Ana / role: Ana works in research. (said 2026-10-12)\n"
        f"{bruno}  Bruno / team: Bruno is in ops. (said 2026-11-01)\n")
    assert invoke(root, "facts", "list", "ana").output == (
        f"{new}  Ana / role: Ana works in research. (said 2026-10-12)\n")
    assert invoke(root, "facts", "list", "ana", "--all").output == (
        f"{new}  Ana / role: Ana works in research. (said 2026-10-12)\n"
        f"{old}  Ana / role: Ana leads the data team. (held 2026-09-01 to 2026-10-12)\n")
    assert invoke(root, "facts", "list", "Caio").output == (
        "No facts hold about Caio. Keep one with `fsmem facts keep SUBJECT ATTRIBUTE FACT`.\n")
    shown = invoke(root, "facts", "show", old).output
    assert shown.startswith(
        "Ana / role: Ana leads the data team.\n"
        f"holds: no, replaced by {new} on 2026-10-12\n"
        "said: 2026-09-01\n"
        "source: added by hand\n"
        "kept: ")
    assert shown.endswith(f"file: notes/memory/history/{old}.md\n")
    assert invoke(root, "facts", "history", old).output == (
        f"{new}  Ana / role: Ana works in research. (said 2026-10-12)\n"
        f"{old}  Ana / role: Ana leads the data team. (held 2026-09-01 to 2026-10-12)\n")
    assert [f["id"] for f in json.loads(invoke(root, "facts", "history", new, "--json").output)] == [new, old]
    assert invoke(root, "facts", "known").output == "Ana: role\nBruno: team\n"
    assert json.loads(invoke(root, "facts", "known", "--json").output) == [
        {"subject": "Ana", "attribute": "role"}, {"subject": "Bruno", "attribute": "team"}]


def test_edit_and_forget(root) -> None:
    old = keep_json(root, "Ana", "role", "Ana leads the data team.", "--said", "2026-09-01")["fact"]["id"]
    new = keep_json(root, "Ana", "role", "Ana works in reserch.", "--said", "2026-10-12")["fact"]["id"]
    edited = invoke(root, "facts", "edit", new, "--fact", "Ana works in research.")
    assert edited.output == f"Edited {new}: Ana / role: Ana works in research.\n"
    nothing = invoke(root, "facts", "edit", new)
    assert nothing.exit_code == 1
    assert nothing.output == "Error: [BAD_FACT] nothing to edit: give a new sentence, subject or attribute\n"
    forgot = invoke(root, "facts", "forget", new)
    assert forgot.output == (
        "Forgot 2 facts:\n"
        f"  {new}  Ana / role: Ana works in research. (said 2026-10-12)\n"
        f"  {old}  Ana / role: Ana leads the data team. (held 2026-09-01 to 2026-10-12)\n")
    missing = invoke(root, "facts", "forget", new)
    assert missing.exit_code == 1
    assert missing.output == (f"Error: [NOT_FOUND] no fact {new}: `fsmem facts list` shows the facts that hold, "
                              "`fsmem facts history ID` a chain\n")


def test_refusals_are_one_error_line_and_change_nothing(root) -> None:
    secret = invoke(root, "facts", "keep", "Bruno", "note", "Bruno's key is ghp_abcdefghijklmnopqrstuvwx")
    assert secret.exit_code == 1
    assert secret.output == ("Error: [FACT_SENSITIVE] the fact looks like a secret: an access key. Nothing was "
                             "kept; keep secrets in a secret manager and refer to them by name\n")
    assert "ghp_" not in secret.output
    long = invoke(root, "facts", "keep", "A" * 121, "role", "x")
    assert long.output == ("Error: [BAD_FACT] the subject is 121 characters; the limit is 120. Shorten it to "
                           "who or what the fact is about, by name\n")
    date = invoke(root, "facts", "keep", "Ana", "role", "x", "--said", "last week")
    assert date.output.startswith("Error: [BAD_FACT] 'last week' is not a date")
    assert not (root / "notes").exists()


def test_check_reports_and_repairs(root) -> None:
    assert invoke(root, "check").output == "No problems in 0 facts.\n"
    old = keep_json(root, "Ana", "role", "Ana leads the data team.", "--said", "2026-09-01")["fact"]["id"]
    new = keep_json(root, "Ana", "role", "Ana works in research.", "--said", "2026-10-12")["fact"]["id"]
    # a crash between writing the history copy and deleting the current one leaves both
    (root / f"notes/memory/{old}.md").write_bytes((root / f"notes/memory/history/{old}.md").read_bytes())
    (root / "notes/memory/broken.md").write_text("---\nid: broken\n---\nno subject\n")
    result = invoke(root, "check")
    assert result.exit_code == 1
    assert result.output == (
        "notes/memory: 1 fact file(s) left half-changed or linked to facts that are gone "
        f"(notes/memory/{old}.md); reads already see the change finished (`fsmem check --repair` writes the "
        "rest of the change, as every read already sees it)\n"
        "notes/memory/broken.md: the front matter lacks subject, attribute, said (a person must mend this)\n")
    (root / "notes/memory/broken.md").unlink()
    repaired = invoke(root, "check", "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert repaired.output == f"Repaired notes/memory/{old}.md\nNo problems in 2 facts.\n"
    assert not (root / f"notes/memory/{old}.md").exists()
    assert json.loads(invoke(root, "check", "--json").output) == {"repaired": [], "problems": [], "facts": 2}
    assert [f.id for f in fsmem.open(root).facts.current()] == [new]


def test_every_facts_command_has_help(root) -> None:
    for args in (["facts"], ["facts", "keep"], ["facts", "list"], ["facts", "show"], ["facts", "history"],
                 ["facts", "edit"], ["facts", "forget"], ["facts", "known"], ["remember"], ["check"]):
        result = CliRunner().invoke(main, [*args, "--help"])
        assert result.exit_code == 0 and "Usage: " in result.output, args


def test_a_real_process_keeps_and_lists(root) -> None:
    kept = run_fsmem("facts", "keep", "Ana", "role", "Ana works in research.", "--said", "2026-10-12",
                     "--root", str(root), "--json")
    assert kept.returncode == 0, kept.stderr
    fid = json.loads(kept.stdout)["fact"]["id"]
    listed = run_fsmem("facts", "list", "--root", str(root))
    assert listed.stdout == f"{fid}  Ana / role: Ana works in research. (said 2026-10-12)\n"
    refused = run_fsmem("facts", "keep", "Bruno", "password", "x", "--root", str(root))
    assert refused.returncode == 1 and refused.stderr.startswith("Error: [FACT_SENSITIVE]")


def test_list_shows_broken_facts_and_check_repair_mends_the_id(root) -> None:
    kept = keep_json(root, "Ana", "role", "Ana leads the data team.", "--said", "2026-09-01")["fact"]
    path = root / kept["path"]
    path.write_text(path.read_text().replace(f"id: {kept['id']}\n", ""))
    (root / "notes/memory/20260101T000000-00000000.md").write_text("---\nsubject: [Ana\n---\nx\n")
    listed = invoke(root, "facts", "list", "Ana")
    assert listed.exit_code == 0, listed.output
    assert listed.output == (
        "BROKEN  notes/memory/20260101T000000-00000000.md: the front matter is not valid YAML (line 3); mend it or "
        "restore a version with `fsmem versions` (a person must mend this)\n"
        f"BROKEN  {kept['path']}: the front matter lacks id (`fsmem check --repair` takes the fact's id from its "
        "file's name)\n")
    entries = json.loads(invoke(root, "facts", "list", "--json").output)
    assert [(e["path"], e["broken"], e["repair"]) for e in entries] == [
        ("notes/memory/20260101T000000-00000000.md", True, None),
        (kept["path"], True, "takes the fact's id from its file's name")]
    repaired = invoke(root, "check", "--repair")
    assert repaired.exit_code == 1
    assert repaired.output.startswith(f"Repaired {kept['path']}\nnotes/memory/20260101T000000-00000000.md: ")
    assert invoke(root, "facts", "list").output == (
        f"{kept['id']}  Ana / role: Ana leads the data team. (said 2026-09-01)\n"
        "BROKEN  notes/memory/20260101T000000-00000000.md: the front matter is not valid YAML (line 3); mend it or "
        "restore a version with `fsmem versions` (a person must mend this)\n")


def test_a_cold_listing_asks_for_its_check_once_its_lines_are_written(root, monkeypatch) -> None:
    """The check after an answer from the kept view (it stats every fact file) starts after the
    command wrote its lines, not while it writes them; an answer the view did not give asks none."""
    import sys

    from fsmem._memory.facts import recheck

    asked: list[bytes] = []
    monkeypatch.setattr(recheck, "ask_recheck", lambda folder: asked.append(sys.stdout.buffer.getvalue()))
    keep_json(root, "Ana", "role", "Ana leads the data team.", "--said", "2026-09-01")
    fsmem.open(root).facts.current()  # the kept view, written
    listed = invoke(root, "facts", "list")
    assert listed.exit_code == 0 and "Ana / role: Ana leads the data team. (said 2026-09-01)" in listed.output
    assert asked == [listed.stdout_bytes]  # asked with every line already written
    everything = invoke(root, "facts", "list", "--all")  # not answered from the view: no check owed
    assert everything.exit_code == 0 and asked == [listed.stdout_bytes]
