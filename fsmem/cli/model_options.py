"""What the model-facing commands share: the model options (demo, chat, remember, review, bin/eval) and a
conversation file (remember, review)."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

import fsmem
from fsmem._errors import BadFact, FsmemError
from fsmem._llm.model import DEFAULT_API_KEY_ENV, DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT, ModelSettings


def conversation_option(command: Callable[..., Any], *, required: bool = True) -> Callable[..., Any]:
    return click.option(
        "--from",
        "conversation_file",
        required=required,
        metavar="CONVERSATION.json",
        type=click.Path(dir_okay=False, path_type=Path),
        help="A JSON list of {role, content} messages, or an object with `messages` "
        "(and optionally `title`, `date`). `-` reads stdin.",
    )(command)


def read_conversation(path: Path, error: type[FsmemError] = BadFact) -> Any:
    """The JSON in ``path`` (``-``: stdin); ``error`` is raised, with what to do, when it cannot be read."""
    try:
        raw = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
    except OSError as failure:
        raise error(f"cannot read {path} ({failure.strerror}); give the path of a conversation JSON file") from None
    except UnicodeDecodeError:
        raise error(f"{path} is not UTF-8 text; save the conversation as UTF-8 JSON") from None
    try:
        return json.loads(raw)
    except ValueError as failure:
        raise error(
            f'{path} is not JSON ({failure}); give a JSON list of {{"role": ..., "content": ...}} messages'
        ) from None


def model_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The model options of every model-facing command, collected into one ``model_settings``
    argument (a :class:`fsmem._llm.model.ModelSettings`); build the model with :func:`make_model`.

    ``--model-url`` ($FSMEM_MODEL_URL), ``--model`` ($FSMEM_MODEL), ``--api-key-env``, ``--timeout``
    ($FSMEM_TIMEOUT), ``--max-tokens``, ``--temperature``, ``--no-thinking``, ``--context-window``
    ($FSMEM_MODEL_WINDOW).
    """

    @functools.wraps(command)
    def collect(
        *args: Any,
        model_url: str | None,
        model_name: str | None,
        api_key_env: str,
        timeout: float,
        max_tokens: int,
        temperature: float,
        no_thinking: bool,
        context_window: int | None,
        **kwargs: Any,
    ) -> Any:
        settings = ModelSettings(
            url=model_url or None,
            model=model_name or None,
            api_key_env=api_key_env,
            timeout=timeout,
            max_tokens=max_tokens,
            temperature=temperature,
            no_thinking=no_thinking,
            context_window=context_window,
        )
        return command(*args, model_settings=settings, **kwargs)

    wrapped: Callable[..., Any] = collect
    for option in reversed(
        [
            click.option(
                "--model-url",
                envvar="FSMEM_MODEL_URL",
                metavar="URL",
                help="An OpenAI-compatible base URL, e.g. http://localhost:8080/v1 ($FSMEM_MODEL_URL).",
            ),
            click.option(
                "--model",
                "model_name",
                envvar="FSMEM_MODEL",
                metavar="NAME",
                help="The model's name on that server ($FSMEM_MODEL).",
            ),
            click.option(
                "--api-key-env",
                default=DEFAULT_API_KEY_ENV,
                show_default=True,
                metavar="VAR",
                help="The environment variable holding the API key (sent only when set).",
            ),
            click.option(
                "--timeout",
                envvar="FSMEM_TIMEOUT",
                default=DEFAULT_TIMEOUT,
                show_default=True,
                type=click.FloatRange(min=0, min_open=True),
                help="Seconds to wait for each model answer ($FSMEM_TIMEOUT).",
            ),
            click.option(
                "--max-tokens",
                default=DEFAULT_MAX_TOKENS,
                show_default=True,
                type=click.IntRange(min=1),
                help="At most this many tokens per answer, so a rambling model stops.",
            ),
            click.option(
                "--temperature",
                default=0.0,
                show_default=True,
                type=click.FloatRange(min=0),
                help="Sampling temperature (0: the most likely answer).",
            ),
            click.option(
                "--no-thinking",
                is_flag=True,
                help="Ask a model that thinks (Qwen3 and the like) not to: sends chat_template_kwargs "
                "enable_thinking=false (vLLM, llama.cpp, SGLang).",
            ),
            click.option(
                "--context-window",
                envvar="FSMEM_MODEL_WINDOW",
                type=click.IntRange(min=1),
                metavar="TOKENS",
                help="The model's context window; a review then spends up to 3/4 of it (default: 120,000 "
                "tokens in all) ($FSMEM_MODEL_WINDOW).",
            ),
        ]
    ):
        wrapped = option(wrapped)
    return wrapped


def make_model(settings: ModelSettings) -> Any:
    """The model the settings name (:func:`fsmem.build_model`, which loads the HTTP client); MODEL_ERROR
    when there is none."""
    return fsmem.build_model(settings)
