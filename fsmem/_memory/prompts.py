"""The texts the model reads, rendered from ``prompts/*.md``.

Each template is a markdown file with ``{{name}}`` placeholders. Rendering is deterministic — the same
values give the same bytes — so the system prompt and the tool description stay byte-identical from
turn to turn and the prompt cache survives.

>>> "Three levels" in memory_section()
True
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache

from fsmem._env.resources import data_dir
from fsmem._errors import SetupError

__all__ = [
    "PROMPTS_DIR",
    "load",
    "render",
    "memory_section",
    "system_prompt",
    "tool_description",
    "agent_block",
    "routine_block",
]

PROMPTS_DIR = data_dir("prompts")
_PLACEHOLDER = re.compile(r"\{\{([a-z_]+)\}\}")


@cache
def load(name: str) -> str:
    """The template ``prompts/<name>.md``, with line endings made ``\\n`` and one final newline."""
    path = PROMPTS_DIR / f"{name}.md"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SetupError(
            f"the prompt template {path} is missing; run fsmem from its source tree or reinstall it"
        ) from None
    return text.replace("\r\n", "\n").rstrip("\n") + "\n"


def render(name: str, **values: str) -> str:
    """Fill every ``{{placeholder}}`` of a template; a missing or unused value is a bug, so it raises."""
    template = load(name)
    wanted = set(_PLACEHOLDER.findall(template))
    missing = wanted - values.keys()
    extra = values.keys() - wanted
    if missing or extra:
        raise ValueError(f"prompt {name!r}: missing values {sorted(missing)}, unexpected values {sorted(extra)}")
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def memory_section() -> str:
    """The memory section of a system prompt: why memory exists, the levels, what goes where."""
    return render("memory")


def system_prompt(project: str) -> str:
    """The reference harness's whole system prompt: a short preamble and the memory section."""
    return render("system", project=project, memory_section=memory_section().rstrip("\n"))


def tool_description() -> str:
    """The description of the ``memory`` tool, as the model reads it."""
    return render("tool").rstrip("\n")


def agent_block(
    agent_id: str,
    agent_name: str,
    agent_memory: str,
    routines: Sequence[tuple[str, str, str]],
) -> str:
    """Who the agent is and where its files are. ``routines``: ``(id, name, notes path)``, in order."""
    if routines:
        lines = ["Its routines:"]
        lines += [f"- {name} (id {rid}) · notes: {notes}" for rid, name, notes in routines]
        listing = "\n".join(lines)
    else:
        listing = "It has no routines yet."
    return render(
        "agent_block",
        agent_id=agent_id,
        agent_name=agent_name,
        agent_memory=agent_memory,
        routines=listing,
    )


def routine_block(routine_id: str, routine_name: str, agent_name: str, routine_notes: str, agent_memory: str) -> str:
    """What a routine's run must keep between runs, and where."""
    return render(
        "routine_block",
        routine_id=routine_id,
        routine_name=routine_name,
        agent_name=agent_name,
        routine_notes=routine_notes,
        agent_memory=agent_memory,
    )
