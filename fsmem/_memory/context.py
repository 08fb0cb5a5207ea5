"""What to append to a thread before a turn: the run's top files and blocks, read from the drive.

The decision is :func:`fsmem._core.context.plan_context`, a pure function of (messages, documents);
this module only gathers the documents and records what the thread now holds as read.

    extra = run.context(thread)                      # memory copies the thread lacks
    extra = run.context(thread, recall=user_text)    # plus the top matches for the message, last
    thread.extend(extra)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from fsmem._core import layout
from fsmem._core.context import (
    DEFAULT_RECALL_TOKENS,
    Document,
    RecallCandidate,
    plan_context,
    plan_recall,
)
from fsmem._core.search import STOP_WORDS, fact_note
from fsmem._core.versions import version_of
from fsmem._index.front_matter import file_document
from fsmem._memory import prompts as _prompts
from fsmem._memory.levels import Scope, list_routines
from fsmem._memory.links import linked_notes
from fsmem._memory.project import Project
from fsmem._memory.rewrite import REWRITE_TIMEOUT, rewrite_for_recall
from fsmem._store.interface import Store

if TYPE_CHECKING:
    from fsmem._llm.model import ChatModel

__all__ = ["documents", "build_context", "recall_candidates", "recall_query"]


class Run(Protocol):
    """What context injection needs of the run it serves (``fsmem._memory.tool.Run`` is one)."""

    memory: Project
    scope: Scope
    agent_folder: str | None
    routine_folder: str | None

    @property
    def drive(self) -> Store: ...

    def mark_seen(self, path: str, version: str) -> None: ...


_RECALL_HITS = 8
_WEAKEST = 0.25  # matches scoring under this share of the best one are left out
_LINKING_MATCHES = 3  # the best matches whose links recall follows
_LINKED_NOTES = 4  # at most this many linked notes join them
_QUERY_WORDS = 32
_WORD = re.compile(r"\w{3,}", re.UNICODE)


def _file_document(run: Run, path: str) -> Document:
    data = run.drive.read(path) or b""
    return Document("memory", path, data.decode("utf-8", errors="replace"), version=version_of(data))


def _folder_name(folder: str) -> str:
    return folder.rsplit("/", 1)[-1]


def _name_from_folder(folder: str) -> str:
    """The name a folder was made with, as well as its slug tells it: ``title-tuning-a27f3b90`` → ``title-tuning``."""
    return _folder_name(folder).rsplit("-", 1)[0]


def _routine_entries(run: Run, agent_folder: str, names: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """``(id, name, notes path)`` of every routine of the run's agent, in folder order."""

    known = dict(names)
    scope = run.scope
    if scope.routine_id and scope.routine_name:
        known.setdefault(scope.routine_id, scope.routine_name)
    entries = []
    for folder in list_routines(run.memory, agent_folder):
        routine_id = _folder_name(folder).rsplit("-", 1)[-1]
        name = _name_from_folder(folder)
        for full_id, known_name in known.items():
            if layout.folder_matches_id(_folder_name(folder), full_id):
                routine_id, name = full_id, known_name
                break
        entries.append((routine_id, name, layout.routine_top_file(folder)))
    return entries


def documents(run: Run, routines: Mapping[str, str] | None = None) -> list[Document]:
    """The run's documents in load order: project file; agent block and file; routine block and notes.

    ``routines`` maps routine ids to names from the harness's records, so the agent block names them;
    a routine it does not name is shown by its folder.
    """
    docs = [_file_document(run, layout.PROJECT_FILE)]
    if run.agent_folder is None:
        return docs
    scope = run.scope
    assert scope.agent_id is not None  # only an agent's or a routine's scope has an agent folder
    agent_memory = layout.agent_top_file(run.agent_folder)
    agent_name = scope.agent_name or _name_from_folder(run.agent_folder)
    docs.append(
        Document(
            "agent",
            scope.agent_id,
            _prompts.agent_block(
                scope.agent_id, agent_name, agent_memory, _routine_entries(run, run.agent_folder, routines or {})
            ),
        )
    )
    docs.append(_file_document(run, agent_memory))
    if run.routine_folder is not None:
        assert scope.routine_id is not None  # only a routine's scope has a routine folder
        notes = layout.routine_top_file(run.routine_folder)
        routine_name = scope.routine_name or _name_from_folder(run.routine_folder)
        docs.append(
            Document(
                "routine",
                scope.routine_id,
                _prompts.routine_block(scope.routine_id, routine_name, agent_name, notes, agent_memory),
            )
        )
        docs.append(_file_document(run, notes))
    return docs


def recall_query(text: str) -> str:
    """The words of a message, as a plain search query (no operators, quotes or field names)."""
    words: list[str] = []
    for word in _WORD.findall(text):
        if word.lower() not in STOP_WORDS and word.lower() not in {w.lower() for w in words}:
            words.append(word)
    return " ".join(words[:_QUERY_WORDS])


def _recall_text(path: str, data: bytes) -> str:
    """A file as recall shows it: a fact as one line (thing, sentence, when said), the rest as it is."""
    text = data.decode("utf-8", errors="replace")
    if layout.role_of(path).kind not in ("fact", "replaced_fact"):
        return text
    doc = file_document(path, text)
    return f"{doc.title}: {' '.join(doc.body.split())}{fact_note(doc.kind, doc.said, doc.until)}\n"


def recall_candidates(run: Run, query: str, skip: Sequence[str] = ()) -> list[RecallCandidate]:
    """The top search matches for ``query`` (those scoring at least ``_WEAKEST`` of the best), with each
    file's whole text and version, best first; then
    the notes the first of them link to (depth 1, at most ``_LINKED_NOTES``), each marked with the
    match whose link led there."""
    search = getattr(run.memory, "search", None)
    if search is None or not query:
        return []
    candidates = []
    hits = [hit for hit in search(query, limit=_RECALL_HITS + len(skip)) if hit.path not in skip]
    best = max((score for hit in hits if (score := getattr(hit, "score", None)) is not None), default=None)
    for hit in hits:
        score = getattr(hit, "score", None)
        if best is not None and score is not None and score < best * _WEAKEST:
            continue  # any word matches: a file that shares one common word with the message is noise here
        snippet, kind, title = (getattr(hit, name, "") or "" for name in ("snippet", "kind", "title"))
        candidate = _candidate(run, hit.path, snippet, kind, title)
        if candidate is not None:
            candidates.append(candidate)
    shown = {candidate.path for candidate in candidates} | set(skip)
    linked: list[RecallCandidate] = []
    for match in candidates[:_LINKING_MATCHES]:
        for path in linked_notes(run.memory, match.path, match.text, _LINKED_NOTES):
            if path not in shown and len(linked) < _LINKED_NOTES:
                candidate = _candidate(run, path, "", layout.role_of(path).kind, linked_from=match.path)
                if candidate is not None:
                    shown.add(path)
                    linked.append(candidate)
    return candidates + linked


def _candidate(
    run: Run, path: str, snippet: str, kind: str, title: str = "", linked_from: str = ""
) -> RecallCandidate | None:
    data = run.drive.read(path)
    if data is None:
        return None
    return RecallCandidate(
        path=path,
        version=version_of(data),
        text=_recall_text(path, data),
        snippet=snippet,
        title=title,
        kind=kind,
        linked_from=linked_from,
    )


def build_context(
    run: Run,
    messages: Sequence[Mapping[str, Any]],
    recall: str | None = None,
    *,
    recall_tokens: int = DEFAULT_RECALL_TOKENS,
    routines: Mapping[str, str] | None = None,
    rewriter: ChatModel | None = None,
    rewrite_timeout: float = REWRITE_TIMEOUT,
) -> list[dict[str, str]]:
    """The messages to append to ``messages`` before the next turn. Never changes ``messages``.

    Every file the thread then holds counts as read by ``run`` for the version check. With a
    ``rewriter`` (a chat model), a short or referential ``recall`` message is first rewritten from the
    last turns as a standalone query (``fsmem._memory.rewrite``: at most ``rewrite_timeout`` seconds,
    the message as it is on a timeout or a model error).
    """
    docs = documents(run, routines)
    plan = plan_context(messages, docs)
    for path, version in plan.seen.items():
        run.mark_seen(path, version)
    appended = list(plan.messages)
    if recall is not None and recall.strip():
        loaded = [d.key for d in docs if d.tag == "memory"]
        if rewriter is not None:
            recall = rewrite_for_recall(rewriter, recall, messages, timeout=rewrite_timeout).query
        candidates = recall_candidates(run, recall_query(recall), skip=loaded)
        recalled = plan_recall(
            recall, candidates, messages=[*messages, *appended], loaded=loaded, max_tokens=recall_tokens
        )
        for path, version in recalled.seen.items():
            if not layout.is_fact_path(path):  # a fact is shown as one line, and changes only via the facts API
                run.mark_seen(path, version)
        if recalled.message is not None:
            appended.append(recalled.message)
    return appended
