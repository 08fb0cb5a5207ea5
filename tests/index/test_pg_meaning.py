"""Recall by meaning on PostgreSQL: passages kept in the database, so a new worker embeds nothing again,
and never used past their file's version on any worker."""

from __future__ import annotations

import uuid
from pathlib import Path

import fsmem
from fsmem._env.config import Settings

PETS = "# Pets\n\nWe adopted a golden retriever puppy in May; she chews every shoe in the house.\n"
TAXES = "# Paperwork\n\nThe quarterly tax forms are due to the accountant next week.\n"


def test_a_new_worker_finds_the_project_embedded_and_no_stale_passage(postgres: str, tmp_path: Path, embedding_model):
    project = f"m-{uuid.uuid4().hex[:8]}"
    settings = Settings(watch=False, embed_model=str(embedding_model))

    def worker(name: str) -> fsmem.Memory:
        return fsmem.open(postgres, project=project, create=True, cache=tmp_path / name, settings=settings)

    first = worker("a")
    first.run().call({"command": "write", "path": "pets.md", "content": PETS})
    assert first.search("dog").meaning == "partial"
    assert first.embed_pending() == 2  # MEMORY.md and pets.md
    second = worker("b")  # another machine: its own index, the database's passages
    found = second.search("dog")
    assert [hit.path for hit in found][:1] == ["pets.md"] and found.meaning == "full"
    assert second.embed_pending() == 0

    run = first.run()
    run.call({"command": "read", "path": "pets.md"})
    assert run.call({"command": "write", "path": "pets.md", "content": TAXES})["ok"]
    found = second.search("dog")  # the new version is in second's index; its passages are not yet
    assert "pets.md" not in [hit.path for hit in found] and found.meaning == "partial"
    assert second.embed_pending() == 1
    assert first.meaning_status()["backlog"] == 0  # embedded once, for every worker
    assert [hit.path for hit in first.search("IRS filing", mode="meaning")] == ["pets.md"]
    first.close()
    second.close()
