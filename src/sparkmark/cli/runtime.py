"""``sparkmark runtime``: the Python environments each Glue version's jobs run in."""

from __future__ import annotations

import subprocess

import typer
from rich.markup import escape

from ..settings import Settings
from .output import console, fail, table

app = typer.Typer(
    help="Runtimes: one per Glue version, each with that version's Spark.", no_args_is_help=True
)


@app.command("list")
def list_runtimes() -> None:
    """Each runtime: the Glue version it serves, its Spark and its Python."""
    from .. import runtimes

    rows = [
        [r.glue_version, r.spark, escape(r.python), "sparkmark's own" if r.own else escape(str(r.folder))]
        for r in runtimes.every(Settings.from_env().runtimes_dir)
    ]
    console.print(table("Runtimes", ["glue version", "spark", "python", "where"], rows))


@app.command("add")
def add(
    glue_version: str = typer.Argument(..., help="The Glue version: 5.0, 5.1 or 6.0"),
    fetch: bool = typer.Option(
        False, "--fetch-connectors", help="Also fetch its connectors (S3, Kafka, Avro, JDBC) now"
    ),
) -> None:
    """Make the runtime for a Glue version under SPARKMARK_HOME/runtimes: that version's
    PySpark from PyPI, over this install's sparkmark and libraries."""
    from .. import glue_versions, runtimes

    settings = Settings.from_env()
    release = glue_versions.release(glue_version)
    mine = runtimes.own()
    if mine.glue_version == release.version:
        console.print(f"Glue {release.version} runs on sparkmark's own Spark ({mine.spark}): nothing to add")
        return
    console.print(f"adding the runtime for Glue {release.version}: PySpark {release.spark} from PyPI")
    runtime = runtimes.add(settings.runtimes_dir, release.version)
    if fetch:
        done = subprocess.run([runtime.python, "-m", "sparkmark", "connectors", "fetch"], check=False)
        if done.returncode != 0:
            fail(f"the runtime for Glue {release.version} is added, but its connectors could not be fetched")
    console.print(f"Glue {runtime.glue_version}: Spark {runtime.spark} in {escape(str(runtime.folder))}")


@app.command("remove")
def remove(glue_version: str = typer.Argument(..., help="The Glue version whose runtime to remove")) -> None:
    """Remove the runtime added for a Glue version (its jobs are then refused until it is
    added again)."""
    from .. import runtimes

    if not runtimes.remove(Settings.from_env().runtimes_dir, glue_version):
        fail(f"there is no runtime added for Glue {glue_version}")
    console.print(f"removed the runtime for Glue {glue_version}")
