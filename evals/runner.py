"""The memory eval: does a model save the right thing at the right level, and nothing else?

Each case in ``evals/cases/*.toml`` starts from a copy of ``sample_project/``, runs one or more turns
of a chat, an agent's chat or a routine's run through the reference harness, and scores what ends up in
memory (and, where the case says so, the final answer). A case also holds ``script`` — the answers of a
model that gets it right — and ``bad_script`` — answers that get it wrong — so CI can check the
plumbing and prove every case's checks can fail.

    bin/eval --model-url http://localhost:8080/v1 --model NAME --trials 3
    bin/eval                       # scripted answers: every case must pass
    bin/eval --bad                 # scripted wrong answers: every case must fail
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
import sys
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

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
    from fsmem.core.layout import slug
    from fsmem.sample import SEO

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
    from fsmem.sample import PROJECT, copy_sample

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
        session = Session(memory, resolve_scope(case), model, project=PROJECT, thread_id=f"eval-{case.name}")
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


def scripted_model(case: Case, bad: bool = False) -> Any:
    from fsmem.llm import ScriptedModel

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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bin/eval", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-url", help="an OpenAI-compatible API base, e.g. http://localhost:8080/v1")
    parser.add_argument("--model", help="the model name the API expects")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY", help="variable holding the API key")
    parser.add_argument("--trials", type=int, default=None, help="runs per case (default 3 live, 1 scripted)")
    parser.add_argument("--case", default="*", help="only cases whose name matches this glob")
    parser.add_argument("--bad", action="store_true", help="score the scripted wrong answers instead")
    parser.add_argument("--json", action="store_true", help="print every trial as JSON")
    args = parser.parse_args(argv)
    cases = load_cases(pattern=args.case)
    if not cases:
        print(f"Error: no case matches {args.case!r} in {CASES_DIR}", file=sys.stderr)
        return 2
    if args.model_url:
        if not args.model:
            print("Error: --model-url needs --model NAME", file=sys.stderr)
            return 2
        from fsmem.llm import OpenAICompatibleModel

        def make_model(case: Case) -> Any:
            return OpenAICompatibleModel(args.model_url, args.model, api_key_env=args.api_key_env)
        trials = args.trials or 3
        label = f"{args.model} at {args.model_url}"
    else:
        def make_model(case: Case) -> Any:
            return scripted_model(case, bad=args.bad)
        trials = args.trials or 1
        label = "scripted " + ("wrong answers" if args.bad else "answers")

    def report(trial: Trial) -> None:
        if args.json:
            return
        mark = "pass" if trial.passed else "FAIL"
        print(f"{mark}  {trial.case}")
        for failure in trial.failures:
            print(f"      {failure}")

    if not args.json:
        print(f"memory eval: {len(cases)} cases × {trials} trials, {label}")
    results = run_cases(cases, make_model, trials, on_trial=report)
    passed = sum(t.passed for t in results)
    if args.json:
        print(json.dumps([t.__dict__ for t in results], ensure_ascii=False, indent=2))
    else:
        by_case: dict[str, list[bool]] = {}
        for trial in results:
            by_case.setdefault(trial.case, []).append(trial.passed)
        full = sum(all(v) for v in by_case.values())
        print(f"score: {passed}/{len(results)} trials; {full}/{len(by_case)} cases passed every trial")
    expected_all = not args.model_url
    if expected_all and args.bad:
        return 0 if passed == 0 else 1
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
