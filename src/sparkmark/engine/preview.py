"""What a job's next run would read, found without Spark, and whether a run may be
skipped because there is nothing new.

A preview re-plans each file source recorded in the job's latest bookmark version,
with the paths and options that version holds, exactly as the next run would. JDBC
and other sources cannot be previewed this way (their new rows are only known by
querying them), so a job with such a source is never skipped.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import SourceError
from .fileplan import FilePlan, now_ms, plan_bookmarked
from .increment import FileSourceOptions
from .models import BookmarkOption, BookmarkVersion, OutputState, RunRecord, RunState, VersionKind

if TYPE_CHECKING:
    from .store import StateStore

SKIPPED = "skipped"  # the metrics key of a run that was skipped, holding the reason
UNFINISHED = (OutputState.STAGING, OutputState.STAGED, OutputState.COMMITTED)


@dataclass(frozen=True)
class SourcePreview:
    """One bookmarked source as the next run would find it."""

    ctx: str
    kind: str
    metrics: dict[str, Any] = field(default_factory=dict)  # a file plan's metrics
    not_previewable: str | None = None  # why the source's new data cannot be told

    @property
    def files_waiting(self) -> int | None:
        return None if self.not_previewable else int(self.metrics.get("files_read", 0))


@dataclass(frozen=True)
class JobPreview:
    job_name: str
    version: int | None
    sources: list[SourcePreview]

    @property
    def nothing_new(self) -> bool:
        """True only when every source was previewed and none has a file to read."""
        return bool(self.sources) and all(s.files_waiting == 0 for s in self.sources)


@dataclass(frozen=True)
class SkipDecision:
    skip: bool
    reason: str
    preview: JobPreview | None = None


def preview_job(store: StateStore, job_name: str) -> JobPreview:
    """List every file source of the job's latest bookmark version, as its next run will."""
    version = store.latest_version(job_name)
    if version is None:
        return JobPreview(job_name, None, [])
    return _preview(store, job_name, version)


def preview_rewind(store: StateStore, job_name: str, run_id: str | None = None) -> JobPreview:
    """What the next run would read after a reset (no ``run_id``) or after a rewind to
    just after ``run_id``: the confirmation a reset or rewind shows before it is made.
    Nothing is changed."""
    current = store.latest_version(job_name)
    target = store.version_after_run(job_name, run_id) if run_id else None
    if target is None or target.version == 0:
        if current is None:
            return JobPreview(job_name, None, [])
        # Nothing processed: each source as the current version names it, with no progress.
        kept = ("type", "paths", "options")
        states = {c: {k: v for k, v in st.items() if k in kept} for c, st in current.ctx_states.items()}
        target = replace(current, lineage=(), ctx_states=states)
    return _preview(store, job_name, target)


def _preview(store: StateStore, job_name: str, version: BookmarkVersion) -> JobPreview:
    sources = []
    for ctx, state in sorted(version.ctx_states.items()):
        kind = str(state.get("type", "unknown"))
        if kind != "files":
            sources.append(
                SourcePreview(
                    ctx, kind, not_previewable=(f"a {kind} source's new data is only known by reading it")
                )
            )
            continue
        try:
            plan = _plan(store, job_name, ctx, state, version.lineage)
        except SourceError as exc:
            sources.append(SourcePreview(ctx, kind, not_previewable=str(exc)))
            continue
        sources.append(SourcePreview(ctx, kind, metrics=plan.metrics()))
    return JobPreview(job_name, version.version, sources)


def _plan(store: StateStore, job_name: str, ctx: str, state: dict[str, Any], lineage) -> FilePlan:
    paths = list(state.get("paths") or [])
    recorded = state.get("options")
    if not paths or not isinstance(recorded, dict):
        raise SourceError("the bookmark does not record this source's paths and options")
    options, _ = FileSourceOptions.split(recorded)
    return plan_bookmarked(
        store, job_name, ctx, paths, options, lineage=lineage, previous=state, now_ms=now_ms()
    )


def script_identity(script: str | None) -> dict[str, str] | None:
    """The script a run ran, by content, so a changed script is never skipped."""
    if not script:
        return None
    path = Path(script)
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None
    return {"path": str(path.resolve()), "sha256": digest}


def decide_skip(
    store: StateStore,
    job_name: str,
    *,
    option: BookmarkOption,
    arguments: dict[str, str],
    script: dict[str, str] | None,
) -> SkipDecision:
    """Whether a run of ``script`` with ``arguments`` (masked) may be skipped.

    It may when the last successful run ran the same script with the same arguments,
    every source it read was a bookmarked file source, the bookmark has not moved
    since (no reset, rewind or compaction), no output is left half-done, and a
    preview finds no file to read in any source."""
    if option is not BookmarkOption.ENABLE:
        return SkipDecision(False, f"bookmarks are {option.value}, not enabled")
    if script is None:
        return SkipDecision(False, "the script cannot be identified")
    last = _last_success(store, job_name)
    if last is None:
        return SkipDecision(False, "the job has no successful run to compare with")
    if last.metrics.get("script", {}).get("sha256") != script["sha256"]:
        return SkipDecision(False, f"the script differs from the one run {last.run_id} ran")
    if last.arguments != arguments:
        return SkipDecision(False, f"the arguments differ from those of run {last.run_id}")
    read = dict(last.metrics.get("sources") or {})
    if not read:
        return SkipDecision(False, f"run {last.run_id} read no bookmarked source")
    version = store.latest_version(job_name)
    settled = last.committed_version if last.committed_version is not None else last.base_version
    if version is None or version.version != settled or version.kind is not VersionKind.COMMIT:
        return SkipDecision(False, f"the bookmark changed after run {last.run_id}")
    if set(read) != set(version.ctx_states):
        return SkipDecision(
            False,
            f"run {last.run_id} read sources the bookmark does not hold "
            "(a source without transformation_ctx is read in full every run)",
        )
    unfinished = store.outputs(job_name, states=UNFINISHED)
    if unfinished:
        return SkipDecision(False, f"{len(unfinished)} output(s) of earlier runs are unfinished")
    preview = preview_job(store, job_name)
    if not preview.nothing_new:
        waiting = [
            f"{s.ctx}: {s.files_waiting} file(s)"
            if s.not_previewable is None
            else f"{s.ctx}: {s.not_previewable}"
            for s in preview.sources
            if s.files_waiting != 0
        ]
        return SkipDecision(False, "new data to read (" + "; ".join(waiting) + ")", preview)
    return SkipDecision(True, "no new data in " + ", ".join(s.ctx for s in preview.sources), preview)


def _last_success(store: StateStore, job_name: str) -> RunRecord | None:
    for run in store.list_runs(job_name, limit=50):
        if run.state is RunState.SUCCEEDED:
            return run
    return None


def record_skipped_run(
    store: StateStore,
    job_name: str,
    *,
    run_id: str,
    decision: SkipDecision,
    arguments: dict[str, str],
    script: dict[str, str] | None,
    owner: str,
    lease_seconds: float,
) -> RunRecord:
    """Record a run that read nothing and moved no bookmark: it takes the job's lease
    (so it still refuses to overlap another run) and ends SUCCEEDED at once. Its
    metrics carry the sources and script forward, so the next run may skip too."""
    run = store.start_run(
        job_name=job_name,
        run_id=run_id,
        attempt=0,
        option=BookmarkOption.ENABLE,
        arguments=arguments,
        owner=owner,
        lease_seconds=lease_seconds,
    )
    sources = {s.ctx: dict(s.metrics) for s in (decision.preview.sources if decision.preview else [])}
    metrics: dict[str, Any] = {
        SKIPPED: decision.reason,
        "sources": sources,
        "sinks": [],
        "duration_seconds": 0.0,
    }
    if script is not None:
        metrics["script"] = script
    return store.finish_run(run.run_id, RunState.SUCCEEDED, metrics=metrics)
