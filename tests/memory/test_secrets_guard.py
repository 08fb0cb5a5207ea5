"""The content guards on every write: secrets (SENSITIVE, never echoed), size (TOO_LARGE), UTF-8.

docs/design.md §4 (Secrets) lists the shapes; §5 puts the checks on the new content, before anything is
kept or written. A refused write changes nothing: not the file, not versions/, not the log.

The secret-shaped strings below are built at run time from harmless pieces, so this file does not
itself look like it holds a secret to a scanner.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fsmem
from tests.conftest import REPO, run_fsmem
from tests.procs.common import diff, snapshot


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, char in enumerate(reversed(digits)):
        d = int(char)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def card(prefix: str, length: int) -> str:
    """A Luhn-valid number of ``length`` digits starting with ``prefix``."""
    body = (prefix + "3" * length)[: length - 1]
    return next(body + str(check) for check in range(10) if luhn_ok(body + str(check)))


BODY = "Zq8xW2mN4pL7rT9v"  # 16 letters and digits: long enough for every key prefix

# id -> (the text of a line holding it, the part that must never be echoed back)
SECRETS: dict[str, tuple[str, str]] = {
    "pem-rsa": ("-----" + "BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA" + BODY + "\n-----END RSA PRIVATE KEY-----",
                "MIIEowIBAAKCAQEA" + BODY),
    "pem-openssh": ("-----" + "BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE" + BODY,
                    "b3BlbnNzaC1rZXktdjE" + BODY),
    **{f"prefix-{p.strip('_-')}": (f"deploy key is {p}{BODY}", f"{p}{BODY}")
       for p in ("sk-", "ghp_", "gho_", "github_pat_", "xoxb-", "xoxp-", "AIza", "glpat-")},
    "prefix-sk-proj": ("use sk-" + "proj-" + BODY + "Kx", "sk-proj-" + BODY + "Kx"),
    "prefix-AKIA": ("aws id AKIA" + "IOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    "prefix-eyJ-jwt": ("bearer eyJ" + "hbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl",
                       "eyJhbGciOiJIUzI1NiJ9"),
    "mixed-run-32": ("the value k3y9" + "k3y9" * 7 + " is set", "k3y9" * 8),
    # 44 hex digits: not a commit id (40) nor a sha256: digest (64), so a random token
    "mixed-run-44-hex-like": ("ref 9f86d081884c7d65" + "9a2feaa0c55ad015a3bf4f1b0c1d",
                              "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b0c1d"),
    "card-spaces": ("card 4111 1111 " + "1111 1111 on file", "4111 1111 1111 1111"),
    "card-dashes": ("card 4111-1111-" + "1111-1111 on file", "4111-1111-1111-1111"),
    "card-plain": ("card 41111111" + "11111111 on file", "4111111111111111"),
    "card-amex-15": ("card 3782822" + "46310005", "378282246310005"),
    "card-13": (f"card {card('42', 13)}", card("42", 13)),
    "card-19": (f"card {card('62', 19)}", card("62", 19)),
    "word-password": ("password: hunter2-blue-lamp", "hunter2-blue-lamp"),
    "word-password-capital": ("Password: Hunter2BlueLamp", "Hunter2BlueLamp"),
    "word-passwd": ("passwd=swordfish-river", "swordfish-river"),
    "word-senha": ("senha: cavalo-azul-forte", "cavalo-azul-forte"),
    "word-api-key": ("api key: quiet-tree-lamp", "quiet-tree-lamp"),
    "word-secret-key": ("secret key = orange-door-nine", "orange-door-nine"),
    "word-private-key": ("private key: pear-window-ten", "pear-window-ten"),
    "word-token": ("token=llama-river-stone", "llama-river-stone"),
}

# Things a memory really holds that only look a little like secrets: all must be kept.
HARMLESS = {
    "word-without-value": "the password policy lives in brand.md",
    "token-in-prose": "rotate the token every month; ask ops",
    "short-prefix": "we use sk-learn and AKIA docs",
    "run-31": "id a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p",
    "run-32-three-digits": "slug abcdefghijklmnopqrstuvwxyzabc123",
    "run-32-letters-only": "word abcdefghijklmnopqrstuvwxyzabcdef",
    "card-bad-luhn": "order 4111 1111 1111 1112 shipped",
    "date-and-rank": "position 16 on 2026-08-12 at 12:30, down from 13",
    "url": "see https://example.com/stories?page=2&sort=new",
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    memory = fsmem.open(folder, create=True)
    run = memory.run(fsmem.Scope.chat(), thread_id="setup")
    assert run.call({"command": "write", "path": "notes.md", "content": "# Notes\n- first\n- last\n"})["ok"]
    return folder


def ready_run(root: Path):
    run = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="writer")
    assert run.call({"command": "read", "path": "notes.md"})["ok"]
    return run


def writes_of(line: str) -> dict[str, dict]:
    return {
        "new-file": {"command": "write", "path": "fresh.md", "content": f"# Fresh\n{line}\n"},
        "whole-file": {"command": "write", "path": "notes.md", "content": f"# Notes\n- first\n{line}\n- last\n"},
        "replace": {"command": "write", "path": "notes.md", "old_text": "- first\n", "new_text": f"- first\n{line}\n"},
        "markers": {"command": "write", "path": "notes.md", "content": f"<!-- ... -->\n- first\n{line}\n<!-- ... -->\n"},
    }


@pytest.mark.parametrize("how", list(writes_of("x")))
@pytest.mark.parametrize("secret", list(SECRETS), ids=list(SECRETS))
def test_each_secret_shape_is_refused_and_never_echoed(root: Path, secret: str, how: str) -> None:
    line, core = SECRETS[secret]
    run = ready_run(root)
    before = snapshot(root)
    result = run.call(writes_of(line)[how])
    assert result["ok"] is False, result
    assert result["error"]["code"] == "SENSITIVE", result
    shown = json.dumps(result, ensure_ascii=False)
    assert core not in shown and core[-10:] not in shown, f"the refusal repeats the secret: {shown}"
    assert snapshot(root) == before, diff(before, snapshot(root))


@pytest.mark.parametrize("how", ["whole-file", "replace", "markers"])
@pytest.mark.parametrize("secret", ["prefix-ghp", "word-password", "card-dashes", "mixed-run-32"])
def test_a_reviewer_never_turns_a_secret_into_a_proposal(root: Path, secret: str, how: str) -> None:
    line, core = SECRETS[secret]
    run = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="reviewer", review=True)
    assert run.call({"command": "read", "path": "notes.md"})["ok"]
    before = snapshot(root)
    request = writes_of(line)[how]
    if how == "whole-file":  # drop a line too, so it is not an add: it would become a proposal
        request = {**request, "content": request["content"].replace("- last\n", "")}
    result = run.call(request)
    assert result["ok"] is False and result["error"]["code"] == "SENSITIVE", result
    assert core not in json.dumps(result, ensure_ascii=False)
    assert snapshot(root) == before, diff(before, snapshot(root))  # .fsmem/proposals/ included


@pytest.mark.parametrize("how", list(writes_of("x")))
@pytest.mark.parametrize("text", list(HARMLESS.values()), ids=list(HARMLESS))
def test_things_that_only_resemble_secrets_are_kept(root: Path, text: str, how: str) -> None:
    result = ready_run(root).call(writes_of(text)[how])
    assert result["ok"], result
    path = "fresh.md" if how == "new-file" else "notes.md"
    assert text in (root / path).read_text(encoding="utf-8")


def test_a_secret_is_not_echoed_by_the_cli_either(root: Path) -> None:
    line, core = SECRETS["prefix-ghp"]
    before = snapshot(root)
    cli = run_fsmem("write", "--root", str(root), "fresh.md", input=f"# Fresh\n{line}\n")
    assert cli.returncode == 1 and cli.stderr.startswith("Error: [SENSITIVE]"), cli
    assert core not in cli.stdout + cli.stderr
    tool = run_fsmem("tool", "--root", str(root), input=json.dumps(
        {"command": "write", "path": "fresh.md", "content": f"# Fresh\n{line}\n"}))
    assert json.loads(tool.stdout)["error"]["code"] == "SENSITIVE"
    assert core not in tool.stdout + tool.stderr
    assert snapshot(root) == before, diff(before, snapshot(root))


@pytest.mark.parametrize("request_of", [
    # markers whose run cannot be placed: the refusal names the line it could not place
    lambda line: {"command": "write", "path": "notes.md", "content": f"<!-- ... -->\n{line}\n<!-- ... -->\n"},
    lambda line: {"command": "write", "path": "notes.md", "content": f"<!-- ... -->\n{line}\n- nowhere\n"},
    # an exact replacement whose old text is missing, or not unique
    lambda line: {"command": "write", "path": "notes.md", "old_text": "- absent", "new_text": line},
    lambda line: {"command": "write", "path": "notes.md", "old_text": line, "new_text": "- gone"},
    lambda line: {"command": "write", "path": "notes.md", "old_text": "- ", "new_text": line},
    # markers on a file that does not exist yet
    lambda line: {"command": "write", "path": "fresh.md", "content": f"<!-- ... -->\n{line}\n"},
], ids=["unplaced", "unplaced-after", "old-missing", "secret-as-old", "not-unique", "markers-new-file"])
@pytest.mark.parametrize("secret", ["prefix-ghp", "word-password", "pem-rsa", "card-spaces"])
def test_a_secret_in_an_edit_that_fails_for_another_reason_is_not_echoed(root: Path, secret: str,
                                                                         request_of) -> None:
    line, core = SECRETS[secret]
    run = ready_run(root)
    before = snapshot(root)
    result = run.call(request_of(line))
    assert result["ok"] is False, result
    shown = json.dumps(result, ensure_ascii=False)
    assert core not in shown and core[-10:] not in shown, f"the refusal repeats the secret: {shown}"
    assert snapshot(root) == before, diff(before, snapshot(root))


@pytest.mark.parametrize("request_", [
    {"command": "write", "path": f"keys/ghp_{BODY}.md", "content": "# Keys\n"},
    {"command": "write", "path": f"k3y9{'k3y9' * 8}.md", "content": "# Keys\n"},
    {"command": "rename", "path": "notes.md", "new_path": f"sk-{BODY}.md"},
], ids=["write-prefix", "write-mixed-run", "rename-to"])
def test_a_secret_in_a_path_is_refused_and_not_stored(root: Path, request_: dict) -> None:
    # A path is stored too: as a file name, in the log and in versions/.
    run = ready_run(root)
    before = snapshot(root)
    result = run.call(request_)
    assert result["ok"] is False and result["error"]["code"] == "SENSITIVE", result
    assert BODY not in json.dumps(result) and "k3y9k3y9" not in json.dumps(result)
    assert snapshot(root) == before, diff(before, snapshot(root))


# --- a secret split across a line already in the file and a new one ----------------------------

# Each half alone is harmless; the file holding both in a row holds the secret (DESIGN.md §4: a card
# may run over a line break, a key-like word that ends its line continues on the next).
SPLIT: dict[str, tuple[str, str, str]] = {  # id -> (first half, second half, what is never echoed)
    "card": ("- card on file: 4111 " + "1111", "1111 " + "1111", "1111 1111"),
    "key": ("- deploy key sk-" + "proj-Zq8xW2", "mN4pL7" + "rT9v", "mN4pL7rT9v"),
}


def split_root(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "split"
    run = fsmem.open(folder, create=True).run(fsmem.Scope.chat(), thread_id="setup")
    assert run.call({"command": "write", "path": "other.md", "content": "# Other\n"})["ok"]  # the lock made
    (folder / "notes.md").write_text(text, encoding="utf-8")  # a person's file: no guard ran on it
    return folder


def split_writes(kept: str, added: str, *, added_first: bool = False) -> dict[str, dict]:
    """Each way of writing ``added`` next to the line ``kept`` already in notes.md."""
    pair = f"{added}\n{kept}\n" if added_first else f"{kept}\n{added}\n"
    return {
        "whole-file": {"command": "write", "path": "notes.md", "content": f"# Notes\n- first\n{pair}- last\n"},
        "replace": {"command": "write", "path": "notes.md", "old_text": f"{kept}\n", "new_text": pair},
        "markers": {"command": "write", "path": "notes.md",
                    "content": f"<!-- ... -->\n- first\n{pair}- last\n<!-- ... -->\n"},
    }


@pytest.mark.parametrize("how", ["whole-file", "replace", "markers"])
@pytest.mark.parametrize("which", list(SPLIT))
@pytest.mark.parametrize("added_first", [False, True], ids=["second-half-added", "first-half-added"])
def test_a_secret_split_across_an_existing_line_and_a_new_one_is_refused(
    tmp_path: Path, which: str, how: str, added_first: bool
) -> None:
    head, tail = SPLIT[which][:2]
    kept, added = (tail, head) if added_first else (head, tail)
    root = split_root(tmp_path, f"# Notes\n- first\n{kept}\n- last\n")
    run = ready_run(root)
    before = snapshot(root)
    result = run.call(split_writes(kept, added, added_first=added_first)[how])
    assert result["ok"] is False and result["error"]["code"] == "SENSITIVE", result
    shown = json.dumps(result, ensure_ascii=False)
    assert SPLIT[which][2] not in shown and added not in shown, f"the refusal repeats the secret: {shown}"
    assert snapshot(root) == before, diff(before, snapshot(root))


@pytest.mark.parametrize("which", list(SPLIT))
def test_deleting_the_line_between_two_halves_is_refused(tmp_path: Path, which: str) -> None:
    head, tail = SPLIT[which][:2]
    root = split_root(tmp_path, f"# Notes\n{head}\n- between\n{tail}\n")
    run = ready_run(root)
    before = snapshot(root)
    result = run.call({"command": "write", "path": "notes.md", "old_text": "- between\n", "new_text": ""})
    assert result["ok"] is False and result["error"]["code"] == "SENSITIVE", result
    assert snapshot(root) == before, diff(before, snapshot(root))


def test_a_credential_whose_value_is_added_lines_below_its_word_is_refused(tmp_path: Path) -> None:
    root = split_root(tmp_path, "# Notes\n- db\npassword:\n\n- last\n")
    run = ready_run(root)
    result = run.call({"command": "write", "path": "notes.md", "old_text": "\n- last", "new_text": "\nHunter2Blue\n- last"})
    assert result["ok"] is False and result["error"]["code"] == "SENSITIVE", result
    assert "Hunter2Blue" not in json.dumps(result)


def filler(count: int) -> str:
    return "".join(f"- note {number}: keep titles short\n" for number in range(count))


@pytest.mark.parametrize("how", ["whole-file", "replace", "markers"])
def test_an_edit_far_from_a_secret_a_person_left_in_the_file_goes_through(tmp_path: Path, how: str) -> None:
    # The guard checks what each change brings in with its neighbours, never the whole file: one
    # card number saved by hand does not block every later edit of the file.
    head, tail = SPLIT["card"][:2]
    text = f"# Notes\n{head}\n{tail}\n{filler(20)}- last\n"
    root = split_root(tmp_path, text)
    request = {
        "whole-file": {"command": "write", "path": "notes.md", "content": text.replace("- last\n", "- last\n- new\n")},
        "replace": {"command": "write", "path": "notes.md", "old_text": "- last\n", "new_text": "- last\n- new\n"},
        "markers": {"command": "write", "path": "notes.md", "content": "<!-- ... -->\n- last\n- new\n"},
    }[how]
    result = ready_run(root).call(request)
    assert result["ok"], result
    assert (root / "notes.md").read_text(encoding="utf-8") == text + "- new\n"


def test_an_edit_next_to_a_secret_a_person_left_goes_through_when_it_adds_none(tmp_path: Path) -> None:
    # Right beside it, the change's text with its neighbours looks like a secret, but the same
    # neighbours looked so before the change and the new line alone does not: the change adds none.
    head, tail = SPLIT["key"][:2]
    text = f"# Notes\n{head}\n{tail}\n- last\n"
    root = split_root(tmp_path, text)
    result = ready_run(root).call({"command": "write", "path": "notes.md", "old_text": "- last\n",
                                   "new_text": "- last\n- rotate it monthly\n"})
    assert result["ok"], result
    # A new secret of its own, next to the old one, is still refused.
    again = ready_run(root).call({"command": "write", "path": "notes.md", "old_text": "- last\n",
                                  "new_text": "- last\n" + SECRETS["prefix-ghp"][0] + "\n"})
    assert again["ok"] is False and again["error"]["code"] == "SENSITIVE", again


# --- size -----------------------------------------------------------------------------------------

LIMIT = 32 * 1024


def text_of_size(size: int, unit: str = "lorem ipsum dolor sit amet\n") -> str:
    text = "# Big\n" + unit * (size // len(unit.encode("utf-8")) + 1)
    data = text.encode("utf-8")[:size]
    return data.decode("utf-8", errors="ignore")


def test_a_file_of_exactly_32_kib_is_kept(root: Path) -> None:
    text = text_of_size(LIMIT)
    assert len(text.encode("utf-8")) == LIMIT
    result = ready_run(root).call({"command": "write", "path": "big.md", "content": text})
    assert result["ok"], result


@pytest.mark.parametrize("request_of", [
    lambda: {"command": "write", "path": "big.md", "content": text_of_size(LIMIT + 1)},
    lambda: {"command": "write", "path": "notes.md", "content": text_of_size(LIMIT + 1)},
    # 16,385 characters, 32,770 bytes: the limit is in bytes.
    lambda: {"command": "write", "path": "big.md", "content": "\u00e9" * (LIMIT // 2 + 1)},
    lambda: {"command": "write", "path": "notes.md", "old_text": "- first\n",
             "new_text": text_of_size(LIMIT - 10)},
], ids=["new-file", "whole-file", "multibyte", "replace-grows-past"])
def test_over_32_kib_is_too_large_and_changes_nothing(root: Path, request_of) -> None:
    run = ready_run(root)
    before = snapshot(root)
    result = run.call(request_of())
    assert result["ok"] is False and result["error"]["code"] == "TOO_LARGE", result
    assert "32" in result["error"]["message"]  # says what the limit is
    assert snapshot(root) == before, diff(before, snapshot(root))


# --- UTF-8 ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("content", ["# Bad\n\udcff\n", "# Bad\n\ud800 lone\n"], ids=["surrogate-escape", "lone-high"])
def test_content_that_is_not_utf8_is_refused(root: Path, content: str) -> None:
    run = ready_run(root)
    before = snapshot(root)
    for request in ({"command": "write", "path": "bad.md", "content": content},
                    {"command": "write", "path": "notes.md", "content": content},
                    {"command": "write", "path": "notes.md", "old_text": "- first", "new_text": content}):
        result = run.call(request)
        assert result["ok"] is False, (request, result)
        assert result["error"]["code"] == "BAD_REQUEST", result
        assert "UTF-8" in result["error"]["message"]
        assert snapshot(root) == before, diff(before, snapshot(root))


def test_bytes_that_are_not_utf8_on_stdin_are_refused(root: Path) -> None:
    before = snapshot(root)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    env["PYTHONPATH"] = str(REPO)
    for data in (b"# Latin-1\ncaf\xe9\n", b"\xff\xfe#\x00 \x00U\x00T\x00F\x00-\x001\x006\x00"):
        proc = subprocess.run([sys.executable, "-m", "fsmem", "write", "bad.md", "--root", str(root)],
                              input=data, capture_output=True, env=env, timeout=60)
        assert proc.returncode == 1, proc
        assert proc.stderr.decode().startswith("Error: [BAD_REQUEST]"), proc.stderr
    assert snapshot(root) == before, diff(before, snapshot(root))


def test_a_file_mangled_by_hand_is_never_edited_but_may_be_replaced_whole(root: Path) -> None:
    mangled = b"# caf\xe9\n- one\n"  # Latin-1, saved by some editor
    (root / "bad.md").write_bytes(mangled)
    run = ready_run(root)
    read = run.call({"command": "read", "path": "bad.md"})
    assert read["ok"] is False and read["error"]["code"] == "BAD_REQUEST" and "UTF-8" in read["error"]["message"]
    before = snapshot(root)
    for edit in ({"command": "write", "path": "bad.md", "old_text": "- one", "new_text": "- uno"},
                 {"command": "write", "path": "bad.md", "content": "<!-- ... -->\n- one\n- two\n"}):
        result = run.call(edit)
        assert result["ok"] is False and result["error"]["code"] == "BAD_REQUEST", (edit, result)
        assert snapshot(root) == before, diff(before, snapshot(root))
    # The refusal says to write it whole; doing so works, and the old bytes are kept exactly.
    whole = run.call({"command": "write", "path": "bad.md", "content": "# caf\u00e9\n- one\n"})
    assert whole["ok"], whole
    kept = fsmem.open(root).versions("bad.md")
    assert [v.file.read_bytes() for v in kept] == [mangled]
