"""The one reader of front matter: python-frontmatter, with libyaml's safe loader where PyYAML has it.

Facts are read and written through it (:func:`fsmem._memory.facts.parse`, :func:`fsmem._memory.facts.render`), and
the index and recall split every memory file with it (:func:`file_document`), so a fact's fields and
where its body starts are read one way everywhere. The rules of what a file becomes in the index stay
pure in :func:`fsmem._core.search.file_doc`.

    >>> split("---\\nsubject: Ana\\n---\\nAna leads the data team.\\n")
    ('---\\nsubject: Ana\\n---\\n', 'Ana leads the data team.\\n')
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import frontmatter
import yaml  # PyYAML: the reader python-frontmatter uses (declared in pyproject.toml)

from fsmem._core.layout import role_of
from fsmem._core.search import FileDoc, file_doc

if TYPE_CHECKING:  # checked as PyYAML's own classes, whose interface the libyaml ones share
    from yaml import SafeDumper
    from yaml import SafeLoader as _SafeLoader
else:
    try:  # libyaml reads and writes a fact several times faster than PyYAML's own Python code
        from yaml import CSafeDumper as SafeDumper
        from yaml import CSafeLoader as _SafeLoader
    except ImportError:  # a PyYAML built without libyaml
        from yaml import SafeDumper
        from yaml import SafeLoader as _SafeLoader

__all__ = ["HANDLER", "SafeDumper", "YAMLError", "split", "fields", "file_document"]

YAMLError = yaml.YAMLError


class _Handler(frontmatter.YAMLHandler):
    """python-frontmatter's YAML handler, with the safe loader above."""

    def load(self, fm: str, **kwargs: object) -> Any:
        return yaml.load(fm, Loader=_SafeLoader)  # noqa: S506 - a safe loader


HANDLER = _Handler()


def split(text: str) -> tuple[str, str]:
    """``(head, body)`` with ``head + body == text``: the front matter with its ``---`` lines (empty
    when the text has none), then the rest, found as python-frontmatter finds them."""
    boundary = HANDLER.FM_BOUNDARY
    assert boundary is not None
    if not HANDLER.detect(text):
        return "", text
    fences = boundary.finditer(text)
    next(fences)  # the opening line: detect() found it at the start
    closing = next(fences, None)
    if closing is None:
        return "", text
    end = closing.end()
    if text.startswith("\r\n", end):
        end += 2
    elif text.startswith("\n", end):
        end += 1
    return text[:end], text[end:]


def fields(head: str) -> dict[str, Any]:
    """The fields of a front matter ``head`` (as :func:`split` gives it); empty when it is no YAML
    mapping (a file being written, a person's typo): such a file is still indexed as text."""
    if not head:
        return {}
    try:
        found = frontmatter.loads(head, handler=HANDLER).metadata
    except Exception:  # noqa: BLE001 - whatever a broken file makes the parser raise
        return {}
    return dict(found) if isinstance(found, dict) else {}


def file_document(path: str, text: str) -> FileDoc:
    """What ``path`` holding ``text`` becomes in the index; the front matter of facts read for their fields."""
    head, body = split(text)
    wanted = role_of(path).kind in ("fact", "replaced_fact")
    return file_doc(path, head, body, fields(head) if wanted else {})
