"""``awsglue.job``: Job(glueContext) with init / isInitialized / commit, over a run of
the runtime's (``runtime.start_run``), bound to the GlueContext."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..runtime import start_run
from ..settings import Settings

if TYPE_CHECKING:
    from ..runtime import JobRun

log = logging.getLogger("sparkmark.glue")


class Job:
    def __init__(self, glue_context):
        self._glue_context = glue_context
        self._run: JobRun | None = None

    def init(self, job_name: str, args: Mapping[str, str] | None = None) -> None:
        """Start the run. Bookmark settings come from ``args`` as getResolvedOptions returns
        them (``job_bookmark_option``, ``job_bookmark_from``, ``job_bookmark_to``, ``TempDir``)."""
        args = dict(args or {})
        option = args.get("job_bookmark_option") or "job-bookmark-disable"
        start, end = args.get("job_bookmark_from"), args.get("job_bookmark_to")
        if option != "job-bookmark-pause" or start is None or end is None:
            start = end = None  # Glue ignores a lone range option outside pause
        self._run = start_run(
            job_name,
            settings=Settings.from_env(),  # as the environment is now, like any entry point
            args={k: str(v) for k, v in args.items() if v is not None},
            option=option,
            bookmark_from=start,
            bookmark_to=end,
            temp_dir=args.get("TempDir"),
            spark=self._glue_context.spark_session,
        )
        self._glue_context.bind_run(self._run)

    def isInitialized(self) -> bool:
        return self._run is not None

    def commit(self) -> None:
        """Persist the bookmark of every source read with a transformation_ctx. Without
        init() there is no run and no bookmark: nothing is committed, as on Glue."""
        if self._run is None:
            log.warning("Job.commit() called before Job.init(): there is no run to commit")
            return
        self._run.commit()

    @property
    def run_id(self) -> str | None:
        return self._run.run_id if self._run else None
