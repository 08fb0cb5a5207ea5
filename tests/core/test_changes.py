"""The text the secret guard checks around each change (``fsmem._core.changes``): each change with up
to five unchanged lines either side, as the file will hold them and as it held them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fsmem._core.changes import CONTEXT_LINES, Region, changed_regions, find_brought_secret

CARD_HEAD, CARD_TAIL = "- card 4111 " + "1111", "1111 " + "1111"  # harmless alone, a card in a row
KEY_HEAD, KEY_TAIL = "- deploy key sk-" + "proj-Zq8xW2", "mN4pL7" + "rT9v"


def lines(count: int, start: int = 0) -> list[str]:
    return [f"- note {number}\n" for number in range(start, start + count)]


def test_no_change_no_region() -> None:
    text = "".join(lines(30))
    assert changed_regions(text, text) == []
    assert changed_regions("", "") == []


def test_a_new_file_is_one_region_of_all_its_text() -> None:
    assert changed_regions("", "a\nb\n") == [Region(added="a\nb\n", after="a\nb\n", before="")]


def test_one_added_line_comes_with_five_lines_either_side() -> None:
    old = lines(30)
    new = old[:15] + ["- new\n"] + old[15:]
    [region] = changed_regions("".join(old), "".join(new))
    assert region.added == "- new\n"
    assert region.after == "".join(old[10:15] + ["- new\n"] + old[15:20])
    assert region.before == "".join(old[10:20])
    assert CONTEXT_LINES == 5


def test_a_deletion_shows_the_lines_it_brings_together() -> None:
    old = lines(10)
    [region] = changed_regions("".join(old), "".join(old[:4] + old[5:]))
    assert region.added == "" and region.after == "".join(old[:4] + old[5:]) and region.before == "".join(old)


def test_changes_far_apart_are_apart_and_close_ones_are_one() -> None:
    old = lines(40)
    far = old[:5] + ["- a\n"] + old[5:30] + ["- b\n"] + old[30:]
    assert [region.added for region in changed_regions("".join(old), "".join(far))] == ["- a\n", "- b\n"]
    close = old[:5] + ["- a\n"] + old[5:15] + ["- b\n"] + old[15:]  # ten unchanged lines between
    [region] = changed_regions("".join(old), "".join(close))
    assert region.added == "- a\n- b\n" and region.after == "".join(close[0:22])


def test_line_ends_are_kept_as_they_are() -> None:
    [region] = changed_regions("a\r\nb\r\n", "a\r\nx\r\nb\r\n")
    assert region.after == "a\r\nx\r\nb\r\n" and region.added == "x\r\n"


def test_a_secret_completed_by_a_new_line_is_found_either_way_round() -> None:
    for head, tail in ((CARD_HEAD, CARD_TAIL), (KEY_HEAD, KEY_TAIL)):
        body = "".join(lines(20))
        assert find_brought_secret(f"{body}{head}\n{body}", f"{body}{head}\n{tail}\n{body}") is not None
        assert find_brought_secret(f"{body}{tail}\n{body}", f"{body}{head}\n{tail}\n{body}") is not None


def test_a_card_over_six_lines_is_seen_whole_from_its_last_line() -> None:
    # The widest reach of the guard over lines: 19 digits in groups of 3 or more.
    old = "".join(lines(10)) + "- card 6233\n333\n333\n333\n333\n"
    new = old + "007\n"  # 6233 333 333 333 333 007: 19 digits, Luhn-valid
    assert find_brought_secret(old, new) == "a card number"


def test_a_secret_a_person_left_does_not_block_a_change_beside_it_that_adds_none() -> None:
    old = f"# Notes\n{CARD_HEAD}\n{CARD_TAIL}\n- last\n"
    assert find_brought_secret(old, old + "- more\n") is None
    assert find_brought_secret(old, old + "token = abcdefgh12345678\n") == "a credential"


line_text = st.text(alphabet="abc -\n", max_size=8).map(lambda text: text.replace("\n", "") + "\n")


@given(st.lists(line_text, max_size=25), st.lists(line_text, max_size=25))
def test_regions_are_slices_and_cover_every_new_line(old: list[str], new: list[str]) -> None:
    before, after = "".join(old), "".join(new)
    regions = changed_regions(before, after)
    assert (regions == []) == (before == after)
    for region in regions:
        assert region.after in after and region.before in before
    brought = "".join(region.added for region in regions)
    assert all(line in brought for line in new if line not in old)


@given(st.lists(line_text, min_size=0, max_size=30), st.integers(min_value=0, max_value=30), st.booleans())
def test_a_split_card_is_found_wherever_it_lands(body: list[str], where: int, tail_added: bool) -> None:
    where = min(where, len(body))
    whole = body[:where] + [f"{CARD_HEAD}\n", f"{CARD_TAIL}\n"] + body[where:]
    old = [line for line in whole if line != (f"{CARD_TAIL}\n" if tail_added else f"{CARD_HEAD}\n")]
    assert find_brought_secret("".join(old), "".join(whole)) == "a card number"
