"""The secret guard against a corpus of real-looking text (tests/data/secrets_corpus.tsv).

Each row is ``secret`` (with the kind the guard must name) or ``clean`` (what developers write every
day and must not be blocked: commit ids, digests, UUIDs, phone numbers, "password: in the team
1Password vault"). The secret rows include the evasions found in issue 10: a zero-width character
inside a key, full-width letters, non-breaking hyphens, a card or a key cut over two lines, and the
real AWS secret shape; and the second round's fresh shapes (Stripe, Hugging Face, GitHub app tokens,
Slack app tokens and webhooks, SendGrid, Google OAuth, passwords inside URLs, base64-wrapped keys, more
credential words and languages, a value on the next line, a Cyrillic look-alike, a key cut by spaces)
with their near misses (prose after ``token:``, password policies, lock-file checksums, integrity
values, data URIs, Discord ids). The guard runs in ``fsmem._core.secrets`` (pure); the tool and the facts API
refuse what it finds, and their messages never repeat the secret.
"""

from __future__ import annotations

import codecs
import json
import re
from pathlib import Path

import pytest

import fsmem
from fsmem._core.secrets import find_fact_secret, find_secret, readable
from fsmem._errors import FactSensitive
from tests.procs.common import diff, snapshot

CORPUS = Path(__file__).resolve().parents[1] / "data" / "secrets_corpus.tsv"


def _rows() -> list[tuple[str, str, str]]:
    rows = []
    for line in CORPUS.read_text(encoding="ascii").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        label, kind, text = line.split("\t")
        rows.append((label, kind, codecs.decode(text, "unicode_escape")))
    return rows


ROWS = _rows()
SECRETS = [(kind, text) for label, kind, text in ROWS if label == "secret"]
CLEAN = [text for label, _, text in ROWS if label == "clean"]


def _id(text: str) -> str:
    return text[:40].encode("unicode_escape").decode("ascii")


def test_the_corpus_is_big_enough_on_both_sides() -> None:
    assert len(ROWS) >= 200
    assert len(SECRETS) >= 100 and len(CLEAN) >= 100


@pytest.mark.parametrize(("kind", "text"), SECRETS, ids=[_id(t) for _, t in SECRETS])
def test_every_secret_is_found_with_its_kind(kind: str, text: str) -> None:
    assert find_secret(text) == kind
    assert find_fact_secret(text) == kind  # facts refuse at least what files refuse


@pytest.mark.parametrize("text", CLEAN, ids=[_id(t) for t in CLEAN])
def test_clean_text_is_not_taken_for_a_secret(text: str) -> None:
    assert find_secret(text) is None
    found = find_fact_secret(text)  # facts also refuse the bare credential words, and nothing else more
    assert found is None or found.startswith("a credential word")


def test_precision_and_recall_over_the_corpus() -> None:
    """The table in docs/safety.md: every secret row found, no clean row refused (the guard before
    this round found 124 of 159 and refused 15 of 200)."""
    found = sum(find_secret(text) is not None for _, text in SECRETS)
    refused = sum(find_secret(text) is not None for text in CLEAN)
    assert (found, len(SECRETS), refused, len(CLEAN)) == (159, 159, 0, 200)
    precision, recall = found / (found + refused), found / len(SECRETS)
    assert (precision, recall) == (1.0, 1.0)


def test_readable_undoes_the_look_alikes() -> None:
    assert readable("\uff53\uff4b\uff0d") == "sk-"
    assert readable("sk\u2011proj\u2010x\u2013y\u2212z") == "sk-proj-x-y-z"
    assert readable("ab\u200bc\u200dd\u2060e\ufefff\u00adg") == "abcdefg"
    assert readable("plain ascii stays as it is") == "plain ascii stays as it is"
    assert readable("p\u0430ssword t\u043eken") == "password token"  # Cyrillic a and o inside Latin words
    assert readable("\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440") == "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440"


def _secret_words(text: str) -> list[str]:
    """The parts of a secret row that must never come back: its long runs of key characters."""
    plain = readable(text)
    return [word for word in re.findall(r"[A-Za-z0-9_/+\-]{8,}", plain)
            if any(c.isdigit() for c in word) and not word.startswith("-----")]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("corpus") / "root"
    run = fsmem.open(folder, create=True).run(fsmem.Scope.chat(), thread_id="setup")
    assert run.call({"command": "write", "path": "first.md", "content": "# First\n"})["ok"]  # makes the lock
    return folder


def test_the_tool_refuses_every_secret_row_without_echoing_it(root: Path) -> None:
    run = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="t")
    before = snapshot(root)
    for number, (_, text) in enumerate(SECRETS):
        result = run.call({"command": "write", "path": f"s{number}.md", "content": f"# Notes\n{text}\n"})
        assert result["ok"] is False and result["error"]["code"] == "SENSITIVE", (text, result)
        shown = json.dumps(result, ensure_ascii=False)
        for word in _secret_words(text):
            assert word not in shown, (word, shown)
    after = snapshot(root)
    assert after == before, diff(before, after)


def test_the_tool_writes_every_clean_row(root: Path) -> None:
    run = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="t")
    for number, text in enumerate(CLEAN):
        result = run.call({"command": "write", "path": f"clean/c{number}.md", "content": f"# Notes\n{text}\n"})
        assert result["ok"], (text, result["text"])


@pytest.mark.parametrize(("kind", "text"), SECRETS[::7], ids=[_id(t) for _, t in SECRETS[::7]])
def test_facts_refuse_secret_rows(root: Path, kind: str, text: str) -> None:
    with pytest.raises(FactSensitive) as caught:
        fsmem.open(root).facts.keep("the deploy", "note", text)
    for word in _secret_words(text):
        assert word not in caught.value.message


def test_every_format_character_is_dropped() -> None:
    import sys
    import unicodedata

    every_cf = "".join(chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf")
    assert readable("a" + every_cf + "b") == "ab"
