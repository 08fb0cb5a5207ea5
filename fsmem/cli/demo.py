"""``fsmem demo``: memory in front of the model, shown on a copy of the sample project.

Five runs, each printed as what the model was given and what it wrote:

1. chat A is told a rule once;                2. a new chat B follows it;
3. the Title tuning routine changes a title and records a hold for its siblings;
4. a week later Rank check compares with the positions it kept and leaves the held page alone;
5. after its thread is compacted, Rank check compares with what it kept in run 4;

then the background review of chat A, and the one line a person sees after it.

With the scripted model (the default: no network, no key) the answers are written in advance, but what
the model is given is real — read from the files the earlier runs wrote — and each run checks it. With
``--model-url`` a real model answers the same messages.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsmem._core.context import message_text, parse_header
from fsmem._env.sample import PROJECT, RANK_CHECK, SEO, TITLE_TUNING

__all__ = ["DemoRun", "RUNS", "RecordingModel", "run_demo"]

AGENT_MEMORY = "agents/seo-5c81d0e4/MEMORY.md"
RANK_NOTES = "agents/seo-5c81d0e4/routines/rank-check-e04c6d15/NOTES.md"
TITLE_NOTES = "agents/seo-5c81d0e4/routines/title-tuning-a27f3b90/NOTES.md"
COMPACTED = "Earlier runs of this routine happened here; their messages were compacted away."


def _tool(**arguments: Any) -> dict[str, Any]:
    return {"tool": arguments}


def _say(text: str) -> dict[str, Any]:
    return {"say": text}


@dataclass(frozen=True)
class DemoRun:
    title: str
    scope: str  # "chat", or the routine's name
    thread: str
    message: str
    script: tuple[dict[str, Any], ...]
    # (what it shows, a regex the messages after the system prompt must match): loose enough that a
    # real model's own wording passes, strict enough that only memory can have put it there
    expect_in_input: tuple[tuple[str, str], ...] = ()
    compact_before: bool = False


RUNS: tuple[DemoRun, ...] = (
    DemoRun(
        title="Chat A: a rule, told once",
        scope="chat",
        thread="chat-a",
        message="From now on, every recipe page starts with a line listing its allergens, like "
        '"Contains: wheat, rye, sesame."',
        script=(
            _tool(
                command="write",
                path="MEMORY.md",
                old_text="ask Mara before announcing a new date.\n",
                new_text="ask Mara before announcing a new date.\n- Every recipe page starts with a line "
                'listing its allergens: "Contains: wheat, rye, sesame."\n',
            ),
            _say("Saved as a project rule: every chat will open recipe pages with their allergens."),
        ),
    ),
    DemoRun(
        title="Chat B, a new chat: the rule is followed",
        scope="chat",
        thread="chat-b",
        message="Draft the first lines of the new seeded rye crackers recipe page.",
        script=(
            _say(
                "Contains: rye, wheat, sesame, sunflower seeds.\n\nSeeded Rye Crackers\n"
                "Thin, crisp crackers from the starter you would otherwise throw away. "
                "Ready in 2 hours, 20 minutes of work."
            ),
        ),
        expect_in_input=(("chat B's input holds the rule saved in chat A", r"(?i)allergen"),),
    ),
    DemoRun(
        title="Title tuning (a routine run): changes a title, records a hold for its siblings",
        scope=TITLE_TUNING.name,
        thread="title-tuning",
        message="Today is 2026-11-30. Search data for 28 days: /recipes/country-sourdough has 5,400 "
        'impressions and a 0.9% click rate with the title "Country Sourdough | Rye & Ember". '
        "Choose a better title; the site applies the title on a line starting NEW TITLE:",
        script=(
            _tool(
                command="write",
                path=AGENT_MEMORY,
                old_text="hold ended 2026-11-23.\n",
                new_text="hold ended 2026-11-23.\n- /recipes/country-sourdough: title changed 2026-11-30 by "
                "Title tuning; leave title, description and headings alone until 2027-01-25.\n",
            ),
            _tool(
                command="write",
                path=TITLE_NOTES,
                old_text="## Next\n",
                new_text='- 2026-11-30 /recipes/country-sourdough: "Country Sourdough | Rye & Ember" → '
                '"Country Sourdough Recipe, Step by Step | Rye & Ember". Click rate before: 0.9%. '
                "Check after 2027-01-25.\n\n## Next\n",
            ),
            _say(
                "NEW TITLE: Country Sourdough Recipe, Step by Step | Rye & Ember\n"
                "Recorded the change and its 8-week hold in the agent's memory."
            ),
        ),
        expect_in_input=(
            ("Title tuning's input holds the agent's memory and its own notes", r"Check again after 2026-11-23"),
        ),
    ),
    DemoRun(
        title="Rank check, a week later: compares with its notes, leaves the held page alone",
        scope=RANK_CHECK.name,
        thread="rank-check",
        message='Today is 2026-12-07. Positions: "sourdough recipe" 15, "rye crackers" 9, '
        '"baking classes frome" 2. You may rewrite the headings of pages that dropped; end with '
        "one line starting REWRITE: listing them, or REWRITE: none.",
        script=(
            _tool(
                command="write",
                path=RANK_NOTES,
                old_text='## Last positions seen (2026-11-23)\n- "sourdough recipe" → /recipes/country-sourdough: 11\n',
                new_text='## Last positions seen (2026-12-07)\n- "sourdough recipe" → /recipes/country-sourdough: 15\n',
            ),
            _say(
                'Alert: "sourdough recipe" dropped from 11 to 15. /recipes/country-sourdough is on hold '
                "until 2027-01-25 (Title tuning changed its title on 2026-11-30), so I leave it alone.\n"
                "REWRITE: none"
            ),
        ),
        expect_in_input=(
            (
                "Rank check's input holds the hold Title tuning recorded",
                r"(?i)country-sourdough[^\n]*(hold|until|leave|2027)",
            ),
            ("and the positions it kept last run", r"/recipes/country-sourdough: 11\b"),
        ),
    ),
    DemoRun(
        title="Rank check, next run, after its thread was compacted: compares with what it kept",
        scope=RANK_CHECK.name,
        thread="rank-check",
        compact_before=True,
        message='Today is 2026-12-14. Positions: "sourdough recipe" 13, "rye crackers" 9, "baking classes frome" 2.',
        script=(
            _tool(
                command="write",
                path=RANK_NOTES,
                old_text='## Last positions seen (2026-12-07)\n- "sourdough recipe" → /recipes/country-sourdough: 15\n',
                new_text='## Last positions seen (2026-12-14)\n- "sourdough recipe" → /recipes/country-sourdough: 13\n',
            ),
            _say('Quiet run: "sourdough recipe" is back up from 15 to 13; the others are unchanged.'),
        ),
        expect_in_input=(
            ("after compaction, its input holds the positions it kept in the last run", r"(?i)sourdough[^\n]*\b15\b"),
        ),
    ),
)


class RecordingModel:
    """Wraps any chat model and keeps every input it was given."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.requests: list[list[dict[str, Any]]] = []

    def complete(self, messages: list[dict], *, tools: list[dict] | None = None, **options: Any) -> dict:
        self.requests.append([dict(m) for m in messages])
        return self.model.complete(messages, tools=tools, **options)


def script_messages(items: Sequence[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    messages = []
    for number, item in enumerate(items, start=1):
        if "say" in item:
            messages.append({"role": "assistant", "content": item["say"]})
        else:
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"{prefix}-{number}",
                            "type": "function",
                            "function": {"name": "memory", "arguments": json.dumps(item["tool"], ensure_ascii=False)},
                        }
                    ],
                }
            )
    return messages


def _scope_for(run: DemoRun) -> Any:
    from fsmem import Scope

    if run.scope == "chat":
        return Scope.chat()
    routine = SEO.routine(run.scope)
    return Scope.routine(SEO.id, routine.id, agent_name=SEO.name, routine_name=routine.name)


def _indent(text: str, prefix: str = "      │ ") -> str:
    return "\n".join(prefix + line for line in text.rstrip("\n").split("\n"))


def _describe_given(message: dict[str, Any], shown: set[tuple[str, str, str]]) -> str:
    """One appended message, for a person; a copy already shown in an earlier run is named, not repeated."""
    text = message_text(message)
    header = parse_header(text)
    if header is None:
        return "  the message:\n" + _indent(text)
    tag, attributes = header
    body = text.split("\n", 1)[1].rsplit("\n", 1)[0] if "\n" in text else ""
    key = attributes.get("path") or attributes.get("id") or ""
    if tag == "memory":
        label = f"  memory copy of {key} (version {attributes.get('version')})"
    elif tag == "recall":
        label = "  recall"
    else:
        label = f"  {tag} block"
    identity = (tag, key, attributes.get("version", ""))
    if tag != "recall" and identity in shown:
        return label + ": the same as shown in an earlier run"
    shown.add(identity)
    return label + ":\n" + _indent(body)


def _describe_step(step: Any) -> str:
    args = step.arguments or {}
    command = args.get("command", "?")
    target = args.get("path") or args.get("query") or ""
    outcome = "ok" if step.ok else step.text.split("\n", 1)[0]
    if step.ok and step.result.get("version"):
        outcome = f"ok, now version {step.result['version']}"
    lines = [f"  memory {command} {target} → {outcome}"]
    if command == "write" and step.ok:
        added = args.get("new_text") if "new_text" in args else args.get("content", "")
        removed = args.get("old_text", "")
        for line in str(removed).splitlines():
            if line.strip() and line not in str(added).splitlines():
                lines.append("      - " + line)
        for line in str(added).splitlines():
            if line.strip() and line not in str(removed).splitlines():
                lines.append("      + " + line)
    return "\n".join(lines)


def run_demo(
    root: Path,
    model: Any | None = None,
    *,
    echo: Callable[[str], None] = print,
    show_system: bool = False,
) -> list[dict[str, Any]]:
    """Run the five runs on the memory root ``root`` (a copy: it changes). Returns one record a run.

    ``model`` is a chat model for every run; None uses each run's scripted answers.
    """
    import fsmem
    from fsmem._llm.model import ScriptedModel
    from fsmem.harness import Session

    memory = fsmem.open(root, create=True)
    sessions: dict[str, Session] = {}
    records: list[dict[str, Any]] = []
    system_prompt: str | None = None
    shown: set[tuple[str, str, str]] = set()
    names = {routine.id: routine.name for routine in SEO.routines}
    for number, run in enumerate(RUNS, start=1):
        if model is None:
            scripted = ScriptedModel()
            for message in script_messages(run.script, prefix=f"run{number}"):
                scripted.enqueue(message)
            recorder = RecordingModel(scripted)
        else:
            recorder = RecordingModel(model)
        session = sessions.get(run.thread)
        if session is None:
            session = Session(memory, _scope_for(run), recorder, project=PROJECT, thread_id=run.thread, routines=names)
            sessions[run.thread] = session
        session.model = recorder
        kind = "a plain chat" if run.scope == "chat" else f"a run of the {SEO.name} agent's routine {run.scope}"
        echo(f"\n━━ {number}/{len(RUNS)} · {run.title}")
        echo(f"   ({kind}; thread {run.thread})")
        if run.compact_before:
            session.compact(COMPACTED)
            echo("   The thread was compacted: older messages, memory copies included, became one summary.")
        turn = session.turn(run.message)
        first_input = recorder.requests[0]
        system = first_input[0]["content"]
        if system_prompt is None:
            system_prompt = system
            lines = system.count("\n") + 1
            echo(
                f"\nThe system prompt ({lines} lines, the same for every run)"
                + (":\n" + _indent(system) if show_system else "; show it with --show-system.")
            )
        same = system == system_prompt and all(r[0]["content"] == system_prompt for r in recorder.requests)
        echo("\nWhat the model was given this run (appended to the thread):")
        for message in turn.given:
            echo(_describe_given(message, shown))
        echo("\nWhat it wrote:")
        for step in turn.steps:
            echo(_describe_step(step))
        echo("  answer:\n" + _indent(turn.answer))
        given_to_model = "\n".join(message_text(m) for m in first_input[1:])
        checks = [(label, re.search(pattern, given_to_model) is not None) for label, pattern in run.expect_in_input]
        checks.append(("the system prompt is byte-identical to the first run's", same))
        echo("")
        for label, ok in checks:
            echo(f"  {'✓' if ok else '✗'} {label}")
        records.append(
            {
                "run": number,
                "title": run.title,
                "given": turn.given,
                "steps": [{"arguments": s.arguments, "result": s.result} for s in turn.steps],
                "answer": turn.answer,
                "checks": dict(checks),
            }
        )
    _show_review(memory, sessions["chat-a"], model, echo)
    echo(
        f"\nMemory now: {AGENT_MEMORY} holds the hold Title tuning recorded, and\n"
        f"{RANK_NOTES} the positions of the last run."
    )
    return records


REVIEW_SKILL = "skills/recipe-pages/SKILL.md"
REVIEW_SCRIPT = (
    _tool(
        command="write",
        path=REVIEW_SKILL,
        content="---\nname: recipe-pages\ndescription: Writing or editing a recipe page of the site.\n"
        'origin: review\n---\n# Recipe pages\n1. Open with the allergens line: "Contains: wheat, rye, sesame."\n'
        '2. Then the title, ending with " | Rye & Ember".\n',
    ),
    _say("Created the recipe-pages skill."),
)


def _show_review(memory: Any, session: Any, model: Any | None, echo: Callable[[str], None]) -> None:
    """The background review of chat A, and the one line a person sees after it."""
    from fsmem._errors import ModelError
    from fsmem._llm.model import ScriptedModel
    from fsmem._memory.review import review

    echo("\n━━ After chat A: the background review")
    echo(
        "   (the harness starts it by itself after the person's 10th message, in the background;\n"
        "   the demo runs it now on chat A's conversation)"
    )
    reviewer = model
    if reviewer is None:
        reviewer = ScriptedModel(*script_messages(REVIEW_SCRIPT, prefix="review"))
    try:
        result = review(memory, session.messages, reviewer, session.scope, project=PROJECT, halves=("memory", "skills"))
    except ModelError as error:
        echo(f"   The review could not run: {error.message}")
        return
    echo(f"\n  [review] {result.notice()}" if result.notice() else "\n  (the review changed nothing: no line)")
