"""Settings: defaults, overridden by the root's ``.fsmem/config.toml``, overridden by ``FSMEM_*``.

Read in one place (the composition roots: ``fsmem.open``, the CLI, the MCP server).

    # .fsmem/config.toml
    max_file_bytes = 65536
    lock_timeout = 5.0
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from fsmem._errors import SetupError


@dataclass(frozen=True)
class Settings:
    max_file_bytes: int = 32 * 1024
    versions_kept: int = 20
    lock_timeout: float = 10.0  # seconds to wait for the root's write lock before BUSY
    regex_timeout: float = 1.0  # seconds a regex may run on one file before TIMEOUT
    search_limit: int = 10
    max_search_limit: int = 100
    durable: bool = True  # fsync file and folder on every change; tests may turn it off
    watch: bool = True  # a process's first search starts a watcher, so later ones need not compare
    pg_pool_size: int = 8  # PostgreSQL: connections a process may open (one per thread changing at once)
    # Recall by meaning (docs/search.md): "auto" embeds with the model set up below or installed, "off" never
    meaning: str = "auto"
    search_mode: str = "both"  # what a search fuses when it does not say: "words", "meaning" or "both"
    embed_model: str = ""  # a folder holding model.onnx and tokenizer.json; "" is the one `fsmem model install` keeps
    embed_endpoint: str = ""  # an OpenAI-compatible base URL (…/v1); when set, used instead of a local model
    embed_endpoint_model: str = ""  # the model's name on that server
    embed_api_key_env: str = "OPENAI_API_KEY"  # the variable holding the endpoint's key (sent only when set)
    embed_timeout: float = 10.0  # seconds a request to the endpoint may take
    embed_threads: int = 1  # onnxruntime's threads for the local model
    meaning_weight: float = 0.2  # how much meaning counts beside words in mode "both" (tuned on the dev split)
    # The resident (``fsmem watch``): "auto" starts one for the root on a one-shot command's first use,
    # and it stops after ``watch_idle`` seconds with no question; "off" leaves starting it to a person.
    watch_daemon: str = "off"
    watch_idle: float = 900.0

    def for_answers(self) -> Settings:
        """These settings less those about this process's own life (whether it watches, starts a
        resident, how long one waits idle): what two processes must share for one to answer the other."""
        return dataclasses.replace(self, watch=False, watch_daemon="off", watch_idle=Settings.watch_idle)


WATCH_DAEMON_CHOICES = ("off", "auto")


def load_settings(root: Path | None, environ: Mapping[str, str] | None = None) -> Settings:
    """Defaults ← ``root/.fsmem/config.toml`` ← ``FSMEM_<NAME>`` environment variables."""
    env: Mapping[str, str] = os.environ if environ is None else environ
    values: dict[str, object] = {}
    if root is not None:
        config_file = Path(root) / ".fsmem" / "config.toml"
        if config_file.is_file():
            import tomllib  # only where a config file is read: most roots have none

            try:
                values.update(tomllib.loads(config_file.read_text(encoding="utf-8")))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
                raise SetupError(f"{config_file} is not valid TOML ({error}); fix or delete it") from error
    for field in fields(Settings):
        raw = env.get(f"FSMEM_{field.name.upper()}")
        if raw is not None:
            values[field.name] = raw
    return _coerce(values)


def _coerce(values: dict[str, object]) -> Settings:
    known = {field.name: field for field in fields(Settings)}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise SetupError(f"unknown settings {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    coerced: dict[str, Any] = {}  # each value is made its field's own type below, which mypy cannot follow
    for name, value in values.items():
        kind = type(getattr(Settings, name))
        try:
            if kind is bool and isinstance(value, str):
                coerced[name] = value.strip().lower() in {"1", "true", "yes", "on"}
            else:
                coerced[name] = kind(value)
        except (TypeError, ValueError) as error:
            raise SetupError(f"setting {name} must be a {kind.__name__}, got {value!r}") from error
    settings = dataclasses.replace(Settings(), **coerced)
    _check(settings)
    return settings


def _check(settings: Settings) -> None:
    """The values a type alone does not rule out, refused as the file or variable names them."""
    if settings.watch_daemon not in WATCH_DAEMON_CHOICES:
        raise SetupError(
            f"setting watch_daemon must be one of {', '.join(WATCH_DAEMON_CHOICES)}, not {settings.watch_daemon!r}"
        )
    if not settings.watch_idle > 0:  # also refuses nan
        raise SetupError(f"setting watch_idle must be a number of seconds above 0, not {settings.watch_idle!r}")
