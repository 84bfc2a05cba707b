"""sparkmark: AWS Glue-style incremental ETL with job bookmarks, on any Spark."""

from .errors import (
    ArgumentError,
    BookmarkConflict,
    ConcurrentRunsExceeded,
    ConfigError,
    LeaseLost,
    NotFound,
    RunFinished,
    SourceError,
    SparkmarkError,
    StateStoreError,
    UnknownJob,
    UnknownRun,
)
from .job import Job

__all__ = [
    "ArgumentError",
    "BookmarkConflict",
    "ConcurrentRunsExceeded",
    "ConfigError",
    "Job",
    "LeaseLost",
    "NotFound",
    "RunFinished",
    "SourceError",
    "SparkmarkError",
    "StateStoreError",
    "UnknownJob",
    "UnknownRun",
]

__version__ = "0.1.0"
