"""The memory eval: does a model save the right thing at the right level, and nothing else?

Each case in ``evals/cases/*.toml`` starts from a copy of ``sample_project/``, runs one or more turns
of a chat, an agent's chat or a routine's run through the reference harness, and scores what ends up in
memory (and, where the case says so, the final answer). A case also holds ``script`` — the answers of a
model that gets it right — and ``bad_script`` — answers that get it wrong — so CI can check the
plumbing and prove every case's checks can fail.

    bin/eval --model-url http://localhost:8080/v1 --model NAME --trials 3 [--timeout S --max-tokens N]
    bin/eval                       # scripted answers: every case must pass
    bin/eval --bad                 # scripted wrong answers: every case must fail

Exit codes: 0 all passed; 1 it ran and some trial failed its checks; 2 it could not run (bad options,
no matching case, or a trial whose model call failed: such a score measures the server, not the model).
"""

from __future__ import annotations

import fnmatch
import json
import re
import sys
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import click

from fsmem.cli.model_options import model_options

CASES_DIR = Path(__file__).resolve().parent / "cases"
COMPACT_SUMMARY = "Earlier runs happened in this thread; their messages were compacted away."
CHECK_KINDS = ("saved", "not_saved", "unchanged", "nothing_changed", "answer", "answer_not")


@dataclass(frozen=True)
class Check:
    kind: str
    paths: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    pattern: str = ""


@dataclass(frozen=True)
class TurnSpec:
    text: str
    compact: bool = False


@dataclass
class Case:
    name: str
    about: str
    scope: str
    turns: list[TurnSpec]
    checks: list[Check]
    files: dict[str, str] = field(default_factory=dict)
    agents: list[dict[str, Any]] = field(default_factory=list)
    script: list[dict[str, Any]] = field(default_factory=list)
    bad_script: list[dict[str, Any]] = field(default_factory=list)
    # a review case: the conversation is `turns` (the person) and `replies` (the model), reread by the
    # background review for these halves; `read` names the skill files the conversation read
    review: tuple[str, ...] = ()
    replies: list[str] = field(default_factory=list)
    read: list[str] = field(default_factory=list)


@dataclass
class Trial:
    case: str
    passed: bool
    failures: list[str]
    answer: str
    changed: list[str]
    error: str | None = None
    refused: list[str] = field(default_factory=list)  # memory calls the tool refused (a model may recover)


def load_case(path: Path) -> Case:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    turns = [
        TurnSpec(text=t) if isinstance(t, str) else TurnSpec(text=t["text"], compact=bool(t.get("compact")))
        for t in data["turns"]
    ]
    checks = []
    for raw in data["checks"]:
        if raw["kind"] not in CHECK_KINDS:
            raise ValueError(f"{path.name}: unknown check kind {raw['kind']!r}; use one of {CHECK_KINDS}")
        if raw["kind"] in ("answer", "answer_not", "saved", "not_saved"):
            re.compile(raw["pattern"])
        checks.append(Check(raw["kind"], tuple(raw.get("paths", ())), tuple(raw.get("exclude", ())),
                            raw.get("pattern", "")))
    return Case(
        name=path.stem, about=data["about"], scope=data["scope"], turns=turns, checks=checks,
        files={k: v.lstrip("\n") for k, v in data.get("files", {}).items()},
        agents=list(data.get("agents", [])), script=list(data.get("script", [])),
        bad_script=list(data.get("bad_script", [])),
        review=tuple(data.get("review", ())), replies=list(data.get("replies", [])), read=list(data.get("read", [])),
    )


def load_cases(folder: Path = CASES_DIR, pattern: str = "*") -> list[Case]:
    return [load_case(p) for p in sorted(folder.glob("*.toml")) if fnmatch.fnmatch(p.stem, pattern)]


def script_messages(items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """A case's script as OpenAI-style assistant messages."""
    messages = []
    for number, item in enumerate(items, start=1):
        if "say" in item:
            messages.append({"role": "assistant", "content": item["say"]})
            continue
        tools = item["tools"] if "tools" in item else [item["tool"]]
        messages.append({
            "role": "assistant", "content": None,
            "tool_calls": [
                {"id": f"call-{number}-{i}", "type": "function",
                 "function": {"name": "memory", "arguments": json.dumps(tool, ensure_ascii=False)}}
                for i, tool in enumerate(tools, start=1)
            ],
        })
    return messages


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file of the root but fsmem's own state, by root-relative path."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and ".fsmem" not in p.relative_to(root).parts
    }


def _selected(files: dict[str, bytes], check: Check) -> dict[str, str]:
    return {
        path: data.decode("utf-8", "replace") for path, data in files.items()
        if any(fnmatch.fnmatch(path, g) for g in check.paths)
        and not any(fnmatch.fnmatch(path, g) for g in check.exclude)
    }


def score(case: Case, before: dict[str, bytes], after: dict[str, bytes], answer: str) -> list[str]:
    """The failed checks of one trial, each said plainly; empty when the trial passed."""
    failures = []
    for check in case.checks:
        where = ", ".join(check.paths) + (f" (not {', '.join(check.exclude)})" if check.exclude else "")
        if check.kind == "saved":
            if not any(re.search(check.pattern, text) for text in _selected(after, check).values()):
                failures.append(f"nothing in {where} matches /{check.pattern}/")
        elif check.kind == "not_saved":
            hits = sorted(p for p, text in _selected(after, check).items() if re.search(check.pattern, text))
            if hits:
                failures.append(f"{', '.join(hits)} should not match /{check.pattern}/")
        elif check.kind == "unchanged":
            changed = sorted(p for p in set(_selected(before, check)) | set(_selected(after, check))
                             if before.get(p) != after.get(p))
            if changed:
                failures.append(f"{', '.join(changed)} changed")
        elif check.kind == "nothing_changed":
            changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
            if changed:
                failures.append(f"memory changed: {', '.join(changed)}")
        elif check.kind == "answer":
            if not re.search(check.pattern, answer):
                failures.append(f"the answer does not match /{check.pattern}/")
        elif check.kind == "answer_not":
            if re.search(check.pattern, answer):
                failures.append(f"the answer should not match /{check.pattern}/")
        else:  # load_case refuses unknown kinds
            raise AssertionError(check.kind)
    return failures


def resolve_scope(case: Case) -> Any:
    from fsmem import Scope
    from fsmem._core.layout import slug
    from fsmem._env.sample import SEO

    if case.scope == "chat":
        return Scope.chat()
    if case.scope == "agent":
        return Scope.agent(SEO.id, name=SEO.name)
    kind, _, wanted = case.scope.partition(":")
    if kind == "routine":
        agents = [{"id": SEO.id, "name": SEO.name,
                   "routines": [{"id": r.id, "name": r.name} for r in SEO.routines]}, *case.agents]
        for agent in agents:
            for routine in agent.get("routines", []):
                if slug(routine["name"]) == wanted:
                    return Scope.routine(agent["id"], routine["id"], agent_name=agent["name"],
                                         routine_name=routine["name"])
    raise ValueError(f"{case.name}: no scope {case.scope!r}; use chat, agent or routine:<routine slug>")


def run_trial(case: Case, model: Any, workdir: Path) -> Trial:
    """One run of a case on a fresh copy of the sample project."""
    import fsmem
    from fsmem.harness import Session
    from fsmem._env.sample import PROJECT, copy_sample

    root = copy_sample(workdir / "root")
    for path, text in case.files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    memory = fsmem.open(root, create=True)
    for agent in case.agents:
        memory.create_agent(agent["id"], agent["name"])
        for routine in agent.get("routines", []):
            memory.create_routine(agent["id"], routine["id"], routine["name"])
    before = snapshot(root)
    answer = ""
    refused: list[str] = []
    try:
        if case.review:
            answer, refused = _review_trial(case, memory, model)
        else:
            session = Session(memory, resolve_scope(case), model, project=PROJECT, thread_id=f"eval-{case.name}",
                              review=False)
            for turn in case.turns:
                if turn.compact:
                    session.compact(COMPACT_SUMMARY)
                result = session.turn(turn.text)
                answer = result.answer
                refused += [step.text for step in result.steps if not step.ok]
    except Exception as error:  # noqa: BLE001 - a broken trial is a failed trial, with its reason
        after = snapshot(root)
        return Trial(case.name, False, [f"the run failed: {type(error).__name__}: {error}"], answer,
                     sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p)),
                     error=f"{type(error).__name__}: {error}", refused=refused)
    finally:
        close = getattr(memory, "close", None)
        if callable(close):
            close()
    after = snapshot(root)
    failures = score(case, before, after, answer)
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    return Trial(case.name, not failures, failures, answer, changed, refused=refused)


def review_conversation(case: Case) -> list[dict[str, Any]]:
    """The conversation a review case rereads: the person's turns and the model's replies, with the
    skill reads it made before its first reply."""
    messages: list[dict[str, Any]] = []
    for number, text in enumerate(t.text for t in case.turns):
        messages.append({"role": "user", "content": text})
        if number == 0:
            for index, path in enumerate(case.read):
                call_id = f"read-{index}"
                arguments = json.dumps({"command": "read", "path": path})
                messages.append({"role": "assistant", "content": "", "tool_calls": [
                    {"id": call_id, "type": "function", "function": {"name": "memory", "arguments": arguments}}]})
                messages.append({"role": "tool", "tool_call_id": call_id, "content": f"(the contents of {path})"})
        if number < len(case.replies):
            messages.append({"role": "assistant", "content": case.replies[number]})
    return messages


def _review_trial(case: Case, memory: Any, model: Any) -> tuple[str, list[str]]:
    from fsmem._env.sample import PROJECT
    from fsmem._memory.review import review

    result = review(memory, review_conversation(case), model, resolve_scope(case), project=PROJECT,
                    halves=case.review)  # type: ignore[arg-type]
    return result.answer, [f"{r.command}: {r.code}" for r in result.refused]


def scripted_model(case: Case, bad: bool = False) -> Any:
    from fsmem._llm.model import ScriptedModel

    model = ScriptedModel()
    for message in script_messages(case.bad_script if bad else case.script):
        model.enqueue(message)
    return model


def run_cases(
    cases: Sequence[Case],
    make_model: Callable[[Case], Any],
    trials: int = 1,
    on_trial: Callable[[Trial], None] | None = None,
) -> list[Trial]:
    results = []
    for case in cases:
        for _ in range(trials):
            with tempfile.TemporaryDirectory(prefix="fsmem-eval-") as folder:
                trial = run_trial(case, make_model(case), Path(folder))
            results.append(trial)
            if on_trial:
                on_trial(trial)
    return results


EXIT_SCORED_LOW = 1  # the eval ran and some trial failed its checks
EXIT_COULD_NOT_RUN = 2  # bad arguments, no case, or a trial the model could not run: no score to trust


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@model_options
@click.option("--trials", type=click.IntRange(min=1), default=None, help="Runs per case (default 3 live, 1 scripted).")
@click.option("--case", "pattern", default="*", show_default=True, help="Only cases whose name matches this glob.")
@click.option("--bad", is_flag=True, help="Score the scripted wrong answers instead.")
@click.option("--json", "as_json", is_flag=True, help="Print every trial as JSON.")
def cli(model_settings: Any, trials: int | None, pattern: str, bad: bool, as_json: bool) -> int:
    """The memory eval: does a model save the right thing at the right level, and nothing else?

    Exit codes: 0 every trial passed; 1 the eval ran and some trial failed its checks; 2 it could not
    run (bad options, no matching case, or a trial the model could not run: unreachable, timed out).
    """
    cases = load_cases(pattern=pattern)
    if not cases:
        raise click.UsageError(f"no case matches {pattern!r} in {CASES_DIR}")
    if model_settings.url:
        from fsmem._llm.openai import build_model

        build_model(model_settings)  # a missing --model is said once, before any trial

        def make_model(case: Case) -> Any:
            return build_model(model_settings)
        trials = trials or 3
        label = f"{model_settings.model} at {model_settings.url}"
    else:
        def make_model(case: Case) -> Any:
            return scripted_model(case, bad=bad)
        trials = trials or 1
        label = "scripted " + ("wrong answers" if bad else "answers")

    def report(trial: Trial) -> None:
        if as_json:
            return
        mark = "pass" if trial.passed else ("ERROR" if trial.error else "FAIL")
        print(f"{mark}  {trial.case}")
        for failure in trial.failures:
            print(f"      {failure}")

    if not as_json:
        print(f"memory eval: {len(cases)} cases × {trials} trials, {label}")
    results = run_cases(cases, make_model, trials, on_trial=report)
    passed = sum(t.passed for t in results)
    broken = sum(t.error is not None for t in results)
    if as_json:
        print(json.dumps([t.__dict__ for t in results], ensure_ascii=False, indent=2))
    else:
        by_case: dict[str, list[bool]] = {}
        for trial in results:
            by_case.setdefault(trial.case, []).append(trial.passed)
        full = sum(all(v) for v in by_case.values())
        print(f"score: {passed}/{len(results)} trials; {full}/{len(by_case)} cases passed every trial")
        if broken:
            print(f"{broken} of {len(results)} trials could not run (marked ERROR): the score does not measure "
                  "the model", file=sys.stderr)
    if broken:
        return EXIT_COULD_NOT_RUN
    if not model_settings.url and bad:
        return 0 if passed == 0 else EXIT_SCORED_LOW
    return 0 if passed == len(results) else EXIT_SCORED_LOW


def main(argv: Sequence[str] | None = None) -> int:
    """``bin/eval``'s exit code: 0 all passed, 1 scored low, 2 could not run."""
    from fsmem._errors import FsmemError

    try:
        return int(cli.main(args=list(sys.argv[1:] if argv is None else argv), prog_name="bin/eval",
                            standalone_mode=False) or 0)
    except click.exceptions.Exit as done:  # --help
        return done.exit_code
    except click.ClickException as error:
        print(f"Error: {error.format_message()}", file=sys.stderr)
        return EXIT_COULD_NOT_RUN
    except FsmemError as error:
        print(f"Error: [{error.code}] {error.message}", file=sys.stderr)
        return EXIT_COULD_NOT_RUN


if __name__ == "__main__":
    sys.exit(main())
