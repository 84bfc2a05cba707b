"""The timeline page: runs of jobs, crawls and workflow runs on one time axis (``timeline`` lays it out)."""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response

from ..engine.models import RunState
from ..engine.schema import utcnow
from .filters import ListFilter
from .pages import tidy_query
from .security import NoSecrets

TIMELINE_ITEMS = 1000  # drawn, of each kind, newest


TIMELINE_LISTED = 200  # rows of the table under the chart, newest


def timeline_page(request: Request) -> Response:
    """Runs of jobs, crawls and workflow runs in a time range, as a Gantt chart and a
    table (the chart's bars link to the runs; the table reads without the chart)."""
    from datetime import timedelta

    from . import timeline

    tidied = tidy_query(request)
    if tidied is not None:
        return tidied
    service = request.app.state.service
    params = dict(request.query_params)
    chosen = any(params.get(k) for k in ("last", "since", "until"))
    if not chosen:
        params["last"] = "24h"
    wanted = ListFilter.of(params, TIMELINE_STATES, getlist=request.query_params.getlist)
    now = utcnow()
    since, until = wanted.window(now)
    until = until or now
    if since is None:
        since = until - timedelta(days=1)
    items: list[timeline.Item] = []
    spans, total = service.state.run_spans(since, until, TIMELINE_ITEMS)
    for run_id, job, state, started, ended in spans:
        if job.startswith("crawler:"):
            continue
        items.append(
            timeline.Item("job", job, started, ended, state.value, f"/runs/{run_id}", run_id[:14],
                          f"/jobs/{quote(job, safe='')}")
        )  # fmt: skip
    for c in service.crawlers.crawls_between(since, until, limit=TIMELINE_ITEMS):
        href = f"/crawlers/{quote(c.crawler, safe='')}"
        items.append(
            timeline.Item(
                "crawler", c.crawler, c.started_at, c.ended_at, c.state, href, c.crawl_id[:14], href
            )
        )
    for w in service.workflows.workflow_runs(since=since, until=until, limit=TIMELINE_ITEMS):
        base = f"/workflows/{quote(w.workflow, safe='')}"
        items.append(
            timeline.Item("workflow", w.workflow, w.started_at, w.completed_at, w.status.value,
                          f"{base}/runs/{w.run_id}", w.run_id[:14], base)
        )  # fmt: skip
    items = [
        i for i in items if wanted.name_matches(i.name) and (not wanted.states or i.state in wanted.states)
    ]
    if not chosen and items:  # the last day by default: the axis starts where its runs do
        first = min(i.started for i in items)
        since = max(since, first - (until - first) * 0.03)
    listed = sorted(items, key=lambda i: i.started, reverse=True)
    chart = timeline.layout(items, since, until)
    return request.app.state.render(
        request,
        "timeline.html",
        chart=chart,
        bars=NoSecrets(timeline.bars_svg(chart)),
        items=listed[:TIMELINE_LISTED],
        shown=len(items),
        wanted=wanted,
        states=TIMELINE_STATES,
        capped=total > TIMELINE_ITEMS,
    )


TIMELINE_STATES = sorted(
    {s.value for s in RunState}
    | {"SUCCEEDED", "FAILED", "CANCELLED", "COMPLETED", "STOPPED", "ERROR", "STOPPING"}
)
