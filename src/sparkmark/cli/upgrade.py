"""``sparkmark upgrade-check``: a job run on its input (or a sample of it) under two Glue
versions, each in its runtime, and one table of what changed, each difference tied to
the Spark or Glue change that explains it. Nothing is written where the job writes, and
no bookmark moves."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from ..settings import Settings
from .output import console, fail, print_json, table


def upgrade_check_command(
    ctx: typer.Context,
    old: str = typer.Option("5.0", "--from", help="The Glue version the jobs run on now"),
    new: str = typer.Option("6.0", "--to", help="The Glue version they move to"),
    key: str | None = typer.Option(
        None, "--key", help="Columns that identify a row (a,b): rows compared by key"
    ),
    sample: int | None = typer.Option(None, "--sample", min=1, help="Read at most N rows of each source"),
    keep: Path | None = typer.Option(None, "--keep", help="Keep the runs' captures and logs in this folder"),
    as_json: bool = typer.Option(False, "--json", help="Print JSON"),
) -> None:
    """Run SCRIPT... under two Glue versions and compare what each wrote (schemas, row
    counts, rows), how each ended, and the warnings each logged. Job arguments follow
    the scripts, as `sparkmark run` takes them: upgrade-check a.py b.py --input data/.
    Exits 1 when anything differs."""
    from ..upgrade.check import Job, run_check

    scripts, arguments = _split(list(ctx.args))
    if not scripts:
        fail("name at least one job script: sparkmark upgrade-check job.py [--arg value …]")
    missing = [s for s in scripts if not Path(s).is_file()]
    if missing:
        fail(f"script {missing[0]!r} does not exist")
    jobs = [Job(Path(s).stem, str(Path(s).resolve()), arguments) for s in scripts]
    columns = [c.strip() for c in key.split(",") if c.strip()] if key else None
    report = run_check(Settings.from_env(), jobs, old, new, key=columns, sample_rows=sample, keep=keep)
    if as_json:
        print_json(report.document())
    else:
        rows = [
            [escape(d.job), d.what, escape(d.where), escape(d.old), escape(d.new), escape(d.explanation)]
            for d in report.differences
        ]
        if rows:
            console.print(
                table(
                    f"Glue {old} → {new}: {len(report.differences)} difference(s)",
                    ["job", "what", "where", f"Glue {old}", f"Glue {new}", "explained by"],
                    rows,
                )
            )
        same = [j for j in report.jobs if not any(d.job == j for d in report.differences)]
        console.print(
            f"{len(report.jobs)} job(s): {len(report.jobs) - len(same)} differ, {len(same)} the same"
            + (f" ({', '.join(same)})" if same else "")
        )
        both = [j for j in same if report.ends.get(j) == ("failed", "failed")]
        if both:
            console.print(f"failed the same way under both versions: {', '.join(both)}")
    if report.differences:
        raise typer.Exit(1)


def _split(words: list[str]) -> tuple[list[str], list[str]]:
    """The scripts (the words before the first option) and the job's arguments."""
    scripts: list[str] = []
    for i, word in enumerate(words):
        if word == "--":
            return scripts, words[i + 1 :]
        if word.startswith("-"):
            return scripts, words[i:]
        scripts.append(word)
    return scripts, []
