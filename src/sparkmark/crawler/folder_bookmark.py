"""A crawler's ``CRAWL_NEW_FOLDERS_ONLY`` recrawl policy, kept on the bookmark engine."""

from __future__ import annotations

import secrets
import time
from typing import Any

from ..engine.increment import FileSourceOptions, plan_increment
from ..engine.listing import Listing
from ..engine.models import BookmarkOption, CtxCommit, FileEntry, RunState
from ..engine.store import StateStore
from .definition import CrawlerDefinition


class FolderBookmark:
    """CRAWL_NEW_FOLDERS_ONLY on the bookmark engine: the crawler is a job whose sources
    are its targets; folders whose every file was crawled are skipped next time."""

    def __init__(self, state: StateStore, definition: CrawlerDefinition):
        self.state = state
        self.job = f"crawler:{definition.Name}"
        latest = state.latest_version(self.job)
        self.lineage = latest.lineage if latest else ()
        self.run = state.start_run(
            job_name=self.job,
            run_id="jr_" + secrets.token_hex(32),
            attempt=0,
            option=BookmarkOption.ENABLE,
            arguments={"crawler": definition.Name},
            owner="crawler",
            lease_seconds=3600,
        )
        self.commits: list[CtxCommit] = []

    def known(self, root: str) -> dict[str, int]:
        return self.state.processed_dirs(self.job, root, self.lineage)

    def record(self, root: str, listing: Listing) -> None:
        processed = self.state.processed_files(self.job, root, self.lineage)
        inc = plan_increment(
            listing,
            processed,
            options=FileSourceOptions(recurse=True, max_band_ms=0),
            now_ms=int(time.time() * 1000),
        )
        self.commits.append(
            CtxCommit(
                root,
                {"type": "crawler-target", "paths": [root]},
                [FileEntry(f.url, f.mtime_ms, f.size, f.etag) for f in inc.selected],
                dict(inc.dir_marks),
            )
        )

    def fail(self, exc: BaseException) -> None:
        self.state.finish_run(self.run.run_id, RunState.FAILED, error=f"{type(exc).__name__}: {exc}")

    def commit(self, summary: dict[str, Any]) -> None:
        self.state.commit(
            self.run,
            self.commits,
            metrics={"crawl": {k: v for k, v in summary.items() if isinstance(v, int)}},
        )
