"""Options every command shares (``--root``, ``--json``), how the root is found, and how a path typed
at the shell names a file of the root; and, for a command a resident runs for a shell
(``fsmem.cli.served``), that shell's folder and the resident's memory in their place."""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import click

from fsmem._core.layout import STATE_DIR
from fsmem._env.roots import chosen_root, with_real_folder
from fsmem._errors import BadPath, BadStore, RootNotFound

if TYPE_CHECKING:
    from fsmem._memory.memory import Memory

# ``--root`` and ``--json`` may stand before the subcommand (``fsmem --root R read X``) or after it
# (``fsmem read X --root R``): the value is kept in the context's ``meta``, which every nested
# context shares, and a command without its own value takes the one given before it.
_ROOT_KEY = "fsmem.root"
_JSON_KEY = "fsmem.json"


_STORE_KEY = "fsmem._store"
_PROJECT_KEY = "fsmem.project"


class Asker(NamedTuple):
    """The shell a resident runs a command for (its variables are the process's while it runs): the
    folder it stands in, and the memory (the resident's own) its command may use. A named tuple, not a
    frozen dataclass: every shell imports this module and builds the class, and a dataclass's
    generated methods cost a cold start ~0.5 ms to compile (a tuple's, a tenth of it)."""

    cwd: str
    memory: Memory


class NotServed(BaseException):
    """The command a resident runs names another root, other settings or a command it does not serve:
    the shell runs it itself. Not an ``Exception``: nothing on the way may take it for a failure."""


_ASKER: contextvars.ContextVar[Asker | None] = contextvars.ContextVar("fsmem_asker", default=None)


@contextlib.contextmanager
def asked_by(asker: Asker) -> Iterator[None]:
    """Commands run here are the asker's: its folder, and ``open_root`` gives its memory."""
    token = _ASKER.set(asker)
    try:
        yield
    finally:
        _ASKER.reset(token)


def serving_a_shell() -> bool:
    """Whether the command runs in a resident, for a shell (its memory is open and watched)."""
    return _ASKER.get() is not None


def current_folder() -> str:
    """The folder the command was typed in (``OSError`` when it was removed under us)."""
    asker = _ASKER.get()
    return os.getcwd() if asker is None else asker.cwd


def open_root(explicit: str | None, near: str | None = None) -> Memory:
    """The memory a one-shot command works on, with its settings but no watcher: a process that
    searches once would only pay for starting one (and leave it to die with it). In a resident, for
    a shell: the resident's memory, when the command names it with the same settings. A command a
    resident would have run, run here instead (none answered), starts one for next time when the
    settings say ``watch_daemon = "auto"``."""
    asker = _ASKER.get()
    if asker is not None:
        return _served_memory(asker, explicit, near)
    memory = open_memory(explicit, near, watch=False)
    if memory.settings.watch_daemon == "auto" and _command_words() in _served_commands():
        _start_resident(memory)
    return memory


def _command_words() -> tuple[str, ...]:
    """The words of the command running (``("facts", "list")``), below the group's."""
    words: tuple[str, ...] = ()
    ctx = click.get_current_context(silent=True)
    while ctx is not None and ctx.parent is not None:
        words, ctx = (ctx.info_name or "", *words), ctx.parent
    return words


def _served_commands() -> frozenset[tuple[str, ...]]:
    from fsmem._index.resident import SERVED_COMMANDS

    return SERVED_COMMANDS


def _start_resident(memory: Memory) -> None:
    """Start ``fsmem watch`` for ``memory`` on first use (``fsmem._index.autostart``; it returns at
    once, and does nothing when one listens already). A project in PostgreSQL is named to it by the
    environment: a command line is anyone's to read, and the URL may hold a password."""
    from fsmem._index.autostart import start_on_first_use
    from fsmem._memory.resident import home_of, make_home
    from fsmem._store.folder.drive import Drive

    drive = memory.drive
    if isinstance(drive, Drive):
        argv, env = ["--root", str(memory.root)], {}
    else:
        argv, env = [], {"FSMEM_STORE": getattr(drive, "url", ""), "FSMEM_PROJECT": drive.name}
    with contextlib.suppress(OSError):  # none can be made: the command does its own work, every time
        make_home(memory)
    start_on_first_use(home_of(memory), argv, env, memory.settings.watch_idle)


def _served_memory(asker: Asker, explicit: str | None, near: str | None) -> Memory:
    from fsmem._env.config import load_settings

    words = _command_words()
    if words not in _served_commands():
        raise NotServed(f"not a command a resident runs: {' '.join(words)!r}")
    memory = asker.memory
    url, project = chosen_store(folder_given=bool(explicit))
    if url is not None:
        if getattr(memory.drive, "url", None) != url or memory.drive.name != project:
            raise NotServed("the command names another memory")
        settings = load_settings(None)
    elif memory.root is None or find_root(explicit, near) != memory.root:
        raise NotServed("the command names another memory")
    else:
        settings = load_settings(memory.root)
    if settings.for_answers() != memory.settings.for_answers():  # the asker's variables are the process's now
        raise NotServed("asked with other settings")
    return memory


def open_memory(explicit: str | None, near: str | None = None, *, watch: bool = True, create: bool = False) -> Memory:
    """The memory a command names: ``--store URL --project NAME`` (or ``$FSMEM_STORE`` and
    ``$FSMEM_PROJECT``) for a project in PostgreSQL, else the folder ``find_root`` finds."""
    import fsmem
    from fsmem._env.config import load_settings

    if _ASKER.get() is not None:
        raise NotServed("a resident opens no memory for a shell but its own")
    url, project = chosen_store(folder_given=bool(explicit))
    if url is not None:
        settings = load_settings(None)
        try:
            return fsmem.open(url, create=create, project=project, settings=dataclasses.replace(settings, watch=watch))
        except RootNotFound as error:  # the store words it for Python (create=True); this is the shell's way
            raise RootNotFound(
                f"there is no project {project!r} in this database (or this role may not see it); "
                f"`fsmem init --store URL --project {project}` makes it"
            ) from error
    folder = find_root(explicit, near)
    settings = load_settings(folder) if (folder / STATE_DIR).is_dir() else load_settings(None)
    return fsmem.open(folder, create=create, settings=dataclasses.replace(settings, watch=watch))


def chosen_store(folder_given: bool = False) -> tuple[str | None, str | None]:
    """The PostgreSQL URL and project given by ``--store``/``--project`` or their variables, if any.
    With a folder given (``--root``), the variables are left aside and the options refused."""
    meta = ctx.meta if (ctx := click.get_current_context(silent=True)) is not None else {}
    if folder_given:
        if meta.get(_STORE_KEY) or meta.get(_PROJECT_KEY):
            raise BadStore("--root names a folder and --store/--project a database: give one of them")
        return None, None
    url = meta.get(_STORE_KEY) or os.environ.get("FSMEM_STORE") or None
    project = meta.get(_PROJECT_KEY) or os.environ.get("FSMEM_PROJECT") or None
    if url is None and project is not None:
        raise BadStore("--project names a project in PostgreSQL: give --store URL too (or $FSMEM_STORE)")
    if url is not None and project is None:
        raise BadStore("a PostgreSQL store holds many projects: name one with --project NAME (or $FSMEM_PROJECT)")
    return url, project


def find_root(explicit: str | None, near: str | None = None) -> Path:
    """``--root``, else ``FSMEM_ROOT``, else the root holding ``near`` (an absolute path a person typed),
    else the nearest folder upward from here that holds ``.fsmem/``."""
    folder = chosen_root(explicit, os.environ, current_folder(), near)
    if folder is None:
        raise RootNotFound("no fsmem root here: pass --root DIR, set FSMEM_ROOT, or run `fsmem init` to make one")
    return Path(folder)


def _remember_root(ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value:
        ctx.meta[_ROOT_KEY] = value
        return value
    return ctx.meta.get(_ROOT_KEY)


def _remember_json(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    if value:
        ctx.meta[_JSON_KEY] = True
    return bool(value or ctx.meta.get(_JSON_KEY))


def wants_json(ctx: click.Context) -> bool:
    """Whether ``--json`` was given anywhere on the command line (errors then print as JSON too)."""
    return bool(ctx.meta.get(_JSON_KEY))


def _remember(key: str) -> Callable[[click.Context, click.Parameter, str | None], None]:
    def remember(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
        if value:
            ctx.meta[key] = value

    return remember


def root_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--root DIR``, or ``--store URL --project NAME`` for a project kept in PostgreSQL."""
    return click.option(
        "--root",
        "root",
        metavar="DIR",
        default=None,
        callback=_remember_root,
        help="The memory root (default: $FSMEM_ROOT, else the nearest folder upward with .fsmem/).",
    )(store_option(command))


def store_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--store URL --project NAME`` (read back with ``chosen_store``)."""
    command = click.option(
        "--project",
        metavar="NAME",
        default=None,
        expose_value=False,
        callback=_remember(_PROJECT_KEY),
        help="The project in the --store database (default: $FSMEM_PROJECT).",
    )(command)
    return click.option(
        "--store",
        metavar="URL",
        default=None,
        expose_value=False,
        callback=_remember(_STORE_KEY),
        help="Keep memory in PostgreSQL (postgresql://…) instead of a folder (default: $FSMEM_STORE).",
    )(command)


def json_option(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--json",
        "as_json",
        is_flag=True,
        callback=_remember_json,
        help="Print the result as JSON (stable, for scripts); errors too, on stdout.",
    )(command)


def expect_option(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--expect",
        "expected_version",
        metavar="VERSION",
        default=None,
        help="Refuse unless the file is still at VERSION (as `fsmem read` shows it).",
    )(command)


def echo_json(value: Any) -> None:
    click.echo(json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True))


# Characters str.splitlines() and some JSON-lines readers take for line ends: escaped, so one result
# stays one line (they only ever stand inside JSON strings, where an escape means the same).
_LINE_ENDS = {ord("\x85"): "\\u0085", ord("\u2028"): "\\u2028", ord("\u2029"): "\\u2029"}


def json_line(value: Any) -> str:
    """``value`` as one line of JSON, whatever characters its strings hold."""
    return json.dumps(value, ensure_ascii=False).translate(_LINE_ENDS)


def shell_path(typed: str | None, root: Path | None) -> str:
    """The root-relative path a person means by ``typed`` at the shell.

    Inside the root, a relative path is taken from the current folder (``cd notes/ops && fsmem read
    deploy.md`` reads ``notes/ops/deploy.md``; ``..`` may climb back up as far as the root) and no
    path means the current folder. An absolute path inside the root is taken as that file. Anything
    else is the tool's form, relative to the root (a leading ``/`` is the root), checked by its rules.
    A store that is no folder (``root`` None: a database) takes every path in the tool's form.
    """
    if root is None:
        return typed or ""
    root = Path(os.path.realpath(root))
    try:
        here: Path | None = Path(os.path.realpath(current_folder()))
    except OSError:  # the current folder was removed under us
        here = None
    here_in_root = None if here is None else _inside(here, root)
    if typed is None:
        return here_in_root or ""
    if os.path.isabs(typed):
        absolute = _inside(Path(with_real_folder(typed)), root)
        return typed if absolute is None else absolute
    if here is None or here_in_root is None:
        return typed
    target = _inside(Path(with_real_folder(os.path.join(here, typed))), root)
    if target is None:
        raise BadPath(f"{typed!r} from {here} leads outside the root {root}; name a file inside it")
    return target


def _inside(path: Path, root: Path) -> str | None:
    """``path`` relative to ``root`` as a posix string ("" for the root), or None if it lies outside."""
    try:
        relative = path.relative_to(root)
    except ValueError:
        return None
    return relative.as_posix() if relative.parts else ""


def shell_scope(memory: Memory, text: str) -> Any:
    """``--scope`` as typed at the shell: an id may be an unambiguous prefix or the level's name
    (``agent:seo``), as everywhere a person types one. A scope with names keeps its ids as typed:
    those make a missing folder on first use."""
    from fsmem._memory.levels import AgentScope, RoutineScope, Scope, match_id

    scope = Scope.parse(text)
    if isinstance(scope, AgentScope) and scope.agent_name is None:
        return Scope.agent(match_id(memory, scope.agent_id, "agent"))
    if isinstance(scope, RoutineScope) and scope.agent_name is None and scope.routine_name is None:
        return Scope.routine(match_id(memory, scope.agent_id, "agent"), match_id(memory, scope.routine_id, "routine"))
    return scope
