"""Keys of named services, as a maintained detector knows them: detect-secrets' regex plugins.

    >>> find_known_key("STRIPE=sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc")
    'an access key'
    >>> find_known_key("postgres://app@db:5432/shop") is None
    True

Every regex plugin of detect-secrets (Yelp; Stripe, Slack tokens and webhooks, GitHub, GitLab, SendGrid,
Twilio, npm, PyPI, Discord, Telegram, JWT, AWS, Azure, IBM, Mailchimp, Square, Artifactory, Cloudant,
private keys, passwords inside URLs) runs on each line; a plugin added by a newer release is picked
up. Not used: its public-IP plugin (an address is not a secret), its keyword and entropy plugins
(fsmem's own credential words and random-run rule do that job with fewer false alarms on prose,
lock-file checksums and data URIs; docs/safety.md has the numbers). A password inside a URL that only
masks or names it (``${PGPASSWORD}``, ``<password>``, ``password``) is not a secret.

A few shapes detect-secrets 1.5 does not know are added here, until it does: Hugging Face ``hf_``,
Google OAuth client secrets ``GOCSPX-``, Stripe webhook secrets ``whsec_``, Slack app tokens ``xapp-``,
and a URL password with an empty user name (``redis://:pw@host``).

The plugins cost about 0.04 ms a line (~18 ms for 32 KiB of new lines; a write checks each change
with five lines either side, ``fsmem._core.changes``). detect-secrets is imported on the first call,
not with fsmem: a cold ``import fsmem``, ``--help`` or search never loads it. Pure: the plugins only match text
(verification, which would reach the network, is never called).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable

__all__ = ["find_known_key"]

ACCESS_KEY = "an access key"
CREDENTIAL = "a credential"
PEM = "a private key block"

# detect-secrets plugin -> the kind fsmem names (every other plugin finds "an access key")
_KINDS = {"BasicAuthDetector": CREDENTIAL, "PrivateKeyDetector": PEM}
_SKIPPED = {"IPPublicDetector"}

_EXTRA_PREFIXES = ("hf_", "GOCSPX-", "whsec_", "xapp-")
_EXTRA = re.compile(
    r"(?<![A-Za-z0-9_])(?:hf_[A-Za-z0-9]{30,}|GOCSPX-[A-Za-z0-9_\-]{24,}|whsec_[A-Za-z0-9+/=]{24,}"
    r"|xapp-\d-[A-Z0-9]{6,}-\d{6,}-[a-z0-9]{32,})"
)
_EMPTY_USER_URL = re.compile(r"://:(?P<value>[^\s/@:]+)@[A-Za-z0-9]")
# What a URL's password may be without being one: a placeholder word, a variable, a template, a mask.
_URL_MASK = re.compile(
    r"(?:password|passwd|pass|pwd|pw|secret|changeme|\*+|x{3,}|\.{3,}|<[^<>]*>|\$\{?[A-Za-z_]\w*\}?|\{\{.*\}\}|%[sv])",
    re.IGNORECASE,
)


def find_known_key(text: str) -> str | None:
    """The kind of a named service's key or a URL's password in ``text`` (already made readable), or None."""
    if any(prefix in text for prefix in _EXTRA_PREFIXES) and _EXTRA.search(text):
        return ACCESS_KEY
    for match in _EMPTY_USER_URL.finditer(text):
        if not _URL_MASK.fullmatch(match.group("value")):
            return CREDENTIAL
    plugins = _plugins()
    for line in text.splitlines():
        for kind, analyze in plugins:
            for found in analyze(line):
                if kind != CREDENTIAL or not _URL_MASK.fullmatch(found):
                    return kind
    return None


@functools.cache
def _plugins() -> tuple[tuple[str, Callable[[str], Iterable[str]]], ...]:
    """Each regex plugin of detect-secrets with the kind it finds, made once."""
    # Imported here: it costs ~150 ms (it brings requests and yaml), which no read or search should pay.
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    every: list[type] = list(get_mapping_from_secret_type_to_class().values())
    classes = sorted(
        (plugin for plugin in every if issubclass(plugin, RegexBasedDetector)), key=lambda plugin: plugin.__name__
    )
    return tuple(
        (_KINDS.get(plugin.__name__, ACCESS_KEY), plugin().analyze_string)
        for plugin in classes
        if plugin.__name__ not in _SKIPPED
    )
