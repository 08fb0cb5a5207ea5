"""Does a text look like it holds a secret? The answer names the kind, never the secret.

    >>> find_secret("the deploy key is sk-live-4f9a8b7c6d5e4f3a2b1c")
    'an access key'
    >>> find_secret("the password policy is strict") is None
    True

A text looks like a secret when it holds (docs/design.md §4):

- a PEM block: ``-----BEGIN`` (keys and certificates alike) → "a private key block";
- a word starting like a known key (``sk-``, ``ghp_``, ``gho_``, ``github_pat_``, ``xoxb-``,
  ``xoxp-``, ``AKIA``, ``AIza``, ``glpat-``, ``eyJ``; case as written) at least 16 characters long,
  the word running over letters, digits, ``_``, ``-`` and inner dots → "an access key";
- a card number: 13 to 19 digits, single spaces or dashes between them allowed, passing the Luhn
  check → "a card number". Checked on every stretch of whole digit groups in a row (so a card
  followed by its expiry, "4111 1111 1111 1111 12 27", is found) whose groups have at least 3
  digits (so two dates in a row, "2026-08-01 2026-09-01", are not a card). Not counted: a number
  right after ``+`` (a phone number), one starting with ``0`` (no card does; local phone numbers
  do), or one glued to letters or decimals;
- a run of 32 or more ASCII letters and digits, with letters and at least 4 digits
  → "a long random token". Hex digests (MD5, SHA-1 commit ids, SHA-256) are such runs and are
  refused: write a short form (fsmem's own versions are 12 characters). UUIDs are not: their
  dashes cut them into runs of at most 12;
- a credential word — ``password``, ``passwd``, ``senha``, ``api key``, ``secret key``,
  ``private key`` (with a space, ``_``, ``-`` or nothing between the words), ``token`` — in any case,
  as a word of its own or the end of a name (``DB_PASSWORD``, ``access_token``), followed by ``:`` or
  ``=`` and a value on the same line → "a credential". A value that only masks or names the secret
  (``***``, ``<redacted>``, ``$DB_PASSWORD``, ``${TOKEN}``, ``{{ token }}``) is not a secret.

Facts refuse more (``find_fact_secret``): also the bare credential words, even with no value
("Bruno's password is the name of his dog"), and ``token:``.
"""

from __future__ import annotations

import re

__all__ = ["find_secret", "find_fact_secret", "luhn_valid"]

PEM = "a private key block"
ACCESS_KEY = "an access key"
CARD = "a card number"
RANDOM = "a long random token"
CREDENTIAL = "a credential"

KEY_PREFIXES = ("sk-", "ghp_", "gho_", "github_pat_", "xoxb-", "xoxp-", "AKIA", "AIza", "glpat-", "eyJ")
MIN_KEY_LENGTH = 16
MIN_RANDOM_RUN = 32
MIN_RANDOM_DIGITS = 4

_PEM = re.compile(r"-----BEGIN")
_KEY_WORD = re.compile(
    r"(?<![A-Za-z0-9_\-.])(?:" + "|".join(re.escape(p) for p in KEY_PREFIXES) + r")"
    r"[A-Za-z0-9_\-]*(?:\.[A-Za-z0-9_\-]+)*"
)
_ALNUM_RUN = re.compile(r"[A-Za-z0-9]{%d,}" % MIN_RANDOM_RUN)
# digits with single spaces or dashes between them, not glued to a word or a decimal point; a
# leading "+" is captured so the whole run can be skipped as a phone number
_DIGIT_RUN = re.compile(r"(?<![A-Za-z0-9_.,+])\+?\d(?:[ \-]?\d)*(?![A-Za-z0-9_])(?![.,]\d)")

# The word stands alone or ends a name ("DB_PASSWORD", "access-token": "_" and "-" are not
# letters), but is not part of a longer word ("tokens", "mypassword").
_CREDENTIAL = re.compile(
    r"(?<![A-Za-z0-9])(?:password|passwd|senha|api[ _\-]?key|secret[ _\-]?key|private[ _\-]?key|token)"
    r"(?![A-Za-z0-9])[\"'`*_]*[ \t]*[:=][ \t]*(?P<value>.*)",
    re.IGNORECASE,
)
_MASK = re.compile(
    r"""(?:[*•xX.\-]{3,}|<[^<>\n]*>|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\{\{[^{}\n]*\}\}|\[redacted\])"""
    r"""["'`*_]*[,;.)]?(?:\s|$)""",
    re.IGNORECASE,
)
_BARE_WORD = re.compile(
    r"(?<![A-Za-z0-9])(?:password|passwd|senha|api[ _\-]?key|secret[ _\-]?key|private[ _\-]?key)"
    r"(?![A-Za-z0-9])|(?<![A-Za-z0-9])token[ \t]*:",
    re.IGNORECASE,
)


def find_secret(text: str) -> str | None:
    """The kind of secret ``text`` seems to hold ("a card number", …), or None."""
    if _PEM.search(text):
        return PEM
    for match in _KEY_WORD.finditer(text):
        if len(match.group()) >= MIN_KEY_LENGTH:
            return ACCESS_KEY
    for match in _DIGIT_RUN.finditer(text):
        if not match.group().startswith("+") and _holds_card(match.group()):
            return CARD
    for match in _ALNUM_RUN.finditer(text):
        run = match.group()
        if sum(c.isdigit() for c in run) >= MIN_RANDOM_DIGITS and not run.isdigit():
            return RANDOM
    for match in _CREDENTIAL.finditer(text):
        value = match.group("value").lstrip("\"'`*_ \t").rstrip()
        if value and not _MASK.match(value):
            return CREDENTIAL
    return None


def find_fact_secret(text: str) -> str | None:
    """Like ``find_secret``, and a fact may not even name a credential: the bare words count."""
    found = find_secret(text)
    if found is not None:
        return found
    match = _BARE_WORD.search(text)
    if match:
        word = match.group().rstrip(": \t").lower()
        return f'a credential word ("{word}")'
    return None


def _holds_card(run: str) -> bool:
    """Whether some groups of ``run`` in a row make a card number ("4111 1111 1111 1111 12 27")."""
    groups = re.split(r"[ \-]", run)
    for first, head in enumerate(groups):
        if head.startswith("0"):
            continue
        digits = ""
        for index in range(first, len(groups)):
            group = groups[index]
            if len(group) < 3:
                break  # cards are written in groups of 3 to 6 digits; dates and times are not
            digits += group
            if len(digits) > 19:
                break
            if len(digits) >= 13 and luhn_valid(digits):
                return True
    return False


def luhn_valid(digits: str) -> bool:
    """Whether a string of digits passes the Luhn check.

    >>> luhn_valid("4111111111111111"), luhn_valid("4111111111111112")
    (True, False)
    """
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2 == 1:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0
