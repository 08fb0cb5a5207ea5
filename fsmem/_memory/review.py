"""The review runner: a model rereads a finished conversation and keeps what it taught.

    result = review(memory, conversation, model, Scope.agent(agent_id))
    result.applied      # what it added at once: path, version before, version after
    result.proposals    # what it would replace or remove: waits for `fsmem proposals approve ID`
    result.lines()      # one line per change and per proposal; [] when nothing changed

The model works on a copy: the conversation's user and assistant turns (never the original list, and
nothing the review says goes back into it), the scope's memory files as the harness would append them,
and the review prompt (``prompts/review.md``). Its memory tool runs on a review-mode ``Run`` of its
own thread, so an add applies at once, anything else becomes a proposal, and what it reads counts as
read only there. At most ``max_calls`` model calls, and input tokens summed over them within the budget
(``fsmem._core.due.input_budget``); what it wrote before the budget ran out stays. Each call is recorded
as ``review`` in ``fsmem usage``; each review ends with one log line (logger ``fsmem.review``).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from fsmem._core import layout
from fsmem._core.due import Half, estimate_tokens, input_budget
from fsmem._core.extract import turns_of
from fsmem._core.requests import CHANGING_COMMANDS, TOOL_NAME, memory_call_arguments
from fsmem._core.review import CONVERSATION_LIMIT, review_turns
from fsmem._core.skills import skills_read
from fsmem._errors import ModelError, NotFound
from fsmem._memory import prompts as _prompts
from fsmem._memory.levels import Scope
from fsmem._memory.tool_calls import ToolStep, assistant_message, execute_call, memory_tool_spec, refusal
from fsmem._memory.usage import Metered
from fsmem._store.types import now_iso

__all__ = [
    "Applied",
    "Proposed",
    "Refused",
    "ReviewResult",
    "review",
    "review_messages",
    "consolidate",
    "level_files",
    "DEFAULT_MAX_CALLS",
    "NOTHING_TO_SAVE",
]

DEFAULT_MAX_CALLS = 16
NOTHING_TO_SAVE = "Nothing to save."
_log = logging.getLogger("fsmem.review")

Ended = Literal["answered", "budget", "empty", "model_error", "bad_arguments"]


@dataclass(frozen=True)
class Applied:
    """A file the review changed at once: its version before the review's first write (None: the
    review created it) and after its last."""

    path: str
    before: str | None
    after: str | None

    def line(self) -> str:
        if self.before is None:
            return f"Created {self.path} (version {self.after})"
        return f"Updated {self.path} (version {self.before} -> {self.after})"


@dataclass(frozen=True)
class Proposed:
    """A change the review left for a person."""

    id: str
    summary: str

    def line(self) -> str:
        return f"Proposed {self.id}: {self.summary} (`fsmem proposals show {self.id}`)"


@dataclass(frozen=True)
class Refused:
    """A call the tool refused: nothing changed. The path is left out, since a path can hold a secret."""

    command: str
    code: str


@dataclass(frozen=True)
class ReviewResult:
    thread_id: str
    applied: tuple[Applied, ...] = ()
    proposals: tuple[Proposed, ...] = ()
    refused: tuple[Refused, ...] = ()
    model_calls: int = 0
    ended: Ended = "answered"
    answer: str = ""
    error: str | None = None  # the model's failure, when it failed after the review changed something
    steps: tuple[ToolStep, ...] = field(default=(), repr=False)
    input_tokens: int = 0
    output_tokens: int = 0
    halves: tuple[Half, ...] = ("memory",)

    @property
    def changed(self) -> bool:
        return bool(self.applied or self.proposals)

    def lines(self) -> list[str]:
        """One line per change and per proposal; [] when nothing changed (then see :meth:`outcome`)."""
        return [a.line() for a in self.applied] + [p.line() for p in self.proposals]

    @property
    def unusable(self) -> bool:
        """The model worked but nothing it sent could be used: its calls were refused or malformed, or
        it ran out of calls, and nothing changed."""
        return not self.changed and self.ended in ("budget", "bad_arguments")

    def outcome(self) -> str | None:
        """What a person is told when nothing changed (None when something did): that the model found
        nothing worth keeping, that it answered without proposing or changing anything, or that its
        answer could not be used."""
        if self.changed or self.ended == "model_error":
            return None
        if self.ended == "empty":
            return "Nothing to review: the conversation has no user or assistant text."
        refused = f" {len(self.refused)} memory calls were refused." if self.refused else ""
        if self.ended == "bad_arguments":
            return (
                "The model's answer could not be used: it twice sent memory-tool arguments that are "
                f"not valid JSON. Nothing changed.{refused}"
            )
        if self.ended == "budget":
            return (
                f"The model's answer could not be used: it made {self.model_calls} model calls "
                f"without finishing, and changed nothing.{refused} Raise --max-calls or try another "
                "model."
            )
        if self.answer == NOTHING_TO_SAVE:
            return "Nothing to save: the model found nothing in this conversation worth keeping."
        if self.answer == "Nothing to consolidate.":
            return "Nothing to consolidate: the model found no duplicated or outdated notes."
        said = " ".join(self.answer.split())
        said = (said[:200] + "…") if len(said) > 200 else (said or "(nothing)")
        return f"The model answered without proposing or changing anything.{refused} Its answer: {said}"

    def notice(self) -> str | None:
        """The one line a person sees after the turn, naming only what this review did, e.g.
        ``Memory updated · Memory change proposed · Skill 'weekly-report' updated``; None when it
        changed nothing. Never part of the conversation the model gets."""
        parts: list[str] = []
        skills: dict[str, str] = {}
        for applied in self.applied:
            found = layout.skill_of(applied.path)
            if found is None:
                if "Memory updated" not in parts:
                    parts.append("Memory updated")
            elif found[1] not in skills or applied.path.endswith("/" + layout.SKILL_FILE):
                created = applied.before is None and applied.path.endswith("/" + layout.SKILL_FILE)
                skills[found[1]] = "created" if created else skills.get(found[1], "updated")
        if self.proposals:
            parts.append("Memory change proposed")
        parts += [f"Skill '{name}' {what}" for name, what in skills.items()]
        return " · ".join(parts) or None

    def log_line(self) -> str:
        """The one log line of a review: how it ended, its calls and tokens, what it did, its proposals."""
        did = ", ".join(f"{a.path} {a.before or 'new'}->{a.after or 'gone'}" for a in self.applied) or "nothing"
        proposals = ", ".join(p.id for p in self.proposals) or "none"
        return (
            f"A background review ended: thread={self.thread_id} halves={'+'.join(self.halves)} "
            f"ended={self.ended} model_calls={self.model_calls} input_tokens={self.input_tokens} "
            f"output_tokens={self.output_tokens} refused={len(self.refused)} did={did} proposals={proposals}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "applied": [{"path": a.path, "before": a.before, "after": a.after} for a in self.applied],
            "proposals": [{"id": p.id, "summary": p.summary} for p in self.proposals],
            "refused": [{"command": r.command, "code": r.code} for r in self.refused],
            "model_calls": self.model_calls,
            "ended": self.ended,
            "answer": self.answer,
            "error": self.error,
            "outcome": self.outcome(),
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "halves": list(self.halves),
            "notice": self.notice(),
        }


def _levels_text(run: Any) -> str:
    """The files of the scope, widest first, with what belongs in each."""
    lines = [f"- `{layout.PROJECT_FILE}` (project): what every chat, agent and routine of the project needs."]
    if run.agent_folder:
        lines.append(
            f"- `{layout.agent_top_file(run.agent_folder)}` (this agent): what only this agent and its routines need."
        )
    if run.routine_folder:
        lines.append(
            f"- `{layout.routine_top_file(run.routine_folder)}` (this routine): what only this "
            "routine needs from one run to the next."
        )
    return "\n".join(lines)


def review_messages(
    run: Any,
    turns: list[dict[str, str]],
    *,
    dropped: int = 0,
    max_calls: int = DEFAULT_MAX_CALLS,
    project: str | None = None,
    halves: tuple[Half, ...] = ("memory",),
    loaded: list[str] | None = None,
) -> list[dict[str, Any]]:
    """What the model is given: the harness's system prompt, the conversation copy, the scope's memory
    copies (which ``run`` now counts as read) and the review prompt for ``halves``, last; ``loaded``
    names the skills the conversation read (the skill half patches those first)."""
    system = _prompts.system_prompt(project or run.memory.name)
    conversation = [dict(turn) for turn in turns]
    if dropped:
        conversation.insert(
            0,
            {
                "role": "user",
                "content": f"({dropped} earlier turns of this conversation were left out to keep the review short.)",
            },
        )
    copies = run.context(conversation)
    instruction = _instruction(run, halves, max_calls, loaded or [])
    return [
        {"role": "system", "content": system},
        *conversation,
        *copies,
        {"role": "user", "content": instruction.rstrip("\n")},
    ]


def _instruction(run: Any, halves: tuple[Half, ...], max_calls: int, loaded: list[str]) -> str:
    """One prompt for the halves that are due: the memory half's, the skill half's, or both joined."""
    if not halves:
        raise ValueError("a review needs at least one half: memory, skills or both")
    parts = []
    if "memory" in halves:
        parts.append(_prompts.render("review", levels=_levels_text(run), max_calls=str(max_calls)))
    else:
        parts.append(_prompts.render("review_skills_only", max_calls=str(max_calls)))
    if "skills" in halves:
        read = ", ".join(f"`{path}`" for path in loaded) if loaded else "none"
        parts.append(_prompts.render("review_skills", skills_folder=_skills_folder(run), loaded=read))
        parts.append(_prompts.load("review_ending"))
    return "\n".join(part.rstrip("\n") + "\n" for part in parts)


def _skills_folder(run: Any) -> str:
    """Where a new skill of this scope goes: the agent's skills (its routines share them), else the project's."""
    if run.agent_folder:
        return f"{run.agent_folder}/{layout.SKILLS_DIR}"
    return layout.SKILLS_DIR


def review(
    memory: Any,
    conversation: Any,
    model: Any,
    scope: Scope | None = None,
    *,
    max_calls: int = DEFAULT_MAX_CALLS,
    thread_id: str | None = None,
    project: str | None = None,
    conversation_limit: int = CONVERSATION_LIMIT,
    temperature: float | None = None,
    halves: tuple[Half, ...] = ("memory",),
    window: int | None = None,
    max_input_tokens: int | None = None,
) -> ReviewResult:
    """Reread ``conversation`` (a list of messages, or an object with ``messages``) with ``model`` (a
    :class:`fsmem._llm.model.ChatModel`) and keep what it taught in ``scope``'s memory.

    ``halves`` says what it looks for: ``memory`` (rules, corrections, facts), ``skills`` (how to do a
    kind of task), or both in one prompt. Input tokens summed over the calls stay within
    ``max_input_tokens`` (default: ``input_budget(window)``, the window read from ``model.context_window``
    when not given). A conversation with no user or assistant text makes no model call. A
    :class:`ModelError` is raised when the review changed nothing; after a change it ends the review
    (``ended == "model_error"``) so the caller still learns what was applied and proposed.
    """
    if max_calls < 1:
        raise ValueError("max_calls must be at least 1")
    thread_id = thread_id or f"review-{uuid.uuid4().hex[:12]}"
    run = memory.run(scope or Scope.chat(), thread_id=thread_id, review=True)
    turns, dropped = review_turns(conversation, conversation_limit)
    if not turns:
        return ReviewResult(thread_id, ended="empty", halves=halves)
    started = now_iso()
    messages = review_messages(
        run,
        turns,
        dropped=dropped,
        max_calls=max_calls,
        project=project,
        halves=halves,
        loaded=skills_read(turns_of(conversation)),
    )
    return _work(
        memory,
        run,
        model,
        messages,
        halves=halves,
        max_calls=max_calls,
        window=window,
        max_input_tokens=max_input_tokens,
        temperature=temperature,
        started=started,
    )


def _work(
    memory: Any,
    run: Any,
    model: Any,
    messages: list[dict[str, Any]],
    *,
    halves: tuple[Half, ...],
    max_calls: int,
    window: int | None,
    max_input_tokens: int | None,
    temperature: float | None,
    started: str,
) -> ReviewResult:
    """The review's loop on ``messages``: model calls within the budget, each tool call on ``run``."""
    thread_id = run.thread_id
    if window is None:
        window = getattr(model, "context_window", None)
    budget = max_input_tokens if max_input_tokens is not None else input_budget(window)
    metered = Metered(model, memory.drive.state, "review")
    tools = [memory_tool_spec()]
    steps: list[ToolStep] = []
    calls, spent, produced, answer, error = 0, 0, 0, "", None
    ended: Ended = "budget"
    corrected = False
    while calls < max_calls and spent + estimate_tokens(messages, tools) <= budget:
        try:
            reply = assistant_message(metered.complete(messages, tools=tools, temperature=temperature))
        except ModelError as failure:
            if not _proposal_ids(steps) and not _applied(memory, thread_id, started):
                failed = ReviewResult(thread_id, model_calls=calls, ended="model_error", error=failure.message)
                _log.info(failed.log_line())
                raise
            ended, error = "model_error", failure.message
            break
        calls += 1
        spent += metered.last[0]
        produced += metered.last[1]
        messages.append(reply)
        tool_calls = reply.get("tool_calls") or []
        if not tool_calls:
            ended, answer = "answered", reply.get("content") or ""
            break
        malformed = False
        for call in tool_calls:
            step = _outside_skills(call, halves) or execute_call(run, call)
            steps.append(step)
            malformed = malformed or step.malformed
            messages.append({"role": "tool", "tool_call_id": str(call.get("id", "")), "content": step.text})
        if malformed:  # one corrective reply (the refusal), then the review ends: see Session._work
            if corrected:
                ended = "bad_arguments"
                break
            corrected = True
    result = ReviewResult(
        thread_id=thread_id,
        applied=tuple(_applied(memory, thread_id, started)),
        proposals=tuple(_proposed(memory, steps)),
        refused=tuple(_refused(steps)),
        model_calls=calls,
        ended=ended,
        answer=answer.strip(),
        error=error,
        steps=tuple(steps),
        input_tokens=spent,
        output_tokens=produced,
        halves=halves,
    )
    _log.info(result.log_line())
    return result


def _outside_skills(call: dict[str, Any], halves: tuple[Half, ...]) -> ToolStep | None:
    """A review due for skills alone changes nothing else: its call to change other memory is refused."""
    if "memory" in halves:
        return None
    arguments = memory_call_arguments(call)  # None: another tool, or malformed (execute_call words it)
    if arguments is None or arguments.get("command") not in CHANGING_COMMANDS:
        return None
    if layout.skill_of(str(arguments.get("path") or "").strip("/")) is not None:
        return None
    message = "this review keeps skills only; change files under a skills/ folder, or answer"
    return ToolStep(TOOL_NAME, dict(arguments), refusal("PROTECTED", message))


def _applied(memory: Any, thread_id: str, started: str) -> list[Applied]:
    """What the review's run wrote, from the log: the version before its first write, after its last."""
    changes: dict[str, Applied] = {}
    for entry in memory.drive.log():
        if entry.thread != thread_id or entry.time < started:
            continue
        first = changes.get(entry.path)
        changes[entry.path] = Applied(entry.path, entry.before if first is None else first.before, entry.after)
    return list(changes.values())


def _proposal_ids(steps: list[ToolStep]) -> list[str]:
    return [str(step.result["proposal"]) for step in steps if step.ok and step.result.get("proposal")]


def _proposed(memory: Any, steps: list[ToolStep]) -> list[Proposed]:
    from fsmem._memory import proposals

    found = []
    for proposal_id in _proposal_ids(steps):
        try:
            summary = proposals.load(memory, proposal_id).summary
        except NotFound:  # a person already approved or discarded it: it was still made here
            summary = "(no longer waiting)"
        found.append(Proposed(proposal_id, summary))
    return found


def _refused(steps: list[ToolStep]) -> list[Refused]:
    refused = []
    for step in steps:
        if not step.ok:
            error = step.result.get("error") or {}
            command = (step.arguments or {}).get("command", step.name)
            refused.append(Refused(str(command), str(error.get("code", "BAD_REQUEST"))))
    return refused


# ---- consolidation: one level reread, merges proposed ---------------------------------------------


def level_files(memory: Any, run: Any) -> list[str]:
    """The memory files of the run's own level: its folder's files, without the levels below it, the
    facts or the skills."""
    folder = run.routine_folder or run.agent_folder or ""
    level = "routine" if run.routine_folder else "agent" if run.agent_folder else "project"
    found = [
        entry.path
        for entry in memory.drive.walk_files(folder)
        if layout.role_of(entry.path).level == level
        and layout.role_of(entry.path).kind in ("memory", "notes", "topic")
        and layout.skill_of(entry.path) is None
        and not layout.is_fact_path(entry.path)
    ]
    return sorted(found, key=lambda path: (not layout.role_of(path).is_top_file, path))  # the top file first


def consolidate(
    memory: Any,
    model: Any,
    scope: Scope | None = None,
    *,
    max_calls: int = DEFAULT_MAX_CALLS,
    thread_id: str | None = None,
    project: str | None = None,
    temperature: float | None = None,
    window: int | None = None,
) -> ReviewResult:
    """Reread one level's files (``scope``'s own: the project's for a chat, the agent's, the routine's)
    and propose merging duplicated or outdated notes. It only proposes: every change it makes, an
    addition too, waits for a person (``fsmem proposals``); nothing standing is removed behind anyone's back.
    """
    if max_calls < 1:
        raise ValueError("max_calls must be at least 1")
    thread_id = thread_id or f"consolidate-{uuid.uuid4().hex[:12]}"
    run = memory.run(scope or Scope.chat(), thread_id=thread_id, review=True)
    run.only_proposals = True
    paths = level_files(memory, run)
    if not paths:
        return ReviewResult(thread_id, ended="empty")
    from fsmem._core.context import Document, render_copy
    from fsmem._core.versions import version_of

    copies = []
    for path in paths:
        data = memory.drive.read(path) or b""
        run.mark_seen(path, version_of(data))
        document = Document("memory", path, data.decode("utf-8", errors="replace"), version=version_of(data))
        if not document.is_empty:
            copies.append({"role": "user", "content": render_copy(document)})
    level = run.routine_folder or run.agent_folder
    named = f"the folder `{level}/`" if level else "the project's own files (not the agents' folders)"
    instruction = _prompts.render("consolidate", level=named, max_calls=str(max_calls))
    messages = [
        {"role": "system", "content": _prompts.system_prompt(project or memory.name)},
        *copies,
        {"role": "user", "content": instruction.rstrip("\n")},
    ]
    return _work(
        memory,
        run,
        model,
        messages,
        halves=("memory",),
        max_calls=max_calls,
        window=window,
        max_input_tokens=None,
        temperature=temperature,
        started=now_iso(),
    )
