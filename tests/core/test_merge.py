"""The marker merge and the exact replacement (docs/design.md §4, Partial edits): pure, no disk."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings, strategies as st

from fsmem._core.merge import has_markers, is_marker, merge_markers, replace_exact
from fsmem._errors import BadRequest, EditUnplaced, NotUnique

ORIGINAL = """\
# Project

Intro line.

## Brand
- tone: warm
- colour: teal

## SEO
- titles under 60 characters
- tone: warm
"""

M = "<!-- ... -->"


@pytest.mark.parametrize("line", [
    "<!-- ... -->", "  <!-- ... -->  ", "<!--...-->", "<!-- ... rest unchanged -->",
    "<!-- … -->", "<!-- …keep the SEO section -->", "<!-- .... -->", "<!-- ... -->\n", "\t<!-- ... -->\r\n",
])
def test_marker_lines(line: str) -> None:
    assert is_marker(line)


@pytest.mark.parametrize("line", [
    "<!-- note -->", "<!-- -- ... -->", "text <!-- ... -->", "<!-- ... --> text", "<!-- .. -->",
    "<!-- ... ", "... -->", "<!-- ... --> <!-- ... -->x", "",
])
def test_not_marker_lines(line: str) -> None:
    assert not is_marker(line)


def test_has_markers() -> None:
    assert has_markers("a\n<!-- ... -->\nb")
    assert not has_markers("a\n<!-- a comment -->\nb")
    assert not has_markers("")


def test_edit_in_the_middle() -> None:
    content = f"{M}\n## Brand\n- tone: warm\n- colour: deep teal\n\n## SEO\n{M}\n"
    assert merge_markers(ORIGINAL, content) == ORIGINAL.replace("colour: teal", "colour: deep teal")


def test_a_changed_line_after_the_last_anchor_is_an_insertion() -> None:
    # Only anchors say where a run ends: without "## SEO" the old line stays after the new one.
    content = f"{M}\n## Brand\n- tone: warm\n- colour: deep teal\n{M}\n"
    expected = ORIGINAL.replace("- colour: teal\n", "- colour: deep teal\n- colour: teal\n")
    assert merge_markers(ORIGINAL, content) == expected


def test_insert_after_an_anchor() -> None:
    content = f"{M}\n- colour: teal\n- font: serif\n{M}\n"
    expected = ORIGINAL.replace("- colour: teal\n", "- colour: teal\n- font: serif\n")
    assert merge_markers(ORIGINAL, content) == expected


def test_insert_before_an_anchor() -> None:
    content = f"{M}\n- logo: round\n- colour: teal\n{M}\n"
    expected = ORIGINAL.replace("- colour: teal\n", "- logo: round\n- colour: teal\n")
    assert merge_markers(ORIGINAL, content) == expected


def test_two_runs() -> None:
    content = f"{M}\n# Project\n\nIntro line, longer.\n\n## Brand\n{M}\n## SEO\n- titles under 55\n{M}\n"
    expected = (ORIGINAL.replace("Intro line.", "Intro line, longer.")
                .replace("- titles under 60 characters\n", "- titles under 55\n- titles under 60 characters\n"))
    # "- titles under 55" is inserted after the "## SEO" anchor (the old line is kept by the marker)
    assert merge_markers(ORIGINAL, content) == expected


def test_replacing_a_range_between_anchors() -> None:
    content = f"{M}\n## Brand\n- voice: playful\n\n## SEO\n{M}\n"
    expected = ORIGINAL.replace("- tone: warm\n- colour: teal\n", "- voice: playful\n", 1)
    assert merge_markers(ORIGINAL, content) == expected


def test_no_marker_before_means_the_head_is_replaced() -> None:
    content = f"# Renamed\n\n## SEO\n{M}\n"
    assert merge_markers(ORIGINAL, content) == "# Renamed\n\n## SEO\n- titles under 60 characters\n- tone: warm\n"


def test_no_marker_after_means_the_tail_is_replaced() -> None:
    content = f"{M}\n## SEO\n- new list\n"
    assert merge_markers(ORIGINAL, content) == ORIGINAL.split("## SEO")[0] + "## SEO\n- new list\n"


def test_appending_at_the_end() -> None:
    content = f"{M}\n- titles under 60 characters\n- tone: warm\n- keywords first\n"
    assert merge_markers(ORIGINAL, content) == ORIGINAL + "- keywords first\n"


def test_lines_that_repeat_are_not_anchors() -> None:
    # "- tone: warm" occurs twice; "- colour: teal" is the anchor and the repeated line is context.
    content = f"{M}\n- tone: warm\n- colour: teal\n- font: serif\n{M}\n"
    expected = ORIGINAL.replace("- colour: teal\n", "- colour: teal\n- font: serif\n")
    assert merge_markers(ORIGINAL, content) == expected


def test_copied_context_next_to_an_anchor_is_not_doubled() -> None:
    content = f"{M}\n\n## SEO\n- titles under 50 characters\n{M}\n"
    expected = ORIGINAL.replace("- titles under 60 characters\n", "- titles under 50 characters\n- titles under 60 characters\n")
    assert merge_markers(ORIGINAL, content) == expected  # one blank line before ## SEO, not two


def test_anchor_with_trailing_spaces_still_matches() -> None:
    content = f"{M}\n## Brand   \n- tone: cool\n- colour: teal\n{M}\n"
    expected = ORIGINAL.replace("## Brand\n- tone: warm\n", "## Brand   \n- tone: cool\n")
    assert merge_markers(ORIGINAL, content) == expected


def test_unicode_ellipsis_and_words_in_markers() -> None:
    content = "<!-- … everything above -->\n- colour: teal\n- size: 12\n<!-- ... rest unchanged -->"
    expected = ORIGINAL.replace("- colour: teal\n", "- colour: teal\n- size: 12\n")
    assert merge_markers(ORIGINAL, content) == expected


def test_blank_runs_and_marker_only_content_change_nothing() -> None:
    assert merge_markers(ORIGINAL, M) == ORIGINAL
    assert merge_markers(ORIGINAL, f"\n{M}\n\n\n{M}\n\n") == ORIGINAL
    assert merge_markers("", M) == ""


def test_content_without_markers_replaces_the_file() -> None:
    assert merge_markers(ORIGINAL, "# New\n") == "# New\n"
    assert merge_markers(ORIGINAL, "<!-- a comment -->\n") == "<!-- a comment -->\n"


def test_missing_final_newline_is_kept_as_the_content_has_it() -> None:
    assert merge_markers("a\nb\nc", f"{M}\nb\nB\n{M}") == "a\nb\nB\nc"
    assert merge_markers("a\nb\nc\n", f"{M}\nc\nd") == "a\nb\nc\nd"


def test_unplaced_run_is_refused_with_the_line_and_the_fix() -> None:
    with pytest.raises(EditUnplaced) as caught:
        merge_markers(ORIGINAL, f"{M}\n- brand new line\n{M}\n")
    message = caught.value.message
    assert message == (
        'Could not place the edit starting at "- brand new line": none of its lines occurs exactly '
        "once in the file, so there is no way to tell where it goes. Include, next to your change, an "
        "unchanged line that occurs only once in the file (copied exactly), or use old_text/new_text "
        "for a single replacement."
    )


def test_only_repeated_lines_cannot_anchor() -> None:
    with pytest.raises(EditUnplaced, match='"- tone: warm"'):
        merge_markers(ORIGINAL, f"{M}\n- tone: warm\n- tone: hot\n{M}\n")


def test_long_lines_are_quoted_truncated() -> None:
    with pytest.raises(EditUnplaced) as caught:
        merge_markers(ORIGINAL, f"{M}\n{'x' * 500}\n{M}\n")
    assert '"' + "x" * 77 + '..."' in caught.value.message
    assert "x" * 100 not in caught.value.message


def test_anchors_out_of_order_are_refused() -> None:
    with pytest.raises(EditUnplaced, match='its line "## Brand" comes earlier'):
        merge_markers(ORIGINAL, f"{M}\n## SEO\n## Brand\n{M}\n")


def test_runs_out_of_order_are_refused() -> None:
    with pytest.raises(EditUnplaced, match='starting at "## Brand": it belongs before'):
        merge_markers(ORIGINAL, f"{M}\n## SEO\n{M}\n## Brand\n{M}\n")


def test_replace_exact() -> None:
    assert replace_exact(ORIGINAL, "colour: teal", "colour: navy") == ORIGINAL.replace("teal", "navy")
    assert replace_exact("a\r\nb\r\n", "b", "c") == "a\r\nc\r\n"
    assert replace_exact("abc", "b", "") == "ac"


def test_replace_exact_not_unique_names_lines() -> None:
    with pytest.raises(NotUnique) as caught:
        replace_exact(ORIGINAL, "- tone: warm", "- tone: cool")
    assert caught.value.message == (
        "old_text occurs 2 times, at lines 6, 11. Include more surrounding text so it is unique."
    )


def test_replace_exact_counts_overlapping_occurrences() -> None:
    with pytest.raises(NotUnique, match="2 times, at lines 1, 1"):
        replace_exact("aaa", "aa", "b")


def test_replace_exact_not_found() -> None:
    with pytest.raises(EditUnplaced) as caught:
        replace_exact(ORIGINAL, "colour: red", "x")
    assert caught.value.message.startswith("old_text was not found in the file. Read the file again")
    with pytest.raises(EditUnplaced, match="only in spaces or line breaks"):
        replace_exact(ORIGINAL, "-  colour:  teal", "x")


@pytest.mark.parametrize(("old", "new"), [("", "x"), (None, "x"), ("a", None)])
def test_replace_exact_bad_requests(old: object, new: object) -> None:
    with pytest.raises(BadRequest):
        replace_exact("abc", old, new)  # type: ignore[arg-type]


# --- properties --------------------------------------------------------------------------

LINE = st.sampled_from(["", "", "x", "y", "- item", "## Heading", "  indented", "text with words"])
NEW_LINE = st.one_of(st.just(""), st.text("abcdef ", min_size=1, max_size=8).map(lambda t: "new " + t))
MARKER_LINE = st.sampled_from([M, "<!-- … -->", "  <!-- ... unchanged -->", "<!--...-->"])


@st.composite
def edits(draw: st.DrawFn, context: bool = False) -> tuple[str, str, str]:
    """(original, partial content, the directly edited file); with ``context``, runs also carry
    unchanged lines copied from around their anchors, as models often send."""
    lines = draw(st.lists(LINE, min_size=1, max_size=25))
    n = len(lines)
    cuts = sorted(set(draw(st.lists(st.integers(0, n), min_size=2, max_size=8))))
    pairs = [(cuts[i], cuts[i + 1]) for i in range(0, len(cuts) - 1, 2)]
    ranges = []  # (s, e): lines[s:e] are replaced; lines[s-1] and lines[e] are its anchors
    last_anchor = -1
    for s, e in pairs:
        if s - 1 <= last_anchor and s > 0:
            continue
        if s == 0 and e == n:
            continue  # no anchor at all
        ranges.append((s, e))
        last_anchor = e
    assume(ranges)
    for number, (s, e) in enumerate(ranges):
        if s > 0:
            lines[s - 1] = f"anchor {number} before"
        if e < n:
            lines[e] = f"anchor {number} after"
    news = [draw(st.lists(NEW_LINE, max_size=4)) for _ in ranges]
    edited = list(lines)
    for (s, e), new in reversed(list(zip(ranges, news))):
        edited[s:e] = new
    content: list[str] = []
    low = 0  # the first original line no run has copied yet
    for number, ((s, e), new) in enumerate(zip(ranges, news)):
        high = ranges[number + 1][0] - 1 if number + 1 < len(ranges) else n  # the next run's anchor
        before = draw(st.integers(0, max(0, s - 1 - low))) if context and s > 0 else 0
        after = draw(st.integers(0, max(0, high - e - 1))) if context and e < n else 0
        if s > 0:
            content.append(draw(MARKER_LINE))
            content.extend(lines[s - 1 - before:s - 1])
            content.append(lines[s - 1])
        content.extend(new)
        if e < n:
            content.append(lines[e])
            content.extend(lines[e + 1:e + 1 + after])
        low = e + 1 + after
    if ranges[-1][1] < n:
        content.append(draw(MARKER_LINE))
    return ("\n".join(lines) + "\n", "\n".join(content) + "\n", "\n".join(edited) + "\n")


@settings(deadline=None)  # no timing: shared machines are slow at times
@given(edits())
def test_edits_round_trip(case: tuple[str, str, str]) -> None:
    original, content, expected = case
    assert merge_markers(original, content) == expected


@settings(deadline=None)  # no timing: shared machines are slow at times
@given(edits(context=True))
def test_copied_context_around_anchors_changes_nothing(case: tuple[str, str, str]) -> None:
    original, content, expected = case
    assert merge_markers(original, content) == expected


@settings(deadline=None)  # no timing: shared machines are slow at times
@given(st.lists(LINE, max_size=20).map("\n".join), MARKER_LINE)
def test_a_marker_alone_changes_nothing(original: str, marker: str) -> None:
    assert merge_markers(original, marker) == original
    assert merge_markers(original, marker + "\n") == original


@settings(deadline=None)  # no timing: shared machines are slow at times
@given(st.text(max_size=200), st.text(max_size=200))
def test_content_without_markers_replaces_everything(original: str, content: str) -> None:
    assume(not has_markers(content))
    assert merge_markers(original, content) == content


@settings(deadline=None)  # no timing: shared machines are slow at times
@given(st.lists(LINE, max_size=15).map("\n".join),
       st.lists(st.one_of(LINE, NEW_LINE, MARKER_LINE), max_size=12).map("\n".join))
def test_merge_is_deterministic_and_only_refuses_with_edit_unplaced(original: str, content: str) -> None:
    try:
        first = merge_markers(original, content)
    except EditUnplaced as error:
        with pytest.raises(EditUnplaced) as again:
            merge_markers(original, content)
        assert again.value.message == error.message
        return
    assert merge_markers(original, content) == first


@settings(deadline=None)  # no timing: shared machines are slow at times
@given(st.text(max_size=60), st.text(min_size=1, max_size=10), st.text(max_size=60), st.text(max_size=10))
def test_replace_exact_of_a_unique_part_is_str_replace_once(head: str, old: str, tail: str, new: str) -> None:
    original = head + old + tail
    assume(original.count(old) == 1 and original.find(old, original.find(old) + 1) == -1)
    assert replace_exact(original, old, new) == original.replace(old, new, 1)
