"""``fsmem ui``: a page for people to browse, edit, compare and approve memory, on loopback behind a token.

The command imports only click; the page's stack (Starlette, uvicorn, Jinja2, markdown-it-py: the
``ui`` extra) loads when it runs.
"""

from __future__ import annotations

import ipaddress
import socket

import click

from fsmem._errors import SetupError
from fsmem.cli.options import json_line, json_option, open_memory, root_option

LOOPBACK = "127.0.0.1"
WILDCARDS = ("0.0.0.0", "::")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@click.command()
@root_option
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True, help="The port (0: any free one).")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in your browser.")
@click.option(
    "--host",
    default=LOOPBACK,
    show_default=True,
    help=(
        "The address to listen on; anything but loopback needs --token (the page is then reachable by "
        "others, over plain HTTP: prefer an SSH tunnel or a TLS proxy)."
    ),
)
@click.option("--token", default=None, help="The token the page asks for (default: a new one each time).")
@json_option
def ui(root: str | None, port: int, open_browser: bool, host: str, token: str | None, as_json: bool) -> None:
    """Serve a page for people: the levels, files rendered and as source, edits, history, facts,
    proposals and search. Prints its address with a token; every request needs it (then a cookie).
    Ctrl-C stops it. With --json the address comes as one JSON line (url, port, token), for scripts."""
    try:
        from fsmem.cli.ui.app import bind, build_app, serve
        from fsmem.cli.ui.guard import Keys, loopback_hosts, new_token
    except ImportError as error:
        from fsmem._env.resources import install_command

        raise SetupError(f"the page needs the ui extra ({error}); install it with {install_command('ui')}") from error
    if not _is_loopback(host) and not token:
        raise click.UsageError(
            f"--host {host} makes the page reachable from other machines; give it a token of your own "
            "with --token (at least 16 characters), or leave --host out to stay on 127.0.0.1"
        )
    if token is not None and len(token) < 16:
        raise click.UsageError("--token must be at least 16 characters, so it cannot be guessed")
    try:
        sock = bind(host, port)
    except OSError as error:
        raise SetupError(f"cannot listen on {host}:{port} ({error.strerror}); choose another --port") from error
    try:
        memory = open_memory(root)
    except BaseException:
        sock.close()
        raise
    from fsmem.cli.watch import serve_while_running

    serve_while_running(memory)  # the shell's searches answered here while the page is served
    bound = sock.getsockname()[1]
    if host in WILDCARDS:  # every address of this machine: reached by names it cannot list, the token guards it
        shown_host, hosts = socket.gethostname(), None
    else:
        shown_host = f"[{host}]" if ":" in host else host
        hosts = loopback_hosts(bound) | {f"{shown_host}:{bound}"}
    keys = Keys(token or new_token(), bound, hosts)
    url = f"http://{shown_host}:{bound}/?token={keys.token}"
    if as_json:
        click.echo(json_line({"url": url, "port": bound, "token": keys.token, "project": memory.name}))
    else:
        click.echo(f"fsmem ui: {memory.root or memory.name}\n  {url}\nCtrl-C stops it.")
    if open_browser:
        import webbrowser

        webbrowser.open(url)
    try:
        serve(build_app(memory, keys), sock)
    finally:
        memory.close()
