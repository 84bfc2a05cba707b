"""The console's jobs: the list with its search and filters, a job's page (details,
runs, charts, schedule), its script, and starting a run or a retry from the page."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from ..args import as_passed
from ..engine.masking import MASK, mask_arguments
from ..engine.models import RunRecord, RunState
from ..errors import ConfigError
from ..workflow.definition import TriggerType
from .figures import run_series
from .filters import JOB_TYPES, ListFilter
from .pages import PageError, checked_form, filtered, job_name_of, page_number, require_job, run_of

RUNS_PAGE = 50
CHART_RUNS = 100  # the runs a job's charts show, newest
SCRIPT_BYTES = 512 * 1024
# Jobs the store keeps for crawlers that crawl new folders only: shown as crawls, not jobs.
CRAWLER_JOBS = "crawler:"
RUN_STATES = [s.value for s in RunState]


@dataclass(frozen=True)
class JobRow:
    name: str
    runs: int
    latest: RunRecord | None
    declared: bool
    next_firing: datetime | None
    next_by: str | None
    kind: str
    tags: dict[str, str]


def _trigger_state(states: dict, trigger) -> str:
    """A trigger's state: the one the store records, else the one it starts in."""
    return states.get(trigger.Name, ("ACTIVATED" if trigger.StartOnCreation else "CREATED", None))[0]


def next_firings(service, now: datetime) -> dict[str, tuple[datetime, str]]:
    """Each job's next scheduled start: a SCHEDULED trigger that is activated and starts
    the job, or starts a workflow whose graph holds the job."""
    project = service.project
    states = service.workflows.trigger_rows()
    found: dict[str, tuple[datetime, str]] = {}
    for trigger in project.triggers.values():
        if trigger.Type is not TriggerType.SCHEDULED:
            continue
        state = _trigger_state(states, trigger)
        schedule = trigger.schedule
        if state != "ACTIVATED" or schedule is None:
            continue
        when = schedule.next_after(now)
        if when is None:
            continue
        jobs = {a.JobName for a in trigger.Actions if a.JobName}
        if trigger.WorkflowName:
            graph = project.graph(trigger.WorkflowName)
            jobs |= {n["Name"] for n in graph["Nodes"] if n["Type"] == "JOB"}
        for job in jobs:
            if job not in found or when < found[job][0]:
                found[job] = (when, trigger.Name)
    return found


def job_type(service, name: str, latest: RunRecord | None, entries: dict | None = None) -> str:
    """Glue's job type (Command.Name): the one a job created through the API or declared
    in the file gave, else streaming when the job declares streaming bounds or its runs
    streamed, else ETL.
    ``entries`` are the registry's jobs, when the caller has read them already."""
    entry = (service.registry.entries("job") if entries is None else entries).get(name)
    command = ((entry.glue if entry else {}) or {}).get("Command") or {}
    if command.get("Name") in JOB_TYPES:
        return str(command["Name"])
    definition = service.project.jobs.get(name)
    if definition is not None and definition.Command != "glueetl":  # the file's own Command
        return str(definition.Command)
    if definition is not None and definition.Streaming.model_dump(exclude_defaults=True):
        return "gluestreaming"
    if latest is not None and latest.metrics.get("streaming"):
        return "gluestreaming"
    return "glueetl"


def jobs_page(request: Request) -> Response:
    wanted = filtered(request, RUN_STATES + ["NOT RUN"])
    if not isinstance(wanted, ListFilter):
        return wanted
    service = request.app.state.service
    summaries = {s.job_name: s for s in service.state.job_summaries()}
    declared = service.project.jobs
    upcoming = next_firings(service, datetime.now(UTC))
    tags = service.tags.all_tags("job")
    entries = service.registry.entries("job")
    rows = []
    for name in sorted(set(summaries) | set(declared)):
        if name.startswith(CRAWLER_JOBS) or not wanted.name_matches(name):
            continue
        summary = summaries.get(name)
        latest = summary.latest if summary else None
        state = latest.state.value if latest else "NOT RUN"
        if wanted.states and state not in wanted.states:
            continue
        if not wanted.tag_matches(tags.get(name, {})):
            continue
        kind = job_type(service, name, latest, entries)
        if wanted.kind and kind != wanted.kind:
            continue
        nxt = upcoming.get(name)
        rows.append(
            JobRow(
                name,
                summary.runs if summary else 0,
                latest,
                name in declared,
                nxt[0] if nxt else None,
                nxt[1] if nxt else None,
                kind,
                tags.get(name, {}),
            )
        )
    return request.app.state.render(
        request,
        "jobs.html",
        jobs=rows,
        wanted=wanted,
        states=RUN_STATES + ["NOT RUN"],
        job_types=JOB_TYPES,
    )


def _triggers_of(service, job: str) -> list[dict[str, Any]]:
    """The triggers that start ``job``, or watch it, with their schedule and workflow."""
    found = []
    states = service.workflows.trigger_rows()
    for trigger in sorted(service.project.triggers.values(), key=lambda t: t.Name):
        starts = any(a.JobName == job for a in trigger.Actions)
        watches = trigger.Predicate is not None and any(
            c.JobName == job for c in trigger.Predicate.Conditions
        )
        in_workflow = bool(trigger.WorkflowName) and any(
            n["Name"] == job and n["Type"] == "JOB"
            for n in service.project.graph(trigger.WorkflowName)["Nodes"]
        )
        if not (starts or watches or (in_workflow and trigger.Type is TriggerType.SCHEDULED)):
            continue
        state = _trigger_state(states, trigger)
        found.append(
            {
                "name": trigger.Name,
                "type": trigger.Type.value,
                "schedule": trigger.Schedule or "",
                "workflow": trigger.WorkflowName or "",
                "state": state,
                "role": "starts it" if starts else "watches it" if watches else "starts its workflow",
            }
        )
    return found


def _details(service, job: str, latest: RunRecord | None) -> dict[str, Any] | None:
    """The job's details as Glue's console shows them, for a declared job."""
    definition = service.project.jobs.get(job)
    if definition is None:
        return None
    entries = service.registry.entries("job")
    entry = entries.get(job)
    glue = (entry.glue if entry else {}) or {}
    return {
        "type": job_type(service, job, latest, entries),
        "script": definition.Script,
        "description": definition.Description,
        "arguments": mask_arguments(definition.DefaultArguments),
        "retries": definition.MaxRetries,
        "timeout": definition.Timeout,
        "concurrency": definition.MaxConcurrentRuns,
        "glue_version": glue.get("GlueVersion") or "",
        "worker_type": glue.get("WorkerType") or "",
        "workers": glue.get("NumberOfWorkers") or "",
        "origin": "the Glue API"
        if entry is not None and job not in service.file_names("job")
        else "sparkmark.toml",
        "spark": definition.Spark.model_dump(exclude_defaults=True),
    }


def job_page(request: Request) -> Response:
    job = job_name_of(request)
    wanted = filtered(request, RUN_STATES)
    if not isinstance(wanted, ListFilter):
        return wanted
    app = request.app
    service = app.state.service
    require_job(app, job)
    store = service.state
    page = page_number(request)
    since, until = wanted.window(datetime.now(UTC))
    runs, total = store.find_runs(
        job, states=[RunState(s) for s in wanted.states], since=since, until=until,
        limit=RUNS_PAGE, offset=(page - 1) * RUNS_PAGE,
    )  # fmt: skip
    pages = max(1, -(-total // RUNS_PAGE))
    if page > pages:
        raise PageError(404, f"job {job!r} has {total} matching runs: page {page} is past the last ({pages})")
    recent, _ = store.find_runs(job, limit=CHART_RUNS)
    latest = recent[0] if recent else None
    # Runs queued (Run job, Retry, a trigger) that no process has started yet.
    starting = []
    if page == 1 and not wanted.active:
        active = [a for a in service.workflows.active_actions() if a.kind == "JOB" and a.name == job]
        begun = store.run_states(a.action_id for a in active)
        starting = [a for a in active if a.action_id not in begun]
    nxt = next_firings(service, datetime.now(UTC)).get(job)
    return app.state.render(
        request,
        "job.html",
        job=job,
        runs=runs,
        total=total,
        page=page,
        pages=pages,
        wanted=wanted,
        states=RUN_STATES,
        details=_details(service, job, latest),
        triggers=_triggers_of(service, job),
        next_firing=nxt,
        tags=service.tags.tags("job", job),
        series=run_series(recent),
        starting=starting,
        running=bool(starting) or any(r.state is RunState.RUNNING for r in runs),
    )


# ------------------------------------------------------------------ the script


@cache
def _code_style() -> str:
    import re

    from pygments.formatters import HtmlFormatter

    # Pygments' rules, without its comments (which name token kinds such as Traceback).
    return re.sub(r"\s*/\*.*?\*/", "", str(HtmlFormatter(style="default").get_style_defs(".code")))


def _script_location(service, job: str) -> str | None:
    definition = service.project.jobs.get(job)
    if definition is not None:
        return definition.Script
    recent, _ = service.state.find_runs(job, limit=1)
    script = (recent[0].metrics.get("script") or {}) if recent else {}
    return script.get("path")


def script_page(request: Request) -> Response:
    """The job's script, read-only, highlighted: the one its definition names, else the
    one its last run ran."""
    job = job_name_of(request)
    service = request.app.state.service
    require_job(request.app, job)
    location = _script_location(service, job)
    html = problem = None
    if location is None:
        problem = "no script is known for this job: it is not declared, and no run recorded one"
    else:
        import fsspec
        from markupsafe import Markup
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer, get_lexer_for_filename
        from pygments.util import ClassNotFound

        try:
            with fsspec.open(location, "rb") as f:
                raw = f.read(SCRIPT_BYTES + 1)
        except (OSError, ValueError) as exc:
            problem = f"the script {location} cannot be read: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        else:
            text = raw[:SCRIPT_BYTES].decode("utf-8", errors="replace")
            if len(raw) > SCRIPT_BYTES:
                problem = f"only the first {SCRIPT_BYTES // 1024} KiB of the script are shown"
            try:
                lexer = get_lexer_for_filename(location)
            except ClassNotFound:
                lexer = PythonLexer()
            from ..engine.masking import mask_text

            html = Markup(highlight(mask_text(text), lexer, HtmlFormatter(cssclass="code", linenos="table")))
    return request.app.state.render(
        request,
        "job_script.html",
        job=job,
        location=location,
        code=html,
        problem=problem,
        code_style=_code_style(),
    )


# ------------------------------------------------------------------ starting runs


def parse_arguments(text: str) -> dict[str, str]:
    """Run arguments typed into the page: one ``--name value`` (or ``--name=value``)
    per line, as Glue's console takes them; a bad line is a 400 naming it."""
    found: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if "=" in line.split(" ", 1)[0]:
            key, _, value = line.partition("=")
        else:
            key, _, value = line.partition(" ")
        key, value = key.strip(), value.strip()
        if not key.startswith("--") or len(key) < 3:
            raise PageError(400, f"run argument {line!r} is not --name value")
        if key == "--JOB_NAME":
            raise PageError(400, "--JOB_NAME is the job's own name: it cannot be given")
        found[key] = value
    return found


def _declared(service, job: str):
    try:
        return service.project.job(job)
    except ConfigError:
        raise PageError(
            409,
            f"job {job!r} is not declared (sparkmark.toml or the Glue API), so it cannot be started "
            "from here: run it with `sparkmark run`",
        ) from None


async def run_job(request: Request) -> Response:
    """Run job: queue a run with the arguments the form gives (over the job's defaults);
    the scheduler starts it, and the browser goes to its page."""
    job = job_name_of(request)
    form = await checked_form(request)
    service = request.app.state.service
    _declared(service, job)
    arguments = parse_arguments(form.get("arguments", ""))
    run_id = await run_in_threadpool(lambda: service.start_job_run(job, arguments))
    return RedirectResponse(f"/runs/{run_id}", status_code=303)


async def retry_run(request: Request) -> Response:
    """Retry a run that failed: a new run of its job with the arguments it was started
    with. An argument the store keeps masked (a secret) takes the job's default, or the
    retry is refused: the store never had its value."""
    run = run_of(request)
    await checked_form(request)
    if run.state not in (RunState.FAILED, RunState.TIMEOUT, RunState.STOPPED):
        raise PageError(
            409, f"run {run.run_id} is {run.state.value}: only a failed, stopped or timed-out run is retried"
        )
    service = request.app.state.service
    definition = _declared(service, run.job_name)
    passed = as_passed(run.arguments, str(service.settings.temp_dir))
    masked = mask_arguments(passed)
    arguments = {}
    for key, value in passed.items():
        if masked.get(key) != value or MASK in value:  # a secret: the store has only its mask
            if key not in definition.DefaultArguments:
                raise PageError(
                    409,
                    f"run {run.run_id} was given a secret {key}, which the store does not keep: "
                    "start the run with Run job and give it again",
                )
            continue
        arguments[key] = value
    run_id = await run_in_threadpool(lambda: service.start_job_run(run.job_name, arguments))
    return RedirectResponse(f"/runs/{run_id}", status_code=303)
