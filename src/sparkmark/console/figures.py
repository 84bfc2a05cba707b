"""A run's figures for people: each metric a source recorded with its name, value and
unit (rather than ``key=value``), a crawl's summary as Glue's console counts it, and a
job's runs as series for its charts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..engine.models import RunRecord

# Metric name: (label, unit). Metrics not named here are shown under their own name.
METRICS: dict[str, tuple[str, str]] = {
    "files_listed": ("Files listed", "files"),
    "files_read": ("Files read", "files"),
    "files_new": ("New files", "files"),
    "files_modified": ("Modified files", "files"),
    "files_skipped": ("Already processed", "files"),
    "files_deferred": ("Deferred (too recent)", "files"),
    "files_late": ("Late files", "files"),
    "files_excluded": ("Excluded", "files"),
    "files_hidden": ("Hidden", "files"),
    "files_empty": ("Empty", "files"),
    "files_bad_names": ("Unreadable names", "files"),
    "files_unpublished": ("Unpublished", "files"),
    "files_quarantined": ("Quarantined", "files"),
    "partitions_listed": ("Partitions listed", "partitions"),
    "partitions_skipped": ("Partitions skipped", "partitions"),
    "partitions_unchanged": ("Partitions unchanged", "partitions"),
    "bytes_read": ("Read", "bytes"),
    "rows_read": ("Rows read", "rows"),
    "rows_dropped_as_processed": ("Rows already processed", "rows"),
    "numRecords": ("Records", "records"),
    "records_quarantined": ("Quarantined", "records"),
    "duration_seconds": ("Time reading", "s"),
    "listing_seconds": ("Time listing", "s"),
    "lag": ("Lag", "records"),
}
SKIPPED = ("type", "manifest")


def human_bytes(value: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # not reached


def _shown(value: Any, unit: str) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if unit == "bytes":
        return f"{human_bytes(value)} ({int(value):,} bytes)" if value >= 1024 else f"{int(value)} bytes"
    if unit == "s":
        return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.2f} s"
    if value == 1 and unit.endswith("s"):
        unit = unit[:-1]  # 1 file, 1 row
    return f"{value:,} {unit}" if isinstance(value, int) else f"{value:,.2f} {unit}"


@dataclass(frozen=True)
class Figure:
    key: str
    label: str
    value: str


def source_figures(metrics: dict[str, Any]) -> list[Figure]:
    """One source's metrics as labelled values with units, in METRICS' order, then
    the others by name; nested values and None are left out."""
    found = []
    for key in list(METRICS) + sorted(set(metrics) - set(METRICS)):
        if key not in metrics or key in SKIPPED:
            continue
        value = metrics[key]
        if value is None or isinstance(value, dict | list):
            continue
        label, unit = METRICS.get(key, (key, ""))
        found.append(Figure(key, label, _shown(value, unit) if unit else str(value)))
    return found


# A crawl's summary as Glue's console reports a crawler run.
CRAWL_FIGURES = (
    ("tables_created", "Tables added"),
    ("tables_updated", "Tables updated"),
    ("tables_deleted", "Tables deleted"),
    ("tables_deprecated", "Tables deprecated"),
    ("partitions_added", "Partitions added"),
    ("partitions_deleted", "Partitions deleted"),
    ("files_listed", "Files listed"),
    ("folders_skipped", "Folders skipped"),
)


def crawl_figures(summary: dict[str, Any]) -> list[tuple[str, int, list[str]]]:
    """(label, count, names) for each of a crawl's counts; a count that names tables
    gives them."""
    out = []
    for key, label in CRAWL_FIGURES:
        value = summary.get(key)
        if value is None:
            continue
        names = [str(v) for v in value] if isinstance(value, list) else []
        out.append((label, len(value) if isinstance(value, list) else int(value), names))
    return out


def run_totals(run: RunRecord) -> dict[str, float | None]:
    """What one run read and wrote, summed over its sources and sinks."""
    sources = (run.metrics.get("sources") or {}).values()
    sinks = run.metrics.get("sinks") or []
    streaming = run.metrics.get("streaming") or {}
    rows = sum(int(m.get("rows_read") or 0) for m in sources) + int(streaming.get("numRecords") or 0)
    ended = run.ended_at
    glue = run.metrics.get("glue") or {}
    return {
        "spark_records_read": glue.get("glue.driver.aggregate.recordsRead"),
        "shuffle_bytes": glue.get("glue.driver.aggregate.shuffleBytesWritten"),
        "rows_read": rows,
        "rows_written": sum(int(s.get("rows_written") or 0) for s in sinks if isinstance(s, dict)),
        "bytes_read": sum(int(m.get("bytes_read") or 0) for m in sources),
        "files_read": sum(int(m.get("files_read") or 0) for m in sources),
        "duration": (ended - run.started_at).total_seconds() if ended else None,
    }


CHARTS = (
    ("rows_read", "Rows and records read", "rows"),
    ("rows_written", "Rows written", "rows"),
    ("bytes_read", "Bytes read", "bytes"),
    ("files_read", "Files read", "files"),
    ("duration", "Duration", "seconds"),
    ("spark_records_read", "Records read (Glue's recordsRead)", "rows"),
    ("shuffle_bytes", "Shuffle bytes written", "bytes"),
)


def run_series(runs: list[RunRecord]) -> dict[str, Any]:
    """The job's runs, oldest first, as one series per chart (CHARTS), with each
    point's run id and state, for Chart.js."""
    ordered = sorted(runs, key=lambda r: r.started_at)
    totals = [run_totals(r) for r in ordered]
    return {
        "labels": [r.started_at.strftime("%m-%d %H:%M") for r in ordered],
        "runs": [r.run_id for r in ordered],
        "states": [r.state.value for r in ordered],
        "charts": [
            {"key": key, "title": title, "unit": unit, "values": [t[key] for t in totals]}
            for key, title, unit in CHARTS
            if any(t[key] for t in totals)
        ],
        # Figures no run recorded (a file job counts files and bytes, not rows).
        "unrecorded": [title for key, title, _ in CHARTS if not any(t[key] for t in totals)],
    }


GRID_RESULTS = 30  # the results a rule grid shows, newest


def rule_grid(results: list[Any]) -> dict[str, Any]:
    """Each rule's outcome over a ruleset's results (oldest first, the newest
    GRID_RESULTS): ``rules`` in the order they were first seen, ``columns`` the results,
    ``cells[rule]`` one outcome per column ("" when that result lacks the rule)."""
    shown = sorted(results, key=lambda r: r.evaluated_at)[-GRID_RESULTS:]
    rules: list[str] = []
    outcomes: list[dict[str, str]] = []
    for result in shown:
        found = {}
        for rule in result.rules:
            name = str(rule.get("rule", ""))
            if name not in rules:
                rules.append(name)
            found[name] = str(rule.get("outcome", ""))
        outcomes.append(found)
    return {
        "rules": rules,
        "columns": shown,
        "cells": {rule: [o.get(rule, "") for o in outcomes] for rule in rules},
        "passed": {rule: sum(1 for o in outcomes if o.get(rule) == "Passed") for rule in rules},
    }


@dataclass(frozen=True)
class GlueFigure:
    name: str  # Glue's
    value: str  # for people, with its unit
    meaning: str


def glue_value(unit: str, value: float) -> str:
    if unit == "Bytes":
        return f"{human_bytes(value)} ({int(value):,} bytes)" if value >= 1024 else f"{int(value)} bytes"
    if unit == "Milliseconds":
        return f"{value / 1000:.2f} s"
    if unit == "Gigabytes":
        return f"{value:,.2f} GB"
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,.4g}"


def glue_figures(values: dict[str, float]) -> list[GlueFigure]:
    """A run's Glue metrics, in the table's order, for its page."""
    from ..runtime import glue_metrics as gm

    rows = []
    order = {m.name: i for i, m in enumerate(gm.METRICS)}
    for name in sorted(values, key=lambda n: (order.get(n, order.get("glue.error.<CATEGORY>", 0)), n)):
        try:
            metric = gm.describe(name)
        except KeyError:
            continue
        rows.append(GlueFigure(name, glue_value(metric.unit, float(values[name])), metric.meaning))
    return rows
