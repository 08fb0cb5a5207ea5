"""Refusals that used to escape as exceptions (issue 10, item 3): a ``since`` outside the dates the
index can hold (tantivy raised ValueError) and a lone surrogate in a query (UnicodeEncodeError), through
the tool, the Python API and the shell. Each is now a ``BAD_REQUEST`` that says what is accepted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fsmem
from fsmem._core.text import check_text
from fsmem._core.when import EARLIEST, LATEST, parse_since
from fsmem._errors import BadRequest
from tests.conftest import REPO, invoke

NOW = datetime(2026, 8, 31, 12, tzinfo=timezone.utc)
FAR_SINCES = ["9999-12-31", "0001-01-01", "1000-01-01", "2262-04-12", "1677-09-20",
              "0001-01-01T00:00+02:00", "9999-12-31T23:59-05:00", "400000d", "9999999h"]
SURROGATE_QUERIES = ["\ud800", "caf\udce9", "a \udfff b", "\udced\udca0\udc80"]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("since") / "root"
    run = fsmem.open(folder, create=True).run(fsmem.Scope.chat(), thread_id="t")
    assert run.call({"command": "write", "path": "notes.md", "content": "# Notes\nhello world\n"})["ok"]
    return folder


@pytest.mark.parametrize("since", FAR_SINCES)
def test_parse_since_refuses_dates_search_cannot_hold(since: str) -> None:
    with pytest.raises(BadRequest, match="outside the dates search knows|too far back") as caught:
        parse_since(since, NOW)
    assert caught.value.code == "BAD_REQUEST"


def test_the_message_names_the_accepted_range() -> None:
    with pytest.raises(BadRequest) as caught:
        parse_since("9999-12-31", NOW)
    assert "1700-01-01 to 2261-12-31" in caught.value.message and '"30d"' in caught.value.message


@given(st.datetimes(timezones=st.just(timezone.utc)))
@settings(max_examples=300, deadline=None)
def test_any_iso_moment_is_either_in_range_or_refused(moment: datetime) -> None:
    text = moment.isoformat()
    try:
        parsed = parse_since(text, NOW)
    except BadRequest:
        assert not (EARLIEST <= moment <= LATEST)
    else:
        assert EARLIEST <= parsed <= LATEST


@given(st.integers(min_value=0, max_value=9_999_999), st.sampled_from("hdwm"))
@settings(max_examples=200, deadline=None)
def test_any_age_is_either_in_range_or_refused(count: int, unit: str) -> None:
    try:
        parsed = parse_since(f"{count}{unit}", NOW)
    except BadRequest:
        return
    assert EARLIEST <= parsed <= LATEST


@pytest.mark.parametrize("regex", [False, True])
@pytest.mark.parametrize("since", FAR_SINCES)
def test_the_tool_refuses_a_far_since(root: Path, since: str, regex: bool) -> None:
    run = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="t")
    result = run.call({"command": "search", "query": "hello", "since": since, "regex": regex})
    assert result["ok"] is False and result["error"]["code"] == "BAD_REQUEST", result


@pytest.mark.parametrize("since", ["9999-12-31", "0001-01-01", datetime(9999, 12, 31), datetime(1, 1, 1)])
def test_the_python_api_refuses_a_far_since(root: Path, since: object) -> None:
    memory = fsmem.open(root)
    for regex in (False, True):
        with pytest.raises(BadRequest, match="outside the dates search knows"):
            memory.search("hello", since=since, regex=regex)  # type: ignore[arg-type]


def test_a_since_in_range_still_finds(root: Path) -> None:
    assert [hit.path for hit in fsmem.open(root).search("hello", since="1900-01-01")] == ["notes.md"]
    assert fsmem.open(root).search("hello", since="2261-12-31") == []


def test_the_shell_refuses_a_far_since(root: Path) -> None:
    result = invoke(root, "search", "hello", "--since", "9999-12-31")
    assert result.exit_code == 1, result.output
    assert result.output.startswith("Error: [BAD_REQUEST]") and "2261-12-31" in result.output


@pytest.mark.parametrize("query", SURROGATE_QUERIES)
def test_check_text_refuses_lone_surrogates(query: str) -> None:
    with pytest.raises(BadRequest, match="lone surrogate"):
        check_text("query", query)


@pytest.mark.parametrize("regex", [False, True])
@pytest.mark.parametrize("query", SURROGATE_QUERIES)
def test_the_tool_and_the_api_refuse_a_surrogate_query(root: Path, query: str, regex: bool) -> None:
    memory = fsmem.open(root)
    result = memory.run(fsmem.Scope.chat(), thread_id="t").call({"command": "search", "query": query,
                                                                 "regex": regex})
    assert result["ok"] is False and result["error"]["code"] == "BAD_REQUEST", result
    assert "lone surrogate" in result["text"]
    json.dumps(result, ensure_ascii=False).encode("utf-8")  # the refusal itself is valid text
    with pytest.raises(BadRequest, match="lone surrogate"):
        memory.search(query, regex=regex)


@pytest.mark.parametrize("field", ["content", "old_text", "new_text", "since"])
def test_a_surrogate_in_other_text_fields_is_a_bad_request(root: Path, field: str) -> None:
    request = {"command": "write", "path": "notes.md", "old_text": "hello", "new_text": "hi"}
    if field == "content":
        request = {"command": "write", "path": "new.md", "content": "x\ud800"}
    elif field == "since":
        request = {"command": "search", "query": "hello", "since": "30d\ud800"}
    else:
        request[field] = "x\ud800"
    result = fsmem.open(root).run(fsmem.Scope.chat(), thread_id="t").call(request)
    assert result["ok"] is False and result["error"]["code"] == "BAD_REQUEST", result


@pytest.mark.parametrize("regex", [False, True])
def test_the_shell_refuses_bytes_that_are_not_utf8(root: Path, regex: bool) -> None:
    # `fsmem search $'\xed\xa0\x80'`: the shell passes the raw bytes of an encoded surrogate.
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSMEM_")}
    env["PYTHONPATH"] = str(REPO)
    argv = [sys.executable.encode(), b"-m", b"fsmem", b"search", b"\xed\xa0\x80", b"--root", os.fsencode(root)]
    if regex:
        argv.append(b"--regex")
    out = subprocess.run(argv, capture_output=True, env=env, timeout=60, check=False)
    stderr = out.stderr.decode("utf-8", "replace")
    assert out.returncode == 1, stderr
    assert "Error: [BAD_REQUEST]" in stderr and "lone surrogate" in stderr and "Traceback" not in stderr
