"""Where a hit's snippet is cut (core.snippets): pure, no index."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from fsmem.core.snippets import Term, cut_snippet, snippet_terms

CHARS = 60
ACCENTS = {"é": "e", "É": "e", "û": "u", "è": "e", "à": "a"}


def read_as(char: str) -> str | None:
    """A small stand-in for the index's analyzer (tests/test_index.py holds the real one to it)."""
    if char in ACCENTS:
        return ACCENTS[char]
    lowered = char.lower()
    if char in "æß" or len(lowered) != 1:  # read as two characters: "ae", "ss", "i̇"
        return None
    return lowered if char.isalnum() else ""


def cut(body: str, terms, chars: int = CHARS):
    return cut_snippet(body, terms, chars, read_as)


def test_the_window_holds_the_most_different_terms() -> None:
    body = ("deploy " * 3 + "filler words that say nothing at all here " * 3
            + "then staging and deploy together at last " + "more filler " * 10)
    snippet = cut(body, snippet_terms([Term("deploy"), Term("staging")]), CHARS)
    assert snippet is not None
    assert "staging" in snippet.text and "deploy" in snippet.text
    assert body[snippet.start:snippet.start + len(snippet.text)] == snippet.text


def test_whole_words_only_in_any_case() -> None:
    terms = snippet_terms([Term("deploy")])
    assert cut("redeploy deployment deploy_x", terms, CHARS) is not None  # "deploy" of deploy_x
    assert cut("redeploy deployment deploys", terms, CHARS) is None
    found = cut("Notes: We DEPLOY on Fridays.", terms, CHARS)
    assert found is not None and "DEPLOY" in found.text


def test_the_last_word_shows_the_longer_words_the_index_found_for_it() -> None:
    terms = snippet_terms([Term("stag", frozenset({"staging"}))])
    found = cut("x " * 100 + "before staging after", terms, CHARS)
    assert found is not None and "staging" in found.text
    assert cut("x " * 100 + "the stage is set", terms, CHARS) is None  # not among the index's words
    assert cut("mustag stags", terms, CHARS) is None
    assert cut("a stag here", terms, CHARS) is not None  # the word itself


def test_terms_are_kept_once_each() -> None:
    assert snippet_terms([Term("cafe"), Term(""), Term("ok"), Term("ok"), Term("日本")]) == (
        Term("cafe"), Term("ok"), Term("日本"))


def test_accents_and_case_are_folded_and_offsets_kept() -> None:
    body = "Intro text goes here - " * 12 + "Le Café ouvre à 7h, crème brûlée. " + "The end - " * 30
    found = cut(body, snippet_terms([Term("cafe"), Term("brulee")]), CHARS)
    assert found is not None and "Café ouvre" in found.text and "brûlée" in found.text
    assert body[found.start:found.start + len(found.text)] == found.text


def test_characters_read_as_several_keep_offsets_and_match_nothing() -> None:
    filler = "plain words here " * 20
    body = "İstanbul, " + filler + "okapi"  # İ lowercases to two characters
    found = cut(body, snippet_terms([Term("okapi")]))
    assert found is not None and body[found.start:found.start + len(found.text)] == found.text
    body = "Die Straße, " + filler + "the end"
    assert cut(body, snippet_terms([Term("strasse")])) is None  # left to the index's own generator
    assert cut(body, snippet_terms([Term("stra")])) is None  # one word "straße", not "stra" and "e"


def test_a_body_mostly_beyond_ascii_is_left_to_the_caller() -> None:
    assert cut("Καλημέρα κόσμε. " * 20 + "okapi", snippet_terms([Term("okapi")])) is None


def test_no_term_in_the_body_means_no_window() -> None:
    assert cut("nothing to see here", snippet_terms([Term("deploy")]), CHARS) is None


def test_the_window_starts_a_little_before_the_first_word_and_at_a_word_edge() -> None:
    body = " ".join(f"w{i}" for i in range(200)) + " target " + " ".join(f"v{i}" for i in range(200))
    found = cut(body, snippet_terms([Term("target")]), CHARS)
    assert found is not None
    assert found.text.index("target") > 0  # some words lead to it
    assert body[found.start - 1] == " " and not found.text.startswith(" ")
    assert body[found.start + len(found.text)] == " "  # not cut inside a word


def test_tabs_and_line_breaks_are_word_edges_and_a_window_starts_on_a_word() -> None:
    body = "\t".join(["alpha"] * 60) + "\ttarget\t" + "\t".join(["omega"] * 60)
    found = cut(body, snippet_terms([Term("target")]), CHARS)
    assert found is not None and found.text.split("\t")[0] == "alpha" and found.text.split("\t")[-1] == "omega"
    lead = CHARS // 4
    body = "x\r\n\r\n" + "w" * (lead - 2) + " target"  # the window would begin on the line break
    found = cut("intro " * 40 + body, snippet_terms([Term("target")]), CHARS)
    assert found is not None and found.text.startswith("w")


ascii_words = st.sampled_from(["deploy", "Deploy", "staging", "stag", "stage", "notes", "x", "a1", "the"])
separators = st.sampled_from([" ", "\n", ", ", ". ", "-", "_", "\n\n- ", "/", "\t", "\r\n"])
query_terms = st.sampled_from([Term("deploy"), Term("stag", frozenset({"staging"})), Term("notes"), Term("a1"),
                               Term("sta", frozenset({"stag", "stage", "staging"}))])


@st.composite
def bodies(draw) -> str:
    words = draw(st.lists(ascii_words, min_size=1, max_size=80))
    return "".join(word + draw(separators) for word in words)


@settings(max_examples=300, deadline=None)
@given(bodies(), st.lists(query_terms, min_size=1, max_size=3), st.integers(min_value=20, max_value=200))
def test_the_window_is_a_part_of_the_body_holding_a_word_found(body: str, raw_terms, chars: int) -> None:
    terms = snippet_terms(raw_terms)
    found = cut(body, terms, chars)
    matches = [word for word in _words(body) if any(word == token or word in longer for token, longer in terms)]
    if not matches:
        assert found is None
        return
    assert found is not None
    assert body[found.start:found.start + len(found.text)] == found.text
    assert len(found.text) <= chars
    assert any(word in matches for word in _words(found.text))
    assert not found.text[:1].isspace()


def _words(text: str) -> list[str]:
    out, word = [], ""
    for char in text.lower():
        if char.isalnum():
            word += char
        elif word:
            out.append(word)
            word = ""
    return out + ([word] if word else [])
