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
from fsmem._index.front_matter import HANDLER, SafeDumper, YAMLError

__all__ = ["render", "parse"]

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
        raise BadFact("the file is not UTF-8 text; save it as UTF-8") from None
    if not text.lstrip("\ufeff").startswith("---"):
        raise BadFact(
            "the file has no front matter: it should start with a `---` line, the fields, and another `---` line"
        )
    try:
        post = frontmatter.loads(text.lstrip("\ufeff"), handler=HANDLER)
    except YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise BadFact(
            f"the front matter is not valid YAML{where}; mend it or restore a version with `fsmem versions`"
        ) from None
    except Exception as error:  # noqa: BLE001 - whatever a broken file makes the parser raise
        raise BadFact(f"the front matter cannot be read ({type(error).__name__}); mend it") from None
    return rules.fact_from_fields(post.metadata, post.content, file_id)
