"""``fsmem usage``: what the model calls cost, by day and by purpose (chat, review, remember)."""

from __future__ import annotations

from dataclasses import asdict

import click

from fsmem.cli.options import echo_json, json_option, open_root, root_option


@click.command()
@click.option("--days", type=click.IntRange(min=1), metavar="N", help="Only the last N days (UTC).")
@root_option
@json_option
def usage(days: int | None, root: str | None, as_json: bool) -> None:
    """Model calls and tokens by day and purpose: chat, review (the background review), remember.

    Tokens are what the server reported; `~` marks rows where some calls were estimated (a character
    in four) because the server reported none.
    """
    from datetime import UTC, datetime, timedelta

    from fsmem._memory.usage import read_calls, summarize

    memory = open_root(root)
    rows = summarize(read_calls(memory.drive.state))
    if days is not None:
        first = (datetime.now(UTC) - timedelta(days=days - 1)).strftime("%Y-%m-%d")
        rows = [row for row in rows if row.day >= first]
    if as_json:
        echo_json({"usage": [asdict(row) for row in rows]})
        return
    if not rows:
        click.echo("No model calls recorded yet.")
        return
    click.echo(f"{'day':<10}  {'purpose':<8}  {'calls':>6}  {'input tokens':>13}  {'output tokens':>13}")
    for row in rows:
        mark = "~" if row.estimated_calls else " "
        counts = f"{row.calls:>6}  {row.input_tokens:>12,}{mark}  {row.output_tokens:>12,}{mark}"
        click.echo(f"{row.day:<10}  {row.purpose:<8}  {counts}")
    for purpose in sorted({row.purpose for row in rows}):
        chosen = [row for row in rows if row.purpose == purpose]
        click.echo(
            f"total {purpose}: {sum(r.calls for r in chosen)} calls, "
            f"{sum(r.input_tokens for r in chosen):,} input and {sum(r.output_tokens for r in chosen):,} output tokens"
        )
