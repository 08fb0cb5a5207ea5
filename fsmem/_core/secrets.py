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
  → "a long random token". An MD5 or a bare SHA-256 is such a run and is refused; a git commit id
  and a ``sha256:`` digest are not (below). UUIDs are not: their dashes cut them into runs of at
  most 12;
- a credential word — ``password``, ``passwd``, ``senha``, ``api key``, ``secret key``,
  ``private key`` (with a space, ``_``, ``-`` or nothing between the words), ``token`` — in any case,
  as a word of its own or the end of a name (``DB_PASSWORD``, ``access_token``), followed by ``:`` or
  ``=`` and a value on the same line → "a credential". A value that only masks or names the secret
  (``***``, ``<redacted>``, ``$DB_PASSWORD``, ``${TOKEN}``, ``{{ token }}``) is not a secret.

- an AWS secret access key: a credential word ``secret access key`` (``aws_secret_access_key``,
  ``SecretAccessKey``) followed by ``:`` or ``=`` and a value, or a line that names ``aws`` and holds
  a 40-character run of letters, digits, ``/`` and ``+`` (the shape of AWS secret keys) → "a credential"
  / "an access key".

A 40-character lowercase hex run (a git commit id, a SHA-1) and a 64-character one after ``sha256:`` (an
image digest) are not random tokens: developers paste them all day. A credential word before them still
counts (``token: <40 hex>``).

A value that says where the secret lives rather than what it is ("in the team 1Password vault",
"see the wiki", "stored in AWS Secrets Manager") is a named value, allowed like ``<in vault>``.

Before matching, the text is read as a person would see it, so look-alikes do not slip through: NFKC
(full-width ``ｓｋ－`` is ``sk-``), Unicode format characters (Cf: zero-width spaces and joiners, soft
hyphens, bidi marks) dropped, hyphen look-alikes (non-breaking ``‑``, ``‐``, ``–``, ``−``, …) read as
``-``. A card number may run over a line break, and a key-like word that ends its line continues on
the next line when that line is only key characters with a digit ("sk-proj-4f9a…" cut in two).

Facts refuse more (``find_fact_secret``): also the bare credential words, even with no value
("Bruno's password is the name of his dog"), and ``token:``.
"""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata

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

_HYPHENS = dict.fromkeys(
    map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2043\u2212\u2e3a\u2e3b\ufe58\ufe63\uff0d"), "-"
)
_PEM = re.compile(r"-----BEGIN")
_KEY_WORD = re.compile(
    r"(?<![A-Za-z0-9_\-.])(?:" + "|".join(re.escape(p) for p in KEY_PREFIXES) + r")"
    r"[A-Za-z0-9_\-]*(?:\.[A-Za-z0-9_\-]+)*"
)
_ALNUM_RUN = re.compile(rf"[A-Za-z0-9]{{{MIN_RANDOM_RUN},}}")
_HEX_DIGEST = re.compile(r"[0-9a-f]{40}")  # a git commit id / SHA-1, as git prints it
_SHA256_DIGEST = re.compile(r"(?<=sha256[:=])[0-9a-f]{64}(?![0-9A-Za-z])", re.IGNORECASE)
# digits with single spaces or dashes between them (or a line break, as a card copied in two lines),
# not glued to a word or a decimal point; a leading "+" is captured so the whole run can be skipped
# as a phone number
_DIGIT_RUN = re.compile(r"(?<![A-Za-z0-9_.,+])\+?\d(?:(?:[ \-]|[ \-]?[ \t]*\r?\n[ \t]*)?\d)*(?![A-Za-z0-9_])(?![.,]\d)")
_GROUP_SPLIT = re.compile(r"[ \-]?[ \t]*\r?\n[ \t]*|[ \-]")
# A key-like word that ends its line, then lines that are only key characters: one key cut in pieces.
_KEY_CUT = re.compile(
    r"(?<![A-Za-z0-9_\-.])(?:" + "|".join(re.escape(p) for p in KEY_PREFIXES) + r")[A-Za-z0-9_\-]*"
    r"(?:[ \t]*\r?\n[ \t]*[A-Za-z0-9_\-]+(?=[ \t]*(?:\r?\n|$)))+"
)
_AWS_LINE = re.compile(r"(?<![A-Za-z])aws(?![a-z])", re.IGNORECASE)
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])")

# The word stands alone or ends a name ("DB_PASSWORD", "access-token": "_" and "-" are not
# letters), but is not part of a longer word ("tokens", "mypassword").
_CREDENTIAL = re.compile(
    r"(?<![A-Za-z0-9])(?:password|passwd|senha|api[ _\-]?key|secret[ _\-]?key|private[ _\-]?key|token"
    r"|secret[ _\-]?access[ _\-]?key)"
    r"(?![A-Za-z0-9])[\"'`*_]*[ \t]*[:=][ \t]*(?P<value>.*)",
    re.IGNORECASE,
)
_MASK = re.compile(
    r"""(?:[*•xX.\-]{3,}|<[^<>\n]*>|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\{\{[^{}\n]*\}\}|\[redacted\])"""
    r"""["'`*_]*[,;.)]?(?:\s|$)""",
    re.IGNORECASE,
)
# A value that says where the secret is kept, in words: "in the team 1Password vault", "see the wiki".
_POINTER = re.compile(
    r"(?:in|see|stored|kept|saved|held|lives|ask|from|via|managed|under|on|at|check|look|use|using|"
    r"not|never|same|rotated|the one|set in|configured|provided|injected|read from|pulled from)"
    r"[ \t]+[A-Za-z0-9$<{(\"'`./~]",
    re.IGNORECASE,
)
_BARE_WORD = re.compile(
    r"(?<![A-Za-z0-9])(?:password|passwd|senha|api[ _\-]?key|secret[ _\-]?key|private[ _\-]?key)"
    r"(?![A-Za-z0-9])|(?<![A-Za-z0-9])token[ \t]*:",
    re.IGNORECASE,
)


def find_secret(text: str) -> str | None:
    """The kind of secret ``text`` seems to hold ("a card number", …), or None."""
    text = readable(text)
    if _PEM.search(text):
        return PEM
    for match in _KEY_WORD.finditer(text):
        if len(match.group()) >= MIN_KEY_LENGTH:
            return ACCESS_KEY
    for match in _KEY_CUT.finditer(text):
        pieces = re.split(r"[ \t]*\r?\n[ \t]*", match.group())
        joined = "".join(pieces)
        if len(joined) >= MIN_KEY_LENGTH and any(c.isdigit() for piece in pieces[1:] for c in piece):
            return ACCESS_KEY
    for match in _DIGIT_RUN.finditer(text):
        if not match.group().startswith("+") and _holds_card(match.group()):
            return CARD
    for match in _ALNUM_RUN.finditer(text):
        run = match.group()
        if sum(c.isdigit() for c in run) >= MIN_RANDOM_DIGITS and not run.isdigit() and not _is_digest(text, match):
            return RANDOM
    for match in _CREDENTIAL.finditer(text):
        value = match.group("value").lstrip("\"'`*_ \t").rstrip()
        if value and not _MASK.match(value) and not _POINTER.match(value):
            return CREDENTIAL
    if "aws" in text.lower():
        for line in text.splitlines():
            if _AWS_LINE.search(line) and any(_looks_random(m.group()) for m in _AWS_SECRET.finditer(line)):
                return ACCESS_KEY
    return None


def readable(text: str) -> str:
    """``text`` as a person reads it: NFKC, no format characters (Cf), every hyphen look-alike a ``-``.

    >>> readable("\uff53\uff4b\uff0dproj\u2011ab\u200bcd")
    'sk-proj-abcd'
    """
    if text.isascii():  # the usual case, and nothing to do: ASCII is its own NFKC and has no Cf
        return text
    return unicodedata.normalize("NFKC", text).translate(_readable_table())


@functools.cache
def _readable_table() -> dict[int, str | None]:
    """Hyphen look-alikes to ``-`` and every format character (Cf) to nothing, for ``str.translate``."""
    # Format characters live in planes 0 and 1 and in the tags block of plane 14: scanning those
    # (not all 1.1 million code points) keeps the first non-ASCII check fast.
    codes = itertools.chain(range(0x20000), range(0xE0000, 0xE1000))
    table: dict[int, str | None] = {code: None for code in codes if unicodedata.category(chr(code)) == "Cf"}
    table.update(_HYPHENS)
    return table


def _is_digest(text: str, match: re.Match[str]) -> bool:
    """Whether an alphanumeric run is a commit id / SHA-1 (40 lowercase hex) or a ``sha256:`` digest."""
    run = match.group()
    if len(run) == 40 and _HEX_DIGEST.fullmatch(run):
        return True
    return len(run) == 64 and _SHA256_DIGEST.match(text, match.start()) is not None


def _looks_random(run: str) -> bool:
    """A 40-character run mixing upper and lower case with a digit, ``/`` or ``+``: an AWS secret's shape."""
    return (
        any(c.isupper() for c in run) and any(c.islower() for c in run) and any(c.isdigit() or c in "/+" for c in run)
    )


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
    groups = _GROUP_SPLIT.split(run)
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
