"""``awsglue.utils``: getResolvedOptions with Glue's rules and errors."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ..args import BOOKMARK_CHOICES, CONTINUATION_CHOICES

# The option names and their choices are the job arguments' own (``sparkmark.args``,
# which ``sparkmark run`` and StartJobRun check too); the messages here are Glue's.
BOOKMARK_OPTION = "--job-bookmark-option"
CONTINUATION_OPTION = "--continuation-option"
RANGE_OPTIONS = ("--job-bookmark-from", "--job-bookmark-to")
ID_OPTIONS = ("--JOB_NAME", "--JOB_ID", "--JOB_RUN_ID", "--SECURITY_CONFIGURATION")
ENCRYPTION_OPTION = "--encryption-type"


class GlueArgumentError(Exception):
    """A missing or invalid job argument, as Glue reports it."""


class GlueArgumentParser(argparse.ArgumentParser):
    """getResolvedOptions's parser: a bad argument raises GlueArgumentError instead of
    printing the usage and exiting."""

    def error(self, message):
        raise GlueArgumentError(message)


def _reserved(options: Sequence[str]) -> None:
    names = [CONTINUATION_OPTION, BOOKMARK_OPTION, *RANGE_OPTIONS, *ID_OPTIONS[1:], ENCRYPTION_OPTION]
    for name in names:
        if name[2:] in options:
            shown = name[2:] if name in (CONTINUATION_OPTION, BOOKMARK_OPTION) else name
            raise RuntimeError("Using reserved arguments " + shown)


def getResolvedOptions(args: Sequence[str], options: Sequence[str]) -> dict:
    """Resolve ``--name value`` arguments into a dict, as AWS Glue does.

    Each name in ``options`` is required. The bookmark option defaults to
    ``job-bookmark-disable``; a legacy ``--continuation-option`` maps onto it;
    ``--job-bookmark-from``/``--job-bookmark-to`` are checked against it;
    ``TempDir`` and ``RedshiftTempDir`` stand in for each other, and default to
    sparkmark's temporary folder, as Glue always passes one.
    """
    _reserved(options)
    parser = GlueArgumentParser(add_help=False)
    parser.add_argument(BOOKMARK_OPTION, choices=BOOKMARK_CHOICES, required=False)
    parser.add_argument(CONTINUATION_OPTION, choices=tuple(CONTINUATION_CHOICES), required=False)
    for name in RANGE_OPTIONS:
        parser.add_argument(name, required=False)
    for name in ID_OPTIONS[1:]:
        parser.add_argument(name, required=False)
    parser.add_argument(ENCRYPTION_OPTION, choices=["sse-s3"], required=False)
    parser.add_argument("--TempDir", required=False)
    parser.add_argument("--RedshiftTempDir", required=False)
    for name in options:
        if name in ("TempDir", "RedshiftTempDir"):
            continue
        parser.add_argument("--" + name, required=True)
    parsed, _unknown = parser.parse_known_args(list(args[1:]))
    values = vars(parsed)

    if values.get("TempDir") is not None:
        values["RedshiftTempDir"] = values["TempDir"]
    elif values.get("RedshiftTempDir") is not None:
        values["TempDir"] = values["RedshiftTempDir"]
    else:
        # Glue passes every job a --TempDir, and scripts build paths on it (checkpoints):
        # without one, the run's own temporary folder (SPARKMARK_TEMP_DIR).
        from ..settings import Settings

        values["TempDir"] = values["RedshiftTempDir"] = Settings.from_env().temp_dir

    legacy = values.pop("continuation_option", None)
    if values.get("job_bookmark_option") is None:
        if legacy is None:
            values["job_bookmark_option"] = "job-bookmark-disable"
        else:
            values["job_bookmark_option"] = CONTINUATION_CHOICES[legacy].value

    absent = [o for o in RANGE_OPTIONS if values.get(o[2:].replace("-", "_")) is None]
    if values["job_bookmark_option"] == "job-bookmark-pause":
        if len(absent) == 1:
            raise RuntimeError("Missing option or value for " + absent[0])
    elif not absent:
        raise RuntimeError("Invalid option(s)" + " ".join(RANGE_OPTIONS))
    return values
