"""A version is a short hash of a file's bytes: equal bytes, equal version."""

from __future__ import annotations

VERSION_LENGTH = 12


def version_of(data: bytes) -> str:
    """The version of ``data``: the first 12 hex digits of its SHA-256.

    >>> version_of(b"")
    'e3b0c44298fc'
    """
    import hashlib  # OpenSSL's, loaded by the first hash: a search that compares stamps hashes nothing

    return hashlib.sha256(data).hexdigest()[:VERSION_LENGTH]
