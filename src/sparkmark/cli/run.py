"""``sparkmark run SCRIPT.py --JOB_NAME n ...``: run a job script with Glue-style
arguments, through the job host (``sparkmark.host``), and print how it ended."""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

from rich.markup import escape

from ..engine.models import RunState
from ..errors import SparkmarkError
from ..host import HostOutcome, RunRequest, run_request
from ..host.script import ScriptEnvironment
from .output import console, debug_enabled, err_console, fail

log = logging.getLogger("sparkmark.run")


def glue_endpoint(env: ScriptEnvironment):
    """Point boto3's Glue client (and its CloudWatch client, unless the user chose one)
    at sparkmark's endpoint and have it sign with the
    endpoint's token. Without AWS credentials of its own, the script uses an endpoint
    already running on this machine for the same home (or one started here) and signs
    with the home's token; with credentials of its own (which it may need for S3), it
    gets an endpoint in this process that also accepts a signature made with them.
    Returns what to stop after."""
    import os

    from ..access import resolve_token
    from ..api.server import running_endpoint, start_in_thread
    from ..settings import Settings

    if os.environ.get("AWS_ENDPOINT_URL_GLUE"):
        return None  # the user chose an endpoint (perhaps AWS's own)
    # This process's own endpoint is on loopback for this process only: plain HTTP.
    settings = Settings.from_env().model_copy(update={"tls_certfile": None, "tls_keyfile": None})
    import botocore.session  # not boto3: this runs while boto3 is being imported

    session = botocore.session.get_session()
    own = session.get_credentials()
    started = None
    if own is None:
        url = running_endpoint(settings)
        if url is None or not url.startswith("http://"):
            started = start_in_thread(settings)
            url = started.url
        env.set("AWS_ACCESS_KEY_ID", "sparkmark")
        env.set("AWS_SECRET_ACCESS_KEY", resolve_token(settings.api_token_value, settings.home))
    else:
        started = start_in_thread(settings, also_accept=[own.get_frozen_credentials().secret_key])
        url = started.url
    env.set("AWS_ENDPOINT_URL_GLUE", url)
    if not os.environ.get("AWS_ENDPOINT_URL_CLOUDWATCH"):  # put_metric_data lands with the run's metrics
        env.set("AWS_ENDPOINT_URL_CLOUDWATCH", url)
    if session.get_config_variable("region") is None:
        env.set("AWS_DEFAULT_REGION", settings.aws_region or "us-east-1")
    log.info("boto3's Glue client talks to sparkmark at %s", url)
    return started


def run_script(
    script: Path | str,
    argv: list[str],
    *,
    skip_if_no_new_data: bool = False,
    until_caught_up: bool = False,
    max_batches: int | None = None,
    remote: str | None = None,
) -> int:
    """Run ``script`` (a path, or a URL such as ``s3://…``) in this process as
    ``__main__``; print how its runs ended and return the exit code."""
    try:
        request = RunRequest.checked(
            {
                "script": str(script),
                "arguments": list(argv),
                "skip_if_no_new_data": skip_if_no_new_data,
                "until_caught_up": until_caught_up,
                "max_batches": max_batches,
                "remote": remote,
            }
        )
    except SparkmarkError as exc:
        fail(str(exc))
    return run(request, keep_output=True)


def run(request: RunRequest, *, keep_output: bool = False) -> int:
    """Run ``request`` through the job host and print its outcome; the exit code. With
    ``keep_output`` (a run from a terminal; a scheduler keeps its runs' output itself),
    what the run printed is also kept with each run it started."""
    from ..engine.run_logs import Capture
    from ..settings import Settings

    capture = Capture(Settings.from_env().home) if keep_output else None
    try:
        with capture if capture is not None else contextlib.nullcontext():
            try:
                outcome = run_request(request, endpoint=glue_endpoint)
            except SparkmarkError as exc:
                fail(str(exc))
            report(outcome)
        if capture is not None:
            capture.keep([(line.job_name, line.run_id) for line in outcome.runs])
    finally:
        if capture is not None:
            capture.discard()
    return outcome.code


def report(outcome: HostOutcome) -> None:
    if outcome.skipped is not None:
        console.print(escape(outcome.skipped), highlight=False)
    for problem in outcome.problems:
        err_console.print(f"[bold red]error:[/] {escape(problem)}", highlight=False)
    for line in outcome.runs:
        if line.state is None:
            console.print(
                f"run {line.run_id} of job {line.job_name}: [red]state unknown[/] "
                "(the state store cannot be reached)",
                highlight=False,
            )
            continue
        style = "green" if line.state is RunState.SUCCEEDED else "red"
        console.print(
            f"run {line.run_id} of job {line.job_name}: [{style}]{line.state.value}[/]", highlight=False
        )
    if outcome.error is not None:
        if outcome.traceback and debug_enabled():
            err_console.print(outcome.traceback, highlight=False, markup=False)
        err_console.print(f"[bold red]error:[/] {escape(outcome.error)}", highlight=False)
