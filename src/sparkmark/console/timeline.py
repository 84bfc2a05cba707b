"""Runs of jobs, crawls and workflow runs on one time axis (a Gantt chart): one lane
per job, crawler or workflow, one bar per run from its start to its end (to now while
it runs), laid out on the server and drawn as SVG by the page."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from .graph import COLOURS

LABEL_W, LANE_H, BAR_H, AXIS_H, MARGIN = 220, 26, 16, 28, 8
MIN_BAR = 3  # px: a run of a second is still visible
# Tick steps the axis chooses from: the first that gives at most ~10 ticks.
STEPS = [
    timedelta(seconds=s)
    for s in (
        1,
        5,
        15,
        30,
        60,
        300,
        900,
        1800,
        3600,
        3 * 3600,
        6 * 3600,
        12 * 3600,
        86400,
        7 * 86400,
        30 * 86400,
    )
]
# A pattern per state family, so that the chart reads without colour.
MARKS = {"FAILED": "✕", "ERROR": "✕", "TIMEOUT": "!", "STOPPED": "■", "CANCELLED": "■", "RUNNING": "▶"}


@dataclass(frozen=True)
class Item:
    kind: str  # job | crawler | workflow
    name: str
    started: datetime
    ended: datetime | None
    state: str
    href: str  # the run's page
    label: str  # the run's id, shortened
    lane_href: str  # the job's, crawler's or workflow's page


@dataclass(frozen=True)
class Lane:
    kind: str
    name: str
    href: str
    y: int


@dataclass(frozen=True)
class Bar:
    x: int
    y: int
    w: int
    state: str
    href: str
    title: str

    @property
    def colour(self) -> str:
        return COLOURS.get(self.state, "#90a4ae")

    @property
    def mark(self) -> str:
        return MARKS.get(self.state, "")


@dataclass(frozen=True)
class Timeline:
    lanes: list[Lane]
    bars: list[Bar]
    ticks: list[tuple[int, str]]
    width: int
    height: int
    since: datetime
    until: datetime
    label_w: int = LABEL_W
    bar_h: int = BAR_H


def _tick_label(moment: datetime, step: timedelta) -> str:
    if step >= timedelta(days=1):
        return moment.strftime("%m-%d")
    if step >= timedelta(minutes=1):
        return (
            moment.strftime("%m-%d %H:%M") if moment.hour == moment.minute == 0 else moment.strftime("%H:%M")
        )
    return moment.strftime("%H:%M:%S")


def layout(items: list[Item], since: datetime, until: datetime, width: int = 1320) -> Timeline:
    """Place ``items`` between ``since`` and ``until`` (UTC) on a chart ``width`` px wide."""
    span = max((until - since).total_seconds(), 1.0)
    plot = width - LABEL_W - MARGIN

    def x_of(moment: datetime) -> float:
        return LABEL_W + (min(max(moment, since), until) - since).total_seconds() / span * plot

    lanes: dict[tuple[str, str], Lane] = {}
    for index, ((kind, name), href) in enumerate(
        sorted({(i.kind, i.name): i.lane_href for i in items}.items())
    ):
        lanes[(kind, name)] = Lane(kind, name, href, AXIS_H + index * LANE_H)
    bars = []
    for item in sorted(items, key=lambda i: i.started):
        lane = lanes[(item.kind, item.name)]
        x1 = x_of(item.started)
        x2 = x_of(item.ended or until)
        ended = item.ended.strftime("%Y-%m-%d %H:%M:%S") if item.ended else "still running"
        bars.append(
            Bar(
                int(x1),
                lane.y + (LANE_H - BAR_H) // 2,
                max(MIN_BAR, int(x2 - x1)),
                item.state,
                item.href,
                f"{item.kind} {item.name} {item.label}: {item.state}, "
                f"{item.started.strftime('%Y-%m-%d %H:%M:%S')} to {ended} UTC",
            )
        )
    step = next((s for s in STEPS if span / s.total_seconds() <= 10), STEPS[-1])
    first = datetime.fromtimestamp(
        -(-since.timestamp() // step.total_seconds()) * step.total_seconds(), since.tzinfo
    )
    ticks: list[tuple[int, str]] = []
    moment = first
    while moment <= until and len(ticks) < 40:
        ticks.append((int(x_of(moment)), _tick_label(moment, step)))
        moment += step
    height = AXIS_H + max(len(lanes), 1) * LANE_H + MARGIN
    return Timeline(list(lanes.values()), bars, ticks, width, height, since, until)


def bars_svg(chart: Timeline) -> str:
    """The chart's bars as SVG, made here in one pass rather than in the template (a
    thousand bars are a thousand links, each with its title)."""
    from html import escape

    parts = []
    for b in chart.bars:
        mark = (
            f'<text class="bar-mark" x="{b.x + 3}" y="{b.y + 12}">{b.mark}</text>'
            if b.mark and b.w >= 12
            else ""
        )
        parts.append(
            f'<a href="{escape(b.href)}" class="bar" data-state="{escape(b.state)}">'
            f'<rect x="{b.x}" y="{b.y}" width="{b.w}" height="{chart.bar_h}" rx="3" fill="{b.colour}">'
            f"<title>{escape(b.title)}</title></rect>{mark}</a>"
        )
    return "".join(parts)
