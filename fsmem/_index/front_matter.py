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

from fsmem._core import facts as rules
from fsmem._core.layout import role_of
from fsmem._core.search import FileDoc, file_doc
from fsmem._errors import BadFact

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

__all__ = ["HANDLER", "NOT_UTF8", "SafeDumper", "YAMLError", "split", "fields", "read_fact", "mend_id", "file_document"]

YAMLError = yaml.YAMLError
NOT_UTF8 = "the file is not UTF-8 text; save it as UTF-8"


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


def read_fact(text: str, file_id: str) -> rules.Fact:
    """The fact a fact file's text holds, as a person may have edited it; :class:`BadFact` says what
    to mend (the one reading of a fact file: the facts and the index both read it so)."""
    metadata, content = _fact_parts(text)
    return rules.fact_from_fields(metadata, content, file_id)


def mend_id(text: str, file_id: str) -> tuple[rules.Fact | None, str | None]:
    """What a broken fact file can be read as when its only fault is its id (missing, or another than
    its file's name: the name is how every link and command finds it), else None; and the subject its
    front matter names, where it names one as text."""
    try:
        metadata, content = _fact_parts(text)
    except BadFact:
        return None, None
    if not isinstance(metadata, dict):
        return None, None
    subject = metadata.get("subject")
    named = rules.clean_name(str(subject)) if isinstance(subject, (str, int, float)) else None
    if metadata.get("id") == file_id:
        return None, named
    try:
        return rules.fact_from_fields({**metadata, "id": file_id}, content, file_id), named
    except BadFact:
        return None, named


def _fact_parts(text: str) -> tuple[Any, str]:
    """A fact file's front matter as YAML reads it, and its body; :class:`BadFact` when unreadable."""
    text = text.lstrip("\ufeff")
    if not text.startswith("---"):
        raise BadFact(
            "the file has no front matter: it should start with a `---` line, the fields, and another `---` line"
        )
    try:
        post = frontmatter.loads(text, handler=HANDLER)
    except YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise BadFact(
            f"the front matter is not valid YAML{where}; mend it or restore a version with `fsmem versions`"
        ) from None
    except Exception as error:  # noqa: BLE001 - whatever a broken file makes the parser raise
        raise BadFact(f"the front matter cannot be read ({type(error).__name__}); mend it") from None
    return post.metadata, post.content


def file_document(path: str, text: str, *, utf8: bool = True) -> FileDoc:
    """What ``path`` holding ``text`` becomes in the index; the front matter of facts read for their
    fields, and a fact file fsmem cannot use as a fact (``utf8``: whether ``text`` was decoded without
    loss) flagged with its problem."""
    head, body = split(text)
    if role_of(path).kind not in ("fact", "replaced_fact"):
        return file_doc(path, head, body, {})
    place = rules.fact_id_of_path(path)
    if place is None:
        return file_doc(path, head, body, fields(head), rules.NOT_A_FACT_NAME)
    found: Any = {}
    try:
        found, content = _fact_parts(text)
        fact = rules.fact_from_fields(found, content, place[0])
        problem = rules.limit_problem(fact) if utf8 else NOT_UTF8
    except BadFact as error:
        problem = error.message
    return file_doc(path, head, body, dict(found) if isinstance(found, dict) else {}, problem)
