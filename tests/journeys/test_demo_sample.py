"""sample_project/ is a believable, valid memory root that matches the records the demo keeps for it."""

from __future__ import annotations

import json

import frontmatter

import fsmem
from fsmem import Scope
from fsmem._core.layout import LEVEL_IDENTITY_FILE, folder_matches_id, role_of
from fsmem._core.secrets import find_secret
from fsmem._env.sample import SAMPLE_DIR, SEO, copy_sample

ALL = sorted(p.relative_to(SAMPLE_DIR).as_posix() for p in SAMPLE_DIR.rglob("*") if p.is_file())
FILES = [p for p in ALL if not p.endswith(f"/{LEVEL_IDENTITY_FILE}")]  # the memory files
IDENTITIES = [p for p in ALL if p.endswith(f"/{LEVEL_IDENTITY_FILE}")]  # each level folder's kept id


def test_every_file_is_short_utf8_markdown_without_secrets_or_borrowed_names():
    assert FILES and all(path.endswith(".md") for path in FILES)
    for path in FILES:
        text = (SAMPLE_DIR / path).read_text(encoding="utf-8")
        assert find_secret(text) is None, path
        assert len(text.splitlines()) <= 100, path
        for name in ("Fimo", "Atlas", "Field Notes", "/stories"):
            assert name not in text, (path, name)


def test_the_levels_match_the_records_the_harness_keeps():
    agent_folders = {role_of(p).agent_folder for p in FILES if role_of(p).agent_folder}
    assert agent_folders == {"agents/seo-5c81d0e4"}
    assert folder_matches_id("seo-5c81d0e4", SEO.id)
    routine_folders = sorted({role_of(p).routine_folder for p in FILES if role_of(p).routine_folder})
    assert [f.rsplit("/", 1)[1] for f in routine_folders] == ["rank-check-e04c6d15", "title-tuning-a27f3b90"]
    for routine in SEO.routines:
        assert any(folder_matches_id(f.rsplit("/", 1)[1], routine.id) for f in routine_folders)
    # Each level folder keeps its full id as fsmem writes it, so the shell shows ids, not "?".
    kept = {p.rsplit("/", 1)[0]: json.loads((SAMPLE_DIR / p).read_text(encoding="utf-8")) for p in IDENTITIES}
    assert kept == {
        "agents/seo-5c81d0e4": {"kind": "agent", "id": SEO.id, "name": SEO.name},
        **{folder: {"kind": "routine", "id": routine.id, "name": routine.name}
           for folder in routine_folders for routine in SEO.routines
           if folder_matches_id(folder.rsplit("/", 1)[1], routine.id)},
    }


def test_facts_have_their_fields_and_each_replaced_fact_points_at_the_one_that_holds():
    facts = {}
    for path in FILES:
        if role_of(path).kind in ("fact", "replaced_fact"):
            post = frontmatter.load(SAMPLE_DIR / path)
            assert post["id"] == path.rsplit("/", 1)[1][:-3]
            assert {"subject", "attribute", "source", "said", "kept"} <= set(post.keys())
            assert post.content.strip()
            facts[post["id"]] = (role_of(path).kind, post)
    assert sum(kind == "replaced_fact" for kind, _ in facts.values()) == 2
    for kind, post in facts.values():
        if kind == "replaced_fact":
            newer = facts[post["replaced_by"]][1]
            assert post["id"] in newer["replaces"]
            assert (newer["subject"], newer["attribute"]) == (post["subject"], post["attribute"])


def test_a_copy_opens_and_every_scope_of_the_records_resolves_to_the_sample_folders(tmp_path):
    memory = fsmem.open(copy_sample(tmp_path / "root"), create=True)
    for routine in SEO.routines:
        files = memory.scope_files(Scope.routine(SEO.id, routine.id))
        assert all((memory.root / f).read_text().strip() for f in files)
    assert not (SAMPLE_DIR / ".fsmem").exists()


def test_the_facts_api_reads_the_sample_facts_with_no_problem(tmp_path):
    memory = fsmem.open(copy_sample(tmp_path / "root"), create=True)
    assert memory.facts.check() == []
    assert [(f.subject, f.attribute) for f in memory.facts.current()] == [
        ("Sourdough from scratch class", "price"), ("Tom", "role"), ("Saturday market stall", "opening time")]
    chain = memory.facts.history("20261109-162000-9d3e7f15")
    assert [f.id for f in chain] == ["20261109-162000-9d3e7f15", "20261005-091500-4be1c0a2"]
