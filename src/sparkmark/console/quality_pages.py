"""Data quality: rulesets, a job's results, one result's rules."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from .figures import rule_grid
from .filters import ListFilter
from .pages import PageError, filtered, job_name_of


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
    return request.app.state.render(
        request, "quality_job.html", job=job, by_ruleset=by_ruleset, charts=charts, grids=grids
    )


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
