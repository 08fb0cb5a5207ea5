"""Passages for embedding: along headings and paragraphs, about 200 tokens, nothing lost."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fsmem._core.chunks import TARGET_TOKENS, chunk_text, estimate_tokens


def test_a_heading_starts_a_passage_and_is_carried_into_its_section():
    text = "# Deploys\n\nStaging first.\n\nThen production.\n\n## Billing\n\nInvoices monthly.\n"
    chunks = chunk_text(text)
    assert [(c.line, c.text) for c in chunks] == [
        (1, "# Deploys\nStaging first.\nThen production."),
        (7, "## Billing\nInvoices monthly."),
    ]


def test_long_paragraphs_are_cut_near_the_target_and_keep_their_lines():
    paragraphs = [" ".join(f"p{n}w{i}" for i in range(100)) for n in range(6)]  # ~130 tokens each
    text = "# Notes\n\n" + "\n\n".join(paragraphs)
    chunks = chunk_text(text, first_line=5)  # a body after four lines of front matter
    assert [c.line for c in chunks] == [5, 9, 11, 13, 15, 17]
    assert all(c.text.startswith("# Notes") for c in chunks)
    one_line = chunk_text("x " * 1000)
    assert len(one_line) == 7 and all(estimate_tokens(c.text) <= TARGET_TOKENS for c in one_line)


def test_blank_text_has_no_passage():
    assert chunk_text("") == [] and chunk_text("\n \n\t\n") == []


lines = st.lists(st.one_of(st.just(""), st.just("# Head"), st.text("ab c\u00e9", min_size=1, max_size=60)), max_size=40)


@given(lines, st.integers(min_value=5, max_value=300))
def test_every_word_of_the_text_is_in_a_passage_in_order(rows, target):
    text = "\n".join(rows)
    chunks = chunk_text(text, target=target)
    heading_free = [word for c in chunks for line in c.text.splitlines() for word in line.split()]
    for word in text.split():
        assert word in heading_free
    assert [c.line for c in chunks] == sorted(c.line for c in chunks)
    for c in chunks:  # a passage is at most the target, besides the heading it carries
        body = [line for line in c.text.splitlines() if not line.startswith("# ")]
        assert estimate_tokens(" ".join(body)) <= target + 2 or len(body) == 1
