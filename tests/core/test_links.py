"""Links between memory files (fsmem._core.links): found, resolved and rewritten, with no disk."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fsmem._core.links import find_links, link_keys, resolve_link, rewrite_links

FILES = {"MEMORY.md", "notes/plan.md", "notes/ideas.md", "seo/titles.md", "seo/brand.md", "b.md"}
exists = FILES.__contains__


def test_markdown_and_wiki_links_are_found_with_their_targets() -> None:
    text = (
        "See [titles](../seo/titles.md#rules), [[ideas]], [[seo/brand|the brand]] and [home](/MEMORY.md).\n"
        "Not links: [web](https://example.com/a.md) [mail](mailto:a@b.c) [here](#top) ![pic](p.md)\n"
        "[out](../../etc/passwd.md) [bin](x.png) [[.hidden]]\n"
        "```\n[in a fence](b.md)\n```\n"
        "[after](<my notes.md>) [spaced](my%20plan.md)\n"
    )
    found = find_links("notes/plan.md", text)
    assert [(link.kind, link.target) for link in found] == [
        ("markdown", "seo/titles.md"),
        ("wiki", "ideas"),
        ("wiki", "seo/brand"),
        ("markdown", "MEMORY.md"),
        ("markdown", "notes/my notes.md"),
        ("markdown", "notes/my plan.md"),
    ]
    assert found[0].suffix == "#rules" and text[found[0].start : found[0].end] == "../seo/titles.md#rules"
    assert link_keys("notes/plan.md", text) == (
        "seo/titles.md", "[[ideas", "[[brand", "MEMORY.md", "notes/my notes.md", "notes/my plan.md"
    )


def test_a_wiki_name_is_looked_for_beside_the_file_then_from_the_root() -> None:
    [beside, rooted, missing] = find_links("notes/plan.md", "[[ideas]] [[b.md]] [[nowhere]]")
    assert resolve_link(beside, "notes/plan.md", exists) == "notes/ideas.md"
    assert resolve_link(rooted, "notes/plan.md", exists) == "b.md"
    assert resolve_link(missing, "notes/plan.md", exists) is None


def test_a_moved_file_s_backlinks_are_rewritten_in_their_own_style() -> None:
    text = "[t](../seo/titles.md#rules) [r](/seo/titles.md) [[seo/titles|T]] [b](../seo/brand.md)\n"
    assert rewrite_links("notes/plan.md", text, "seo/titles.md", "web/titles-2.md", exists) == (
        "[t](../web/titles-2.md#rules) [r](/web/titles-2.md) [[web/titles-2|T]] [b](../seo/brand.md)\n"
    )


def test_a_moved_file_s_own_relative_links_follow_it_and_the_rest_stay_as_written() -> None:
    text = "[t](../seo/titles.md) [[ideas]] [r](/b.md) [gone](nothing.md)\n"
    assert rewrite_links("notes/plan.md", text, "notes/plan.md", "archive/2026/plan.md", exists) == (
        "[t](../../seo/titles.md) [[notes/ideas]] [r](/b.md) [gone](nothing.md)\n"
    )


def test_a_folder_move_keeps_links_inside_it_and_rewrites_those_leaving_it() -> None:
    inside = "[i](ideas.md) [[ideas]] [t](../seo/titles.md)\n"
    assert rewrite_links("notes/plan.md", inside, "notes", "old/notes", exists) == (
        "[i](ideas.md) [[ideas]] [t](../../seo/titles.md)\n"
    )
    outside = "[p](notes/plan.md) [[notes/ideas]] [s](seo/titles.md)\n"
    assert rewrite_links("MEMORY.md", outside, "notes", "old/notes", exists) == (
        "[p](old/notes/plan.md) [[old/notes/ideas]] [s](seo/titles.md)\n"
    )


def test_nothing_to_rewrite_is_none() -> None:
    assert rewrite_links("MEMORY.md", "[s](seo/titles.md)\n", "notes", "old/notes", exists) is None


@given(st.text(max_size=200))
def test_finding_links_never_raises_and_spans_hold_what_is_written(text: str) -> None:
    for link in find_links("a/b.md", text):
        assert text[link.start : link.end] == link.written
