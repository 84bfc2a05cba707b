"""Job run insights, as Glue names them: for a failed run, the script line where it
failed, its error's class and Glue's error category, and a one-line probable cause
and advice.

``RULES`` is one table, tried in order: a pattern over the error's class names and
message, Glue's category (the ``glue.error.<CATEGORY>`` metric), the probable cause
and the advice. The first rule that matches wins; an error no rule knows is
``UNCLASSIFIED_SPARK_ERROR`` when it came from Spark's JVM, else
``UNCLASSIFIED_ERROR``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from ..engine.models import RunState
from .failures import describe_error


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern[str]
    category: str
    cause: str
    advice: str


def _rule(pattern: str, category: str, cause: str, advice: str) -> Rule:
    return Rule(re.compile(pattern, re.IGNORECASE), category, cause, advice)


RULES: tuple[Rule, ...] = (
    _rule(
        r"OutOfMemoryError|Java heap space|GC overhead limit|ran out of memory",
        "OUT_OF_MEMORY_ERROR",
        "the driver or an executor ran out of memory",
        "give Spark more memory (spark.driver.memory, spark.executor.memory) or read less per run "
        "(boundedFiles, boundedSize)",
    ),
    _rule(
        r"No space left on device",
        "DISK_NO_SPACE_ERROR",
        "a disk of the driver or an executor is full (shuffle or spill files)",
        "free the disk under spark.local.dir and the run's TempDir, or move them to a larger disk",
    ),
    _rule(
        r"BookmarkConflict|LeaseLost|lost the lease|bookmark version \d+ .*changed",
        "GLUE_JOB_BOOKMARK_VERSION_MISMATCH_ERROR",
        "another run of the same job moved the bookmark while this one ran",
        "run one run of a job at a time (MaxConcurrentRuns 1), or give concurrent runs their own job names",
    ),
    _rule(
        r"ConcurrentRunsExceeded|Throttl|SlowDown|Rate exceeded|TooManyRequests",
        "THROTTLING_ERROR",
        "a service or the job's concurrency limit refused more requests",
        "wait and retry (MaxRetries), or raise the limit (MaxConcurrentRuns)",
    ),
    _rule(
        r"ModuleNotFoundError|ImportError|No module named",
        "IMPORT_ERROR",
        "the script imports a Python module the run does not have",
        "add it with --additional-python-modules (a pip requirement) or --extra-py-files",
    ),
    _rule(
        r"^(SyntaxError|IndentationError|TabError)\b",
        "SYNTAX_ERROR",
        "the script is not valid Python",
        "fix the line named; `python -m py_compile SCRIPT` finds it too",
    ),
    _rule(
        r"org\.apache\.iceberg|io\.delta|DeltaAnalysisException|DeltaIllegalState|org\.apache\.hudi",
        "DATA_LAKE_FRAMEWORK_ERROR",
        "the table format (Iceberg, Delta or Hudi) refused the operation",
        "check the table's state and the format's jars (--datalake-formats)",
    ),
    _rule(
        r"AccessDenied|Access Denied|Permission denied|Forbidden|\b403\b|not authorized",
        "PERMISSION_ERROR",
        "the run was refused access to a file, bucket, table or database",
        "grant the run's credentials access, or fix the path they point at",
    ),
    _rule(
        r"TABLE_OR_VIEW_NOT_FOUND|EntityNotFound|NoSuchTable|Table or view not found|Database .* not found|SCHEMA_NOT_FOUND",
        "RESOURCE_NOT_FOUND_ERROR",
        "the run names a table or database the catalog does not have",
        "create it first (a crawler, CreateTable) or fix its name",
    ),
    _rule(
        r"PATH_NOT_FOUND|FileNotFoundException|FILE_NOT_EXIST|NoSuchKey|NoSuchBucket|Path does not exist|does not exist",
        "RESOURCE_NOT_FOUND_ERROR",
        "the run reads a path or object that does not exist",
        "check the path (and the bucket) the script reads, or create it first",
    ),
    _rule(
        r"PATH_ALREADY_EXISTS|AlreadyExists|already exists",
        "RESOURCES_ALREADY_EXISTS_ERROR",
        "the run creates something that exists already",
        "write in mode overwrite or append, or choose a new name",
    ),
    _rule(
        r"UNRESOLVED_COLUMN|cannot resolve|UNRESOLVED_ROUTINE|DATATYPE_MISMATCH|PARSE_SYNTAX_ERROR|AnalysisException|ParseException",
        "QUERY_ERROR",
        "Spark refused a query: a column, function or type it names is not what the data has",
        "compare the names in the query with the source's schema (printSchema) and fix the line named",
    ),
    _rule(
        r"Connection refused|ConnectException|UnknownHostException|Name or service not known|"
        r"could not connect|Communications link failure|connection to server",
        "CONNECTION_ERROR",
        "a database, broker or endpoint the run connects to did not answer",
        "check the connection's host, port and network, and that the service is up",
    ),
    _rule(
        r"AmazonS3Exception|S3Exception|s3a://|AWSBadRequest|AWSClientIOException",
        "S3_ERROR",
        "S3 refused a request",
        "check the bucket, its region and endpoint, and the run's credentials",
    ),
    _rule(
        r"ArgumentError|GlueArgumentError|InvalidInput|invalid argument|the following arguments are required",
        "INVALID_ARGUMENT_ERROR",
        "the run was given a missing or invalid argument",
        "pass the arguments getResolvedOptions asks for (--NAME value), or give the job their defaults",
    ),
    _rule(
        r"UnsupportedOperation|NotImplementedError|UNSUPPORTED_FEATURE",
        "UNSUPPORTED_OPERATION_ERROR",
        "the run asked for an operation this Spark or connector does not support",
        "use a supported form of the operation (see docs/glue-compatibility.md)",
    ),
    _rule(
        r"TimeoutError|TimeoutException|timed out",
        "TIMEOUT_ERROR",
        "an operation took longer than it was allowed",
        "raise the timeout, or make the slow step do less",
    ),
    _rule(
        r"^SystemExit\b",
        "SYSTEM_EXIT_ERROR",
        "the script called sys.exit with a failure code",
        "end the script normally, or exit with 0 when it succeeded",
    ),
)

_SPARK = re.compile(r"Py4JJavaError|SparkException|org\.apache\.spark|SparkConnectGrpcException|Py4JError")


@dataclass(frozen=True)
class Insight:
    category: str
    error_class: str
    cause: str
    advice: str
    line: int | None = None
    script: str | None = None

    def as_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "category": self.category,
            "error_class": self.error_class,
            "cause": self.cause,
            "advice": self.advice,
        }
        if self.line is not None:
            found["line"] = self.line
            found["script"] = self.script
        return found

    def where(self) -> str | None:
        if self.line is None:
            return None
        return f"line {self.line} of {os.path.basename(self.script or 'the script')}"

    def suffix(self, message: str) -> str:
        """What the insight adds to a run's error message: where, the category, the
        probable cause and the advice, in one line."""
        parts = [p for p in (self.where(), self.category) if p]
        return f" [insight: {', '.join(parts)}; probable cause: {self.cause}; advice: {self.advice}]"


def _names(exc: BaseException) -> str:
    return " ".join(t.__name__ for t in type(exc).__mro__ if t is not object)


def _java_class(text: str) -> str | None:
    found = re.search(r"\b((?:java|org|io|com|software)\.[\w.$]+(?:Exception|Error))\b", text)
    return found.group(1) if found else None


def classify(exc: BaseException) -> tuple[str, str, str, str]:
    """(category, error class, probable cause, advice) of an error."""
    text = f"{type(exc).__name__}: {str(exc)[:20000]}"
    names = _names(exc)
    error_class = type(exc).__name__
    java = _java_class(text)
    if java and error_class in ("Py4JJavaError", "SparkConnectGrpcException", "Py4JError"):
        error_class = java
    for rule in RULES:
        if rule.pattern.search(text) or rule.pattern.search(names):
            return rule.category, error_class, rule.cause, rule.advice
    if _SPARK.search(text) or _SPARK.search(names):
        return (
            "UNCLASSIFIED_SPARK_ERROR",
            error_class,
            "Spark failed with an error sparkmark does not classify",
            "read the run's error log (sparkmark runs log RUN_ID --error) from its first exception",
        )
    return (
        "UNCLASSIFIED_ERROR",
        error_class,
        "the script raised an error sparkmark does not classify",
        "fix the line named; the run's log has the whole traceback",
    )


def script_line(tb: TracebackType | None, script: str | None) -> int | None:
    """The line of ``script`` the traceback last passed through."""
    if script is None:
        return None
    wanted = os.path.realpath(script)
    line = None
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name == script or os.path.realpath(name) == wanted:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def insight_of(exc: BaseException, script: str | None) -> Insight:
    category, error_class, cause, advice = classify(exc)
    line = script_line(exc.__traceback__, script)
    cause_of = exc.__cause__ or exc.__context__
    while line is None and cause_of is not None:  # the script's line may be on the error it wrapped
        line = script_line(cause_of.__traceback__, script)
        cause_of = cause_of.__cause__ or cause_of.__context__
    return Insight(category, error_class, cause, advice, line, script if line is not None else None)


def failure_message(
    error: BaseException | str, reading: str | None, script: str | None
) -> tuple[str, Insight | None]:
    """A failed run's error message (its insight appended) and its insight; a message
    given as text is kept as it is."""
    if isinstance(error, str):
        return error, None
    found = insight_of(error, script)
    message = describe_error(error, reading)
    return f"{message}{found.suffix(message)}", found


def category_of_state(state: RunState) -> str | None:
    """Glue's error category of a run ended with only a message (a timeout, a stop)."""
    if state is RunState.TIMEOUT:
        return "TIMEOUT_ERROR"
    if state is RunState.FAILED:
        return "UNCLASSIFIED_ERROR"
    return None
