"""Every name the path rules accept can be written, again and again (issue 10, item 3).

A name of 233–255 bytes used to overflow NAME_MAX once the temp file's name was built from it: the
rename to such a name worked, and the file could never be written after.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import fsmem
from fsmem._core.paths import MAX_SEGMENT_BYTES


@pytest.mark.parametrize("stem", ["n" * 252, "é" * 126, "n" * 230, "a.b." * 63])
def test_a_name_up_to_the_limit_is_created_written_renamed_and_written_again(tmp_path: Path, stem: str) -> None:
    name = stem + ".md"
    assert len(name.encode()) <= MAX_SEGMENT_BYTES
    memory = fsmem.open(tmp_path / "root", create=True)
    run = memory.run(fsmem.Scope.chat(), thread_id="t-1")
    first = run.call({"command": "write", "path": f"long/{name}", "content": "# One\n"})
    assert first["ok"], first
    second = run.call({"command": "write", "path": f"long/{name}", "content": "# Two\n"})
    assert second["ok"], second
    other = "x" + name[1:] if name[0] != "x" else "y" + name[1:]
    moved = run.call({"command": "rename", "path": f"long/{name}", "new_path": other})
    assert moved["ok"], moved
    third = run.call({"command": "write", "path": other, "content": "# Three\n"})
    assert third["ok"], third
    assert (memory.root / other).read_text() == "# Three\n"
    assert [v.file.read_text() for v in memory.versions(f"long/{name}")] == ["# One\n"]
    assert [v.file.read_text() for v in memory.versions(other)] == ["# Two\n"]
    assert [n for n in os.listdir(memory.root / "long")] == []  # no temp file left behind
