"""What ``fsmem remember`` and ``fsmem review`` share: a conversation file and an OpenAI-compatible model."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable

import click

from fsmem.errors import BadFact, FsmemError, ModelError


def conversation_option(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--from", "conversation_file", required=True, metavar="CONVERSATION.json",
        type=click.Path(dir_okay=False, path_type=Path),
        help="A JSON list of {role, content} messages, or an object with `messages` "
             "(and optionally `title`, `date`). `-` reads stdin.")(command)


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
        raise error(f"{path} is not JSON ({failure}); give a JSON list of "
                    '{"role": ..., "content": ...} messages') from None


def model_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--model-url``, ``--model``, ``--api-key-env``, ``--timeout``, ``--no-thinking`` (see :func:`make_model`)."""
    for option in reversed([
        click.option("--model-url", envvar="FSMEM_MODEL_URL", metavar="URL",
                     help="An OpenAI-compatible base URL, e.g. http://localhost:11434/v1 ($FSMEM_MODEL_URL)."),
        click.option("--model", "model_name", envvar="FSMEM_MODEL", metavar="NAME",
                     help="The model's name on that server ($FSMEM_MODEL)."),
        click.option("--api-key-env", default="OPENAI_API_KEY", show_default=True, metavar="VAR",
                     help="The environment variable holding the API key (sent only when set)."),
        click.option("--timeout", default=600.0, show_default=True, help="Seconds to wait for the model."),
        click.option("--no-thinking", is_flag=True,
                     help="Ask a model that thinks (Qwen3 and the like) not to: sends chat_template_kwargs "
                          "enable_thinking=false (vLLM, llama.cpp, SGLang)."),
    ]):
        command = option(command)
    return command


def make_model(model_url: str | None, model_name: str | None, api_key_env: str, timeout: float,
               no_thinking: bool) -> Any:
    from fsmem.llm import OpenAICompatibleModel

    if not model_url or not model_name:
        raise ModelError("no model: pass --model-url URL and --model NAME (or set $FSMEM_MODEL_URL and "
                         "$FSMEM_MODEL) for an OpenAI-compatible chat-completions server")
    extra = {"chat_template_kwargs": {"enable_thinking": False}} if no_thinking else None
    return OpenAICompatibleModel(model_url, model_name, api_key_env=api_key_env, timeout=timeout,
                                 extra_body=extra)
