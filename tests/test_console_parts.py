"""The console's pure parts, without a JVM or a browser: list filters read from a URL,
the timeline's layout, a run's figures with units, a crawl counted as Glue counts it,
rule outcomes over results, Run job's argument lines, the path browser, and the CLI's
help text reflowed for the terminal."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkmark.args import as_passed
from sparkmark.cli.app import _one_line
from sparkmark.console import timeline
from sparkmark.console.figures import (
    CHARTS,
    crawl_figures,
    human_bytes,
    rule_grid,
    run_series,
    source_figures,
)
from sparkmark.console.filters import ListFilter
from sparkmark.console.jobs import parse_arguments
from sparkmark.console.pages import PageError
from sparkmark.console.studio import browse
from sparkmark.engine.models import BookmarkOption, RunRecord, RunState
from sparkmark.errors import ArgumentError, NotFound
from sparkmark.settings import Settings

T0 = datetime(2026, 11, 27, 6, 0, tzinfo=UTC)


class Params(dict):
    def getlist(self, key):
        value = self.get(key)
        return value if isinstance(value, list) else ([value] if value else [])


def of(**params: Any) -> ListFilter:
    given_ = Params(params)
    return ListFilter.of(given_, ["RUNNING", "SUCCEEDED", "FAILED"], getlist=given_.getlist)


# ------------------------------------------------------------------ filters


def test_an_empty_query_filters_nothing():
    wanted = of()
    assert not wanted.active
    assert wanted.url("/jobs/x") == "/jobs/x"
    assert wanted.name_matches("anything") and wanted.tag_matches({})


def test_filters_are_read_and_written_back_into_links():
    wanted = of(
        q=" Orders ", state=["failed", "RUNNING"], since="2026-11-01", until="2026-11-02", tag="team=data"
    )
    assert wanted.active
    assert wanted.states == ("FAILED", "RUNNING")
    assert wanted.name_matches("daily_orders_load") and not wanted.name_matches("customers")
    # A date for "until" means the whole of that day.
    assert wanted.until == datetime(2026, 11, 3, tzinfo=UTC)
    url = wanted.url("/", page=2)
    again = of(**_pairs(url))
    assert again == wanted
    assert url.endswith("page=2")


def _pairs(url: str) -> dict[str, Any]:
    from urllib.parse import parse_qsl

    found: dict[str, Any] = {}
    for key, value in parse_qsl(url.split("?", 1)[1]):
        if key == "state":
            found.setdefault("state", []).append(value)
        elif key != "page":
            found[key] = value
    return found


def test_tags_match_a_key_or_a_key_and_value():
    assert of(tag="team").tag_matches({"team": "data"})
    assert of(tag="team=data").tag_matches({"team": "data"})
    assert not of(tag="team=web").tag_matches({"team": "data"})
    assert not of(tag="owner").tag_matches({"team": "data"})


@pytest.mark.parametrize(
    "params, named",
    [
        ({"state": "BOGUS"}, "state 'BOGUS'"),
        ({"last": "2w"}, "last '2w'"),
        ({"since": "yesterday"}, "since 'yesterday'"),
        ({"until": "2026-13-01"}, "until '2026-13-01'"),
        ({"since": "2026-11-02", "until": "2026-11-01"}, "since must be before until"),
        ({"type": "glueray"}, "type 'glueray'"),
    ],
)
def test_a_bad_filter_is_one_line_naming_the_value(params, named):
    with pytest.raises(ArgumentError) as caught:
        of(**params)
    assert named in str(caught.value) and "\n" not in str(caught.value)


def test_last_counts_back_from_now():
    now = T0
    assert of(last="24h").window(now) == (now - timedelta(days=1), None)
    assert of().window(now) == (None, None)


# ------------------------------------------------------------------ timeline


def item(
    name: str, start: int, end: int | None, state: str = "SUCCEEDED", kind: str = "job"
) -> timeline.Item:
    return timeline.Item(
        kind,
        name,
        T0 + timedelta(minutes=start),
        None if end is None else T0 + timedelta(minutes=end),
        state,
        f"/runs/{name}-{start}",
        f"{name}-{start}",
        f"/jobs/{name}",
    )


def test_the_timeline_has_a_lane_per_job_and_a_bar_per_run():
    items = [item("a", 0, 10), item("a", 20, 30, "FAILED"), item("b", 5, None, "RUNNING", "workflow")]
    chart = timeline.layout(items, T0, T0 + timedelta(hours=1), width=1000)
    assert [(lane.kind, lane.name) for lane in chart.lanes] == [("job", "a"), ("workflow", "b")]
    assert len(chart.bars) == 3
    by_state = {b.state: b for b in chart.bars}
    failed, running = by_state["FAILED"], by_state["RUNNING"]
    first = min(chart.bars, key=lambda b: b.x)
    plot = 1000 - timeline.LABEL_W - timeline.MARGIN
    assert first.x == timeline.LABEL_W and abs(first.w - plot / 6) <= 1  # 10 of 60 minutes
    assert failed.mark == "✕" and "FAILED" in failed.title
    # A run still going reaches the end of the range.
    assert running.x + running.w == pytest.approx(timeline.LABEL_W + plot, abs=1)
    assert "still running" in running.title


def test_a_run_outside_the_range_is_clipped_and_a_short_one_stays_visible():
    chart = timeline.layout([item("a", -30, 90), item("b", 10, 10)], T0, T0 + timedelta(hours=1), width=1000)
    long, short = sorted(chart.bars, key=lambda b: b.y)
    assert long.x == timeline.LABEL_W and long.x + long.w <= 1000
    assert short.w == timeline.MIN_BAR


@given(st.integers(min_value=1, max_value=90 * 86400))
def test_the_axis_has_a_few_ticks_inside_the_chart(span_seconds):
    chart = timeline.layout([], T0, T0 + timedelta(seconds=span_seconds), width=1200)
    assert 1 <= len(chart.ticks) <= 12
    assert all(timeline.LABEL_W <= x <= 1200 for x, _ in chart.ticks)
    assert chart.lanes == [] and chart.bars == []


# ------------------------------------------------------------------ figures


def test_source_metrics_get_labels_and_units():
    figures = {
        f.key: f.value
        for f in source_figures(
            {"type": "files", "files_read": 12, "files_new": 1, "bytes_read": 19389, "listing_seconds": 0.0004, "manifest": "/x",
             "nested": {"a": 1}, "custom_thing": 3, "lag": None}
        )
    }  # fmt: skip
    assert figures["files_read"] == "12 files" and figures["files_new"] == "1 file"
    assert figures["bytes_read"] == "18.9 KiB (19,389 bytes)"
    assert figures["listing_seconds"] == "0.4 ms"
    assert figures["custom_thing"] == "3"
    assert "manifest" not in figures and "nested" not in figures and "lag" not in figures


def test_bytes_read_for_people():
    assert human_bytes(0) == "0 B"
    assert human_bytes(1536) == "1.5 KiB"
    assert human_bytes(5 * 1024**3) == "5.0 GiB"


def test_a_crawl_is_counted_as_glue_counts_it():
    summary = {"tables_created": ["orders"], "tables_updated": [], "tables_deleted": ["old_a", "old_b"],
               "partitions_added": 4, "partitions_deleted": 0, "files_listed": 14}  # fmt: skip
    found = {label: (count, names) for label, count, names in crawl_figures(summary)}
    assert found["Tables added"] == (1, ["orders"])
    assert found["Tables updated"] == (0, [])
    assert found["Tables deleted"] == (2, ["old_a", "old_b"])
    assert found["Partitions added"] == (4, [])
    assert crawl_figures({}) == []  # a crawl still running has no summary yet


def run(minutes: int, state: RunState = RunState.SUCCEEDED, **metrics: Any) -> RunRecord:
    start = T0 + timedelta(minutes=minutes)
    return RunRecord(
        f"jr_{minutes:064d}", "j", 0, state, BookmarkOption.ENABLE, start,
        start + timedelta(seconds=30) if state is not RunState.RUNNING else None,
        {}, None, metrics, 0, None, None,
    )  # fmt: skip


def test_a_jobs_runs_become_series_oldest_first_and_empty_charts_are_left_out():
    runs = [
        run(
            10,
            sources={"s": {"files_read": 2, "bytes_read": 100}},
            sinks=[{"rows_written": 7}],
            glue={"glue.driver.aggregate.recordsRead": 12.0},
        ),
        run(0, RunState.FAILED, sources={"s": {"files_read": 0}}),
        run(20, RunState.RUNNING, sources={"s": {"files_read": 1, "bytes_read": 50}}),
    ]
    series = run_series(runs)
    assert series["states"] == ["FAILED", "SUCCEEDED", "RUNNING"]
    charts = {c["key"]: c["values"] for c in series["charts"]}
    assert charts["files_read"] == [0, 2, 1]
    assert charts["rows_written"] == [0, 7, 0]
    assert charts["duration"] == [30.0, 30.0, None]  # a running run has no duration yet
    assert "rows_read" not in charts and "Rows and records read" in series["unrecorded"]
    assert charts["spark_records_read"] == [None, 12.0, None]  # Glue's metric, where a run reported it
    assert "Shuffle bytes written" in series["unrecorded"]
    empty = run_series([])
    assert (empty["labels"], empty["charts"]) == ([], [])
    assert len(empty["unrecorded"]) == len(CHARTS)


@dataclass
class Result:
    evaluated_at: datetime
    rules: list[dict[str, str]]


def test_rule_outcomes_over_results():
    results = [
        Result(T0 + timedelta(hours=1), [{"rule": "IsComplete \"id\"", "outcome": "Failed"}, {"rule": "RowCount > 0", "outcome": "Passed"}]),
        Result(T0, [{"rule": "IsComplete \"id\"", "outcome": "Passed"}]),
    ]  # fmt: skip
    grid = rule_grid(results)
    assert grid["rules"] == ['IsComplete "id"', "RowCount > 0"]
    assert grid["cells"]['IsComplete "id"'] == ["Passed", "Failed"]
    assert grid["cells"]["RowCount > 0"] == ["", "Passed"]  # not in the older result
    assert grid["passed"] == {'IsComplete "id"': 1, "RowCount > 0": 1}
    assert rule_grid([])["rules"] == []


# ------------------------------------------------------------------ Run job's arguments


def test_run_arguments_are_one_per_line_as_glue_takes_them():
    text = "--day 2026-11-27\n\n  --job-bookmark-option=job-bookmark-disable\n--flag\n--note two words"
    assert parse_arguments(text) == {
        "--day": "2026-11-27",
        "--job-bookmark-option": "job-bookmark-disable",
        "--flag": "",
        "--note": "two words",
    }
    assert parse_arguments("") == {}


@pytest.mark.parametrize("line", ["day 2026", "-d 1", "--", "--JOB_NAME other"])
def test_a_bad_argument_line_is_refused(line):
    with pytest.raises(PageError) as caught:
        parse_arguments(line)
    assert caught.value.status == 400


def test_recorded_arguments_are_shown_as_passed():
    recorded = {"JOB_NAME": "j", "job_bookmark_option": "job-bookmark-enable", "TempDir": "/t", "input": "x"}
    assert as_passed(recorded, "/t") == {"--job-bookmark-option": "job-bookmark-enable", "--input": "x"}
    assert as_passed({"job_bookmark_option": "job-bookmark-disable"}, "/t") == {}  # Glue's default


# ------------------------------------------------------------------ the path browser


def test_browse_starts_at_the_project_and_home_and_lists_folders_first(tmp_path):
    (tmp_path / "data" / "dt=1").mkdir(parents=True)
    (tmp_path / "data" / "a.json").write_text("{}")
    settings = Settings.from_env(
        {"SPARKMARK_HOME": str(tmp_path / "home"), "SPARKMARK_CONFIG": str(tmp_path / "sparkmark.toml")}
    )
    roots = browse(settings, "")
    assert [e["path"] for e in roots["entries"]] == [str(tmp_path), str(tmp_path / "home")]
    assert roots["parent"] is None  # nothing above the roots
    listed = browse(settings, str(tmp_path / "data"))
    assert [(e["name"], e["dir"]) for e in listed["entries"]] == [("dt=1", True), ("a.json", False)]
    assert listed["parent"] == str(tmp_path)
    with pytest.raises(NotFound):
        browse(settings, str(tmp_path / "missing"))
    with pytest.raises(ArgumentError, match="no S3 endpoint"):
        browse(settings, "s3://bucket/")
    assert all(e["path"] != "s3://" for e in roots["entries"])


# ------------------------------------------------------------------ the CLI's help


def test_help_paragraphs_are_one_line_unless_they_are_lists():
    assert _one_line(
        "List the job's file sources as its next run will, without Spark: the files\nwaiting to be read."
    ) == ("List the job's file sources as its next run will, without Spark: the files waiting to be read.")
    listed = "Options:\n- one\n- two"
    assert _one_line(listed) == listed
    example = "Run it:\n  sparkmark run job.py"
    assert _one_line(example) == example


def test_no_help_text_shows_a_type_on_a_flag_or_breaks_a_sentence():
    import os
    import subprocess
    import sys

    cli = Path(sys.executable).with_name("sparkmark")
    env = {**os.environ, "COLUMNS": "200", "TERM": "dumb"}

    def helped(*args: str) -> str:
        done = subprocess.run(
            [str(cli), *args, "--help"], capture_output=True, text=True, env=env, timeout=60
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    for args in ((), ("run",), ("bookmark",), ("runs", "list")):
        assert "<bool>" not in helped(*args), args
    line = next(x for x in helped("bookmark").splitlines() if " preview " in x)
    assert "already processed" in line  # the whole summary on its one line


def test_a_runs_glue_metrics_are_shown_in_the_tables_order_with_units():
    from sparkmark.console.figures import glue_figures

    shown = glue_figures(
        {
            "sparkmark.bookmark.filesRead": 3.0,
            "glue.driver.aggregate.elapsedTime": 4228.0,
            "glue.driver.aggregate.bytesRead": 2672.0,
            "glue.error.QUERY_ERROR": 1.0,
            "glue.driver.workerUtilization": 0.0835,
            "not.a.glue.metric": 5.0,
        }
    )
    assert [(f.name, f.value) for f in shown] == [
        ("glue.driver.aggregate.bytesRead", "2.6 KiB (2,672 bytes)"),
        ("glue.driver.aggregate.elapsedTime", "4.23 s"),
        ("glue.driver.workerUtilization", "0.0835"),
        ("glue.error.QUERY_ERROR", "1"),
        ("sparkmark.bookmark.filesRead", "3"),
    ]
    assert all(f.meaning for f in shown)
