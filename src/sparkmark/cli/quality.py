"""``sparkmark quality``: read data quality results, and check a ruleset's syntax."""

from __future__ import annotations

from pathlib import Path

import typer

from .context import current_app
from .output import console, one_line_errors, print_json, table, when

app = typer.Typer(help="Data quality (DQDL) results and rulesets.", no_args_is_help=True)


@app.command("results")
@one_line_errors
def results(
    job: str = typer.Argument(..., help="Job name"),
    ruleset: str = typer.Option(None, "--ruleset", help="Only this ruleset (evaluation context)"),
    limit: int = typer.Option(20, "--limit", help="At most this many evaluations, newest first"),
    as_json: bool = typer.Option(False, "--json", help="Print JSON"),
) -> None:
    """List the job's data quality evaluations, newest first, with each rule's outcome."""
    from ..quality.store import QualityStore

    state = current_app().state
    state.require_job(job)
    found = QualityStore(state).results(job, ruleset, limit)
    if as_json:
        print_json(
            [
                {
                    "JobName": r.job_name,
                    "RunId": r.run_id,
                    "Ruleset": r.ruleset,
                    "EvaluatedAt": r.evaluated_at,
                    "Passed": r.passed,
                    "Score": r.score,
                    "Rules": r.rules,
                    "Metrics": r.metrics,
                }
                for r in found
            ]
        )
        return
    if not found:
        console.print(f"No data quality results for job {job}.")
        return
    console.print(
        table(
            f"Data quality of job {job}",
            ["evaluated", "run", "ruleset", "result", "score"],
            [
                [
                    when(r.evaluated_at),
                    r.run_id or "-",
                    r.ruleset,
                    "Passed" if r.passed else "Failed",
                    f"{r.score:.2f}",
                ]
                for r in found
            ],
        )
    )
    latest = found[0]
    console.print(
        table(
            f"Rules of the latest evaluation ({latest.ruleset})",
            ["rule", "outcome", "reason", "metrics"],
            [
                [
                    o["rule"],
                    o["outcome"],
                    o.get("failure_reason") or "",
                    ", ".join(f"{k}={v}" for k, v in (o.get("evaluated_metrics") or {}).items()),
                ]
                for o in latest.rules
            ],
        )
    )


@app.command("check")
@one_line_errors
def check(path: Path = typer.Argument(..., help="A file holding a DQDL ruleset")) -> None:
    """Parse a DQDL ruleset and check every rule's type and parameters (no Spark)."""
    from ..quality.rules import check_rule
    from ..quality.ruleset import parse_ruleset

    parsed = parse_ruleset(path.read_text(encoding="utf-8"))
    for rule in parsed.leaves():
        check_rule(rule)
    for analyzer in parsed.analyzers:
        check_rule(analyzer, analyzer=True)
    console.print(f"{path}: {len(parsed.rules)} rule(s), {len(parsed.analyzers)} analyzer(s): OK")
