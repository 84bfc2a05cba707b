"""``sparkmark studio``: Glue Studio's visual jobs (their CodeGenConfigurationNodes JSON)
checked, turned into scripts, and run."""

from __future__ import annotations

import tempfile
from pathlib import Path

import typer

from ..errors import GraphError
from .output import console, err_console

app = typer.Typer(help="Visual jobs: Glue Studio's job graphs as scripts.", no_args_is_help=True)


def _graphs(file: Path, job: str | None):
    from ..studio.graph import load

    graphs = load(file)
    if job is not None:
        graphs = [g for g in graphs if g.name == job]
        if not graphs:
            raise GraphError([f"{file} has no job named {job!r}"])
    return graphs


def _problems(exc: GraphError) -> None:
    for problem in exc.problems:
        err_console.print(f"[bold red]error:[/] {problem}", highlight=False, markup=True, soft_wrap=True)
    raise typer.Exit(1)


@app.command("check")
def check_command(
    file: Path = typer.Argument(
        ..., help="get-job output, get-jobs output, a job, or CodeGenConfigurationNodes"
    ),
) -> None:
    """Check every job in FILE against Glue's model and what sparkmark generates; print
    each problem, naming its node."""
    from ..studio.codegen import generate

    try:
        graphs = _graphs(file, None)
        problems = []
        for graph in graphs:
            try:
                generate(graph)  # every problem generate would find, found the same way
            except GraphError as exc:
                problems += exc.problems
        if problems:
            raise GraphError(problems)
    except GraphError as exc:
        _problems(exc)
    for graph in graphs:
        console.print(f"{graph.name}: {len(graph.nodes)} nodes, ok", highlight=False)


@app.command("generate")
def generate_command(
    file: Path = typer.Argument(..., help="The visual job (JSON)"),
    output: Path = typer.Option(None, "-o", "--output", help="Write the script here (default: stdout)"),
    job: str = typer.Option(None, "--job", help="The job to take, when FILE holds several"),
) -> None:
    """Write the Glue-style PySpark script for a visual job."""
    from ..studio.codegen import generate

    try:
        graphs = _graphs(file, job)
        if len(graphs) > 1:
            raise GraphError(
                [
                    f"{file} holds {len(graphs)} jobs ({', '.join(g.name for g in graphs)}): choose one with --job"
                ]
            )
        text = generate(graphs[0])
    except GraphError as exc:
        _problems(exc)
    if output is None:
        typer.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
        console.print(f"wrote {output} ({graphs[0].name}, {len(graphs[0].nodes)} nodes)", highlight=False)


@app.command(
    "run",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def run_command(
    ctx: typer.Context,
    file: Path = typer.Argument(..., help="The visual job (JSON)"),
    job: str = typer.Option(None, "--job", help="The job to take, when FILE holds several"),
    until_caught_up: bool = typer.Option(
        False, "--until-caught-up", help="A streaming job processes what its stream holds now, then returns"
    ),
    max_batches: int | None = typer.Option(
        None, "--max-batches", help="A streaming job returns after N micro-batches"
    ),
) -> None:
    """Generate the script and run it as `sparkmark run` would, with the arguments that
    follow over the job's DefaultArguments (--JOB_NAME defaults to the job's name)."""
    from ..studio.codegen import generate
    from .run import run_script

    try:
        graphs = _graphs(file, job)
        if len(graphs) > 1:
            raise GraphError([f"{file} holds {len(graphs)} jobs: choose one with --job"])
        text = generate(graphs[0])
    except GraphError as exc:
        _problems(exc)
    arguments = list(ctx.args)
    # as Glue starts a job: its DefaultArguments, under the run's own
    for key, value in (graphs[0].job.get("DefaultArguments") or {}).items():
        if key.startswith("--") and key not in arguments:
            arguments += [key, str(value)]
    if "--JOB_NAME" not in arguments:
        arguments = ["--JOB_NAME", graphs[0].name, *arguments]
    with tempfile.TemporaryDirectory(prefix="sparkmark-studio-") as folder:
        script = Path(folder) / f"{graphs[0].name}.py"
        script.write_text(text, encoding="utf-8")
        raise typer.Exit(
            run_script(script, arguments, until_caught_up=until_caught_up, max_batches=max_batches)
        )
