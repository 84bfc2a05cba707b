"""What a job run is asked to be: the script, its Glue-style arguments, how the run
is bounded, and the settings its scheduler gives it. One document, checked once: the
CLI builds it from its options, the scheduler sends it to the job's process."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import ArgumentError


class RunRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    script: str  # a path, or a URL such as s3://bucket/job.py (Glue's ScriptLocation)
    arguments: list[str] = Field(default_factory=list)  # --JOB_NAME n --job-bookmark-option … --my-arg v
    skip_if_no_new_data: bool = False
    until_caught_up: bool = False
    max_batches: int | None = None
    remote: str | None = None  # a Spark Connect URL
    # Set by the scheduler for the run it starts:
    run_id: str | None = None
    attempt: int | None = None
    config: str | None = None  # the project file the job is declared in
    spark_master: str | None = None
    spark_conf: dict[str, str] = Field(default_factory=dict)
    # Glue's Command.Name: a "pythonshell" run is plain Python (host/python_shell.py).
    command: str = "glueetl"
    max_capacity: float | None = None  # a Python shell run's DPUs (its memory)

    @classmethod
    def checked(cls, document: dict[str, Any]) -> RunRequest:
        """The request ``document`` describes, or one ArgumentError line saying what is wrong."""
        try:
            return cls.model_validate(document)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            message = str(first.get("msg", "")).removeprefix("Value error, ")
            if first.get("type") != "value_error":  # a document of the wrong shape, not a bad option
                message = f"run request field {where or '(document)'}: {message}"
            raise ArgumentError(message) from None

    @field_validator("max_batches")
    @classmethod
    def _at_least_one(cls, value: int | None) -> int | None:
        if value is not None and value < 1:
            raise ValueError("--max-batches must be 1 or more")
        return value

    @field_validator("remote")
    @classmethod
    def _connect_url(cls, value: str | None) -> str | None:
        if value and not value.startswith("sc://"):
            raise ValueError(f"--remote takes a Spark Connect URL, sc://host:port, not {value!r}")
        return value

    def environment(self) -> dict[str, str]:
        """The settings this request gives the script's entry points (``Job.from_args``,
        ``GlueContext``), as the variables ``settings.Settings`` declares for them."""
        env: dict[str, str] = {}
        if self.config is not None:
            env["SPARKMARK_CONFIG"] = self.config
        if self.spark_master:
            env["SPARKMARK_SPARK_MASTER"] = self.spark_master
        if self.spark_conf:
            env["SPARKMARK_SPARK_CONF"] = json.dumps(self.spark_conf)
        if self.remote:
            env["SPARK_REMOTE"] = self.remote
        if self.until_caught_up:
            env["SPARKMARK_STREAM_UNTIL_CAUGHT_UP"] = "1"
        if self.max_batches is not None:
            env["SPARKMARK_STREAM_MAX_BATCHES"] = str(self.max_batches)
        return env
