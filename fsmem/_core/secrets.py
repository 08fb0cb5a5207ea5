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
  right after ``+`` (a phone number), one glued to letters or decimals, and one that does not start
  with 2 to 6, as every card network's numbers do (a Discord or Twitter id starts with 1, local phone
  numbers with 0);
- a run of 32 or more ASCII letters and digits, with letters and at least 4 digits
  → "a long random token". An MD5 or a bare SHA-256 is such a run and is refused; checksums that
  say what they are are not (below). UUIDs are not: their dashes cut them into runs of at most 12;
- a credential word — ``password``, ``passwd``, ``pwd``, ``passphrase``, ``senha``, ``Passwort``,
  ``Kennwort``, ``contraseña``, ``mot de passe``, ``wachtwoord``, ``api key``, ``secret key``,
  ``private key``, ``client secret`` (with a space, ``_``, ``-`` or nothing between the words),
  ``token`` — in any case, as a word of its own or the end of a name (``DB_PASSWORD``,
  ``access_token``), followed by ``:`` or ``=`` and a value on the same line, or by ``:`` alone with
  the value as the only word of the next line → "a credential". A value that only masks or names the
  secret (``***``, ``<redacted>``, ``$DB_PASSWORD``, ``${TOKEN}``, ``{{ token }}``, a file path) is
  not a secret, nor is one that reads as a sentence ("token: the smallest unit of text a model reads",
  "password: must be 12+ characters": three words or more, one of them a small word such as ``the``,
  ``must``, ``at``, ``mindestens``, ``au``, and no word mixing letters and digits);
- an AWS secret access key: a credential word ``secret access key`` (``aws_secret_access_key``,
  ``SecretAccessKey``) followed by ``:`` or ``=`` and a value, or a line that names ``aws`` and holds
  a 40-character run of letters, digits, ``/`` and ``+`` (the shape of AWS secret keys) → "a credential"
  / "an access key";
- a key of a named service or a password inside a URL, as detect-secrets' plugins find them
  (``fsmem._core.known_keys``: Stripe, Slack, GitHub ``ghs_``/``ghu_``, SendGrid, Hugging Face, …)
  → "an access key" / "a credential";
- any of the above wrapped in base64 (``Authorization: Basic`` with a user and password inside, too):
  the kind of what is inside.

Checksums are not random tokens: developers paste them all day. Not counted: a 40-character lowercase
hex run (a git commit id, a SHA-1), hex after a label that says it is a digest (``sha256:``,
``checksum = "…"`` in Cargo.lock, ``sha512=``) or before a file name as ``sha256sum`` prints it, a
go.sum ``h1:`` hash, an ``sha512-`` integrity value, and the payload of a ``data:image/…;base64,``
URI. A credential word before them still counts (``token: <40 hex>``).

A value that says where the secret lives rather than what it is ("in the team 1Password vault",
"see the wiki", "stored in AWS Secrets Manager") is a named value, allowed like ``<in vault>``.

Before matching, the text is read as a person would see it, so look-alikes do not slip through: NFKC
(full-width ``ｓｋ－`` is ``sk-``), Unicode format characters (Cf: zero-width spaces and joiners, soft
hyphens, bidi marks) dropped, hyphen look-alikes (non-breaking ``‑``, ``‐``, ``–``, ``−``, …) read as
``-``, and a Cyrillic or Greek letter that looks Latin read as that letter inside a word that also
holds Latin letters (``pаssword`` with a Cyrillic ``а``; Russian or Greek words are left as they are).
A card number may run over a line break, and a key-like word that ends its line continues on the next
line when that line is only key characters with a digit ("sk-proj-4f9a…" cut in two); one cut by
spaces continues over the pieces that look random (a digit, or upper and lower case mixed).

Facts refuse more (``find_fact_secret``): also the bare credential words, even with no value
("Bruno's password is the name of his dog"), and ``token:``.
"""

from __future__ import annotations

import base64
import binascii
import functools
import itertools
import re
import unicodedata

from fsmem._core.known_keys import ACCESS_KEY, CREDENTIAL, PEM, find_known_key

__all__ = ["find_secret", "find_fact_secret", "luhn_valid"]

CARD = "a card number"
RANDOM = "a long random token"

KEY_PREFIXES = ("sk-", "ghp_", "gho_", "github_pat_", "xoxb-", "xoxp-", "AKIA", "AIza", "glpat-", "eyJ")
MIN_KEY_LENGTH = 16
MIN_RANDOM_RUN = 32
MIN_RANDOM_DIGITS = 4
CARD_FIRST_DIGITS = "23456"  # Mastercard 2/5, Amex/Diners/JCB 3, Visa 4, Discover/UnionPay/Maestro 6

_HYPHENS = dict.fromkeys(
    map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2043\u2212\u2e3a\u2e3b\ufe58\ufe63\uff0d"), "-"
)
# Cyrillic and Greek letters drawn like Latin ones (Unicode's confusables, the common part).
_LOOK_ALIKE_CHARS = "аеорсухкѕіјԁһӏԛԝАВЕКМНОРСТХУЅІЈοαρνικτυχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ"
_LOOK_ALIKES = str.maketrans(_LOOK_ALIKE_CHARS, "aeopcyxksijdhlqwABEKMHOPCTXYSIJoapvikTuxABEZHIKMNOPTYX")
_LOOK_ALIKE = re.compile(f"[{_LOOK_ALIKE_CHARS}]")
_LOOK_ALIKE_WORD = re.compile(rf"\S*[{_LOOK_ALIKE_CHARS}]\S*")
_LATIN = re.compile(r"[A-Za-z]")
_PEM = re.compile(r"-----BEGIN")
_PREFIX = "(?:" + "|".join(re.escape(p) for p in KEY_PREFIXES) + ")"
_KEY_WORD = re.compile(r"(?<![A-Za-z0-9_\-.])" + _PREFIX + r"[A-Za-z0-9_\-]*(?:\.[A-Za-z0-9_\-]+)*")
_ALNUM_RUN = re.compile(rf"[A-Za-z0-9]{{{MIN_RANDOM_RUN},}}")
_HEX_DIGEST = re.compile(r"[0-9a-f]{40}")  # a git commit id / SHA-1, as git prints it
# Digests that say what they are: their spans are skipped by the random-run rule and by base64 decoding.
_LABELLED_DIGEST = re.compile(
    r"(?i:checksum|integrity|sha(?:1|224|256|384|512)(?:sum)?)[\"'` \t]*[:=][\"'` \t]*[0-9a-fA-F]{32,128}"
    r"|(?m:^)[0-9a-f]{32,128}(?= [ *][^\s])"  # sha256sum's "<hex>  file.tar.gz"
    r"|(?<![A-Za-z0-9])h1:[A-Za-z0-9+/]{43}="  # go.sum
    r"|(?<![A-Za-z0-9])sha(?:1|256|384|512)-[A-Za-z0-9+/]{27,86}={0,2}"  # subresource integrity
    r"|data:(?:image|font|audio|video)/[A-Za-z0-9.+\-]+;base64,[A-Za-z0-9+/]+={0,2}"
)
# digits with single spaces or dashes between them (or a line break, as a card copied in two lines),
# not glued to a word or a decimal point; a leading "+" is captured so the whole run can be skipped
# as a phone number
_DIGIT_RUN = re.compile(r"(?<![A-Za-z0-9_.,+])\+?\d(?:(?:[ \-]|[ \-]?[ \t]*\r?\n[ \t]*)?\d)*(?![A-Za-z0-9_])(?![.,]\d)")
_GROUP_SPLIT = re.compile(r"[ \-]?[ \t]*\r?\n[ \t]*|[ \-]")
# A key-like word that ends its line, then lines that are only key characters: one key cut in pieces.
_KEY_CUT = re.compile(
    r"(?<![A-Za-z0-9_\-.])" + _PREFIX + r"[A-Za-z0-9_\-]*"
    r"(?:[ \t]*\r?\n[ \t]*[A-Za-z0-9_\-]+(?=[ \t]*(?:\r?\n|$)))+"
)
# A key-like word, then pieces of key characters after spaces on the same line: one key cut by spaces.
_KEY_SPACED = re.compile(r"(?<![A-Za-z0-9_\-.])" + _PREFIX + r"[A-Za-z0-9_\-]*(?:[ \t]+[A-Za-z0-9_\-]{3,}(?![^\s]))+")
_AWS_LINE = re.compile(r"(?<![A-Za-z])aws(?![a-z])", re.IGNORECASE)
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])")
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/=_\-])(?P<run>[A-Za-z0-9+/_\-]{16,}={0,2})(?![A-Za-z0-9+/=_\-])")
_BASIC_AUTH = re.compile(r"basic[ \t]+$", re.IGNORECASE)

_WORDS = (
    r"password|passwd|pwd|pass[ _\-]?phrase|senha|passwort|kennwort|contrase[ñn]a|mot[ _\-]de[ _\-]passe"
    r"|wachtwoord|api[ _\-]?key|secret[ _\-]?key|private[ _\-]?key|client[ _\-]?secret|token"
    r"|secret[ _\-]?access[ _\-]?key"
)
# The word stands alone or ends a name ("DB_PASSWORD", "access-token": "_" and "-" are not
# letters), but is not part of a longer word ("tokens", "mypassword").
_CREDENTIAL = re.compile(
    r"(?<![A-Za-z0-9])(?:" + _WORDS + r")(?![A-Za-z0-9])[\"'`*_]*[ \t]*(?P<sign>[:=])[ \t]*(?P<value>.*)",
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
_PATH = re.compile(r"(?:~|\.{1,2})?/[\w.\-/]*")
# Small words of a sentence, and the words of a password policy, in the languages of the credential words.
_PROSE_WORDS = frozenset(
    "the a an of to is are be must should can may at least for with and or by per every each than in on "
    "from no not one its this that which when after before it as "
    "characters chars digits letters symbols length minimum maximum min max long uppercase lowercase "
    "der die das ein eine mindestens muss und oder mit zeichen "
    "el la los las un una de debe al menos y o con caracteres "
    "le les une doit au moins et ou avec caractères "
    "um uma deve pelo e com".split()
)
_NEXT_LINE_MARKS = "\"'`*_>+- \t"
_FENCE = re.compile(r"[ \t]*(?:```|~~~)[^\n]*")
_BARE_WORD = re.compile(
    r"(?<![A-Za-z0-9])(?:password|passwd|pass[ _\-]?phrase|senha|passwort|kennwort|contrase[ñn]a"
    r"|mot[ _\-]de[ _\-]passe|wachtwoord|api[ _\-]?key|secret[ _\-]?key|private[ _\-]?key|client[ _\-]?secret)"
    r"(?![A-Za-z0-9])|(?<![A-Za-z0-9])token[ \t]*:",
    re.IGNORECASE,
)


def find_secret(text: str) -> str | None:
    """The kind of secret ``text`` seems to hold ("a card number", …), or None."""
    return _find(readable(text), unwrap=True)


def _find(text: str, *, unwrap: bool) -> str | None:
    if _PEM.search(text):
        return PEM
    if any(prefix in text for prefix in KEY_PREFIXES):  # the three key rules below cost more than this
        for match in _KEY_WORD.finditer(text):
            if len(match.group()) >= MIN_KEY_LENGTH:
                return ACCESS_KEY
        for match in _KEY_CUT.finditer(text):
            pieces = re.split(r"[ \t]*\r?\n[ \t]*", match.group())
            joined = "".join(pieces)
            if len(joined) >= MIN_KEY_LENGTH and any(c.isdigit() for piece in pieces[1:] for c in piece):
                return ACCESS_KEY
        for match in _KEY_SPACED.finditer(text):
            if _spaced_key(match.group().split()):
                return ACCESS_KEY
    for match in _DIGIT_RUN.finditer(text):
        if not match.group().startswith("+") and _holds_card(match.group()):
            return CARD
    digests = _Digests(text)
    for match in _ALNUM_RUN.finditer(text):
        run = match.group()
        if (
            sum(c.isdigit() for c in run) >= MIN_RANDOM_DIGITS
            and not run.isdigit()
            and not (len(run) == 40 and _HEX_DIGEST.fullmatch(run))
            and not digests.hold(match.span())
        ):
            return RANDOM
    found = find_known_key(text)
    if found is not None:
        return found
    for match in _CREDENTIAL.finditer(text):
        value = match.group("value").lstrip("\"'`*_ \t").rstrip()
        if not value and match.group("sign") == ":":
            value = _next_line_value(text, match.end())
        if value and not _names_the_secret(value):
            return CREDENTIAL
    if "aws" in text.lower():
        for line in text.splitlines():
            if _AWS_LINE.search(line) and any(_looks_random(m.group()) for m in _AWS_SECRET.finditer(line)):
                return ACCESS_KEY
    if unwrap:
        return _find_wrapped(text, digests)
    return None


class _Digests:
    """Where ``text`` holds checksums that say what they are, found on the first question only."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._spans: list[tuple[int, int]] | None = None

    def hold(self, span: tuple[int, int]) -> bool:
        if self._spans is None:
            self._spans = [match.span() for match in _LABELLED_DIGEST.finditer(self._text)]
        return any(start <= span[0] and span[1] <= end for start, end in self._spans)


def readable(text: str) -> str:
    """``text`` as a person reads it: NFKC, no format characters (Cf), every hyphen look-alike a ``-``,
    Latin look-alikes read as Latin in a word that mixes them with Latin letters.

    >>> readable("\uff53\uff4b\uff0dproj\u2011ab\u200bcd p\u0430ss")
    'sk-proj-abcd pass'
    """
    if text.isascii():  # the usual case, and nothing to do: ASCII is its own NFKC and has no Cf
        return text
    text = unicodedata.normalize("NFKC", text).translate(_readable_table())
    if _LOOK_ALIKE.search(text) is None:
        return text
    return _LOOK_ALIKE_WORD.sub(_latin_if_mixed, text)


def _latin_if_mixed(match: re.Match[str]) -> str:
    word = match.group()
    return word.translate(_LOOK_ALIKES) if _LATIN.search(word) else word


@functools.cache
def _readable_table() -> dict[int, str | None]:
    """Hyphen look-alikes to ``-`` and every format character (Cf) to nothing, for ``str.translate``."""
    # Format characters live in planes 0 and 1 and in the tags block of plane 14: scanning those
    # (not all 1.1 million code points) keeps the first non-ASCII check fast.
    codes = itertools.chain(range(0x20000), range(0xE0000, 0xE1000))
    table: dict[int, str | None] = {code: None for code in codes if unicodedata.category(chr(code)) == "Cf"}
    table.update(_HYPHENS)
    return table


def _spaced_key(pieces: list[str]) -> bool:
    """Whether a key-like word and the random-looking pieces after it make a key of 16 or more."""
    joined = pieces[0]
    for piece in pieces[1:]:
        mixed_case = any(c.isupper() for c in piece[1:]) and any(c.islower() for c in piece)
        if not (mixed_case or any(c.isdigit() for c in piece)):
            break
        joined += piece
    return len(joined) >= MIN_KEY_LENGTH and len(joined) > len(pieces[0]) and any(c.isdigit() for c in joined)


def _names_the_secret(value: str) -> bool:
    """Whether a credential's value only masks, points to or describes the secret instead of being it."""
    return bool(_MASK.match(value) or _POINTER.match(value) or _PATH.fullmatch(value) or _reads_as_prose(value))


def _reads_as_prose(value: str) -> bool:
    """Three words or more, one a small word of a sentence, none mixing letters and digits."""
    words = [word.strip(".,;:()!?\"'`*") for word in value.split()]
    if len(words) < 3:
        return False
    if any(any(c.isdigit() for c in word) and any(c.isalpha() for c in word) for word in words):
        return False
    return any(word.lower() in _PROSE_WORDS for word in words)


def _next_line_value(text: str, end: int) -> str:
    """The value on the line after ``password:``, when that line is one password-like word."""
    for line in text[end:].split("\n", 4)[1:]:
        if not line.strip() or _FENCE.fullmatch(line):
            continue
        word = line.strip(_NEXT_LINE_MARKS)
        password_like = any(c.isdigit() or not c.isalnum() for c in word) or word[1:] != word[1:].lower()
        if len(word) >= 6 and not any(c.isspace() for c in word) and password_like:
            return word
        return ""
    return ""


def _find_wrapped(text: str, digests: _Digests) -> str | None:
    """The kind of secret inside a base64 word of ``text`` that decodes to readable text."""
    for match in _BASE64.finditer(text):
        if digests.hold(match.span()):
            continue
        inner = _decoded(match.group("run"))
        if inner is None:
            continue
        found = _find(readable(inner), unwrap=False)
        if found is not None:
            return found
        if _BASIC_AUTH.search(text, 0, match.start()) and re.fullmatch(r"[^\s:]+:\S+", inner):
            return CREDENTIAL  # "Authorization: Basic <base64 of user:password>"
    return None


def _decoded(run: str) -> str | None:
    """``run`` decoded from base64 (standard or URL-safe), if it is printable text; else None."""
    padded = run.rstrip("=").replace("-", "+").replace("_", "/")
    padded += "=" * (-len(padded) % 4)
    try:
        inner = base64.b64decode(padded, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    if len(inner) < 8 or not all(c.isprintable() or c in "\n\t\r" for c in inner):
        return None
    return inner


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
        if head[0] not in CARD_FIRST_DIGITS:
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
