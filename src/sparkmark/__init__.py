"""sparkmark: AWS Glue-style incremental ETL with job bookmarks, on any Spark.

PYTEST_DONT_REWRITE: the awsglue import hook imports this package at interpreter
start-up, before pytest loads sparkmark's plugin; pytest need not rewrite its asserts.
"""

from .errors import (
    ArgumentError,
    BookmarkConflict,
    ConcurrentRunsExceeded,
    ConfigError,
    LeaseLost,
    NotFound,
    RunFinished,
    SinkError,
    SourceError,
    SparkmarkError,
    StateError,
    StateStoreError,
    TransformError,
    UnknownJob,
    UnknownRun,
)


def __getattr__(name: str):
    # Job pulls in PySpark; import it on first use so that light imports
    # (the awsglue import hook, the error classes) stay light.
    if name == "Job":
        from .job import Job

        return Job
    raise AttributeError(f"module 'sparkmark' has no attribute {name!r}")


__all__ = [
    "ArgumentError",
    "BookmarkConflict",
    "ConcurrentRunsExceeded",
    "ConfigError",
    "Job",
    "LeaseLost",
    "NotFound",
    "RunFinished",
    "SinkError",
    "SourceError",
    "SparkmarkError",
    "StateError",
    "StateStoreError",
    "TransformError",
    "UnknownJob",
    "UnknownRun",
]

__version__ = "0.1.0"
