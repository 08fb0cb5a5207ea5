"""The prompts the model reads: complete, deterministic, and saying what the issue asks them to say."""

from __future__ import annotations


import pytest

from fsmem._memory import prompts as _prompts


def test_every_template_renders_and_leaves_no_placeholder():
    rendered = [
        _prompts.memory_section(),
        _prompts.system_prompt("Rye & Ember"),
        _prompts.tool_description(),
        _prompts.agent_block("5c81d0e4-7f2a", "SEO", "agents/seo-5c81d0e4/MEMORY.md", []),
        _prompts.routine_block("a27f3b90", "Title tuning", "SEO", "x/NOTES.md", "agents/seo-5c81d0e4/MEMORY.md"),
    ]
    for text in rendered:
        assert "{{" not in text and "}}" not in text
        assert text == text.strip("\n") + ("\n" if text.endswith("\n") else "")


def test_rendering_is_byte_identical_every_time():
    assert _prompts.system_prompt("P") == _prompts.system_prompt("P")
    _prompts.load.cache_clear()
    first = _prompts.system_prompt("P").encode()
    _prompts.load.cache_clear()
    assert _prompts.system_prompt("P").encode() == first


def test_the_memory_section_covers_levels_ownership_loading_and_what_never_belongs():
    text = _prompts.memory_section()
    for needle in [
        "MEMORY.md", "NOTES.md", "agents/<agent>/MEMORY.md",  # the three levels
        "you cannot rename or delete them",                     # who owns which file
        "is loaded for you", "latest copy",                     # what is always loaded, and how
        "widest level",                                         # what to save where
        "One person's taste", "steps of the task", "shared knowledge", "Text written by others",
        "Secrets",
    ]:
        assert needle in text, needle


def test_the_memory_section_does_not_change_with_the_scope():
    # The agent and routine blocks travel as messages; the system prompt is one text for every run.
    assert "{{" not in _prompts.load("memory")


def test_the_agent_block_lists_every_routine_with_its_notes_path():
    block = _prompts.agent_block(
        "5c81d0e4-7f2a", "SEO", "agents/seo-5c81d0e4/MEMORY.md",
        [("a27f3b90-1c4d", "Title tuning", "agents/seo-5c81d0e4/routines/title-tuning-a27f3b90/NOTES.md"),
         ("e04c6d15-8b3f", "Rank check", "agents/seo-5c81d0e4/routines/rank-check-e04c6d15/NOTES.md")],
    )
    assert block.splitlines()[:6] == [
        'You are working as the agent "SEO" (id 5c81d0e4-7f2a).',
        "Its memory: agents/seo-5c81d0e4/MEMORY.md",
        "Its chat and every run of its routines share that file, so each knows what the others did and what must be left alone.",
        "Its routines:",
        "- Title tuning (id a27f3b90-1c4d) · notes: agents/seo-5c81d0e4/routines/title-tuning-a27f3b90/NOTES.md",
        "- Rank check (id e04c6d15-8b3f) · notes: agents/seo-5c81d0e4/routines/rank-check-e04c6d15/NOTES.md",
    ]
    assert "It has no routines yet." in _prompts.agent_block("x", "New", "agents/new-x/MEMORY.md", [])


def test_the_routine_block_says_the_notes_are_the_record():
    block = _prompts.routine_block("a27f3b90", "Title tuning", "SEO", "r/NOTES.md", "a/MEMORY.md")
    assert "Its notes: r/NOTES.md\n" in block
    assert "your record of earlier runs is your notes" in block


def test_render_refuses_missing_and_unexpected_values():
    with pytest.raises(ValueError, match="missing values \\['project'\\]"):
        _prompts.render("system", memory_section="x")
    with pytest.raises(ValueError, match="unexpected values \\['nope'\\]"):
        _prompts.render("memory", nope="x")


def test_the_prompts_are_ours():
    # The seeds describe other products; none of their names belongs in what our model reads.
    import pathlib

    for path in pathlib.Path(_prompts.PROMPTS_DIR).glob("*.md"):
        text = path.read_text()
        for name in ("Fimo", "Atlas", "Atomic Agent", "Relace", "Field Notes"):
            assert name not in text, (path.name, name)
