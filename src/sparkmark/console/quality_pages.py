"""Data quality: rulesets, a job's results with each statistic's chart (the model's band
and the anomalies it finds, each point excluded or included from there), one result's
rules; the API's rulesets with their evaluation runs, and a recommendation run's
proposal."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from ..errors import NotFound
from ..quality import statistics
from ..quality.store import EXCLUDE, INCLUDE, StoredResult
from .figures import rule_grid
from .filters import ListFilter
from .pages import PageError, checked_form, filtered, job_name_of, redirect_to

CHARTED = 12  # statistics charted per ruleset, the most recently measured first


def quality_page(request: Request) -> Response:
    wanted = filtered(request, ["PASSED", "FAILED"])
    if not isinstance(wanted, ListFilter):
        return wanted
    service = request.app.state.service
    rulesets = [
        r
        for r in service.quality.rulesets()
        if (wanted.name_matches(r.job_name) or wanted.name_matches(r.ruleset))
        and (not wanted.states or ("PASSED" if r.last_passed else "FAILED") in wanted.states)
    ]
    return request.app.state.render(
        request, "quality.html", rulesets=rulesets, wanted=wanted, states=["PASSED", "FAILED"]
    )


def quality_job_page(request: Request) -> Response:
    job = job_name_of(request)
    service = request.app.state.service
    results = service.quality.find(job_name=job, limit=200)
    if not results:
        raise PageError(404, f"job {job!r} has no data quality results")
    by_ruleset: dict[str, list] = {}
    for r in results:
        by_ruleset.setdefault(r.ruleset, []).append(r)
    charts = {
        name: {
            "labels": [r.evaluated_at.strftime("%Y-%m-%d %H:%M") for r in reversed(rs)],
            "scores": [round(r.score, 4) for r in reversed(rs)],
        }
        for name, rs in by_ruleset.items()
    }
    grids = {name: rule_grid(rs) for name, rs in by_ruleset.items()}
    store = service.quality
    metric_charts = {name: statistic_charts(store, rs) for name, rs in by_ruleset.items()}
    return request.app.state.render(
        request,
        "quality_job.html",
        job=job,
        by_ruleset=by_ruleset,
        charts=charts,
        grids=grids,
        metric_charts=metric_charts,
        back=request.url.path,
    )


def statistic_charts(store, results: list[StoredResult]) -> list[dict]:
    """Each statistic of ``results`` (newest first) as a chart: its values oldest first,
    the band DetectAnomalies' model gives each from the ones before it, the points
    outside it, and each point's annotation."""
    found = statistics.points(results, store.annotations_of([r.id for r in results]))
    by_metric: dict[str, list[statistics.Point]] = {}
    for point in found:
        by_metric.setdefault(point.metric, []).append(point)
    charts = []
    for metric, series in by_metric.items():
        if len(series) < 2:
            continue
        model = statistics.model_results(series)
        flagged = [
            i
            for i, m in enumerate(model)
            if "LowerBound" in m and not m["LowerBound"] <= m["ActualValue"] <= m["UpperBound"]
        ]
        charts.append(
            {
                "metric": metric,
                "labels": [p.result.evaluated_at.strftime("%Y-%m-%d %H:%M") for p in series],
                "numbers": [p.value for p in series],
                "lows": [m.get("LowerBound") for m in model],
                "highs": [m.get("UpperBound") for m in model],
                "flagged": flagged,
                "excluded": [i for i, p in enumerate(series) if p.inclusion == EXCLUDE],
                "points": [
                    {
                        "result": p.result.id,
                        "at": p.result.evaluated_at,
                        "value": p.value,
                        "excluded": p.inclusion == EXCLUDE,
                    }
                    for i, p in enumerate(series)
                    if i in flagged or p.inclusion == EXCLUDE
                ],
                "newest": series[-1].result.evaluated_at,
            }
        )
    charts.sort(key=lambda c: (c["newest"], c["metric"]), reverse=True)
    return charts[:CHARTED]


async def annotate(request: Request) -> Response:
    """Exclude a statistic's data point from the history dynamic rules and
    DetectAnomalies learn from, or include it again."""
    form = await checked_form(request)
    inclusion = form.get("inclusion", "")
    if inclusion not in (EXCLUDE, INCLUDE):
        raise PageError(400, "inclusion is EXCLUDE or INCLUDE")
    if not form.get("result", "").isdigit() or not form.get("metric"):
        raise PageError(400, "a data point is a result number and a metric")
    store = request.app.state.service.quality
    found = store.find(result_id=int(form["result"]), limit=1)
    if not found or form["metric"] not in found[0].metrics:
        raise PageError(404, f"result {form['result']} has no metric {form['metric']!r}")
    from starlette.concurrency import run_in_threadpool

    await run_in_threadpool(lambda: store.annotate(found[0].id, [form["metric"]], inclusion))
    back = form.get("back", "/quality")
    return redirect_to(back if back.startswith("/") and not back.startswith("//") else "/quality")


def rulesets_page(request: Request) -> Response:
    """The API's rulesets and rule recommendation runs."""
    service = request.app.state.service
    runs = service.quality_runs.store
    from ..quality_service.records import RECOMMENDATION

    return request.app.state.render(
        request, "quality_rulesets.html", rulesets=runs.rulesets(), recommendations=runs.runs(RECOMMENDATION)
    )


def ruleset_page(request: Request) -> Response:
    """One of the API's rulesets: its DQDL, its target, its evaluation runs' results
    with their scores and statistics."""
    service = request.app.state.service
    name = request.path_params["name"]
    ruleset = service.quality_runs.store.find_ruleset(name)
    if ruleset is None:
        raise PageError(404, f"no data quality ruleset {name!r}")
    results = [r for r in service.quality.find(ruleset=name, limit=200) if r.evaluation_run_id]
    chart = {
        "labels": [r.evaluated_at.strftime("%Y-%m-%d %H:%M") for r in reversed(results)],
        "scores": [round(r.score, 4) for r in reversed(results)],
    }
    return request.app.state.render(
        request,
        "quality_ruleset.html",
        ruleset=ruleset,
        results=results,
        chart=chart,
        grid=rule_grid(results) if results else None,
        metric_charts=statistic_charts(service.quality, results),
        back=request.url.path,
    )


def recommendation_page(request: Request) -> Response:
    """A rule recommendation run: the table it profiled and the ruleset it proposes."""
    from ..quality_service.records import RECOMMENDATION

    try:
        run = request.app.state.service.quality_runs.store.run(request.path_params["run_id"], RECOMMENDATION)
    except NotFound:
        raise PageError(404, f"no rule recommendation run {request.path_params['run_id']!r}") from None
    return request.app.state.render(request, "quality_recommendation.html", run=run)


def quality_result_page(request: Request) -> Response:
    job = job_name_of(request)
    raw = request.path_params["result_id"]
    if not raw.isdigit():
        raise PageError(400, "a result id is a whole number")
    found = request.app.state.service.quality.find(job_name=job, result_id=int(raw), limit=1)
    if not found:
        raise PageError(404, f"job {job!r} has no data quality result {raw}")
    result = found[0]
    rules = sorted(result.rules, key=lambda r: (r.get("outcome") == "Passed", r.get("rule", "")))
    return request.app.state.render(request, "quality_result.html", job=job, result=result, rules=rules)


# ------------------------------------------------------------------ catalog
