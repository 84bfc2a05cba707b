"""``sparkmark console``: the web console over this project's state store."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from ..access import token_path
from ..errors import ConfigError
from ..settings import Settings
from .output import console, one_line_errors


def _read_token(source: str) -> str:
    try:
        text = sys.stdin.readline() if source == "-" else Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the console token from {source}: {exc.strerror}") from None
    token = text.strip()
    if not token:
        raise ConfigError(f"the console token in {source} is empty")
    return token


@one_line_errors
def console_command(
    host: str = typer.Option(
        None, "--host", help="Address to bind (default: $SPARKMARK_CONSOLE_HOST or 127.0.0.1)"
    ),
    port: int = typer.Option(
        None, "--port", help="Port (default: $SPARKMARK_CONSOLE_PORT or 8080; 0 picks one)"
    ),
    token_file: str = typer.Option(
        None,
        "--token-file",
        help="A file holding the token every request must carry (- reads it from stdin); or set "
        "SPARKMARK_CONSOLE_TOKEN. Without either, the home's own token ($SPARKMARK_HOME/token) is "
        "used. Beyond 127.0.0.1 it must have 32 characters or more. Never given as a value on "
        "the command line, where ps would show it.",
    ),
    scheduler: bool = typer.Option(
        True,
        "--scheduler/--no-scheduler",
        help="Start the workflow runs started from the console when no other scheduler leads",
    ),
    certfile: str = typer.Option(None, "--certfile", help="Serve HTTPS with this certificate (PEM)"),
    keyfile: str = typer.Option(None, "--keyfile", help="The certificate's private key (PEM)"),
) -> None:
    """Serve the web console: jobs, runs, bookmarks (reset and rewind), outputs,
    workflows, data quality and the catalog, from the state store the CLI uses."""
    from ..console.server import start

    settings = Settings.from_env().with_tls(certfile, keyfile)
    token = _read_token(token_file) if token_file else settings.console_token_value
    running = start(
        settings,
        host or settings.console_host,
        settings.console_port if port is None else port,
        token,
        scheduler=scheduler,
    )
    # The sign-in URL holds the token: shown on a terminal, never written where output
    # is kept (a service's log), where the token file's path is shown instead.
    if sys.stdout.isatty():
        signin = f"sign in by opening {running.signin_url}"
    else:
        where = token_file or ("SPARKMARK_CONSOLE_TOKEN" if settings.console_token_value else None)
        signin = f"sign in at {running.url}/login with the token in {where or token_path(settings.home)}"
    console.print(
        f"sparkmark console: {running.url} (state store {running.store}; Ctrl-C stops it); {signin}",
        highlight=False,
        markup=False,
    )
    try:
        while running.thread.is_alive():
            running.thread.join(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        running.stop()
