"""``sparkmark bookmark``: read and control a job's bookmark."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer

from ..engine.listing import FileLister
from ..engine.preview import preview_job, preview_rewind
from ..errors import SparkmarkError
from ..sources.registry import FILES, kind_of_state
from ..sources.states import parse_state, when_ms
from ..workflow.report import bookmark_entry as entry
from .context import current_app
from .output import console, err_console, one_line_errors, print_json, table, when

app = typer.Typer(help="Read and control job bookmarks.", no_args_is_help=True)


def _source_rows(states: dict[str, dict[str, Any]]) -> list[list[Any]]:
    rows = []
    for ctx, stored in sorted(states.items()):
        state = parse_state(stored)
        rows.append([ctx, stored.get("type", "-"), state.source(), state.progress(), state.latest()])
    return rows


@app.command("get")
@one_line_errors
def get(
    job: str = typer.Argument(..., help="Job name"),
    as_json: bool = typer.Option(False, "--json", help="Print JSON"),
) -> None:
    """Show the job's current bookmark (Glue's JobBookmarkEntry fields)."""
    store = current_app().state
    store.require_job(job)
    version = store.latest_version(job)
    document = entry(version, job)
    if as_json:
        print_json(document)
        return
    fields = [[k, v] for k, v in document.items() if k != "JobBookmark"]
    fields = [[k, when(v) if k == "CreatedAt" else v] for k, v in fields]
    console.print(table(f"Bookmark of job {job}", ["Field", "Value"], fields))
    if document["JobBookmark"]:
        console.print(
            table(
                "Sources",
                ["ctx", "type", "source", "progress", "last commit"],
                _source_rows(document["JobBookmark"]),
            )
        )
    else:
        console.print("No source state: the next enabled run reads everything.")


@app.command("preview")
@one_line_errors
def preview(
    job: str = typer.Argument(..., help="Job name"),
    after_reset: bool = typer.Option(
        False, "--reset", help="As the next run would read after `bookmark reset JOB` (nothing is reset)"
    ),
    run_id: str = typer.Option(
        None, "--run-id", help="As the next run would read after a rewind to this run (nothing is rewound)"
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON"),
) -> None:
    """List the job's file sources as its next run will, without Spark: the files
    waiting to be read, deferred, or already processed."""
    store = current_app().state
    store.require_job(job)
    found = preview_rewind(store, job, run_id) if (after_reset or run_id) else preview_job(store, job)
    if as_json:
        print_json(
            {
                "JobName": job,
                "Version": found.version,
                "NothingNew": found.nothing_new,
                "Sources": [
                    {
                        "ctx": s.ctx,
                        "type": s.kind,
                        "files_waiting": s.files_waiting,
                        "not_previewable": s.not_previewable,
                        **s.metrics,
                    }
                    for s in found.sources
                ],
            }
        )
        return
    if not found.sources:
        console.print("No source state: the next enabled run reads everything.")
        return
    rows = [
        [
            s.ctx,
            s.kind,
            s.not_previewable or s.files_waiting,
            s.metrics.get("files_new", "-"),
            s.metrics.get("files_modified", "-"),
            s.metrics.get("files_deferred", "-"),
            s.metrics.get("files_skipped", "-"),
            s.metrics.get("bytes_read", "-"),
        ]
        for s in found.sources
    ]
    console.print(
        table(
            f"Next run of job {job} (bookmark version {found.version})",
            ["ctx", "type", "files to read", "new", "modified", "deferred", "already processed", "bytes"],
            rows,
        )
    )
    if found.nothing_new:
        console.print("Nothing new to read.")


@app.command("history")
@one_line_errors
def history(
    job: str = typer.Argument(..., help="Job name"),
    as_json: bool = typer.Option(False, "--json", help="Print JSON"),
) -> None:
    """List every bookmark version of the job, newest first."""
    store = current_app().state
    store.require_job(job)
    versions = store.history(job)
    if as_json:
        print_json([entry(v, job) for v in versions])
        return
    rows = [
        [
            v.version,
            v.kind.value + (f" → v{v.rewound_to}" if v.rewound_to else ""),
            v.run,
            v.attempt,
            v.run_id,
            when(v.created_at),
            ", ".join(f"{c}: {s.get('files_committed', 0)} files" for c, s in sorted(v.ctx_states.items())),
        ]
        for v in versions
    ]
    console.print(
        table(
            f"Bookmark history of job {job}",
            ["Version", "Kind", "Run", "Attempt", "RunId", "Created", "Sources"],
            rows,
        )
    )


@app.command("reset")
@one_line_errors
def reset(
    job: str = typer.Argument(..., help="Job name"),
    run_id: str = typer.Option(None, "--run-id", help="Rewind to the state just after this run"),
    missing_ok: bool = typer.Option(False, "--missing-ok", help="Do nothing for an unknown job"),
    as_json: bool = typer.Option(False, "--json", help="Print JSON"),
) -> None:
    """Reset the bookmark, or with --run-id rewind it to just after that run.

    Either way a new version is added; the history is kept.
    """
    store = current_app().state
    if missing_ok and not store.job_exists(job):
        console.print(f"job {job} has no bookmark; nothing to reset")
        return
    lease = store.get_lease(job)
    if lease is not None:
        err_console.print(
            f"warning: run {lease.run_id} of job {job} is running; its commit will be refused "
            "because the bookmark moved under it"
        )
    version = store.rewind(job, run_id) if run_id else store.reset(job)
    if as_json:
        print_json(entry(version, job))
        return
    if run_id:
        console.print(
            f"Rewound job {job} to just after run {run_id}: version {version.version} "
            f"(same state as version {version.rewound_to or 0})"
        )
    else:
        console.print(f"Reset job {job}: version {version.version} has nothing processed")


@app.command("files")
@one_line_errors
def files(
    job: str = typer.Argument(..., help="Job name"),
    ctx: str = typer.Argument(..., help="Source ctx (transformation_ctx)"),
    version: int = typer.Option(None, "--version", help="Bookmark version (default: current)"),
    as_json: bool = typer.Option(False, "--json", help="Print JSON"),
) -> None:
    """List the per-file state of one source: each processed file and when it was committed."""
    store = current_app().state
    store.require_job(job)
    chosen = store.get_version(job, version) if version else store.latest_version(job)
    if chosen is None:
        if version:
            raise SparkmarkError(f"job {job!r} has no bookmark version {version}")
        rows = []
    else:
        if ctx not in chosen.ctx_states:
            known = ", ".join(sorted(chosen.ctx_states)) or "none"
            raise SparkmarkError(
                f"job {job!r} has no source {ctx!r} in bookmark version {chosen.version} (sources: {known})"
            )
        rows = store.committed_files(job, ctx, chosen)
    if as_json:
        print_json(
            [
                {
                    "path": r.path,
                    "size": r.size,
                    "modification_time": when_ms(r.mtime_ms),
                    "modification_time_ms": r.mtime_ms,
                    "commit_time": r.committed_at,
                    "version": r.version,
                    "run_id": r.run_id,
                }
                for r in rows
            ]
        )
        return
    console.print(
        table(
            f"Files of {job}/{ctx}",
            ["path", "size", "modification_time", "commit_time", "version", "run_id"],
            [[r.path, r.size, when_ms(r.mtime_ms), when(r.committed_at), r.version, r.run_id] for r in rows],
        )
    )


@app.command("compact")
@one_line_errors
def compact(
    job: str = typer.Argument(..., help="Job name"),
    drop_missing: bool = typer.Option(
        False, "--drop-missing", help="Also forget processed files that no longer exist"
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON"),
) -> None:
    """Fold the bookmark into one version and delete the per-file rows it no longer needs.

    Keeps the current state (so the next run reads the same files it would have);
    versions before the compaction can no longer be restored. With --drop-missing,
    files that were deleted from the source are forgotten too.
    """
    store = current_app().state
    store.require_job(job)
    keep: Callable[[str, str], bool] | None = None
    if drop_missing:
        current = store.latest_version(job)
        present: dict[str, set[str]] = {}
        for ctx, state in (current.ctx_states if current else {}).items():
            if kind_of_state(state) is FILES and state.get("paths"):
                listing = FileLister(recurse=True).list(list(state["paths"]))
                present[ctx] = {f.url for f in listing.files}

        def still_there(ctx: str, path: str) -> bool:
            return ctx not in present or path in present[ctx]

        keep = still_there

    result = store.compact(job, keep)
    if as_json:
        print_json(
            {
                "Version": result.version.version,
                "RowsBefore": result.rows_before,
                "RowsAfter": result.rows_after,
                "DroppedMissing": result.dropped_missing,
            }
        )
        return
    console.print(
        f"Compacted job {job} into version {result.version.version}: {result.rows_before} file "
        f"rows → {result.rows_after}"
        + (f" ({result.dropped_missing} missing files forgotten)" if drop_missing else "")
    )
