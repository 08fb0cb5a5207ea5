"""The notes ``fsmem sync`` leaves beside a file for the person who edits the folder: a conflict, a hand
change the tool would refuse, a level folder deleted by hand. Each says what happened, where the
person's text is kept, and what to do next."""

from __future__ import annotations

from datetime import UTC, datetime

from fsmem._core.layout import role_of

__all__ = ["conflict_note", "refused_note", "level_note"]


def refused_note(path: str, mine: bytes | None, kept: str | None, why: str) -> bytes:
    when = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    name = path.rsplit("/", 1)[-1]
    head = f"fsmem sync, {when}: {path} was not synced\n\n{why}.\n"
    if mine is None:
        return f"{head}It is back as the memory holds it.\n".encode()
    head += (
        f"The memory keeps its own {name}, now in this folder. Your text is kept as version {kept} of {path}\n"
        f"(`fsmem versions {path}` lists it) and is below, exactly as you saved it.\n\n"
        "----- your text -----\n"
    )
    return head.encode() + mine


def level_note(level: str) -> bytes:
    when = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    kind = "routine" if role_of(level).routine_folder else "agent"
    return (
        f"fsmem sync, {when}: {level} was deleted here, but not from the memory\n\n"
        f"{kind.capitalize()}s are deleted by the harness (`fsmem {kind}s delete ID`), not by deleting their "
        f"folder, so {level} is back as the memory holds it. Delete this note when you have read it.\n"
    ).encode()


def conflict_note(path: str, mine: bytes | None, kept: str | None, theirs: str | None, base: str | None) -> bytes:
    when = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    name = path.rsplit("/", 1)[-1]
    since = f"since version {base}" if base else "since this folder was last synced"
    if mine is None:
        head = (
            f"You deleted {name}, but the memory changed it {since} (it is now at version {theirs}), "
            f"so it is back as the memory holds it. Delete it again to delete it from the memory too.\n"
        )
        return f"fsmem sync, {when}: conflict on {path}\n\n{head}".encode()
    now = (
        f"The memory's version ({theirs}) is now in {name}."
        if theirs
        else f"The memory deleted {name} meanwhile, so it is gone from this folder."
    )
    head = (
        f"fsmem sync, {when}: conflict on {path}\n\n"
        f"You and the memory both changed {name} {since}. The memory keeps its own: {now}\n"
        f"Your text is kept as version {kept} of {path} (`fsmem versions {path}` lists it) and is\n"
        f"below, exactly as you saved it. To keep it, copy it into {name} and save; then delete this note.\n\n"
        "----- your text -----\n"
    )
    return head.encode() + mine
