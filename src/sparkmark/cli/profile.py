"""``sparkmark aws-profile``: one step for boto3 and AWS CLI users. It writes a named
AWS profile whose Glue endpoint is sparkmark's and whose secret access key is the
endpoint's token, so ``AWS_PROFILE=sparkmark aws glue get-jobs`` (or
``boto3.Session(profile_name="sparkmark").client("glue")``) is signed as the endpoint
requires. Other profiles in the files are kept as they are.

The endpoint is named in the profile's own ``services`` section, which botocore and
the AWS CLI read (service-specific endpoints); nothing else of the user's
configuration points at sparkmark.
"""

from __future__ import annotations

import configparser
import os
from pathlib import Path

import typer

from ..errors import ConfigError
from ..settings import Settings
from .output import console, one_line_errors


def _aws_file(configured: Path | None, default: str) -> Path:
    return Path(configured or Path.home() / ".aws" / default).expanduser()


def _update(path: Path, sections: dict[str, dict[str, str]], *, private: bool) -> None:
    parser = configparser.RawConfigParser()
    try:
        parser.read(path, encoding="utf-8")
    except configparser.Error as exc:
        raise ConfigError(f"cannot read the AWS file {path}: {str(exc).splitlines()[0]}") from None
    for name, values in sections.items():
        if parser.has_section(name):
            parser.remove_section(name)
        parser.add_section(name)
        for key, value in values.items():
            parser.set(name, key, value)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    if private:
        os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        parser.write(out)


def write_profile(settings: Settings, name: str, endpoint: str) -> tuple[Path, Path]:
    """Write profile ``name`` (config and credentials); returns both files."""
    from ..access import resolve_token

    token = resolve_token(settings.api_token_value, settings.home)
    config = _aws_file(settings.aws_config_file, "config")
    credentials = _aws_file(settings.aws_shared_credentials_file, "credentials")
    services = f"sparkmark-{name}"
    _update(
        config,
        {
            f"profile {name}": {"region": settings.aws_region or "us-east-1", "services": services},
            # Glue, and the CloudWatch Logs and STS calls Glue's tools make beside it.
            f"services {services}": dict.fromkeys(
                ("glue", "cloudwatch_logs", "cloudwatch", "sts"), f"\nendpoint_url = {endpoint}"
            ),
        },
        private=False,
    )
    _update(
        credentials, {name: {"aws_access_key_id": "sparkmark", "aws_secret_access_key": token}}, private=True
    )
    return config, credentials


@one_line_errors
def profile_command(
    name: str = typer.Option("sparkmark", "--name", help="The profile's name"),
    endpoint: str = typer.Option(
        None,
        "--endpoint",
        help="The endpoint's URL (default: the one running for this home, else "
        "http(s)://$SPARKMARK_API_HOST:$SPARKMARK_API_PORT)",
    ),
) -> None:
    """Write an AWS profile that talks to sparkmark's Glue API endpoint, signed with its
    token: then AWS_PROFILE=NAME for the AWS CLI, boto3 and the tools built on them."""
    from ..api.server import running_endpoint

    settings = Settings.from_env()
    if not endpoint:
        scheme = "https" if settings.tls_certfile else "http"
        endpoint = running_endpoint(settings) or f"{scheme}://{settings.api_host}:{settings.api_port}"
    config, credentials = write_profile(settings, name, endpoint)
    console.print(
        f"profile {name}: Glue endpoint {endpoint}, signed with the endpoint's token "
        f"(written to {config} and {credentials}); use it with AWS_PROFILE={name}",
        highlight=False,
        markup=False,
    )
