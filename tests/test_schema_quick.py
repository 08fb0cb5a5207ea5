"""The quick acceptance path of fsmem.schema never accepts what the JSON Schema refuses."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fsmem.schema import _validator, fits_quickly

FIELDS = ["command", "path", "start_line", "end_line", "content", "old_text", "new_text", "new_path", "query",
          "regex", "include", "exclude", "since", "limit", "expected_version", "bogus"]
VALUES = st.one_of(
    st.sampled_from(["read", "write", "rename", "delete", "search", "fly", "", "a.md", "0123456789ab",
                     "0123456789AB", "x" * 1025]),
    st.text(max_size=30), st.integers(min_value=-3, max_value=200), st.booleans(), st.none(),
    st.lists(st.text(max_size=5), max_size=22), st.lists(st.integers(), max_size=2), st.floats(allow_nan=False),
)


@settings(max_examples=3000)
@given(st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=6))
def test_quick_never_accepts_what_the_schema_refuses(request):
    if fits_quickly(request):
        assert _validator().is_valid(request), request


def test_ordinary_calls_take_the_quick_path():
    for request in (
        {"command": "read", "path": "MEMORY.md"},
        {"command": "read", "path": "", "start_line": 2, "end_line": 9},
        {"command": "write", "path": "a.md", "content": "x\n"},
        {"command": "write", "path": "a.md", "old_text": "x", "new_text": "", "expected_version": "0123456789ab"},
        {"command": "rename", "path": "a.md", "new_path": "b.md"},
        {"command": "delete", "path": "a.md"},
        {"command": "search", "query": "titles", "include": ["seo/**"], "limit": 5, "regex": False},
    ):
        assert fits_quickly(request), request
        assert _validator().is_valid(request)


def test_refused_shapes_go_to_the_schema():
    for request in (
        {"command": "write", "path": "a.md"},
        {"command": "write", "path": "a.md", "content": "x", "old_text": "a", "new_text": "b"},
        {"command": "read", "path": "a.md", "content": "x"},
        {"command": "search", "query": "x", "limit": 0},
        {"command": "search", "query": "x", "limit": True},
    ):
        assert not fits_quickly(request), request
