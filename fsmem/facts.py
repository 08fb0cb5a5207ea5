"""Facts on the drive: ``notes/memory/<id>.md`` while they hold, ``notes/memory/history/<id>.md`` after.

    facts = memory.facts
    kept = facts.keep("Ana", "role", "Ana works in research.", source="chat: Planning", said="2026-10-12")
    kept.outcome, kept.replaced        # "current", the fact it moved to the history (or None)
    facts.current("ana")               # what holds now about Ana
    facts.history(kept.fact.id)        # the chain, newest first
    facts.edit(kept.fact.id, fact="Ana works in research, on search.")
    facts.forget(kept.fact.id)         # the fact and the chain it replaced

The rules are :mod:`fsmem.core.facts` and :mod:`fsmem.core.chains`; this module reads the files (a cache keyed by each file's
size, mtime and inode, so a person's edit is seen at once), and runs each plan through one drive
transaction: locked, atomic per file, versions kept, logged, indexed on commit. A change cut short
by a crash is finished by the next change (the repair), and every read already sees it finished.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import secrets as random_source
import stat as stat_module
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import frontmatter
import yaml

from fsmem.core import facts as rules
from fsmem.core.extract import (Proposal, classify, conversation_meta, conversation_text,
                                extraction_messages, parse_proposals)
from fsmem.core import chains
from fsmem.core.chains import Op, Resolution
from fsmem.core.facts import Draft, Fact
from fsmem.core.layout import FACTS_DIR, HISTORY_DIR
from fsmem.drive import Drive, Transaction
from fsmem.errors import BadFact, FactSensitive, FsmemError, SetupError
from fsmem.resources import data_dir

__all__ = ["Facts", "Kept", "Problem", "Extraction", "render", "parse", "PROMPT_FILE"]

PROMPT_FILE = data_dir("prompts") / "extract_facts.md"
CACHE_FILE = "cache/facts.json"  # under .fsmem/: derived, deletable, saves a new process the parsing
CACHE_AFTER = 200  # files parsed in one load before the cache is written again
_TIME_FIELDS = {"said", "kept", "edited", "until"}


# --------------------------------------------------------------------------- the file format


_PLAIN = re.compile(r"[A-Za-z_][\w .,/()'+-]*")
_YAML_WORDS = {"y", "n", "yes", "no", "true", "false", "on", "off", "null"}
_OWN_ID = re.compile(r"\d{8}T\d{6}-[0-9a-f]{8}")  # YAML reads these as text: no date, no number


def _yaml_scalar(value: str) -> str:
    """``value`` as a YAML scalar: bare when YAML reads it back as the same text, else quoted."""
    if _OWN_ID.fullmatch(value):
        return value
    if (_PLAIN.fullmatch(value) and value.lower() not in _YAML_WORDS and ": " not in value
            and " #" not in value and not value.endswith(":")):
        return value
    dumped = yaml.safe_dump(value, allow_unicode=True, width=1_000_000, default_flow_style=True)
    return dumped.removesuffix("\n").removesuffix("\n...").rstrip("\n")


def render(fact: Fact) -> bytes:
    """The file of a fact: front matter in a fixed order, then the sentence."""
    lines = ["---"]
    for name, value in rules.fields_of(fact).items():
        if value is None:
            lines.append(f"{name}:")
        elif isinstance(value, list):
            lines.append(f"{name}: [{', '.join(_yaml_scalar(item) for item in value)}]")
        elif name in _TIME_FIELDS:
            lines.append(f"{name}: {value}")
        else:
            lines.append(f"{name}: {_yaml_scalar(str(value))}")
    lines += ["---", fact.text, ""]
    return "\n".join(lines).encode("utf-8")


def parse(data: bytes, file_id: str) -> Fact:
    """A fact from its file, as a person may have edited it; :class:`BadFact` says what to mend."""
    fast = _parse_own(data, file_id)
    if fast is not None:
        return fast
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise BadFact("the file is not UTF-8 text; save it as UTF-8") from None
    if not text.lstrip("\ufeff").startswith("---"):
        raise BadFact("the file has no front matter: it should start with a `---` line, the fields, "
                      "and another `---` line")
    try:
        post = frontmatter.loads(text.lstrip("\ufeff"))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise BadFact(f"the front matter is not valid YAML{where}; mend it or restore a version "
                      "with `fsmem versions`") from None
    except Exception as error:  # noqa: BLE001 - whatever a broken file makes the parser raise
        raise BadFact(f"the front matter cannot be read ({type(error).__name__}); mend it") from None
    return rules.fact_from_fields(post.metadata, post.content, file_id)


def _parse_own(data: bytes, file_id: str) -> Fact | None:
    """The quick path for a file exactly as fsmem writes it (checked by writing it again); None
    sends anything else through the full YAML reader."""
    try:
        lines = data.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        return None
    count = len(rules.FIELD_ORDER)
    if len(lines) < count + 3 or lines[0] != "---" or lines[count + 1] != "---":
        return None
    fields: dict[str, object] = {}
    for name, line in zip(rules.FIELD_ORDER, lines[1:count + 1]):
        key, sep, value = line.partition(":")
        if key != name or not sep:
            return None
        value = value.strip()
        if name == "replaces":
            if not (value.startswith("[") and value.endswith("]")):
                return None
            fields[name] = [item.strip() for item in value[1:-1].split(",") if item.strip()]
        elif value.startswith("'") and value.endswith("'") and len(value) >= 2:
            fields[name] = value[1:-1].replace("''", "'")
        elif value[:1] in ('"', "[", "{", "&", "*", "!", "|", ">", "%", "@", "`"):
            return None
        else:
            fields[name] = value or None
    try:
        fact = rules.fact_from_fields(fields, "\n".join(lines[count + 2:]), file_id)
    except BadFact:
        return None
    return fact if render(fact) == data else None


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Kept:
    """What became of a fact kept: ``current``, ``history`` (said earlier), or ``known``."""

    outcome: str
    fact: Fact
    replaced: Fact | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "fact": self.fact.to_dict(),
                "replaced": self.replaced.to_dict() if self.replaced else None}


@dataclass(frozen=True)
class Problem:
    """A fact file fsmem cannot use as it is, and what to do about it."""

    path: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


@dataclass(frozen=True)
class Extraction:
    """What the extractor proposed from a conversation. Nothing is kept until chosen."""

    proposals: list[Proposal] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"proposals": [p.to_dict() for p in self.proposals], "notes": list(self.notes)}


@dataclass(frozen=True)
class _Read:
    stamp: tuple[int, int, int]  # size, mtime_ns, inode
    location: str | None = None
    fact: Fact | None = None
    problem: str | None = None


# --------------------------------------------------------------------------- Facts


class Facts:
    """The facts of one root. Reads need no lock; every change holds the root's write lock."""

    def __init__(self, drive: Drive, *, clock: Callable[[], datetime] | None = None) -> None:
        self.drive = drive
        self._clock = clock or (lambda: datetime.now(timezone.utc))
        self._guard = threading.RLock()
        self._files: dict[str, _Read] = {}
        self._snapshot: dict[str, tuple[int, int, int]] | None = None
        self._resolution: Resolution | None = None
        self._scan_problems: list[Problem] = []
        self._last_id: str | None = None
        self._cache_file = drive.state / CACHE_FILE
        self._files.update(_read_cache(self._cache_file))

    # ---- reading ----------------------------------------------------------------------------

    def _now(self) -> datetime:
        return self._clock().astimezone(timezone.utc).replace(microsecond=0)

    def _scan(self) -> tuple[dict[str, tuple[int, int, int]], list[Problem]]:
        """The stamp (size, mtime, inode) of every fact file, and what under the facts folders is
        no fact. One ``stat`` a file: this is the freshness check every read pays."""
        stamps: dict[str, tuple[int, int, int]] = {}
        problems: list[Problem] = []
        known = self._files
        regular, link, folder_mode = stat_module.S_ISREG, stat_module.S_ISLNK, stat_module.S_ISDIR
        for folder in (FACTS_DIR, HISTORY_DIR):
            try:
                entries = list(os.scandir(self.drive.resolve(folder)))
            except (FileNotFoundError, NotADirectoryError):
                continue
            except Exception as error:  # noqa: BLE001 - a link leading out, a folder we may not read
                problems.append(Problem(folder, f"the folder cannot be read ({getattr(error, 'message', error)})"))
                continue
            prefix = folder + "/"
            for entry in entries:
                name = entry.name
                if name[0] == ".":
                    continue  # temp files of an atomic write, editor swap files
                path = prefix + name
                info = entry.stat(follow_symlinks=False)
                mode = info.st_mode
                if path in known and regular(mode):  # a name known good: the common case
                    stamps[path] = (info.st_size, info.st_mtime_ns, info.st_ino)
                elif folder == FACTS_DIR and name == "history" and folder_mode(mode):
                    continue
                elif link(mode):
                    problems.append(Problem(path, "a link, not a fact file; facts are plain files written by fsmem"))
                elif folder_mode(mode):
                    problems.append(Problem(path, "a folder inside the facts folder; facts are files, one a fact"))
                elif rules.fact_id_of_path(path) is None:
                    problems.append(Problem(path, "not a fact file: facts are named <id>.md (letters, digits, "
                                                  "- and _); keep notes elsewhere, or keep the fact with "
                                                  "`fsmem facts keep`"))
                else:
                    stamps[path] = (info.st_size, info.st_mtime_ns, info.st_ino)
        return stamps, problems

    def _read_one(self, path: str) -> _Read:
        fid, location = rules.fact_id_of_path(path)  # type: ignore[misc]
        try:
            fd = os.open(self.drive.root / path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return _Read((0, 0, 0), problem="vanished while being read")
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            data = handle.read()
        stamp = (info.st_size, info.st_mtime_ns, info.st_ino)
        try:
            return _Read(stamp, location, parse(data, fid))
        except BadFact as error:
            return _Read(stamp, problem=error.message)

    def _load(self) -> Resolution:
        """The canonical state of the facts now: cached while no file changed, advanced file by
        file when some did (a full rebuild only when an unreadable file appears or goes)."""
        with self._guard:
            stamps, self._scan_problems = self._scan()
            if self._resolution is not None and stamps == self._snapshot:
                return self._resolution
            incremental = self._resolution is not None
            ops: list[Op] = []
            files: dict[str, _Read] = {}
            for path, stamp in stamps.items():
                known = self._files.get(path)
                if known is not None and known.stamp == stamp:
                    files[path] = known
                    continue
                read = files[path] = self._read_one(path)
                if read.fact is None or (known is not None and known.fact is None):
                    incremental = False
                else:
                    ops.append(Op("write", path, read.fact))
            for path, known in self._files.items():
                if path not in stamps:
                    if known.fact is None:
                        incremental = False
                    ops.append(Op("delete", path))
            self._files = files
            self._snapshot = stamps  # a file changed between scan and read is simply read again
            if len(ops) >= CACHE_AFTER:
                _write_cache(self._cache_file, files)
            if incremental and self._resolution is not None:
                self._resolution.apply(ops)
                return self._resolution
            pairs, broken = [], set()
            for path, read in sorted(files.items()):
                if read.fact is not None:
                    pairs.append((read.location, read.fact))
                else:
                    broken.add(rules.fact_id_of_path(path)[0])  # type: ignore[index]
            self._resolution = chains.resolve(pairs, broken)  # type: ignore[arg-type]
            return self._resolution

    def _problems(self) -> list[Problem]:
        """Files that are no fact, and facts that cannot be read, as of the last load."""
        unreadable = [Problem(path, read.problem or "cannot be read")
                      for path, read in sorted(self._files.items()) if read.fact is None]
        return [*self._scan_problems, *unreadable]

    def get(self, fact_id: str) -> Fact:
        with self._guard:
            return self._load().get(fact_id)

    def current(self, subject: str | None = None) -> list[Fact]:
        """The facts that hold now (of ``subject``, ignoring case and extra spaces), oldest said first."""
        with self._guard:
            return self._load().current(subject)

    def history(self, fact_id: str) -> list[Fact]:
        """The chain ``fact_id`` belongs to, newest first: what holds now, then what it replaced."""
        with self._guard:
            resolution = self._load()
            resolution.get(fact_id)
            return list(reversed(resolution.chain(fact_id)))

    def known(self) -> list[tuple[str, str]]:
        """The subjects and attributes in use (by the facts that hold), as last written."""
        with self._guard:
            seen: dict[tuple[str, str], Fact] = {}
            for fact in self._load().current():
                seen[fact.key] = fact
            return sorted(((f.subject, f.attribute) for f in seen.values()),
                          key=lambda pair: (pair[0].casefold(), pair[1].casefold()))

    def all(self) -> list[Fact]:
        """Every readable fact, holding or replaced, oldest said first."""
        with self._guard:
            return sorted(self._load().facts.values(), key=Fact.order)

    def check(self) -> list[Problem]:
        """What a person should mend: unreadable files, rule breaks, half-finished changes."""
        with self._guard:
            resolution = self._load()
            problems = self._problems()
            for fact in sorted(resolution.facts.values(), key=lambda f: f.id):
                try:
                    rules.check_draft(fact.subject, fact.attribute, fact.text, fact.source, fact.said,
                                      now=max(self._now(), fact.said))
                except FsmemError as error:  # limits, secrets (the message never repeats one)
                    problems.append(Problem(fact.path, error.message))
            for ids in resolution.duplicates():
                fact = resolution.facts[ids[0]]
                problems.append(Problem(FACTS_DIR, f"{len(ids)} facts hold for {fact.subject} / "
                                        f"{fact.attribute} ({', '.join(ids)}); forget or edit all but one"))
            for fact in sorted(resolution.facts.values(), key=lambda f: f.id):
                if fact.replaced_by is not None and fact.replaced_by not in resolution.facts \
                        and fact.replaced_by not in resolution.broken:
                    problems.append(Problem(fact.path, f"replaced by {fact.replaced_by}, which is gone; "
                                            "its history ends here. Forget this fact if it no longer "
                                            "matters"))
            if resolution.fixes:
                paths = sorted({op.path for op in resolution.fixes})
                problems.append(Problem(FACTS_DIR, f"{len(paths)} fact file(s) left half-changed "
                                        f"({', '.join(paths[:5])}{', …' if len(paths) > 5 else ''}); "
                                        "reads already see the change finished; `fsmem check --repair` "
                                        "or the next change writes it"))
            return sorted(problems, key=lambda p: (p.path, p.message))

    # ---- changing ---------------------------------------------------------------------------

    def _run(self, tx: Transaction, resolution: Resolution, ops: list[Op]) -> None:
        """Write the ops, then remember what was written so the next read parses nothing."""
        for op in ops:
            if op.kind == "write":
                assert op.fact is not None
                tx.write(op.path, render(op.fact))
            else:
                tx.delete(op.path)
        snapshot = self._snapshot if self._snapshot is not None else {
            path: read.stamp for path, read in self._files.items()}
        final = {op.path: op for op in ops}  # a batch may write a file and delete it later
        for path, op in final.items():
            if op.kind == "delete":
                self._files.pop(path, None)
                snapshot.pop(path, None)
            else:
                info = os.stat(self.drive.root / path, follow_symlinks=False)
                found = rules.fact_id_of_path(path)
                assert found is not None and op.fact is not None
                stamp = (info.st_size, info.st_mtime_ns, info.st_ino)
                self._files[path] = _Read(stamp, found[1], op.fact)
                snapshot[path] = stamp
        self._snapshot = snapshot
        self._resolution = resolution

    def _change(self, command: str, thread: str | None,
                plan: Callable[[Resolution], list[Op]], applies: bool = False) -> None:
        """Under the lock: read, repair what a crash left, plan, then write. A plan that raises
        writes nothing. ``applies``: the plan advanced the resolution itself."""
        with self._guard, self.drive.change(command=command, thread=thread) as tx:
            resolution = self._load()  # rescanned under the lock; parsed again only where files changed
            fixes = list(resolution.fixes)
            try:
                if fixes:
                    resolution.apply(fixes)
                ops = plan(resolution)
                if not applies:
                    resolution.apply(ops)
            except BaseException:
                self._resolution = None
                raise
            try:
                self._run(tx, resolution, [*fixes, *ops])
            except BaseException:
                self._resolution = None
                self._snapshot = None
                raise

    def repair(self, thread: str | None = None) -> list[str]:
        """Write what a change cut short left unwritten; the paths written or deleted."""
        done: list[str] = []

        def plan(resolution: Resolution) -> list[Op]:
            return []

        with self._guard, self.drive.locked():
            self._snapshot = None
            done = sorted({op.path for op in self._load().fixes})
        if done:
            self._change("facts.repair", thread, plan)
        return done

    def _new_id(self, resolution: Resolution, now: datetime) -> str:
        """A fresh id that sorts after every id made before it: the kept second, then the
        microsecond (20 bits) and 12 random bits, so two facts kept in one second keep their order."""
        while True:
            moment = self._clock().astimezone(timezone.utc)
            micro = moment.microsecond if moment.replace(microsecond=0) == now else 999_999
            tail = (micro << 12) | random_source.randbelow(1 << 12)
            candidate = rules.new_fact_id(now, f"{tail:08x}")
            last = self._last_id
            if last is not None and candidate <= last and last[16:] < "ffffffff":
                # the clock stood still or went back: follow the last id rather than wait for it
                candidate = last[:16] + f"{int(last[16:], 16) + 1:08x}"
            if (candidate not in resolution.stored and candidate not in resolution.broken
                    and not os.path.lexists(self.drive.root / rules.fact_path(candidate, "current"))
                    and not os.path.lexists(self.drive.root / rules.fact_path(candidate, "history"))):
                self._last_id = candidate
                return candidate

    def keep(self, subject: str, attribute: str, fact: str, source: str = rules.DEFAULT_SOURCE,
             said: object = None, *, thread: str | None = None) -> Kept:
        """Keep a fact by the rules; returns what became of it and what it replaced."""
        draft = rules.check_draft(subject, attribute, fact, source, said, now=self._now())
        return self.keep_drafts([draft], thread=thread)[0]

    def keep_many(self, items: Iterable[Mapping[str, Any]], *, thread: str | None = None) -> list[Kept]:
        """Keep several facts in one change (one lock, one index update). Each item has ``subject``,
        ``attribute``, ``fact`` and optionally ``source`` and ``said``. All are checked first: one bad
        item keeps none."""
        now = self._now()
        drafts = []
        for number, item in enumerate(items, start=1):
            try:
                drafts.append(rules.check_draft(item.get("subject"), item.get("attribute"), item.get("fact"),
                                                item.get("source", rules.DEFAULT_SOURCE), item.get("said"),
                                                now=now))
            except (BadFact, FactSensitive) as error:
                message = error.message.replace(". Nothing was kept;", ";").rstrip(".")
                raise type(error)(f"fact {number}: {message}; nothing was kept") from None
        return self.keep_drafts(drafts, thread=thread)

    def keep_drafts(self, drafts: Iterable[Draft], *, thread: str | None = None) -> list[Kept]:
        """Keep checked drafts (see :func:`fsmem.core.facts.check_draft`) in one change, in order."""
        drafts = list(drafts)
        results: list[Kept] = []
        if not drafts:
            return results

        def plan(resolution: Resolution) -> list[Op]:
            now = self._now()
            ops: list[Op] = []
            for draft in drafts:
                step = chains.plan_keep(resolution, draft, new_id=self._new_id(resolution, now), now=now)
                resolution.apply(step.ops)
                ops.extend(step.ops)
                results.append(Kept(step.outcome, resolution.facts.get(step.fact.id, step.fact),
                                    step.replaced))
            return ops

        with self._guard:
            self._change("facts.keep", thread, plan, applies=True)
            # later keeps of the same batch may have moved an earlier one: report each as it stands now
            final = self._resolution or self._load()
            return [Kept(k.outcome, final.facts.get(k.fact.id, k.fact),
                         final.facts.get(k.replaced.id, k.replaced) if k.replaced else None)
                    for k in results]

    def edit(self, fact_id: str, *, fact: str | None = None, subject: str | None = None,
             attribute: str | None = None, thread: str | None = None) -> Fact:
        """Correct a fact's words, subject or attribute; it keeps its id and history, replaces nothing."""
        edited: list[Fact] = []

        def plan(resolution: Resolution) -> list[Op]:
            step = chains.plan_edit(resolution, fact_id, now=self._now(), fact=fact, subject=subject,
                                   attribute=attribute)
            edited.append(step.fact)
            return list(step.ops)

        self._change("facts.edit", thread, plan)
        return edited[0]

    def forget(self, fact_id: str, *, thread: str | None = None) -> list[Fact]:
        """Delete a fact and the facts it replaced, back to the first; returns them, newest first."""
        deleted: list[Fact] = []

        def plan(resolution: Resolution) -> list[Op]:
            step = chains.plan_forget(resolution, fact_id)
            deleted.extend(step.deleted)
            return list(step.ops)

        self._change("facts.forget", thread, plan)
        return deleted

    # ---- the extractor ----------------------------------------------------------------------

    def propose(self, conversation: Any, llm: Any, *, source: str | None = None, said: object = None,
                prompt: str | None = None) -> Extraction:
        """Ask ``llm`` (a :class:`fsmem.llm.ChatModel`) for the durable facts of ``conversation`` (a
        list of messages, or an object with ``messages`` and optionally ``title`` and ``date``).
        Each proposal says what keeping it would do; nothing is kept. Keep the chosen ones with
        ``keep_drafts([p.draft for p in chosen])``."""
        now = self._now()
        text = conversation_text(conversation)
        if not text:
            return Extraction([], ["the conversation has no turns by the person or the model; "
                                   "nothing was sent to the model"])
        meta = conversation_meta(conversation)
        if source is None:
            source = f"chat: {meta['title']}" if "title" in meta else "a conversation"
        said_at = rules.parse_when(said if said is not None else meta.get("date", now), now)
        template = prompt if prompt is not None else load_prompt()
        with self._guard:
            resolution = self._load()
            messages = extraction_messages(template, text, today=now, current=resolution.current(),
                                           known=self.known())
        from fsmem.llm import JSON_OBJECT

        # JSON mode where the server has it: small models answer prose without it (fsmem.llm falls back)
        reply = llm.complete(messages, response_format=JSON_OBJECT)
        found = parse_proposals(reply.get("content"))
        with self._guard:
            proposals, notes = classify(self._load(), found, said=said_at, source=source, now=now)
        return Extraction(proposals, notes)


def _read_cache(cache_file: Path) -> dict[str, _Read]:
    """Parsed facts a previous process saved, keyed by file stamp; anything odd means no cache."""
    try:
        data = json.loads(cache_file.read_text(encoding="utf-8"))
        if data.get("format") != 1:
            return {}
        found: dict[str, _Read] = {}
        for path, entry in data["files"].items():
            place = rules.fact_id_of_path(path)
            if place is None:
                return {}
            fields = entry["fact"]
            when = datetime.fromisoformat
            fact = Fact(id=fields["id"], subject=fields["subject"], attribute=fields["attribute"],
                        text=fields["text"], source=fields["source"], said=when(fields["said"]),
                        kept=when(fields["kept"]),
                        edited=when(fields["edited"]) if fields["edited"] else None,
                        replaces=tuple(fields["replaces"]), replaced_by=fields["replaced_by"],
                        until=when(fields["until"]) if fields["until"] else None)
            if fact.id != place[0]:
                return {}
            stamp = tuple(entry["stamp"])
            if len(stamp) != 3:
                return {}
            found[path] = _Read(stamp, place[1], fact)  # type: ignore[arg-type]
        return found
    except Exception:  # noqa: BLE001 - a missing, old or damaged cache is simply not used
        return {}


def _write_cache(cache_file: Path, files: Mapping[str, _Read]) -> None:
    entries = {}
    for path, read in files.items():
        fact = read.fact
        if fact is None:
            continue
        entries[path] = {"stamp": list(read.stamp), "fact": {
            "id": fact.id, "subject": fact.subject, "attribute": fact.attribute, "text": fact.text,
            "source": fact.source, "said": fact.said.isoformat(), "kept": fact.kept.isoformat(),
            "edited": fact.edited.isoformat() if fact.edited else None, "replaces": list(fact.replaces),
            "replaced_by": fact.replaced_by, "until": fact.until.isoformat() if fact.until else None}}
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=".facts.", suffix=".tmp", dir=cache_file.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"format": 1, "files": entries}, handle, ensure_ascii=False, separators=(",", ":"))
        os.replace(temp, cache_file)
    except OSError:
        pass  # a cache we cannot write only costs the next process some parsing


def load_prompt() -> str:
    try:
        return PROMPT_FILE.read_text(encoding="utf-8")
    except OSError as error:
        raise SetupError(f"the extractor's prompt {PROMPT_FILE} cannot be read ({error.strerror}); "
                         "reinstall fsmem") from None
