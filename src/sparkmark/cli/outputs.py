"""``sparkmark outputs``: the writes of exactly-once sinks and their publication."""

from __future__ import annotations

import typer

from ..engine.models import OutputState
from ..engine.store import StateStore
from ..outputs import UNFINISHED, recover
from .output import console, fail, one_line_errors, print_json, table, when

app = typer.Typer(help="Inspect and finish the writes of exactly-once sinks.", no_args_is_help=True)


@app.command("list")
@one_line_errors
def list_outputs(
    job: str = typer.Argument(..., help="Job name"),
    unfinished: bool = typer.Option(False, "--unfinished", help="Only writes not yet published or discarded"),
    as_json: bool = typer.Option(False, "--json", help="Print JSON"),
) -> None:
    """List the job's writes, oldest first, with their state."""
    store = StateStore.from_settings()
    store.require_job(job)
    records = store.outputs(job, states=UNFINISHED if unfinished else None)
    if as_json:
        print_json(
            [
                {
                    "key": r.key,
                    "run_id": r.run_id,
                    "ctx": r.ctx,
                    "kind": r.kind.value,
                    "target": r.target,
                    "state": r.state.value,
                    "run_state": r.run_state,
                    "updated_at": r.updated_at,
                }
                for r in records
            ]
        )
        return
    console.print(
        table(
            f"Writes of job {job}",
            ["Run", "Seq", "Ctx", "Kind", "Target", "State", "Updated"],
            [
                [r.run_id, r.seq, r.ctx, r.kind.value, r.target, r.state.value, when(r.updated_at)]
                for r in records
            ],
        )
    )


@app.command("recover")
@one_line_errors
def recover_outputs(job: str = typer.Argument(..., help="Job name")) -> None:
    """Publish the job's committed writes and discard those of runs that did not commit.
    Refused while a run of the job is running (it does this itself when it starts)."""
    store = StateStore.from_settings()
    store.require_job(job)
    lease = store.get_lease(job)
    if lease is not None:
        fail(f"job {job!r} is running as {lease.run_id}; its runs recover their writes themselves")
    left = recover(store, job)
    done = [r for r in store.outputs(job) if r.state in (OutputState.PUBLISHED, OutputState.DISCARDED)]
    console.print(f"{len(done)} writes finished, {len(left)} still unfinished")
    if left:
        raise typer.Exit(1)
