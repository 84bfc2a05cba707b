"""``sparkmark outputs``: the writes of exactly-once sinks and their publication."""

from __future__ import annotations

import typer

from ..outputs import UNFINISHED, recover
from .context import current_app
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
    store = current_app().state
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
    store = current_app().state
    store.require_job(job)
    lease = store.get_lease(job)
    if lease is not None:
        fail(f"job {job!r} is running as {lease.run_id}; its runs recover their writes themselves")
    before = {r.key for r in store.outputs(job, states=UNFINISHED)}
    left = recover(store, job)
    finished = len(before - {r.key for r in left})
    console.print(f"{finished} writes finished, {len(left)} still unfinished")
    if left:
        raise typer.Exit(1)


@app.command("adopt")
@one_line_errors
def adopt_output(
    path: str = typer.Argument(..., help="The output folder (a path or s3:// URL)"),
    drop: bool = typer.Option(
        False, "--drop", help="First remove the files the unknown writes published, and their records"
    ),
) -> None:
    """Take over an output folder that holds writes of runs this state store has no
    record of (the store was replaced, emptied or restored from an older backup).
    Without --drop their rows stay, and the job's bookmark in this store decides what
    it reads again; with --drop their files go, so a job whose bookmark no longer
    covers their input writes it once more, and once only."""
    from ..engine import fileplan, ownership, publish

    store = current_app().state
    root = fileplan.root_url(path)
    unknown = ownership.unknown_writes(store, publish.write_keys(root))
    if not unknown:
        console.print(f"{root}: every write in it belongs to this state store; nothing to adopt")
        return
    if drop:
        removed = sum(publish.drop_write(root, key) for key in unknown)
        console.print(f"{root}: removed {removed} files of {len(unknown)} unknown writes")
    else:
        store.adopt_writes(unknown, root)
        console.print(f"{root}: adopted {len(unknown)} writes of runs this store has no record of")
