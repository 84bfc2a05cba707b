"""``sparkmark api``: serve Glue's API on this machine, for boto3, the AWS CLI and
the tools built on them."""

from __future__ import annotations

import contextlib

import typer

from ..settings import Settings
from .output import one_line_errors


@one_line_errors
def api_command(
    host: str = typer.Option(
        None, "--host", help="Address to bind (default: $SPARKMARK_API_HOST or 127.0.0.1)"
    ),
    port: int = typer.Option(None, "--port", help="Port (default: $SPARKMARK_API_PORT or 4599; 0 picks one)"),
    scheduler: bool = typer.Option(
        True,
        "--scheduler/--no-scheduler",
        help="Also start what the API queues, when no other scheduler leads",
    ),
    certfile: str = typer.Option(None, "--certfile", help="Serve HTTPS with this certificate (PEM)"),
    keyfile: str = typer.Option(None, "--keyfile", help="The certificate's private key (PEM)"),
) -> None:
    """Serve the Glue API (AWS JSON 1.1) from sparkmark's catalog, jobs, crawlers and
    workflows. Point clients at it with AWS_ENDPOINT_URL_GLUE=http://HOST:PORT or
    `aws glue --endpoint-url http://HOST:PORT …`."""
    from ..api.server import serve

    settings = Settings.from_env().with_tls(certfile, keyfile)
    with contextlib.suppress(KeyboardInterrupt):
        serve(
            settings,
            host or settings.api_host,
            settings.api_port if port is None else port,
            scheduler=scheduler,
        )
