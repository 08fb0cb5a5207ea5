"""The file of a fact: YAML front matter in a fixed order, then the sentence (``render``), and a fact
read back from a file as a person may have edited it (``parse``).

Front matter is read through :mod:`fsmem._index.front_matter` (python-frontmatter, the one reader of
front matter); the fields and their rules are :mod:`fsmem._core.facts`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import frontmatter

from fsmem._core import facts as rules
from fsmem._core.facts import Fact
from fsmem._errors import BadFact
from fsmem._index.front_matter import HANDLER, NOT_UTF8, SafeDumper, mend_id, read_fact

__all__ = ["render", "parse", "parse_broken"]

_TIME_FIELDS = {"said", "kept", "edited", "until"}


class _FactDumper(SafeDumper):
    """YAML as a person would write a fact by hand: ``edited:`` rather than ``edited: null``, and
    times as ``2026-11-30T10:00:00Z`` (midnight as the date alone), which YAML reads back as times."""

    def ignore_aliases(self, data: Any) -> bool:
        return True  # two equal dates are written twice, never as an anchor and an alias


_FactDumper.add_representer(type(None), lambda dumper, _: dumper.represent_scalar("tag:yaml.org,2002:null", ""))
_FactDumper.add_representer(
    datetime, lambda dumper, moment: dumper.represent_scalar("tag:yaml.org,2002:timestamp", rules.format_when(moment))
)


def render(fact: Fact) -> bytes:
    """The file of a fact: front matter in a fixed order, then the sentence."""
    fields = rules.fields_of(fact)
    fields.update({name: getattr(fact, name) for name in _TIME_FIELDS})  # datetimes: written unquoted
    post = frontmatter.Post(fact.text)
    post.metadata.update(fields)
    text = frontmatter.dumps(
        post, handler=HANDLER, Dumper=_FactDumper, sort_keys=False, default_flow_style=None, width=1_000_000
    )
    return (text + "\n").encode("utf-8")


def parse(data: bytes, file_id: str) -> Fact:
    """A fact from its file, as a person may have edited it; :class:`BadFact` says what to mend."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise BadFact(NOT_UTF8) from None
    return read_fact(text, file_id)


def parse_broken(data: bytes, file_id: str) -> tuple[Fact | None, str | None]:
    """For a file :func:`parse` refused: the fact it holds once its id is taken from its name (None
    when more is wrong), and the subject its front matter names (None when it names none)."""
    try:
        return mend_id(data.decode("utf-8"), file_id)
    except UnicodeDecodeError:
        return None, None
