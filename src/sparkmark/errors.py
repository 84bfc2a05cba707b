"""The exceptions sparkmark raises.

Every error carries a message that says what went wrong and what to do about
it. The CLI prints ``str(error)`` as one line; nothing here needs a traceback
to be understood.
"""

from __future__ import annotations

from typing import Any


class SparkmarkError(Exception):
    """Base class of every error sparkmark raises on purpose."""


class ConfigError(SparkmarkError):
    """A setting (environment variable, URL, option value) is invalid."""


class UndeclaredReference(ConfigError):
    """A definition names a job, crawler or workflow that is not defined. The message
    advises the project file; a front door that defines things otherwise (the Glue API)
    advises in its own terms from ``where``, ``kind`` and ``name``."""

    def __init__(self, where: str, kind: str, name: str):
        self.where, self.kind, self.name = where, kind, name
        super().__init__(
            f"{where} names {kind} {name!r}, which is not declared: add [{kind}s.{name}] or fix the name"
        )


class ArgumentError(SparkmarkError):
    """A job argument is missing or invalid (Glue's getResolvedOptions rules)."""


class StateError(SparkmarkError):
    """The state store cannot be opened, is at an unsupported schema version, or holds
    something it should not (a missing version)."""


StateStoreError = StateError  # the name earlier releases used


class AlreadyExists(SparkmarkError):
    """Something with that name is already there (a catalog database, a stored definition)."""


class NotFound(SparkmarkError):
    """Base class for lookups of things that do not exist."""


class UnknownJob(NotFound):
    def __init__(self, job_name: str):
        super().__init__(
            f"unknown job {job_name!r}: it has no runs and no bookmark in this state store "
            "(check the job name and SPARKMARK_HOME / SPARKMARK_STATE_URL)"
        )
        self.job_name = job_name


class UnknownRun(NotFound):
    def __init__(self, run_id: str, job_name: str | None = None):
        where = f" of job {job_name!r}" if job_name else ""
        super().__init__(f"unknown run id {run_id!r}{where}: list the runs with `sparkmark runs list JOB`")
        self.run_id = run_id


class ConcurrentRunsExceeded(SparkmarkError):
    """Another run of the same job holds the job's lease."""

    def __init__(self, job_name: str, holder_run_id: str, expires_at: str):
        super().__init__(
            f"job {job_name!r} is already running as {holder_run_id} (lease held until "
            f"{expires_at}); only one run that moves the job's bookmark (job-bookmark-enable) "
            "may run at a time. Wait for it to finish, or, if that run crashed, retry after its "
            "lease expires"
        )
        self.job_name = job_name
        self.holder_run_id = holder_run_id


class BookmarkConflict(SparkmarkError):
    """The bookmark moved while this run was working; the commit was refused."""


class LeaseLost(BookmarkConflict):
    """This run's lease expired and another run took the job over."""


class RunFinished(SparkmarkError):
    """An operation needs a RUNNING run, but the run already ended."""


class SourceError(SparkmarkError):
    """A source's paths or options are invalid, or its data cannot be listed."""


class SinkError(SparkmarkError):
    """A write's target, mode or options are invalid, or the write cannot be staged."""


class OutputLost(SinkError):
    """Staged output is gone: before the commit the run commits nothing; after it, those
    rows are lost from the output and the bookmark must be rewound to read them again."""


class TransformError(SparkmarkError):
    """A transform (Glue's DynamicFrame transforms, mappings, choices) cannot apply."""


class GraphError(ConfigError):
    """A visual job's graph that cannot become a script: every problem, one line each,
    each naming its node."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


def first_line(exc: BaseException) -> str:
    """An exception's message cut to its first line (a JVM error's stack trace is below
    it), or its type's name when it has none."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _aws_fields(exc: BaseException) -> dict[str, Any] | None:
    """The ``Error`` of an AWS client's error (botocore's ClientError), or None."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict) and isinstance(response.get("Error"), dict) and response["Error"]:
        return response["Error"]
    return None


def aws_code(exc: BaseException) -> str | None:
    """An AWS client's error code (``ThrottlingException``…), or None for any other error."""
    return (_aws_fields(exc) or {}).get("Code")


def aws_error(exc: BaseException) -> str:
    """An AWS client's error as AWS names it (``Code: Message``), any other as its first line."""
    error = _aws_fields(exc)
    return f"{error.get('Code')}: {error.get('Message')}" if error else first_line(exc)


def first_problem(exc: Any) -> tuple[str, str]:
    """(where, what) of a pydantic ValidationError's first problem, in the words a
    one-line error uses: where as dotted keys, and an unknown key named as such."""
    first = exc.errors()[0]
    loc = [str(p) for p in first.get("loc", ())]
    message = str(first.get("msg", "")).removeprefix("Value error, ")
    if first.get("type") == "extra_forbidden" and loc:
        return ".".join(loc[:-1]), f"unknown key {loc[-1]!r}"
    return ".".join(loc), message
