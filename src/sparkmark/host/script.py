"""Running a job script in this process for a ``RunRequest``.

The script runs as ``__main__`` with its Glue-style arguments in ``sys.argv``:
``import awsglue`` resolves to sparkmark's façade, a bare ``SparkContext()`` gets a
master, the connectors and the catalog, and the script's first ``import boto3`` sets up
the Glue endpoint its client talks to (the caller's hook, since the endpoint is a door).
In a process whose Spark already runs, the script's ``SparkContext()`` is that one
(``shared_context``).
Runs the script leaves open are ended as its outcome says: finished without a commit
when it returned, failed or stopped when it did not. What happened comes back as a
``HostOutcome`` for the caller to print; nothing here writes to the terminal.
"""

from __future__ import annotations

import importlib.abc
import logging
import os
import runpy
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from .. import args as job_args
from ..connectors import missing_connector
from ..engine.masking import mask_arguments, mask_text
from ..engine.models import RunState, new_run_id
from ..engine.schema import utcnow
from ..errors import ArgumentError, SparkmarkError
from ..settings import Settings
from .request import RunRequest
from .shared_context import sharing

log = logging.getLogger("sparkmark.run")

# A hook that points boto3's Glue client at an endpoint: returns what to stop after the
# run (or None), and raises SparkmarkError when it cannot.
EndpointHook = Callable[[], Any]


@dataclass(frozen=True)
class RunLine:
    """One run the script started, as the state store has it at the end."""

    run_id: str
    job_name: str
    state: RunState | None  # None: the state store could not be reached


@dataclass
class HostOutcome:
    code: int
    runs: list[RunLine] = field(default_factory=list)
    skipped: str | None = None  # why the run was recorded skipped without starting Spark
    error: str | None = None  # the run's failure, in one line
    traceback: str | None = None  # the failure's traceback, for --debug
    problems: list[str] = field(default_factory=list)  # runs that could not be closed

    def report(self, out: TextIO, err: TextIO) -> None:
        """How the run ended, as plain lines (a hosted run's log; the CLI prints its own)."""
        if self.skipped is not None:
            print(self.skipped, file=out)
        for problem in self.problems:
            print(f"error: {problem}", file=err)
        for line in self.runs:
            state = (
                "state unknown (the state store cannot be reached)"
                if line.state is None
                else line.state.value
            )
            print(f"run {line.run_id} of job {line.job_name}: {state}", file=out)
        if self.error is not None:
            print(f"error: {self.error}", file=err)


def _prepare_spark_and_glue(settings: Settings) -> None:
    """Let Glue-style scripts run unchanged: ``import awsglue`` resolves to sparkmark's
    façade, and a bare ``SparkContext()`` gets a master, the connectors and the catalog."""
    from pyspark.sql import SparkSession

    from ..glue import shim
    from ..spark import submit_args, use_this_python

    shim.install(settings)
    use_this_python()
    if settings.spark_remote:  # Spark Connect: no JVM here
        return
    if SparkSession.getActiveSession() is None and "PYSPARK_SUBMIT_ARGS" not in os.environ:
        os.environ["PYSPARK_SUBMIT_ARGS"] = submit_args(settings)


def _glue_spark_parameters(resolved: job_args.JobArguments, env: ScriptEnvironment) -> None:
    """Glue's job parameters that configure Spark rather than the script:
    ``--datalake-formats`` (the table formats' jars) and ``--conf`` (Spark settings, in
    Glue's ``k=v --conf k2=v2`` form, over the ones the settings already give)."""
    import json

    from ..table_formats import glue_conf, parse_formats

    formats = parse_formats(resolved.values.get("datalake-formats"))
    confs = glue_conf(resolved.values.get("conf"))
    if formats:
        env.set("SPARKMARK_DATALAKE_FORMATS", ",".join(formats))
    if confs:
        given = Settings.from_env().spark_conf_map()
        env.set("SPARKMARK_SPARK_CONF", json.dumps({**given, **confs}))
    if (formats or confs) and _running_spark():
        log.warning(
            "--datalake-formats / --conf apply to a Spark session this run starts; this process's "
            "session is already running, so they are not applied to it"
        )


def _python_modules(resolved: job_args.JobArguments, settings: Settings) -> list[Path]:
    """``--additional-python-modules`` (and ``--python-modules-installer-option``) and the
    Python package of each ``--datalake-formats`` format (Delta's ``delta``), installed
    before the script runs and first on its path after its own folder, as Glue does."""
    from .. import python_modules
    from ..table_formats import parse_formats

    return python_modules.for_run(
        resolved.values, parse_formats(resolved.values.get("datalake-formats")), settings.home
    )


def _connector_needs(script: Path, request: RunRequest, env: ScriptEnvironment) -> None:
    """Tell the session this run starts which connectors its script and arguments show
    it uses, so that a missing one is fetched before Spark starts."""
    from ..connectors import needed_by

    try:
        text = script.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    needs = needed_by([text, *request.arguments])
    if needs:
        env.set("SPARKMARK_CONNECTOR_NEEDS", ",".join(needs))


def _endpoint_for_glue_catalogs(
    settings: Settings, env: ScriptEnvironment, endpoint: Callable[[ScriptEnvironment], Any] | None
) -> Any:
    """Iceberg's GlueCatalog is a Glue client inside the JVM: when the Spark settings
    declare one, the Glue endpoint is set up before Spark starts, and each such catalog
    is pointed at it (``glue.endpoint``, ``client.region``) and at the S3 endpoint AWS's
    variables name (``s3.endpoint``, path-style), unless its settings already say.
    Returns what to stop after the run, or False when there is no such catalog."""
    import json

    from ..table_formats import glue_catalogs, point_glue_catalogs

    confs = settings.spark_conf_map()
    if not glue_catalogs(confs.items()) or endpoint is None or settings.spark_remote:
        return False
    started = endpoint(env)
    url = os.environ.get("AWS_ENDPOINT_URL_GLUE")
    region = settings.aws_region or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    catalogs = point_glue_catalogs(confs, url, region, settings.aws_endpoint_url_s3)
    env.set("SPARKMARK_SPARK_CONF", json.dumps(confs))
    log.info("Iceberg catalog(s) %s talk to sparkmark's Glue API at %s", ", ".join(catalogs), url)
    return started


def _running_spark() -> bool:
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession() is not None


def _skip_without_spark(script: Path, resolved: job_args.JobArguments, settings: Settings) -> str | None:
    """Record a skipped run when the job has nothing new to read; the line saying so."""
    from ..engine.masking import mask_arguments
    from ..engine.models import new_run_id
    from ..engine.owner import this_process
    from ..engine.preview import decide_skip, record_skipped_run, script_identity
    from ..engine.store import StateStore

    store = StateStore.from_settings(settings)
    arguments = mask_arguments(job_args.run_arguments(resolved, settings.temp_dir))
    identity = script_identity(str(script))
    decision = decide_skip(
        store, resolved.job_name, option=resolved.bookmark_option, arguments=arguments, script=identity
    )
    if not decision.skip:
        log.info("job %s: running (not skipped: %s)", resolved.job_name, decision.reason)
        return None
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
    return (
        f"run {run.run_id} of job {run.job_name}: {run.state.value} "
        f"(skipped without starting Spark: {decision.reason})"
    )


def fetch_script(location: str, settings: Settings) -> Path:
    """A script named by URL (``s3://bucket/job.py``, as Glue's ScriptLocation), copied
    under the home to run; the copy is taken again at every run."""
    import hashlib

    import fsspec

    from ..engine import storage

    storage.configure(settings)
    target = settings.home / "scripts" / hashlib.sha256(location.encode()).hexdigest()[:16]
    target.mkdir(parents=True, exist_ok=True)
    local = target / location.rstrip("/").rsplit("/", 1)[-1]
    try:
        with fsspec.open(storage.canonical(location), "rb") as source:
            local.write_bytes(source.read())
    except (OSError, ValueError) as exc:
        raise ArgumentError(f"cannot read script {location!r}: {exc}") from None
    return local


class _EndpointOnImport(importlib.abc.MetaPathFinder):
    """Sets up the Glue endpoint when the script first imports boto3 (most scripts never
    do, and need not pay for it). boto3 is found and loaded as usual; its loader is
    wrapped so the set-up runs just before boto3 executes, outside the import system's
    global lock (the endpoint's thread imports modules of its own)."""

    def __init__(self, hook: EndpointHook) -> None:
        self.hook = hook
        self.running: Any = None
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
            self.owner.running = self.owner.hook()
        except SparkmarkError as exc:
            raise ImportError(f"boto3's Glue endpoint could not be set up: {exc}") from None
        self.loader.exec_module(module)


class ScriptEnvironment:
    """Variables set for the script's run, put back as they were afterwards (which
    matters when the run is in a longer-lived process: a notebook, a test)."""

    def __init__(self) -> None:
        self._before: dict[str, str | None] = {}

    def set(self, name: str, value: str) -> None:
        self._before.setdefault(name, os.environ.get(name))
        os.environ[name] = value

    def restore(self) -> None:
        for name, before in self._before.items():
            if before is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = before
        self._before.clear()


def run_request(
    request: RunRequest, *, endpoint: Callable[[ScriptEnvironment], Any] | None = None
) -> HostOutcome:
    """Run ``request``'s script in this process as ``__main__``. ``endpoint`` sets up
    the Glue endpoint for a script that imports boto3 (given the run's environment, to
    set its variables in). Raises SparkmarkError (one line) when the run cannot begin."""
    env = ScriptEnvironment()
    settings = Settings.from_env()
    script_name = request.script
    if "://" in script_name and not script_name.startswith("file://"):
        script = fetch_script(script_name, settings)
    else:
        script = Path(script_name.removeprefix("file://"))
    if not script.is_file():
        raise ArgumentError(f"script {str(script)!r} does not exist")
    resolved = job_args.resolve(list(request.arguments), default_job_name=script.stem)
    try:
        for name, value in request.environment().items():
            env.set(name, value)
        _glue_spark_parameters(resolved, env)
        _connector_needs(script, request, env)
        settings = Settings.from_env()
        modules = _python_modules(resolved, settings)
        if request.skip_if_no_new_data:
            skipped = _skip_without_spark(script, resolved, settings)
            if skipped is not None:
                return HostOutcome(0, skipped=skipped)
        started = _endpoint_for_glue_catalogs(settings, env, endpoint)
        if started is not False:
            settings = Settings.from_env()
        _prepare_spark_and_glue(settings)
        return _run(
            script, request, settings, env, endpoint, None if started is False else started, modules, resolved
        )
    finally:
        env.restore()


def _run(
    script: Path,
    request: RunRequest,
    settings: Settings,
    env: ScriptEnvironment,
    endpoint: Callable[[ScriptEnvironment], Any] | None,
    started: Any = None,
    modules: list[Path] | None = None,
    resolved: job_args.JobArguments | None = None,
) -> HostOutcome:
    from ..runtime import describe_error, running_runs, started_runs, stopping
    from ..runtime.run import expect_run, settle_metrics

    began = utcnow()

    hook = _EndpointOnImport(lambda: endpoint(env) if endpoint is not None else None)
    if started is not None:  # set up already, for the JVM's Glue clients
        hook.done = True
        hook.running = started
    elif "boto3" in sys.modules:  # imported already (a notebook, a test): set up now
        hook.done = True
        hook.running = hook.hook()
    sys.meta_path.insert(0, hook)
    outcome = HostOutcome(0)
    already = len(started_runs())
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(script), *request.arguments]
    sys.path[:0] = [str(script.resolve().parent), *(str(m) for m in modules or [])]
    error: BaseException | None = None
    stopping.install()
    try:
        # The first run the script starts is this one (an invalid id is refused here, and
        # what was set up above is put back by the finally below).
        expect_run(request.run_id, request.attempt or 0)
        try:
            with sharing():
                runpy.run_path(str(script), run_name="__main__")
        except SystemExit as exc:
            if exc.code not in (None, 0):
                error = exc
        except BaseException as exc:  # noqa: BLE001 - the run must be recorded, whatever the script raised
            error = exc
        _end_runs(running_runs(), error, outcome)
    except stopping.RunStopped as exc:  # a signal while the runs were being ended: end them stopped
        error = exc
        _end_runs(running_runs(), error, outcome)
    finally:
        settle_metrics()  # the runs' last metrics samples, taken after their commits
        expect_run(None)
        stopping.uninstall()
        sys.argv, sys.path[:] = saved_argv, saved_path
        if hook in sys.meta_path:
            sys.meta_path.remove(hook)
        if hook.running is not None:
            hook.running.stop()

    mine = started_runs()[already:]
    failed = error is not None
    for job in mine:
        try:
            state: RunState | None = job.store.get_run(job.run_id).state
        except SparkmarkError:
            state = None
        outcome.runs.append(RunLine(job.run_id, job.name, state))
        failed = failed or state is not RunState.SUCCEEDED
    if error is not None and not isinstance(error, SystemExit):
        reading = mine[-1].reading() if mine else None
        outcome.error = _error_line(
            error, script, lambda e: describe_error(e, reading), over_connect=bool(settings.spark_remote)
        )
        outcome.traceback = mask_text("".join(traceback.format_exception(error)).rstrip())
    if isinstance(error, stopping.RunStopped):
        outcome.code = error.exit_code
    elif isinstance(error, KeyboardInterrupt):
        outcome.code = 130
    elif error is not None and isinstance(error, SystemExit) and isinstance(error.code, int):
        outcome.code = error.code
    else:
        outcome.code = 1 if failed else 0
    if not mine and resolved is not None and request.run_id is None:
        # A scheduler's run is recorded by its supervisor when the process ends, outside
        # whatever the script changed in this process (a patched json.dumps, say).
        _record_plain_run(resolved, settings, began, error, outcome)
    return outcome


def _record_plain_run(
    resolved: job_args.JobArguments,
    settings: Settings,
    began: datetime,
    error: BaseException | None,
    outcome: HostOutcome,
) -> None:
    """The script started no run of its own (plain Python, or it failed before
    ``Job.init``): it is still one run of its job, recorded ended as Glue's run of it
    ends, under a new id."""
    from ..engine.names import check_name
    from ..engine.store import StateStore
    from ..runtime import stopping

    try:
        check_name("job name", resolved.job_name)
    except ArgumentError:
        return  # refused before any run could begin: no job of that name is recorded
    if isinstance(error, KeyboardInterrupt):
        state = RunState.STOPPED
        why = str(error) if isinstance(error, stopping.RunStopped) else "stopped by SIGINT"
    elif outcome.code != 0:
        state = RunState.FAILED
        why = outcome.error or f"the script exited with status {outcome.code}"
    else:
        state, why = RunState.SUCCEEDED, None
    run_id = new_run_id()
    try:
        store = StateStore.from_settings(settings)
        try:
            store.record_ended_run(
                job_name=resolved.job_name,
                run_id=run_id,
                attempt=0,
                option=resolved.bookmark_option,
                arguments=mask_arguments(resolved.values),
                state=state,
                started_at=began,
                error=why,
            )
        finally:
            store.close()
    except SparkmarkError as exc:
        outcome.problems.append(f"run {run_id} could not be recorded: {mask_text(str(exc))}")
        return
    outcome.runs.append(RunLine(run_id, resolved.job_name, state))


def _end_runs(runs, error: BaseException | None, outcome: HostOutcome) -> None:
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
            outcome.problems.append(f"run {job.run_id} could not be closed: {mask_text(str(exc))}")


def _error_line(error: BaseException, script: Path, describe, *, over_connect: bool = False) -> str:
    """The run's failure in one line."""
    from ..runtime import stopping

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
    return mask_text(message)


def _script_line(error: BaseException, script: Path) -> str | None:
    """Where in the script the error was raised: its innermost frame in the script."""
    here = str(script.resolve())
    found = None
    for frame in traceback.extract_tb(error.__traceback__):
        if frame.filename == here or Path(frame.filename).resolve() == Path(here):
            found = f"{script.name} line {frame.lineno}"
    return found
