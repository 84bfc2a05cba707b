"""A Glue script run for a test, as ``sparkmark run`` would run it, in the test's process
and its warm Spark; and what the run did: its run record, what each source read, the
bookmark it left and the outputs it wrote.

Keyword arguments are the job's arguments: ``input_path="s3://b/in"`` is
``--input_path s3://b/in``, and a Glue parameter spelled with hyphens is written with
underscores (``job_bookmark_option="job-bookmark-enable"`` is
``--job-bookmark-option job-bookmark-enable``). ``JOB_NAME`` names the job (default: the
script's name). As on Glue, bookmarks are off unless ``job_bookmark_option`` turns them on.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..args import GLUE_PARAMETERS
from ..engine.models import BookmarkVersion, OutputRecord, RunRecord
from ..engine.store import StateStore
from ..errors import SparkmarkError
from ..host import RunRequest, run_request
from ..settings import Settings


def glue_arguments(job_name: str | None, script: Path, args: Mapping[str, Any]) -> list[str]:
    """``--name value`` pairs for ``args``; Glue's own parameters take their hyphens."""
    argv = ["--JOB_NAME", job_name or script.stem]
    for key, value in args.items():
        hyphenated = key.replace("_", "-")
        name = hyphenated if hyphenated in GLUE_PARAMETERS else key
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        argv += [f"--{name}", text]
    return argv


@dataclass(frozen=True)
class SourceRead:
    """What one source (one ``transformation_ctx``) of the run read."""

    ctx: str
    files: tuple[str, ...]  # the files the run's manifest lists (file and S3 sources)
    metrics: dict[str, Any]  # files_listed, files_read, files_new, files_modified, bytes_read, …

    @property
    def files_read(self) -> int:
        return int(self.metrics.get("files_read") or len(self.files))


@dataclass(frozen=True)
class GlueJobRun:
    """A finished run of a Glue script: ``succeeded``, its ``run`` record, ``reads`` per
    source, the ``bookmark`` it left and its ``outputs``."""

    job_name: str
    exit_code: int
    error: str | None
    traceback: str | None
    run: RunRecord | None  # the last run the script started (None: it started none)
    reads: dict[str, SourceRead] = field(default_factory=dict)
    bookmark: BookmarkVersion | None = None  # the job's bookmark after the run
    outputs: list[OutputRecord] = field(default_factory=list)
    runs: list[RunRecord] = field(default_factory=list)  # every run the script started

    @property
    def state(self) -> str:
        """Glue's run state. A script that started no run of its own (it failed before
        ``Job.init``, or never calls it) ended as Glue's run of it would: ``FAILED`` or
        ``SUCCEEDED``."""
        if self.run is not None:
            return self.run.state.value
        return "SUCCEEDED" if self.succeeded else "FAILED"

    @property
    def succeeded(self) -> bool:
        return self.exit_code == 0 and self.error is None

    def files_read(self, ctx: str | None = None) -> list[str]:
        """The files one source read (``ctx``), or every source's, sorted."""
        reads = [self.reads[ctx]] if ctx is not None else list(self.reads.values())
        if ctx is not None and ctx not in self.reads:
            raise KeyError(f"the run has no source {ctx!r}; its sources are {sorted(self.reads)}")
        return sorted(f for r in reads for f in r.files)

    def assert_succeeded(self) -> GlueJobRun:
        if not self.succeeded:
            detail = f"\n{self.traceback}" if self.traceback else ""
            raise AssertionError(
                f"job {self.job_name} did not succeed (exit code {self.exit_code}): {self.error}{detail}"
            )
        return self


def _manifest_files(path: str | None) -> tuple[str, ...]:
    if not path:
        return ()
    import fsspec

    try:
        with fsspec.open(path, "r", encoding="utf-8") as f:
            document = json.load(f)
    except (OSError, ValueError):
        return ()
    return tuple(sorted(name for entry in document for name in entry.get("files", [])))


@contextlib.contextmanager
def _reset_around_the_run() -> Iterator[None]:
    """As a warm process runs each job (``pool.reset``): the script gets a Spark session
    of its own on the test's running context, and what it leaves (cached data, global
    temporary views, local properties, modules from its folder) is cleared after it;
    then the test's own session is the one ``getOrCreate()`` gives again."""
    from pyspark.sql import SparkSession

    from ..pool import reset

    spark = SparkSession.getActiveSession()
    if spark is None:  # the script starts Spark itself, as under `sparkmark run`
        yield
        return
    before = set(sys.modules)
    fresh = reset.fresh_session(spark)
    try:
        yield
    finally:
        reset.forget_modules(before)
        reset.clear(fresh)
        reset.make_default(spark)


def run_glue_script(script: str | Path, job_name: str | None = None, **args: Any) -> GlueJobRun:
    """Run ``script`` in this process as ``sparkmark run`` would, and read back what it did."""
    from ..cli.run import glue_endpoint

    path = Path(script)
    argv = glue_arguments(job_name, path, args)
    name = job_name or path.stem
    try:
        with _reset_around_the_run():
            outcome = run_request(RunRequest(script=str(path), arguments=argv), endpoint=glue_endpoint)
    except (
        SparkmarkError
    ) as exc:  # the run could not begin (no such script, a bad option): as `sparkmark run` says it
        return GlueJobRun(job_name=name, exit_code=1, error=str(exc), traceback=None, run=None)
    store = StateStore.from_settings(Settings.from_env())
    try:
        runs = [store.get_run(line.run_id) for line in outcome.runs]
        last = runs[-1] if runs else None
        reads: dict[str, SourceRead] = {}
        if last is not None:
            for ctx, metrics in sorted((last.metrics.get("sources") or {}).items()):
                reads[ctx] = SourceRead(ctx, _manifest_files(metrics.get("manifest")), dict(metrics))
        bookmark = store.latest_version(last.job_name if last is not None else name)
        outputs = store.outputs(run_id=last.run_id) if last is not None else []
    finally:
        store.close()
    return GlueJobRun(
        job_name=last.job_name if last is not None else name,
        exit_code=outcome.code,
        error=outcome.error,
        traceback=outcome.traceback,
        run=last,
        reads=reads,
        bookmark=bookmark,
        outputs=outputs,
        runs=runs,
    )
