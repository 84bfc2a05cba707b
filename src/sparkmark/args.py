"""Job arguments as Glue passes them: ``--name value`` pairs.

Reserved names and the bookmark options follow Glue's rules: the bookmark
option defaults to ``job-bookmark-disable``; the legacy ``--continuation-option``
maps onto it when ``--job-bookmark-option`` is absent; ``--job-bookmark-from``
and ``--job-bookmark-to`` go together and only with ``job-bookmark-pause``;
``--TempDir`` and ``--RedshiftTempDir`` stand in for each other.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .engine.models import BookmarkOption
from .errors import ArgumentError

log = logging.getLogger("sparkmark.args")

BOOKMARK_CHOICES = tuple(o.value for o in BookmarkOption)
CONTINUATION_CHOICES = {
    "continuation-enabled": BookmarkOption.ENABLE,
    "continuation-readonly": BookmarkOption.PAUSE,
    "continuation-ignore": BookmarkOption.DISABLE,
}


@dataclass(frozen=True)
class JobArguments:
    job_name: str
    bookmark_option: BookmarkOption
    bookmark_from: str | None
    bookmark_to: str | None
    temp_dir: str | None
    values: dict[str, str] = field(default_factory=dict)


def split_pairs(argv: Sequence[str]) -> dict[str, str]:
    """``["--a", "1", "--b=2"]`` → ``{"a": "1", "b": "2"}``. A repeated ``--conf`` adds to
    the one before, in Glue's ``k=v --conf k2=v2`` form, so every one is applied; of any
    other repeated name the last wins, with a warning naming it (not its values)."""
    pairs: dict[str, str] = {}
    i = 0
    while i < len(argv):
        token = argv[i]
        if not token.startswith("--") or token == "--":
            raise ArgumentError(f"unexpected argument {token!r}: job arguments are --name value pairs")
        name, eq, value = token[2:].partition("=")
        if not name:
            raise ArgumentError(f"argument {token!r} has no name")
        if not eq:
            if i + 1 >= len(argv):
                raise ArgumentError(f"argument --{name}: expected one argument")
            value = argv[i + 1]
            i += 1
        if name == "conf" and name in pairs:
            value = f"{pairs[name]} --conf {value}"
        elif name in pairs:
            # The name in quotes: a masked log reads a bare ``--token is`` as a secret's value.
            log.warning('job argument "--%s" is given more than once: the last one is used', name)
        pairs[name] = value
        i += 1
    return pairs


def resolve(argv: Sequence[str], *, default_job_name: str | None = None) -> JobArguments:
    """Parse ``argv`` (without the script name) into validated job arguments."""
    values = split_pairs(argv)

    option_text = values.get("job-bookmark-option")
    if option_text is not None and option_text not in BOOKMARK_CHOICES:
        choices = ", ".join(repr(c) for c in BOOKMARK_CHOICES)
        raise ArgumentError(
            f"argument --job-bookmark-option: invalid choice: {option_text!r} (choose from {choices})"
        )
    continuation = values.get("continuation-option")
    if continuation is not None and continuation not in CONTINUATION_CHOICES:
        choices = ", ".join(repr(c) for c in CONTINUATION_CHOICES)
        raise ArgumentError(
            f"argument --continuation-option: invalid choice: {continuation!r} (choose from {choices})"
        )
    if option_text is not None:
        option = BookmarkOption(option_text)
    elif continuation is not None:
        option = CONTINUATION_CHOICES[continuation]
    else:
        option = BookmarkOption.DISABLE

    start, end = values.get("job-bookmark-from"), values.get("job-bookmark-to")
    if option is BookmarkOption.PAUSE:
        if (start is None) != (end is None):
            missing = "--job-bookmark-to" if end is None else "--job-bookmark-from"
            raise ArgumentError(f"Missing option or value for {missing}")
    elif start is not None or end is not None:
        raise ArgumentError(
            "Invalid option(s) --job-bookmark-from --job-bookmark-to: they are only valid "
            "with --job-bookmark-option job-bookmark-pause"
        )

    temp_dir = values.get("TempDir") or values.get("RedshiftTempDir")
    if temp_dir is not None:
        values["TempDir"] = values["RedshiftTempDir"] = temp_dir

    job_name = values.get("JOB_NAME") or default_job_name
    if not job_name:
        raise ArgumentError("argument --JOB_NAME is required")
    values["JOB_NAME"] = job_name
    values.pop("continuation-option", None)
    for glue_name in ("job-bookmark-option", "job-bookmark-from", "job-bookmark-to"):
        if glue_name in values:
            values[glue_name.replace("-", "_")] = values.pop(glue_name)
    values["job_bookmark_option"] = option.value

    return JobArguments(job_name, option, start, end, temp_dir, values)


def script_job_name(argv0: str | None) -> str | None:
    if not argv0 or argv0 in ("-c", "-m", ""):
        return None
    return Path(argv0).stem or None


def run_arguments(resolved: JobArguments, default_temp_dir: str) -> dict[str, str]:
    """The arguments a run started from ``resolved`` records (before masking)."""
    values = dict(resolved.values)
    values.setdefault("JOB_NAME", resolved.job_name)
    values.setdefault("TempDir", resolved.temp_dir or default_temp_dir)
    return values


# Glue's own job parameters whose names hold hyphens (AWS's job parameter reference): a
# caller that can only spell names with underscores (a Python keyword) gets these back.
GLUE_PARAMETERS = frozenset(
    {
        "additional-python-modules", "auto-scale-within-microbatch", "continuous-log-logGroup",
        "continuous-log-logStreamPrefix", "continuous-log-conversionPattern", "customer-driver-env-vars",
        "customer-executor-env-vars", "datalake-formats", "disable-proxy-v2", "enable-auto-scaling",
        "enable-continuous-cloudwatch-log", "enable-continuous-log-filter", "enable-glue-datacatalog",
        "enable-job-insights", "enable-lakeformation-fine-grained-access", "enable-metrics",
        "enable-observability-metrics", "enable-rename-algorithm-v2",
        "enable-s3-parquet-optimized-committer", "enable-spark-ui", "executor-cores", "extra-files",
        "extra-jars", "extra-py-files", "job-bookmark-option", "job-bookmark-from", "job-bookmark-to",
        "job-language", "python-modules-installer-option", "spark-event-logs-path", "user-jars-first",
    }
)  # fmt: skip

# The names a run records for Glue's own arguments, and the ones it adds for itself.
_GLUE_NAMES = {
    "job_bookmark_option": "--job-bookmark-option",
    "job_bookmark_from": "--job-bookmark-from",
    "job_bookmark_to": "--job-bookmark-to",
}
_ADDED = ("JOB_NAME", "RedshiftTempDir")


def as_passed(recorded: dict[str, str], default_temp_dir: str) -> dict[str, str]:
    """A run's recorded arguments as they were passed (Glue's JobRun.Arguments):
    ``--name`` as typed, without what the run added itself (its name, the temporary
    directory it was given by default, the bookmark option it defaults to)."""
    out: dict[str, str] = {}
    for name, value in recorded.items():
        if name in _ADDED or (name == "TempDir" and value == default_temp_dir):
            continue
        if name == "job_bookmark_option" and value == "job-bookmark-disable":
            continue
        out[_GLUE_NAMES.get(name, f"--{name}")] = value
    return out
