"""The file commands of the CLI, with exact output where it is ours to fix."""

from __future__ import annotations

import json

from click.testing import CliRunner

import fsmem
from fsmem.cli import main
from tests.conftest import invoke, run_fsmem






def test_init_makes_a_root(tmp_path):
    result = CliRunner().invoke(main, ["init", str(tmp_path / "new")])
    assert result.exit_code == 0
    assert result.output == f"Made an fsmem root: {tmp_path / 'new'}\n"
    assert (tmp_path / "new" / ".fsmem").is_dir() and (tmp_path / "new" / "MEMORY.md").read_text() == ""


def test_write_read_and_expect(root):
    written = invoke(root, "write", "notes.md", input="a\nb\n")
    assert written.exit_code == 0, written.output
    version = fsmem._core.versions.version_of(b"a\nb\n")
    assert written.output == (f"Created notes.md (version {version}, 2 lines). Around the change:\n"
                              "     1\ta\n     2\tb\n")
    refused = invoke(root, "write", "notes.md", input="c\n")
    assert refused.exit_code == 3
    assert refused.output.startswith("Error: [NOT_READ] notes.md has content")
    assert f"pass --expect {version}" in refused.output
    assert "expected_version" not in refused.output and "(command read)" not in refused.output  # the tool's words
    again = invoke(root, "write", "notes.md", "--expect", version, input="c\n")
    assert again.exit_code == 0, again.output
    assert (root / "notes.md").read_text() == "c\n"


def test_read_json_is_the_tool_result(root):
    (root / "a.md").write_text("x\n")
    result = invoke(root, "read", "a.md", "--json")
    data = json.loads(result.output)
    assert data["ok"] is True and data["version"] == fsmem._core.versions.version_of(b"x\n")


def test_bad_path_is_one_error_line(root):
    result = invoke(root, "read", "../x.md")
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and result.output.startswith("Error: [BAD_PATH]")


def test_versions_and_revert(root):
    invoke(root, "write", "a.md", input="one\n")
    version = fsmem._core.versions.version_of(b"one\n")
    invoke(root, "write", "a.md", "--expect", version, input="two\n")
    listing = invoke(root, "versions", "a.md", "--json")
    assert [v["version"] for v in json.loads(listing.output)] == [version]
    reverted = invoke(root, "revert", "a.md")
    assert reverted.output == f"Reverted a.md; it is now version {version}.\n"
    assert (root / "a.md").read_text() == "one\n"


def test_tool_reads_json_on_stdin_in_a_real_process(root):
    done = run_fsmem("tool", "--root", str(root), input=json.dumps({"command": "write", "path": "a.md", "content": "hi\n"}))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ok"] is True
    bad = run_fsmem("tool", "--root", str(root), input="{not json")
    assert bad.returncode == 1 and json.loads(bad.stdout)["error"]["code"] == "BAD_REQUEST"


def test_root_found_upward_and_from_env(root, tmp_path):
    (root / "sub").mkdir()
    found = run_fsmem("read", "/", cwd=root / "sub")
    assert found.returncode == 0, found.stderr
    from_env = run_fsmem("read", "/", cwd=tmp_path, env={"FSMEM_ROOT": str(root)})
    assert from_env.returncode == 0, from_env.stderr
    if not any((folder / ".fsmem").is_dir() for folder in (tmp_path, *tmp_path.parents)):
        missing = run_fsmem("read", "/", cwd=tmp_path)
        assert missing.returncode == 2 and missing.stderr.startswith("Error: [NO_ROOT]")


def test_agents_and_routines(root):
    assert invoke(root, "agents", "create", "3f9a1c2e", "SEO").output == "agents/seo-3f9a1c2e\n"
    assert invoke(root, "routines", "create", "3f9a1c2e", "9b7d4e10", "Meta").output == \
        "agents/seo-3f9a1c2e/routines/meta-9b7d4e10\n"
    listing = json.loads(invoke(root, "agents", "list", "--json").output)
    assert listing == [{"folder": "agents/seo-3f9a1c2e", "name": "SEO", "id": "3f9a1c2e",
                        "routines": [{"folder": "agents/seo-3f9a1c2e/routines/meta-9b7d4e10", "name": "Meta",
                                      "id": "9b7d4e10"}]}]
    (root / "agents/seo-3f9a1c2e/routines/meta-9b7d4e10/NOTES.md").write_text("kept\n")
    deleted = invoke(root, "routines", "delete", "9b7d4e10")
    assert deleted.output == ("--- agents/seo-3f9a1c2e/routines/meta-9b7d4e10/NOTES.md\nkept\n\n"
                              "Deleted routine 9b7d4e10: 1 files.\n")


SPLIT_CARD = ("- card on file: 4111 " + "1111", "1111 " + "1111")  # each half harmless, together a card


def test_write_refuses_a_card_split_across_a_kept_line_and_a_new_one(root):
    head, tail = SPLIT_CARD
    (root / "notes.md").write_text(f"# Notes\n{head}\n- last\n")
    version = fsmem._core.versions.version_of((root / "notes.md").read_bytes())
    for content in (f"# Notes\n{head}\n{tail}\n- last\n", f"<!-- ... -->\n{head}\n{tail}\n<!-- ... -->\n"):
        refused = invoke(root, "write", "notes.md", "--expect", version, input=content)
        assert refused.exit_code == 1 and refused.output.startswith("Error: [SENSITIVE]"), refused.output
        assert tail not in refused.output
    assert (root / "notes.md").read_text() == f"# Notes\n{head}\n- last\n"
