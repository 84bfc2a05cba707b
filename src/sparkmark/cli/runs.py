"""``sparkmark runs``: the record of job runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from ..engine.models import RunRecord
from ..sources.registry import kind_of_metrics
from .context import current_app
from .output import console, one_line_errors, print_json, table, when

app = typer.Typer(help="List and inspect job runs.", no_args_is_help=True)


def _duration(run: RunRecord) -> str:
    if run.ended_at is None:
        return "-"
    return f"{(run.ended_at - run.started_at).total_seconds():.1f}s"


def _files_read(run: RunRecord) -> int:
    return sum(s.get("files_read", 0) for s in (run.metrics.get("sources") or {}).values())


@app.command("list")
@one_line_errors
def list_runs(
    job: str = typer.Argument(..., help="Job name"),
    limit: int = typer.Option(50, "--limit", help="At most this many runs, newest first"),
    as_json: bool = typer.Option(False, "--json", help="Print JSON"),
) -> None:
    """List the job's runs, newest first."""
    store = current_app().state
    store.require_job(job)
    runs = store.list_runs(job, limit=limit)
    if as_json:
        print_json(runs)
        return
    console.print(
        table(
            f"Runs of job {job}",
            ["RunId", "State", "Bookmark", "Attempt", "Started", "Duration", "Files read", "Version"],
            [
                [
                    r.run_id,
                    r.state.value,
                    r.bookmark_option.value.removeprefix("job-bookmark-"),
                    r.attempt,
                    when(r.started_at),
                    _duration(r),
                    _files_read(r),
                    r.committed_version,
                ]
                for r in runs
            ],
        )
    )


def _show_streaming(streaming: dict[str, Any] | None) -> None:
    """A streaming run: its query, Glue's streaming metrics, and its recent batches."""
    if not streaming:
        return
    rows = [
        ["Query", streaming.get("query_id")],
        ["Checkpoint", streaming.get("checkpoint")],
        ["Batches", streaming.get("batches")],
        ["numRecords", streaming.get("numRecords")],
        ["Quarantined", streaming.get("records_quarantined")],
        ["Replayed batches skipped", streaming.get("batches_replayed")],
        ["Lag (records)", streaming.get("lag")],
    ]
    console.print(table("Streaming", ["Field", "Value"], rows))
    recent = streaming.get("recent_batches") or []
    if recent:
        console.print(
            table(
                "Batches (newest first)",
                ["batch", "numRecords", "quarantined", "attempts", "duration ms", "writes"],
                [
                    [
                        b.get("batch_id"),
                        b.get("numRecords"),
                        b.get("records_quarantined"),
                        b.get("attempts"),
                        b.get("duration_ms"),
                        len(b.get("writes") or []),
                    ]
                    for b in recent
                ],
            )
        )


@app.command("show")
@one_line_errors
def show(
    run_id: str = typer.Argument(..., help="Run id (jr_...)"),
    as_json: bool = typer.Option(False, "--json", help="Print JSON"),
) -> None:
    """Show one run: state, arguments, metrics per source, manifests and error."""
    store = current_app().state
    run = store.get_run(run_id)
    if as_json:
        print_json(run)
        return
    rows: list[list[Any]] = [
        ["RunId", run.run_id],
        ["Job", run.job_name],
        ["State", run.state.value],
        ["Attempt", run.attempt],
        ["Bookmark option", run.bookmark_option.value],
        ["Started", when(run.started_at)],
        ["Ended", when(run.ended_at)],
        ["Duration", _duration(run)],
        ["Base version", run.base_version],
        ["Committed version", run.committed_version],
        ["Previous run", run.previous_run_id],
        ["Arguments", " ".join(f"--{k} {v}" for k, v in sorted(run.arguments.items()))],
        ["Error", run.error],
    ]
    ran_on = run.metrics.get("runtime")
    if ran_on:  # kept as the run ends
        rows.insert(3, ["Runtime", f"Glue {ran_on.get('glue_version')} (Spark {ran_on.get('spark')})"])
    insight = run.metrics.get("insight")
    if insight:  # Glue's job run insights, each on a row of its own
        if insight.get("line"):
            rows.append(["Failed at", f"line {insight['line']} of {Path(insight['script']).name}"])
        rows.append(["Error category", f"{insight['category']} ({insight['error_class']})"])
        rows += [["Probable cause", insight["cause"]], ["Advice", insight["advice"]]]
    console.print(table(f"Run {run.run_id}", ["Field", "Value"], rows))
    all_sources = run.metrics.get("sources") or {}
    sources = {c: m for c, m in all_sources.items() if not kind_of_metrics(m).streaming}
    _show_streaming(run.metrics.get("streaming"))
    if sources:
        columns = [
            "ctx",
            "listed",
            "read",
            "new",
            "modified",
            "skipped",
            "excluded",
            "deferred",
            "late",
            "partitions skipped",
            "bytes",
            "manifest",
        ]
        console.print(
            table(
                "Sources",
                columns,
                [
                    [
                        ctx,
                        m.get("files_listed"),
                        m.get("files_read"),
                        m.get("files_new"),
                        m.get("files_modified"),
                        m.get("files_skipped"),
                        m.get("files_excluded"),
                        m.get("files_deferred"),
                        m.get("files_late"),
                        m.get("partitions_skipped"),
                        m.get("bytes_read"),
                        m.get("manifest"),
                    ]
                    for ctx, m in sorted(sources.items())
                ],
            )
        )
