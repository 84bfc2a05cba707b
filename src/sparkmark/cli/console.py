"""``sparkmark console``: the web console over this project's state store."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

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
        "SPARKMARK_CONSOLE_TOKEN. Required to bind beyond 127.0.0.1. Never given as a value on "
        "the command line, where ps would show it.",
    ),
    scheduler: bool = typer.Option(
        True,
        "--scheduler/--no-scheduler",
        help="Start the workflow runs started from the console when no other scheduler leads",
    ),
) -> None:
    """Serve the web console: jobs, runs, bookmarks (reset and rewind), outputs,
    workflows, data quality and the catalog, from the state store the CLI uses."""
    from ..console.server import start

    settings = Settings.from_env()
    token = _read_token(token_file) if token_file else settings.console_token_value
    running = start(
        settings,
        host or settings.console_host,
        settings.console_port if port is None else port,
        token,
        scheduler=scheduler,
    )
    console.print(
        f"sparkmark console: {running.url} (state store {running.store}; Ctrl-C stops it)",
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
