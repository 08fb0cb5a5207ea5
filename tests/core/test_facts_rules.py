"""The fact rules, with no disk: a dict stands in for the folder."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings, strategies as st

from fsmem._core import chains as C
from fsmem._core import facts as F
from fsmem._errors import BadFact, FactSensitive, NotFound

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=timezone.utc)


class Folder:
    """The facts folder as a dict of (location, id) -> Fact; applies plans like the drive would."""

    def __init__(self) -> None:
        self.files: dict[tuple[str, str], F.Fact] = {}
        self.counter = 0

    def resolution(self) -> C.Resolution:
        return C.resolve([(loc, fact) for (loc, _), fact in self.files.items()])

    def apply(self, ops, upto: int | None = None) -> None:
        for op in list(ops)[:upto]:
            found = F.fact_id_of_path(op.path)
            assert found is not None
            fid, loc = found
            if op.kind == "write":
                assert op.fact is not None and op.fact.id == fid and op.fact.location == loc
                self.files[(loc, fid)] = op.fact
            else:
                del self.files[(loc, fid)]

    def new_id(self) -> str:
        self.counter += 1
        return F.new_fact_id(NOW, f"{self.counter:08x}")

    def keep(self, subject, attribute, text, said=None, *, now=NOW) -> C.KeepPlan:
        resolution = self.resolution()
        self.apply(resolution.fixes)
        resolution = self.resolution()
        draft = F.check_draft(subject, attribute, text, said=said, now=now)
        plan = C.plan_keep(resolution, draft, new_id=self.new_id(), now=now)
        self.apply(plan.ops)
        return plan

    def locations(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for loc, fid in self.files:
            out.setdefault(fid, set()).add(loc)
        return out


# --------------------------------------------------------------------------- names, dates, ids


def test_same_thing_ignores_case_and_extra_spaces() -> None:
    assert F.thing_key("Ana", "role") == F.thing_key("  ana ", "Role")
    assert F.thing_key("Ana  Lima", "role") == F.thing_key("ana lima", "ROLE")
    assert F.thing_key("Ana", "role") != F.thing_key("Ana", "job")


def test_a_date_alone_is_midnight_utc_and_the_future_is_now() -> None:
    assert F.parse_moment("2026-10-12") == datetime(2026, 10, 12, tzinfo=timezone.utc)
    assert F.parse_moment("2026-10-12T09:30:00+02:00") == datetime(2026, 10, 12, 7, 30, tzinfo=timezone.utc)
    assert F.parse_moment("2031-01-01", NOW) == NOW
    assert F.format_when(datetime(2026, 10, 12, tzinfo=timezone.utc)) == "2026-10-12"
    assert F.format_when(NOW) == "2026-11-30T10:00:00Z"


def test_a_date_that_is_not_one_is_refused() -> None:
    with pytest.raises(BadFact, match="'yesterday' is not a date: write it as YYYY-MM-DD"):
        F.parse_moment("yesterday")


def test_ids_sort_by_the_time_they_were_kept() -> None:
    early = F.new_fact_id(NOW, "ffffffff")
    late = F.new_fact_id(NOW + timedelta(seconds=1), "00000000")
    assert early == "20261130T100000-ffffffff"
    assert early < late
    assert F.fact_path(early, "current") == "notes/memory/20261130T100000-ffffffff.md"
    assert F.fact_id_of_path("notes/memory/history/x1.md") == ("x1", "history")
    assert F.fact_id_of_path("notes/memory/x1.md") == ("x1", "current")
    assert F.fact_id_of_path("notes/memory/sub/x1.md") is None
    assert F.fact_id_of_path("brand.md") is None


# --------------------------------------------------------------------------- limits and secrets


def test_limits_are_120_120_and_2000_characters() -> None:
    F.check_draft("s" * 120, "a" * 120, "f" * 2000, now=NOW)
    with pytest.raises(BadFact, match="the subject is 121 characters; the limit is 120"):
        F.check_draft("s" * 121, "role", "x", now=NOW)
    with pytest.raises(BadFact, match="the attribute is 121 characters; the limit is 120"):
        F.check_draft("Ana", "a" * 121, "x", now=NOW)
    with pytest.raises(BadFact, match="the fact is 2,001 characters; the limit is 2,000"):
        F.check_draft("Ana", "role", "f" * 2001, now=NOW)


def test_empty_parts_are_refused() -> None:
    with pytest.raises(BadFact, match="the subject is empty"):
        F.check_draft("   ", "role", "x", now=NOW)
    with pytest.raises(BadFact, match="the fact is empty"):
        F.check_draft("Ana", "role", " \n ", now=NOW)


def test_parts_are_cleaned_and_said_defaults_to_now() -> None:
    draft = F.check_draft("  Ana   Lima ", "role\t", " Ana   leads\nthe team. ", now=NOW)
    assert (draft.subject, draft.attribute, draft.text) == ("Ana Lima", "role", "Ana leads the team.")
    assert draft.said == NOW and draft.source == "added by hand"


@pytest.mark.parametrize("text", [
    "Bruno's password is hunter2",
    "the passwd for the box",
    "a senha do Bruno",
    "the API key of the staging account",
    "the secret key is in the vault",
    "the private key of the server",
    "token: abcdef",
    "-----BEGIN RSA PRIVATE KEY-----",
    "the key is sk-abcdefghijklmnop1234",
    "ghp_abcdefghijklmnopqrstu",
    "AKIAIOSFODNN7EXAMPLE",
    "glpat-abcdefghij1234567890",
    "eyJhbGciOiJIUzI1NiJ9abc",
    "a run 4f9a1c2e8b7d6e5f4a3b2c1d0e9f8a7b6c5d",
    "card 4111 1111 1111 1111",
    "card 4111-1111-1111-1111",
])
def test_secret_shapes_are_refused_without_repeating_them(text: str) -> None:
    with pytest.raises(FactSensitive) as caught:
        F.check_draft("Bruno", "note", text, now=NOW)
    assert caught.value.code == "FACT_SENSITIVE"
    assert text not in caught.value.message
    assert "Nothing was kept" in caught.value.message


def test_secrets_are_refused_in_every_part() -> None:
    with pytest.raises(FactSensitive, match='the attribute looks like a secret: a credential word \\("password"\\)\\. Nothing was kept'):
        F.check_draft("Bruno", "password", "Bruno changed it last week.", now=NOW)
    with pytest.raises(FactSensitive, match="the source looks like a secret"):
        F.check_draft("Bruno", "team", "Bruno is in ops.", source="ghp_abcdefghijklmnopqrstu", now=NOW)


def test_a_luhn_invalid_number_is_accepted() -> None:
    draft = F.check_draft("Order", "number", "The order number is 4111 1111 1111 1112.", now=NOW)
    assert draft.text.endswith("1112.")


# --------------------------------------------------------------------------- the seed's cases


def test_ana_later_replaces_and_the_older_moves_to_history() -> None:
    folder = Folder()
    september = folder.keep("Ana", "role", "Ana leads the data team.", "2026-09-01")
    assert september.outcome == "current" and september.replaced is None
    october = folder.keep("ana", "Role", "Ana works in research.", "2026-10-12")
    assert october.outcome == "current"
    assert october.replaced is not None and october.replaced.id == september.fact.id
    assert october.fact.replaces == (september.fact.id,)
    assert (october.fact.subject, october.fact.attribute) == ("Ana", "role")  # the thing's spelling
    state = folder.resolution()
    assert [f.text for f in state.current("ANA")] == ["Ana works in research."]
    old = state.facts[september.fact.id]
    assert old.location == "history"
    assert old.replaced_by == october.fact.id
    assert old.until == datetime(2026, 10, 12, tzinfo=timezone.utc)
    assert folder.locations() == {september.fact.id: {"history"}, october.fact.id: {"current"}}
    assert state.fixes == []


def test_ana_said_earlier_goes_to_history_at_once() -> None:
    folder = Folder()
    october = folder.keep("Ana", "role", "Ana works in research.", "2026-10-12")
    september = folder.keep("Ana", "role", "Ana leads the data team.", "2026-09-01")
    assert september.outcome == "history" and september.replaced is None
    assert september.fact.replaced_by == october.fact.id
    assert september.fact.until == datetime(2026, 10, 12, tzinfo=timezone.utc)
    state = folder.resolution()
    assert state.facts[october.fact.id].replaces == (september.fact.id,)
    assert [f.id for f in state.current()] == [october.fact.id]
    assert folder.locations() == {september.fact.id: {"history"}, october.fact.id: {"current"}}


def test_a_fact_said_between_two_takes_its_place_in_the_chain() -> None:
    folder = Folder()
    first = folder.keep("Ana", "role", "Ana is an intern.", "2026-08-01")
    last = folder.keep("Ana", "role", "Ana works in research.", "2026-10-12")
    middle = folder.keep("Ana", "role", "Ana leads the data team.", "2026-09-01")
    assert middle.outcome == "history"
    chain = folder.resolution().chain(last.fact.id)
    assert [f.id for f in chain] == [first.fact.id, middle.fact.id, last.fact.id]
    assert chain[0].until == datetime(2026, 9, 1, tzinfo=timezone.utc)
    assert chain[1].until == datetime(2026, 10, 12, tzinfo=timezone.utc)


def test_the_same_sentence_keeps_nothing() -> None:
    folder = Folder()
    kept = folder.keep("Ana", "role", "Ana works in research.", "2026-10-12")
    again = folder.keep("ANA", "role", "ana works  in research.", "2026-11-01")
    assert again.outcome == "known" and again.fact.id == kept.fact.id and again.ops == ()
    assert len(folder.files) == 1


def test_the_same_statement_kept_twice_in_the_history_is_known() -> None:
    folder = Folder()
    folder.keep("Ana", "role", "Ana works in research.", "2026-10-12")
    old = folder.keep("Ana", "role", "Ana leads the data team.", "2026-09-01")
    again = folder.keep("Ana", "role", "Ana leads the data team.", "2026-09-01")
    assert again.outcome == "known" and again.fact.id == old.fact.id


def test_a_fact_said_in_the_future_is_said_now() -> None:
    folder = Folder()
    plan = folder.keep("Launch", "date", "The launch is on 3 March.", "2030-01-01")
    assert plan.fact.said == NOW


def test_different_attributes_stand_side_by_side() -> None:
    folder = Folder()
    folder.keep("Ana", "role", "Ana works in research.")
    folder.keep("Ana", "employer", "Ana works at Acme.")
    assert len(folder.resolution().current("ana")) == 2


# --------------------------------------------------------------------------- edit and forget


def test_edit_keeps_id_and_history_and_replaces_nothing() -> None:
    folder = Folder()
    old = folder.keep("Ana", "role", "Ana leads the data team.", "2026-09-01")
    new = folder.keep("Ana", "role", "Ana works in reserch.", "2026-10-12")
    plan = C.plan_edit(folder.resolution(), new.fact.id, fact="Ana works in research.", now=NOW)
    folder.apply(plan.ops)
    state = folder.resolution()
    fact = state.facts[new.fact.id]
    assert fact.text == "Ana works in research." and fact.edited == NOW
    assert fact.replaces == (old.fact.id,) and fact.said == new.fact.said
    assert [f.id for f in state.chain(new.fact.id)] == [old.fact.id, new.fact.id]


def test_edit_of_subject_keeps_the_chain_but_refuses_to_stand_beside_another() -> None:
    folder = Folder()
    folder.keep("Ana", "role", "Ana leads the data team.", "2026-09-01")
    ana = folder.keep("Ana", "role", "Ana works in research.", "2026-10-12")
    bruno = folder.keep("Bruno", "role", "Bruno works in ops.")
    with pytest.raises(BadFact, match=r"Bruno / role already has a fact that holds .* an edit replaces nothing"):
        C.plan_edit(folder.resolution(), ana.fact.id, subject="bruno", now=NOW)
    plan = C.plan_edit(folder.resolution(), ana.fact.id, subject="Ana Lima", now=NOW)
    folder.apply(plan.ops)
    state = folder.resolution()
    assert state.facts[ana.fact.id].subject == "Ana Lima"
    assert len(state.chain(ana.fact.id)) == 2
    assert bruno.fact.id in state.facts


def test_edit_of_a_replaced_fact_corrects_words_only() -> None:
    folder = Folder()
    old = folder.keep("Ana", "role", "Ana leads the data tem.", "2026-09-01")
    folder.keep("Ana", "role", "Ana works in research.", "2026-10-12")
    with pytest.raises(BadFact, match="only the sentence of a replaced fact can be corrected"):
        C.plan_edit(folder.resolution(), old.fact.id, attribute="team", now=NOW)
    plan = C.plan_edit(folder.resolution(), old.fact.id, fact="Ana leads the data team.", now=NOW)
    assert [op.path for op in plan.ops] == [f"notes/memory/history/{old.fact.id}.md"]


def test_edit_refuses_secrets_and_nothing() -> None:
    folder = Folder()
    kept = folder.keep("Bruno", "team", "Bruno is in ops.")
    with pytest.raises(FactSensitive):
        C.plan_edit(folder.resolution(), kept.fact.id, fact="Bruno's password is x", now=NOW)
    with pytest.raises(BadFact, match="nothing to edit"):
        C.plan_edit(folder.resolution(), kept.fact.id, now=NOW)
    with pytest.raises(NotFound, match="no fact nope"):
        C.plan_edit(folder.resolution(), "nope", fact="x", now=NOW)


def test_forget_deletes_the_fact_and_the_chain_it_replaced() -> None:
    folder = Folder()
    a = folder.keep("Ana", "role", "Ana is an intern.", "2026-08-01")
    b = folder.keep("Ana", "role", "Ana leads the data team.", "2026-09-01")
    c = folder.keep("Ana", "role", "Ana works in research.", "2026-10-12")
    other = folder.keep("Bruno", "role", "Bruno works in ops.")
    plan = C.plan_forget(folder.resolution(), c.fact.id)
    assert [f.id for f in plan.deleted] == [c.fact.id, b.fact.id, a.fact.id]
    folder.apply(plan.ops)
    assert set(folder.resolution().facts) == {other.fact.id}


def test_forget_in_the_middle_keeps_later_facts() -> None:
    folder = Folder()
    a = folder.keep("Ana", "role", "Ana is an intern.", "2026-08-01")
    b = folder.keep("Ana", "role", "Ana leads the data team.", "2026-09-01")
    c = folder.keep("Ana", "role", "Ana works in research.", "2026-10-12")
    plan = C.plan_forget(folder.resolution(), b.fact.id)
    assert [f.id for f in plan.deleted] == [b.fact.id, a.fact.id]
    folder.apply(plan.ops)
    state = folder.resolution()
    assert set(state.facts) == {c.fact.id}
    assert state.facts[c.fact.id].replaces == () and state.fixes == []


# --------------------------------------------------------------------------- crashes and repair


def _crash_cases():
    def later(folder: Folder):
        folder.keep("Ana", "role", "Ana leads the data team.", "2026-09-01")
        return F.check_draft("Ana", "role", "Ana works in research.", said="2026-10-12", now=NOW)

    def earlier(folder: Folder):
        folder.keep("Ana", "role", "Ana is an intern.", "2026-08-01")
        folder.keep("Ana", "role", "Ana works in research.", "2026-10-12")
        return F.check_draft("Ana", "role", "Ana leads the data team.", said="2026-09-01", now=NOW)

    return [later, earlier]


@pytest.mark.parametrize("setup", _crash_cases())
def test_a_keep_cut_short_at_any_step_reads_as_the_old_state_or_the_new(setup) -> None:
    probe = Folder()
    draft = setup(probe)
    plan = C.plan_keep(probe.resolution(), draft, new_id="20261130T100000-99999999", now=NOW)
    assert len(plan.ops) >= 2
    old_state = probe.resolution().facts
    full = Folder()
    full.files = dict(probe.files)
    full.apply(plan.ops)
    new_state = full.resolution().facts
    for step in range(len(plan.ops) + 1):
        crashed = Folder()
        crashed.files = dict(probe.files)
        crashed.apply(plan.ops, upto=step)
        seen = crashed.resolution()
        assert seen.facts in (old_state, new_state), f"after {step} of {len(plan.ops)} steps"
        crashed.apply(seen.fixes)  # the repair
        assert crashed.files == (probe.files if step == 0 else full.files)


def test_a_fact_both_current_and_in_history_is_resolved_to_history() -> None:
    folder = Folder()
    old = folder.keep("Ana", "role", "Ana leads the data team.", "2026-09-01")
    new = folder.keep("Ana", "role", "Ana works in research.", "2026-10-12")
    stale = F.Fact(**{**folder.files[("history", old.fact.id)].__dict__, "replaced_by": None, "until": None})
    folder.files[("current", old.fact.id)] = stale
    state = folder.resolution()
    assert [f.id for f in state.current()] == [new.fact.id]
    assert [op.kind for op in state.fixes] == ["delete"]
    assert state.fixes[0].path == f"notes/memory/{old.fact.id}.md"


def test_a_chain_touching_an_unreadable_file_is_left_alone() -> None:
    folder = Folder()
    old = folder.keep("Ana", "role", "Ana leads the data team.", "2026-09-01")
    folder.keep("Ana", "role", "Ana works in research.", "2026-10-12")
    del folder.files[("history", old.fact.id)]
    state = C.resolve([(loc, f) for (loc, _), f in folder.files.items()], broken={old.fact.id})
    assert state.fixes == []


# --------------------------------------------------------------------------- front matter


def test_fields_round_trip_in_a_fixed_order() -> None:
    folder = Folder()
    folder.keep("Ana", "role", "Ana leads the data team.", "2026-09-01")
    plan = folder.keep("Ana", "role", "Ana works in research.", "2026-10-12T09:30:00Z")
    fields = F.fields_of(plan.replaced)
    assert list(fields) == list(F.FIELD_ORDER)
    assert fields["said"] == "2026-09-01" and fields["until"] == "2026-10-12T09:30:00Z"
    again = F.fact_from_fields(fields, plan.replaced.text + "\n", plan.replaced.id)
    assert again == plan.replaced


@pytest.mark.parametrize("fields, message", [
    ({"id": "x1", "subject": "Ana", "attribute": "role"}, "the front matter lacks said"),
    ({"id": "x2", "subject": "Ana", "attribute": "role", "said": "2026-01-01"}, "says id 'x2' but the file is named x1.md"),
    ({"id": "x1", "subject": "Ana", "attribute": "role", "said": "soon"}, "'soon' is not a date"),
    ({"id": "x1", "subject": "Ana", "attribute": "role", "said": "2026-01-01", "replaces": [3.5]}, "each id in replaces must be a fact id"),
    ({"id": "x1", "subject": ["Ana"], "attribute": "role", "said": "2026-01-01"}, "subject must be text"),
])
def test_broken_front_matter_is_named(fields, message) -> None:
    with pytest.raises(BadFact, match=message):
        F.fact_from_fields(fields, "Ana works.", "x1")


# --------------------------------------------------------------------------- properties

SAID = st.integers(min_value=0, max_value=40)
KEEPS = st.lists(
    st.tuples(st.sampled_from(["Ana", "ana", " ANA "]), st.sampled_from(["role", "Role"]),
              st.integers(min_value=0, max_value=5), SAID),
    min_size=1, max_size=12,
)


def _day(n: int) -> str:
    return (datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(days=n)).date().isoformat()


def _check_chains(state: C.Resolution) -> None:
    for chain_ids in state.chains.values():
        chain = [state.facts[i] for i in chain_ids]
        assert chain == sorted(chain, key=F.Fact.order)
        assert [f.holds for f in chain] == [False] * (len(chain) - 1) + [True]
        for before, after in zip(chain, chain[1:]):
            assert before.replaced_by == after.id and before.until == after.said
            assert after.replaces == (before.id,)
        assert chain[0].replaces == ()


@settings(max_examples=200, deadline=None)
@given(KEEPS)
def test_any_order_of_keeps_leaves_one_current_fact_the_latest_said(keeps) -> None:
    folder = Folder()
    kept: list[tuple[datetime, int, str]] = []
    for step, (subject, attribute, sentence, said) in enumerate(keeps):
        plan = folder.keep(subject, attribute, f"Ana has role {sentence}.", _day(said))
        if plan.outcome != "known":
            kept.append((plan.fact.said, step, plan.fact.text))
    state = folder.resolution()
    current = state.current("ana")
    assert len(current) == 1
    assert current[0].text == max(kept)[2]
    assert len(state.chains) == 1 and len(state.facts) == len(kept)
    assert state.fixes == []
    _check_chains(state)
    for fid, locations in folder.locations().items():
        assert locations == {state.facts[fid].location}


@settings(max_examples=100, deadline=None)
@given(KEEPS, st.data())
def test_forget_removes_the_chain_back_to_the_first(keeps, data) -> None:
    folder = Folder()
    for subject, attribute, sentence, said in keeps:
        folder.keep(subject, attribute, f"Ana has role {sentence}.", _day(said))
    folder.keep("Bruno", "role", "Bruno works in ops.")
    state = folder.resolution()
    ana_chain = state.chain(state.current("ana")[0].id)
    target = data.draw(st.sampled_from(ana_chain))
    cut = ana_chain.index(target) + 1
    plan = C.plan_forget(state, target.id)
    folder.apply(plan.ops)
    after = folder.resolution()
    assert {f.id for f in plan.deleted} == {f.id for f in ana_chain[:cut]}
    assert set(after.facts) == {f.id for f in ana_chain[cut:]} | {f.id for f in state.current("bruno")}
    assert after.fixes == []
    _check_chains(after)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["Ana", "Bruno", "Caio"]), st.sampled_from(["role", "team"]),
                          st.integers(0, 3), SAID), min_size=1, max_size=15))
def test_every_thing_has_exactly_one_current_fact(keeps) -> None:
    folder = Folder()
    for subject, attribute, sentence, said in keeps:
        folder.keep(subject, attribute, f"{subject} {attribute} {sentence}.", _day(said))
    state = folder.resolution()
    things = {F.thing_key(s, a) for s, a, _, _ in keeps}
    assert sorted(f.key for f in state.current()) == sorted(things)
    _check_chains(state)


@given(st.text(max_size=30), st.text(max_size=30), st.sampled_from([" ", "  ", "\t", "\n "]))
def test_thing_key_is_blind_to_case_and_spacing(subject, attribute, gap) -> None:
    spaced = gap + gap.join(subject.split()) + gap
    assert F.thing_key(subject, attribute) == F.thing_key(spaced, f"{gap}{attribute}{gap}")
    assert F.thing_key(subject.casefold(), attribute) == F.thing_key(subject, attribute)


def _same(a: C.Resolution, b: C.Resolution) -> None:
    assert a.facts == b.facts
    assert sorted(map(sorted, a.chains.values())) == sorted(map(sorted, b.chains.values()))
    assert [f.id for f in a.current()] == [f.id for f in b.current()]
    assert sorted(op.path for op in a.fixes) == sorted(op.path for op in b.fixes)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["keep", "keep", "keep", "forget", "edit"]),
                          st.sampled_from(["Ana", "Bruno"]), st.integers(0, 3), SAID), max_size=15),
       st.data())
def test_advancing_a_resolution_matches_resolving_again(steps, data) -> None:
    folder = Folder()
    live = folder.resolution()
    for action, subject, sentence, said in steps:
        if action == "keep":
            draft = F.check_draft(subject, "role", f"{subject} {sentence}.", said=_day(said), now=NOW)
            ops = C.plan_keep(live, draft, new_id=folder.new_id(), now=NOW).ops
        elif not live.facts:
            continue
        elif action == "forget":
            ops = C.plan_forget(live, data.draw(st.sampled_from(sorted(live.facts)))).ops
        else:
            target = data.draw(st.sampled_from(sorted(live.facts)))
            ops = C.plan_edit(live, target, fact=f"edited {sentence}.", now=NOW).ops
        folder.apply(ops)
        live.apply(ops)
        _same(live, folder.resolution())


@pytest.mark.parametrize("name", ["facts", "chains", "extract"])
def test_fact_rules_are_pure(name: str) -> None:
    import ast
    import sys
    from pathlib import Path

    source = (Path(F.__file__).parent / f"{name}.py").read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for module in modules:
                assert (module.split(".")[0] in sys.stdlib_module_names or module == "fsmem._errors"
                        or module.startswith("fsmem._core.")), module
    assert "open(" not in source and "os." not in source


@settings(max_examples=300, deadline=None)
@given(st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2099, 12, 31),
                    timezones=st.just(timezone.utc)),
       st.integers(0, 2**32 - 1))
def test_an_id_never_looks_like_a_secret(moment, tail) -> None:
    from fsmem._core.secrets import find_fact_secret

    fid = F.new_fact_id(moment, f"{tail:08x}")
    assert find_fact_secret(fid) is None
    assert find_fact_secret(f"Ana's role was replaced by {fid} on 2026-10-12.") is None
    assert find_fact_secret(f"{fid} {F.new_fact_id(moment, f'{tail ^ 0xffff:08x}')}") is None


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["keep", "edit", "forget"]), st.sampled_from(["Ana", "ana ", "Bruno"]),
                          st.sampled_from(["role", "team"]), st.integers(0, 3), SAID), min_size=1, max_size=15),
       st.data())
def test_current_of_a_subject_is_the_current_facts_about_it_as_the_state_advances(steps, data) -> None:
    folder = Folder()
    state = C.resolve([])
    for action, subject, attribute, sentence, said in steps:
        if action == "keep":
            draft = F.check_draft(subject, attribute, f"{subject} {attribute} {sentence}.", said=_day(said), now=NOW)
            ops = C.plan_keep(state, draft, new_id=folder.new_id(), now=NOW).ops
        elif not state.facts:
            continue
        else:
            target = data.draw(st.sampled_from(sorted(state.facts)))
            try:
                ops = (C.plan_edit(state, target, now=NOW, subject=subject).ops if action == "edit"
                       else C.plan_forget(state, target).ops)
            except BadFact:
                continue
        folder.apply(ops)
        state.apply(ops)  # advanced in place, as a long-lived view does
        for name in ("ana", "Bruno", "caio"):
            wanted = F.clean_name(name).casefold()
            assert state.current(name) == [f for f in state.current() if f.key[0] == wanted]
        assert state.current() == folder.resolution().current()
