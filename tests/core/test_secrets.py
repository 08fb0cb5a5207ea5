"""The secret guard (docs/design.md §4, Secrets): each shape refused by kind, never echoed; near misses pass."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from fsmem._core.secrets import find_fact_secret, find_secret, luhn_valid

SECRETS = {
    # PEM blocks
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----": "a private key block",
    "key:\n-----BEGIN OPENSSH PRIVATE KEY-----": "a private key block",
    # known prefixes, 16+ characters
    "use sk-proj-Ab3dEf6hIj9kLm2n for the bot": "an access key",
    "sk-ant-api03-abcdefgh": "an access key",
    "ghp_16C7e42F292c6912E7710c838347Ae178B4a": "an access key",
    "gho_16C7e42F292c6912E771": "an access key",
    "github_pat_11ABCDEFG0123456789": "an access key",
    "slack: xoxb-123456789012-abcdef": "an access key",
    "xoxp-1234-5678-abcdefgh": "an access key",
    "AWS AKIAIOSFODNN7EXAMPLE here": "an access key",
    "maps AIzaSyA-1234567890abcdef": "an access key",
    "glpat-xxxxxxxxxxxxxxxxxxxx": "an access key",
    "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig": "an access key",
    "(sk-abcdefghijklmnop)": "an access key",
    # long random runs
    "hash e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855": "a long random token",
    "ref 3F9A1C2E4B5D6E7F8A9B0C1D2E3F4A5B6C7D8E9F": "a long random token",  # a git commit id is lowercase
    "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdo": "a long random token",
    # card numbers
    "card 4111 1111 1111 1111": "a card number",
    "4111-1111-1111-1111": "a card number",
    "4111111111111111": "a card number",
    "amex 3782 822463 10005": "a card number",
    "card 4111 1111 1111 1111 12 27": "a card number",
    "pay with 5555555555554444.": "a card number",
    # credentials
    "password: hunter2": "a credential",
    "Password = correct horse battery staple": "a credential",
    "passwd:abc": "a credential",
    "senha: minha-senha-123": "a credential",
    "API key: 12345": "a credential",
    "api_key=abc": "a credential",
    "api-key: abc": "a credential",
    "apikey: abc": "a credential",
    "Secret key: s3cr3t": "a credential",
    "private_key = abc": "a credential",
    "token: abc123": "a credential",
    "DB_PASSWORD=swordfish": "a credential",
    "export GITHUB_TOKEN=abc": "a credential",
    "access_token: abc": "a credential",
    '{"password": "hunter2"}': "a credential",
    "**Password:** hunter2": "a credential",
    "- `token`: abc": "a credential",
}

NEAR_MISSES = [
    "The password policy is strict: at least 12 characters.",
    "Reset your password from the settings page.",
    "We rotate tokens every 30 days.",
    "max_tokens: 4096",
    "token limit: 4096",
    "password: ***",
    "password: ********",
    "api_key: <stored in the vault>",
    "DB_PASSWORD=$DB_PASSWORD",
    "token: ${GITHUB_TOKEN}",
    "password: {{ vault.db }}",
    "password:",
    "Meeting on 2026-08-01 at 10:30, call +55 11 91234-5678.",
    "Dates: 2026-08-01 2026-09-01",
    "Phone: 011 4111 1111 1111",       # starts with 0
    "Order 4111 1111 1111 1112",        # Luhn-invalid
    "Pi is 3.14159265358979323846",
    "sk-abc is short",
    "scikit-learn (sk-learn) rocks",
    "task-oriented and desk-lamp",
    "ghp_short",
    "AKIA is an AWS prefix",
    "Agent 3f9a1c2e-1b2c-4d5e-8f90-123456789abc owns it.",  # UUIDs pass
    "version ab12cd34ef56 and commit 3f9a1c2",
    "supercalifragilisticexpialidociousword",               # long but no digits
    "12345678901234567890123456789012345678",               # digits only, not a card (too long)
    "An eyJ prefix alone is fine.",
    "Secrets belong in the secret manager; refer to them by name.",
    "",
]


@pytest.mark.parametrize(("text", "kind"), list(SECRETS.items()))
def test_each_shape_is_found_and_named_by_kind(text: str, kind: str) -> None:
    assert find_secret(text) == kind
    assert find_fact_secret(text) == kind


@pytest.mark.parametrize("text", list(SECRETS))
def test_the_label_never_holds_the_secret(text: str) -> None:
    label = find_secret(text)
    assert label is not None
    for word in text.replace("=", " ").replace(":", " ").split():
        if len(word) >= 5:
            assert word not in label


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_pass(text: str) -> None:
    assert find_secret(text) is None


@pytest.mark.parametrize(("text", "word"), [
    ("Bruno's password is the name of his dog", "password"),
    ("the PASSWD file", "passwd"),
    ("a senha do wifi", "senha"),
    ("the API key lives in the vault", "api key"),
    ("rotate the secret key yearly", "secret key"),
    ("the private_key is on the laptop", "private_key"),
    ("token: see vault", "a credential"),
    ("token:", "token"),
    ("password: ***", "password"),
])
def test_facts_also_refuse_the_bare_words(text: str, word: str) -> None:
    label = find_fact_secret(text)
    assert label is not None and word in label


@pytest.mark.parametrize("text", [
    "Bruno prefers tea", "We rotate tokens every 30 days.", "The token limit is 4k.",
    "passwords are hashed", "Ana's keynote is on 2026-09-01",
])
def test_facts_accept_ordinary_sentences(text: str) -> None:
    assert find_fact_secret(text) is None


def test_luhn() -> None:
    assert luhn_valid("4111111111111111")
    assert luhn_valid("378282246310005")
    assert not luhn_valid("4111111111111112")
    assert luhn_valid("0")


# --- properties --------------------------------------------------------------------------

PROSE = st.text(st.sampled_from("abcdefghij klmnop ,.;\n"), max_size=200)


@settings(deadline=None)  # no timing: shared machines are slow at times
@given(PROSE)
def test_plain_prose_passes(text: str) -> None:
    assert find_secret(text) is None


def _with_check_digit(body: str) -> str:
    for digit in "0123456789":
        if luhn_valid(body + digit):
            return body + digit
    raise AssertionError("unreachable")


@settings(deadline=None)  # no timing: shared machines are slow at times
@given(st.text("0123456789", min_size=12, max_size=18).filter(lambda d: d[0] in "23456"), PROSE, PROSE)
def test_any_luhn_valid_number_in_prose_is_a_card(body: str, before: str, after: str) -> None:
    number = _with_check_digit(body)
    assert find_secret(f"{before} {number} {after}") == "a card number"
    grouped = " ".join(number[i:i + 4] for i in range(0, len(number), 4))
    if len(grouped.rsplit(" ", 1)[-1]) >= 3:
        assert find_secret(f"{before} {grouped} {after}") == "a card number"


@settings(deadline=None)  # no timing: shared machines are slow at times
@given(st.text("0123456789", min_size=12, max_size=18).filter(lambda d: d[0] in "23456"))
def test_a_luhn_invalid_number_passes(body: str) -> None:
    good = _with_check_digit(body)
    bad = good[:-1] + str((int(good[-1]) + 1) % 10)
    assert find_secret(f"order {bad} shipped") is None


@settings(deadline=None)  # no timing: shared machines are slow at times
@given(st.text("abcdefABCDEF0123456789", min_size=32, max_size=64))
def test_mixed_runs_of_32_with_4_digits_are_tokens(run: str) -> None:
    digits = sum(c.isdigit() for c in run)
    expected = "a long random token" if digits >= 4 and digits < len(run) else None
    if expected is None and run.isdigit():
        return  # a run of digits alone may be a card; not this rule's business
    assert find_secret(f"see {run} here") == expected


@settings(deadline=None)  # no timing: shared machines are slow at times
@given(st.sampled_from(["sk-", "ghp_", "gho_", "github_pat_", "xoxb-", "xoxp-", "AKIA", "AIza", "glpat-", "eyJ"]),
       st.text("abcdefghijklmnopqrstuvwxyz", min_size=0, max_size=30))
def test_prefix_words_count_from_16_characters(prefix: str, rest: str) -> None:
    word = prefix + rest
    found = find_secret(f"use {word} now")
    assert (found == "an access key") == (len(word) >= 16)


@settings(deadline=None)  # no timing: shared machines are slow at times
@given(st.sampled_from("01789"), st.text("0123456789", min_size=11, max_size=17))
def test_a_number_no_card_network_starts_that_way_is_not_a_card(first: str, body: str) -> None:
    number = _with_check_digit(first + body)  # Discord and Twitter ids start with 1
    assert find_secret(f"user id {number} joined") is None


# --- the named services' keys (detect-secrets' plugins, fsmem._core.known_keys) -----------------


def test_importing_fsmem_does_not_load_the_detector() -> None:
    import subprocess
    import sys

    code = "import sys, fsmem; fsmem.open; print('detect_secrets' in sys.modules, 'requests' in sys.modules)"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert shown.split() == ["False", "False"]


@pytest.mark.parametrize("text", [
    "https://user:password@example.com is the shape of a URL with a password",
    "postgres://app:${PGPASSWORD}@db/shop",
    "redis://:<password>@cache:6379",
    "server at 8.8.8.8 answers pings",  # detect-secrets' public-IP plugin is not used
])
def test_a_url_password_that_only_names_the_secret_passes(text: str) -> None:
    assert find_secret(text) is None
