"""``sparkmark workflow``, ``trigger``, ``job`` and ``scheduler``: what sparkmark.toml declares."""

from __future__ import annotations

import logging
from pathlib import Path

import typer
from rich.markup import escape

from .. import args as job_args
from ..engine.owner import is_dead
from ..engine.schema import utcnow
from ..errors import ConfigError
from ..settings import Settings
from ..workflow import report
from ..workflow.control import run_job, start_workflow
from ..workflow.definition import Project, TriggerType
from ..workflow.records import WorkflowRunRecord
from ..workflow.registry import ProjectSource, load_project
from ..workflow.scheduler import Scheduler
from .context import current_app
from .output import console, one_line_errors, print_json, table, when

workflow_app = typer.Typer(help="Run and inspect workflows declared in sparkmark.toml.", no_args_is_help=True)
trigger_app = typer.Typer(help="Activate, deactivate and list triggers.", no_args_is_help=True)
job_app = typer.Typer(help="Run and list jobs declared in sparkmark.toml.", no_args_is_help=True)

CONFIG = typer.Option(
    None, "--config", help="The definitions file (default: $SPARKMARK_CONFIG or ./sparkmark.toml)"
)


def _config(given: Path | None, settings: Settings) -> Path:
    return given or settings.config


def _scheduler(
    config: Path | None, *, pooled: bool = False, warm_now: bool = False, runs: bool = False, **kwargs
) -> Scheduler:
    """A scheduler over the definitions; ``pooled``: it runs the jobs it can on warm Spark
    processes (``[pool]``), started now with ``warm_now`` (a workflow run: its jobs come
    after its first steps, while the pool warms); ``runs``: it starts runs in processes of
    their own, a Python shell run told the Glue endpoint (one found or started when the
    first asks)."""
    settings = Settings.from_env()
    state = current_app(settings).state
    source = ProjectSource(_config(config, settings), state)
    if pooled or runs:
        from ..api.server import RunsEndpoint
        from ..app import App
        from ..workflow.launcher import Launcher
        from ..workflow.scheduler import pooled_launcher

        own = settings.model_copy(update={"config": _config(config, settings)})
        endpoint = RunsEndpoint(App(own, state))
        kwargs["launcher"] = (
            pooled_launcher(own, start=warm_now, endpoint=endpoint) if pooled else Launcher(endpoint=endpoint)
        )
    return Scheduler(source.current(), state, settings=settings, source=source, **kwargs)


def _properties(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key:
            raise ConfigError(f"--property takes KEY=VALUE, not {pair!r}")
        out[key] = value
    return out


def _print_run(run: WorkflowRunRecord, firings: list[dict], graph: bool) -> None:
    stats = run.statistics
    console.print(
        f"workflow {run.workflow} run {run.run_id}: [bold]{run.status.value}[/] "
        f"(started {when(run.started_at)}, completed {when(run.completed_at)})",
        highlight=False,
    )
    console.print("  " + ", ".join(f"{k} {v}" for k, v in stats.items()), highlight=False, markup=False)
    if run.properties:
        console.print(
            "  run properties: " + ", ".join(f"{k}={v}" for k, v in run.properties.items()),
            highlight=False,
            markup=False,
        )
    if run.error:
        console.print(f"  error: {run.error}", highlight=False, markup=False)
    if not graph:
        return
    doc = report.workflow_run(run, graph=True, firings=firings)
    rows = []
    for node in doc["Graph"]["Nodes"]:
        state, started, ended, detail = report.node_state(node)
        rows.append([node["Type"], node["Name"], state, started or "-", ended or "-", detail])
    console.print(table("Nodes", ["type", "name", "state", "started", "ended", "detail"], rows))
    names = {n["UniqueId"]: f"{n['Type'].lower()} {n['Name']}" for n in doc["Graph"]["Nodes"]}
    for edge in doc["Graph"]["Edges"]:
        console.print(
            f"  {names[edge['SourceId']]} -> {names[edge['DestinationId']]}", highlight=False, markup=False
        )


@workflow_app.command("run")
@one_line_errors
def workflow_run(
    name: str,
    config: Path = CONFIG,
    wait: bool = typer.Option(
        True, "--wait/--no-wait", help="With a scheduler running, wait for the run to end"
    ),
    prop: list[str] = typer.Option([], "--property", help="KEY=VALUE run property"),
    graph: bool = typer.Option(True, "--graph/--no-graph"),
    strict: bool = typer.Option(
        False, "--strict", help="Exit non-zero when any job or crawl of the run did not succeed (for CI)"
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Start a run of workflow NAME. Without a scheduler running, this command runs it
    to the end itself; exits non-zero unless the run COMPLETED (with --strict: and every
    job and crawl in it succeeded)."""
    scheduler = _scheduler(config, pooled=wait, warm_now=wait)
    try:
        run = start_workflow(scheduler, name, wait=wait, properties=_properties(prop))
    finally:
        from ..pool.pool import close_shared

        close_shared()
    if as_json:
        print_json(report.workflow_run(run, graph=graph, firings=scheduler.store.run_firings(run.run_id)))
    else:
        _print_run(run, scheduler.store.run_firings(run.run_id), graph)
    if run.status.value not in ("COMPLETED", "RUNNING"):
        raise typer.Exit(1)
    if strict and any(a.final and a.state.value != "SUCCEEDED" for a in run.actions):
        raise typer.Exit(1)


@workflow_app.command("get-run")
@one_line_errors
def workflow_get_run(
    name: str,
    run_id: str,
    config: Path = CONFIG,
    graph: bool = typer.Option(False, "--graph", help="Include nodes and edges"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Show one workflow run: status, statistics, properties and (--graph) its nodes."""
    store = _scheduler(config).store
    run = store.workflow_run(run_id, name)
    if as_json:
        print_json(report.workflow_run(run, graph=graph, firings=store.run_firings(run_id)))
    else:
        _print_run(run, store.run_firings(run_id), graph)


@workflow_app.command("runs")
@one_line_errors
def workflow_runs(
    name: str,
    config: Path = CONFIG,
    limit: int = typer.Option(20, "--limit"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """List the runs of workflow NAME, newest first."""
    store = _scheduler(config).store
    runs = store.workflow_runs(name, limit=limit)
    if as_json:
        print_json([report.workflow_run(r) for r in runs])
        return
    console.print(
        table(
            f"Runs of workflow {name}",
            ["run", "status", "started", "completed", "actions", "succeeded", "failed", "timeout"],
            [
                [
                    r.run_id,
                    r.status.value,
                    when(r.started_at),
                    when(r.completed_at),
                    r.statistics["TotalActions"],
                    r.statistics["SucceededActions"],
                    r.statistics["FailedActions"],
                    r.statistics["TimeoutActions"],
                ]
                for r in runs
            ],
        )
    )


@workflow_app.command("stop")
@one_line_errors
def workflow_stop(name: str, run_id: str, config: Path = CONFIG) -> None:
    """Stop a running workflow run: nothing more starts, running jobs are stopped."""
    scheduler = _scheduler(config, leading=False)
    run = scheduler.stop_workflow_run(name, run_id)
    if is_dead(run.supervisor):
        # Nobody drives the run: take it over and finish the stop here.
        scheduler.store.supervise(run_id, scheduler.owner)
        scheduler.run(
            until=lambda: (
                scheduler.store.workflow_run(run_id).status.value in ("STOPPED", "COMPLETED", "ERROR")
            ),
            max_seconds=120,
        )
    console.print(f"workflow run {run_id}: {scheduler.store.workflow_run(run_id).status.value}")


@workflow_app.command("list")
@one_line_errors
def workflow_list(config: Path = CONFIG, as_json: bool = typer.Option(False, "--json")) -> None:
    """List declared workflows with their triggers."""
    settings = Settings.from_env()
    project = load_project(_config(config, settings), current_app(settings).state)
    rows = [
        {
            "Name": w.Name,
            "Description": w.Description,
            "Triggers": [t.Name for t in project.workflow_triggers(w.Name)],
        }
        for w in project.workflows.values()
    ]
    if as_json:
        print_json(rows)
        return
    console.print(
        table(
            "Workflows",
            ["name", "triggers", "description"],
            [[r["Name"], ", ".join(r["Triggers"]), r["Description"]] for r in rows],
        )
    )


def _set_trigger(name: str, config: Path | None, state: str) -> None:
    scheduler = _scheduler(config, leading=False)
    trigger = scheduler.project.trigger(name)
    if trigger.Type is TriggerType.ON_DEMAND:
        raise ConfigError(
            f"trigger {name!r} is ON_DEMAND: it fires only when started by hand "
            "(`sparkmark workflow run` for a workflow's trigger) and cannot be activated"
        )
    scheduler.store.set_trigger_state(name, state, utcnow())
    console.print(f"trigger {name}: {state}")


@trigger_app.command("start")
@one_line_errors
def trigger_start(name: str, config: Path = CONFIG) -> None:
    """Activate a trigger: a schedule fires from its next window on."""
    _set_trigger(name, config, "ACTIVATED")


@trigger_app.command("stop")
@one_line_errors
def trigger_stop(name: str, config: Path = CONFIG) -> None:
    """Deactivate a trigger."""
    _set_trigger(name, config, "DEACTIVATED")


@trigger_app.command("list")
@one_line_errors
def trigger_list(config: Path = CONFIG, as_json: bool = typer.Option(False, "--json")) -> None:
    """List triggers with their state and next firing."""
    scheduler = _scheduler(config, leading=False)
    now = utcnow()
    scheduler.sync(now)
    states = scheduler.store.trigger_rows()
    rows = []
    for t in scheduler.project.triggers.values():
        state = states.get(t.Name, ("CREATED", None))[0]
        schedule = t.schedule
        nxt = schedule.next_after(now) if schedule and state == "ACTIVATED" else None
        fired = scheduler.store.firings(t.Name, limit=1)
        rows.append(
            {
                "Name": t.Name,
                "Type": t.Type.value,
                "State": state,
                "WorkflowName": t.WorkflowName,
                "Schedule": t.Schedule,
                "NextFiring": nxt,
                "LastFired": fired[0]["fired_at"] if fired else None,
            }
        )
    if as_json:
        print_json(rows)
        return
    console.print(
        table(
            "Triggers",
            ["name", "type", "state", "workflow", "schedule", "next", "last fired"],
            [
                [
                    r["Name"],
                    r["Type"],
                    r["State"],
                    r["WorkflowName"],
                    r["Schedule"],
                    when(r["NextFiring"]),
                    when(r["LastFired"]),
                ]
                for r in rows
            ],
        )
    )


@job_app.command("run", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
@one_line_errors
def job_run(
    ctx: typer.Context,
    name: str,
    config: Path = CONFIG,
    wait: bool = typer.Option(True, "--wait/--no-wait"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Run declared job NAME with its DefaultArguments, overridden by --name value pairs
    after NAME; with its timeout and retries. Exits non-zero unless it SUCCEEDED."""
    extra = {f"--{k}": v for k, v in job_args.split_pairs(list(ctx.args)).items()}
    scheduler = _scheduler(config, runs=wait)
    action = run_job(scheduler, name, extra, wait=wait)
    if as_json:
        print_json(report.job_run(action))
    else:
        console.print(
            f"job {name} run {action.action_id} (attempt {action.attempt}): "
            f"[bold]{action.state.value}[/]" + (f" — {escape(action.error)}" if action.error else ""),
            highlight=False,
        )
    if action.final and action.state.value != "SUCCEEDED":
        raise typer.Exit(1)


@job_app.command("list")
@one_line_errors
def job_list(config: Path = CONFIG, as_json: bool = typer.Option(False, "--json")) -> None:
    """List declared jobs."""
    settings = Settings.from_env()
    project: Project = load_project(_config(config, settings), current_app(settings).state)
    rows = [j.model_dump(mode="json") for j in project.jobs.values()]
    if as_json:
        print_json(rows)
        return
    console.print(
        table(
            "Jobs",
            ["name", "script", "retries", "timeout (min)", "concurrent"],
            [[r["Name"], r["Script"], r["MaxRetries"], r["Timeout"], r["MaxConcurrentRuns"]] for r in rows],
        )
    )


def scheduler_command(
    config: Path = CONFIG,
    poll: float = typer.Option(1.0, "--poll", help="Seconds between passes"),
    max_seconds: float = typer.Option(
        None, "--max-seconds", help="Stop after this long (default: run until killed)"
    ),
    lease: float = typer.Option(30.0, "--lease", help="Seconds the lead lasts between passes"),
) -> None:
    """Run the scheduler: fire schedules and conditional triggers, start and watch job and
    crawler runs, follow workflow runs. Several may run: one leads, the others wait."""
    scheduler = _scheduler(config, pooled=True, lease_seconds=lease)
    log = logging.getLogger("sparkmark.scheduler")
    log.info(
        "scheduler %s: %d jobs, %d triggers, %d workflows from %s",
        scheduler.owner,
        len(scheduler.project.jobs),
        len(scheduler.project.triggers),
        len(scheduler.project.workflows),
        scheduler.project.path,
    )
    try:
        scheduler.run(poll_seconds=poll, max_seconds=max_seconds)
    except KeyboardInterrupt:
        log.info("scheduler %s: stopped", scheduler.owner)
