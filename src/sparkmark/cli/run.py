"""``sparkmark run SCRIPT.py --JOB_NAME n ...``: run a job script with Glue-style arguments."""

from __future__ import annotations

import importlib.abc
import logging
import os
import runpy
import sys
import traceback
from pathlib import Path

from rich.markup import escape

from .. import args as job_args
from ..connectors import missing_connector
from ..engine.masking import mask_text
from ..engine.models import RunState
from ..errors import SparkmarkError
from .output import console, debug_enabled, err_console, fail

log = logging.getLogger("sparkmark.run")


def _prepare_spark_and_glue() -> None:
    """Let Glue-style scripts run unchanged: ``import awsglue`` resolves to sparkmark's
    façade, and a bare ``SparkContext()`` gets a master, the connectors and the catalog."""
    from pyspark.sql import SparkSession

    from ..glue import shim
    from ..settings import Settings
    from ..spark import submit_args, use_this_python

    settings = Settings.from_env()
    shim.install(settings)
    use_this_python()
    if settings.spark_remote:  # Spark Connect: no JVM here
        return
    if SparkSession.getActiveSession() is None and "PYSPARK_SUBMIT_ARGS" not in os.environ:
        os.environ["PYSPARK_SUBMIT_ARGS"] = submit_args(settings)


def _skip_without_spark(script: Path, resolved: job_args.JobArguments) -> bool:
    """Record a skipped run and return True when the job has nothing new to read."""
    from ..engine.masking import mask_arguments
    from ..engine.models import new_run_id
    from ..engine.owner import this_process
    from ..engine.preview import decide_skip, record_skipped_run, script_identity
    from ..engine.store import StateStore
    from ..settings import Settings

    settings = Settings.from_env()
    store = StateStore.from_settings(settings)
    arguments = mask_arguments(job_args.run_arguments(resolved, settings.temp_dir))
    identity = script_identity(str(script))
    decision = decide_skip(
        store, resolved.job_name, option=resolved.bookmark_option, arguments=arguments, script=identity
    )
    if not decision.skip:
        log.info("job %s: running (not skipped: %s)", resolved.job_name, decision.reason)
        return False
    run = record_skipped_run(
        store,
        resolved.job_name,
        run_id=new_run_id(),
        decision=decision,
        arguments=arguments,
        script=identity,
        owner=this_process(),
        lease_seconds=settings.lease_seconds,
    )
    console.print(
        f"run {run.run_id} of job {run.job_name}: [green]{run.state.value}[/] "
        f"(skipped without starting Spark: {decision.reason})",
        highlight=False,
    )
    return True


def _fetch_script(location: str) -> Path:
    """A script named by URL (``s3://bucket/job.py``, as Glue's ScriptLocation), copied
    under the home to run; the copy is taken again at every run."""
    import hashlib

    import fsspec

    from ..engine import storage
    from ..settings import Settings

    settings = Settings.from_env()
    storage.configure(settings)
    target = settings.home / "scripts" / hashlib.sha256(location.encode()).hexdigest()[:16]
    target.mkdir(parents=True, exist_ok=True)
    local = target / location.rstrip("/").rsplit("/", 1)[-1]
    try:
        with fsspec.open(storage.canonical(location), "rb") as source:
            local.write_bytes(source.read())
    except (OSError, ValueError) as exc:
        fail(f"cannot read script {location!r}: {exc}")
    return local


class _EndpointOnImport(importlib.abc.MetaPathFinder):
    """Sets up the Glue endpoint when the script first imports boto3 (most scripts never
    do, and need not pay for it). boto3 is found and loaded as usual; its loader is
    wrapped so the set-up runs just before boto3 executes, outside the import system's
    global lock (the endpoint's thread imports modules of its own)."""

    def __init__(self) -> None:
        self.running = None
        self.done = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "boto3" or self.done:
            return None
        self.done = True
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _SetUpThenLoad(spec.loader, self)
        return spec


class _SetUpThenLoad(importlib.abc.Loader):
    def __init__(self, loader, owner: _EndpointOnImport):
        self.loader, self.owner = loader, owner

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        try:
            self.owner.running = _glue_endpoint()
        except SparkmarkError as exc:
            raise ImportError(f"boto3's Glue endpoint could not be set up: {exc}") from None
        self.loader.exec_module(module)


_SET_FOR_RUN: dict[str, str | None] = {}  # variables set for the script, with what they were


def _set_env(name: str, value: str) -> None:
    _SET_FOR_RUN.setdefault(name, os.environ.get(name))
    os.environ[name] = value


def _restore_env() -> None:
    """Put back what the run changed (matters when the run is in a longer-lived process)."""
    for name, before in _SET_FOR_RUN.items():
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before
    _SET_FOR_RUN.clear()


def _glue_endpoint():
    """Point boto3's Glue client at sparkmark's endpoint and have it sign with the
    endpoint's token. Without AWS credentials of its own, the script uses an endpoint
    already running on this machine for the same home (or one started here) and signs
    with the home's token; with credentials of its own (which it may need for S3), it
    gets an endpoint in this process that also accepts a signature made with them.
    Returns what to stop after."""
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
        _set_env("AWS_ACCESS_KEY_ID", "sparkmark")
        _set_env("AWS_SECRET_ACCESS_KEY", resolve_token(settings.api_token_value, settings.home))
    else:
        started = start_in_thread(settings, also_accept=[own.get_frozen_credentials().secret_key])
        url = started.url
    _set_env("AWS_ENDPOINT_URL_GLUE", url)
    if session.get_config_variable("region") is None:
        _set_env("AWS_DEFAULT_REGION", settings.aws_region or "us-east-1")
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
    ``__main__``; returns the exit code. ``until_caught_up`` and ``max_batches`` bound
    a streaming job (the settings ``SPARKMARK_STREAM_UNTIL_CAUGHT_UP`` and
    ``SPARKMARK_STREAM_MAX_BATCHES``, set for the script's run)."""
    if "://" in str(script) and not str(script).startswith("file://"):
        script = _fetch_script(str(script))
    script = Path(str(script).removeprefix("file://"))
    if not script.is_file():
        fail(f"script {str(script)!r} does not exist")
    try:
        resolved = job_args.resolve(argv, default_job_name=script.stem)
        if skip_if_no_new_data and _skip_without_spark(script, resolved):
            return 0
    except SparkmarkError as exc:
        fail(str(exc))

    if remote:
        if not remote.startswith("sc://"):
            fail(f"--remote takes a Spark Connect URL, sc://host:port, not {remote!r}")
        _set_env("SPARK_REMOTE", remote)
    from ..settings import Settings

    over_connect = bool(Settings.from_env().spark_remote)
    if until_caught_up:
        _set_env("SPARKMARK_STREAM_UNTIL_CAUGHT_UP", "1")
    if max_batches is not None:
        if max_batches < 1:
            fail("--max-batches must be 1 or more")
        _set_env("SPARKMARK_STREAM_MAX_BATCHES", str(max_batches))
    _prepare_spark_and_glue()
    endpoint = _EndpointOnImport()
    if "boto3" in sys.modules:  # imported already (a notebook, a test): set up now
        endpoint.done = True
        try:
            endpoint.running = _glue_endpoint()
        except SparkmarkError as exc:
            fail(str(exc))
    sys.meta_path.insert(0, endpoint)
    from ..runtime import describe_error, running_runs, started_runs, stopping

    already = len(started_runs())
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(script), *argv]
    sys.path.insert(0, str(script.resolve().parent))
    error: BaseException | None = None
    stopping.install()
    try:
        try:
            runpy.run_path(str(script), run_name="__main__")
        except SystemExit as exc:
            if exc.code not in (None, 0):
                error = exc
        except BaseException as exc:  # noqa: BLE001 - the run must be recorded, whatever the script raised
            error = exc
        _end_runs(running_runs(), error)
    except stopping.RunStopped as exc:  # a signal while the runs were being ended: end them stopped
        error = exc
        _end_runs(running_runs(), error)
    finally:
        stopping.uninstall()
        sys.argv, sys.path[:] = saved_argv, saved_path
        if endpoint in sys.meta_path:
            sys.meta_path.remove(endpoint)
        if endpoint.running is not None:
            endpoint.running.stop()
        _restore_env()

    mine = started_runs()[already:]
    failed = error is not None
    for job in mine:
        try:
            run = job.store.get_run(job.run_id)
        except SparkmarkError:
            console.print(
                f"run {job.run_id} of job {job.name}: [red]state unknown[/] (the state store cannot be reached)",
                highlight=False,
            )
            failed = True
            continue
        style = "green" if run.state is RunState.SUCCEEDED else "red"
        console.print(
            f"run {run.run_id} of job {run.job_name}: [{style}]{run.state.value}[/]",
            highlight=False,
        )
        failed = failed or run.state is not RunState.SUCCEEDED
    if error is not None and not isinstance(error, SystemExit):
        reading = mine[-1].reading() if mine else None
        _say_error(error, script, lambda e: describe_error(e, reading), over_connect=over_connect)
    if isinstance(error, stopping.RunStopped):
        return error.exit_code
    if isinstance(error, KeyboardInterrupt):
        return 130
    if error is not None and isinstance(error, SystemExit) and isinstance(error.code, int):
        return error.code
    return 1 if failed else 0


def _end_runs(runs, error: BaseException | None) -> None:
    """End the runs the script left open, as its outcome says."""
    for job in runs:
        try:
            if error is None:
                job.finish_without_commit()
            elif isinstance(error, KeyboardInterrupt):
                job.fail(error, RunState.STOPPED)
            elif isinstance(error, SystemExit):
                job.fail(f"the script exited with status {error.code}")
            else:
                job.fail(error)
        except SparkmarkError as exc:  # the store is out of reach: say so, keep ending the others
            err_console.print(
                f"[bold red]error:[/] run {job.run_id} could not be closed: {escape(mask_text(str(exc)))}",
                highlight=False,
            )


def _say_error(error: BaseException, script: Path, describe, *, over_connect: bool = False) -> None:
    """One ``error:`` line for the run's failure; the traceback too with --debug."""
    from ..runtime import stopping
    from ..settings import Settings

    if debug_enabled(Settings.from_env()):
        err_console.print(
            mask_text("".join(traceback.format_exception(error)).rstrip()), highlight=False, markup=False
        )
    if isinstance(error, KeyboardInterrupt):
        by = error if isinstance(error, stopping.RunStopped) else "stopped by SIGINT"
        message = f"{by}; the run was recorded STOPPED and its staged output discarded"
    elif isinstance(error, SparkmarkError):
        message = str(error)
    elif over_connect and "MASTER_URL_NOT_SET" in str(error):
        message = (
            "the script makes a SparkContext (SparkContext(), GlueContext(sc), RDDs), which a Spark "
            "Connect session does not have: run it without --remote / SPARK_REMOTE, on a classic "
            "session (sparkmark's own Job API runs over Spark Connect)"
        )
    else:
        message = missing_connector(str(error)) or describe(error).splitlines()[0]
        where = _script_line(error, script)
        if where:
            message += f" ({where}; --debug for the traceback)"
    err_console.print(f"[bold red]error:[/] {escape(mask_text(message))}", highlight=False)


def _script_line(error: BaseException, script: Path) -> str | None:
    """Where in the script the error was raised: its innermost frame in the script."""
    here = str(script.resolve())
    found = None
    for frame in traceback.extract_tb(error.__traceback__):
        if frame.filename == here or Path(frame.filename).resolve() == Path(here):
            found = f"{script.name} line {frame.lineno}"
    return found
