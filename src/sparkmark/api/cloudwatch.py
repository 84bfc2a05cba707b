"""CloudWatch's metric operations, for what jobs put and for Glue's own job metrics:
PutMetricData, GetMetricData, GetMetricStatistics and ListMetrics, read and answered
through botocore's model of CloudWatch as Glue's operations are.

``sparkmark run`` points a script's CloudWatch client here (``AWS_ENDPOINT_URL_CLOUDWATCH``),
so a script that emits a custom metric with ``put_metric_data`` runs unchanged. Runs
report Glue's metrics under namespace ``Glue`` (:mod:`sparkmark.runtime.run_metrics`),
so ``get_metric_data`` reads them with Glue's dimensions.

A metric is its namespace, name and exact set of dimensions, as in CloudWatch.
Statistics are computed over the datapoints in each period: SampleCount, Sum, Average,
Minimum and Maximum. Percentiles (``p99``), metric math expressions and alarms are
not served; asking for them is an error that says so.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from ..engine.masking import mask_text
from ..runtime.metric_store import Datapoint, Dimensions, MetricStore, dims_of
from .protocol import GlueApiError
from .service import Service, handler

STATISTICS = ("SampleCount", "Average", "Sum", "Minimum", "Maximum")
MAX_DIMENSIONS = 30
LIST_PAGE = 500
RECENTLY_ACTIVE = timedelta(hours=3)  # ListMetrics' RecentlyActive=PT3H
_PERCENTILE = re.compile(r"^(p|tm|wm|tc|ts|pr)\d", re.IGNORECASE)


def _invalid(message: str) -> GlueApiError:
    return GlueApiError("InvalidParameterValueException", message)


def _combination(message: str) -> GlueApiError:
    return GlueApiError("InvalidParameterCombinationException", message)


def _store(svc: Service) -> MetricStore:
    return MetricStore(svc.state)


def _dims(given: Iterable[dict[str, Any]] | None, where: str) -> Dimensions:
    items = [(d["Name"], mask_text(d["Value"])) for d in (given or [])]  # a secret never reaches the store
    if len(items) > MAX_DIMENSIONS:
        raise _invalid(f"{where}: at most {MAX_DIMENSIONS} dimensions, got {len(items)}")
    names = [n for n, _ in items]
    if len(set(names)) != len(names):
        raise _invalid(f"{where}: dimension names must be unique, got {', '.join(sorted(names))}")
    return dims_of(items)


def _finite(value: float, where: str) -> float:
    if not math.isfinite(value):
        raise _invalid(f"{where}: {value} is not a number CloudWatch takes (no NaN or infinity)")
    return float(value)


def _when(value: datetime | None) -> datetime:
    if value is None:
        return datetime.now(UTC)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


# ------------------------------------------------------------------ PutMetricData


def _points(namespace: str, datum: dict[str, Any], n: int) -> list[Datapoint]:
    where = f"MetricData.member.{n}"
    name = datum["MetricName"]
    dims = _dims(datum.get("Dimensions"), where)
    at = _when(datum.get("Timestamp"))
    unit = datum.get("Unit")
    given = [k for k in ("Value", "Values", "StatisticValues") if datum.get(k) is not None]
    if len(given) > 1:
        raise _combination(
            f"{where}: give one of Value, Values and StatisticValues, not {' and '.join(given)}"
        )
    if "StatisticValues" in given:
        s = datum["StatisticValues"]
        count = _finite(s["SampleCount"], where)
        if count <= 0:
            raise _invalid(f"{where}: StatisticValues.SampleCount must be positive")
        low, high = _finite(s["Minimum"], where), _finite(s["Maximum"], where)
        if low > high:
            raise _invalid(f"{where}: StatisticValues.Minimum is larger than its Maximum")
        return [Datapoint(namespace, name, dims, at, count, _finite(s["Sum"], where), low, high, unit)]
    if "Values" in given:
        values = [_finite(v, where) for v in datum["Values"]]
        counts = [_finite(c, where) for c in datum.get("Counts") or [1.0] * len(values)]
        if len(counts) != len(values):
            raise _invalid(f"{where}: Values has {len(values)} items but Counts has {len(counts)}")
        return [
            Datapoint(namespace, name, dims, at, c, v * c, v, v, unit)
            for v, c in zip(values, counts, strict=True)
        ]
    if "Value" in given:
        return [Datapoint.single(namespace, name, dims, at, _finite(datum["Value"], where), unit)]
    raise GlueApiError(
        "MissingRequiredParameterException", f"{where}: a Value, Values or StatisticValues is required"
    )


@handler("PutMetricData", service="cloudwatch")
def put_metric_data(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    namespace = p["Namespace"]
    if namespace.startswith("AWS/"):
        raise _invalid(f"The value {namespace} for parameter Namespace is invalid: AWS/ names are AWS's own")
    data = p.get("MetricData") or []
    if not data:
        raise GlueApiError("MissingRequiredParameterException", "MetricData must hold at least one datum")
    points = [pt for n, datum in enumerate(data, 1) for pt in _points(namespace, datum, n)]
    store = _store(svc)
    store.put(points)
    latest: dict[Dimensions, dict[str, tuple[float, str | None]]] = {}
    newest: dict[Dimensions, datetime] = {}
    for pt in points:  # each series' value: its newest datapoint's average
        series = latest.setdefault(pt.dims, {})
        series[pt.name] = (pt.total / pt.sample_count, pt.unit)
        newest[pt.dims] = max(newest.get(pt.dims, pt.at), pt.at)
    for dims, values in latest.items():
        store.set_latest(namespace, values, dims, newest[dims])
    return {}


# ------------------------------------------------------------------ statistics


def _bucket(points: list[Datapoint], period: int) -> dict[datetime, list[Datapoint]]:
    """Datapoints by period, each period starting on a multiple of ``period`` seconds
    since the epoch (whole minutes for a period of 60), as CloudWatch aligns them."""
    found: dict[datetime, list[Datapoint]] = {}
    for pt in points:
        begins = int(pt.at.timestamp() // period) * period
        found.setdefault(datetime.fromtimestamp(begins, UTC), []).append(pt)
    return found


def _statistic(points: list[Datapoint], stat: str) -> float:
    count = sum(p.sample_count for p in points)
    total = sum(p.total for p in points)
    if stat == "SampleCount":
        return count
    if stat == "Sum":
        return total
    if stat == "Average":
        return total / count if count else 0.0
    if stat == "Minimum":
        return min(p.minimum for p in points)
    if stat == "Maximum":
        return max(p.maximum for p in points)
    raise _invalid(f"statistic {stat!r} is not one sparkmark serves: use one of {', '.join(STATISTICS)}")


def _check_stat(stat: str) -> None:
    if stat in STATISTICS:
        return
    if _PERCENTILE.match(stat):
        raise _invalid(
            f"statistic {stat!r}: percentiles are not served by sparkmark's endpoint; use {', '.join(STATISTICS)}"
        )
    raise _invalid(f"statistic {stat!r} is not one of {', '.join(STATISTICS)}")


def _window(p: dict[str, Any]) -> tuple[datetime, datetime]:
    start, end = _when(p["StartTime"]), _when(p["EndTime"])
    if end <= start:
        raise _invalid("The parameter StartTime must be less than the parameter EndTime.")
    return start, end


def _period(value: int) -> int:
    if value < 1 or (value >= 60 and value % 60) or (value < 60 and value not in (1, 5, 10, 30)):
        raise _invalid(f"The parameter Period must be 1, 5, 10, 30 or a multiple of 60, got {value}")
    return value


def _unit_matches(points: list[Datapoint], unit: str | None) -> list[Datapoint]:
    return [pt for pt in points if unit is None or pt.unit == unit]


@handler("GetMetricStatistics", service="cloudwatch")
def get_metric_statistics(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    if p.get("ExtendedStatistics"):
        raise _invalid(
            "ExtendedStatistics (percentiles) are not served by sparkmark's endpoint; use Statistics"
        )
    stats = p.get("Statistics") or []
    if not stats:
        raise GlueApiError("MissingRequiredParameterException", "Statistics must name at least one statistic")
    for stat in stats:
        _check_stat(stat)
    start, end = _window(p)
    period = _period(p["Period"])
    dims = _dims(p.get("Dimensions"), "Dimensions")
    points = _unit_matches(
        _store(svc).datapoints(p["Namespace"], p["MetricName"], dims, start, end), p.get("Unit")
    )
    datapoints = []
    for at, group in sorted(_bucket(points, period).items()):
        entry: dict[str, Any] = {"Timestamp": at}
        for stat in stats:
            entry[stat] = _statistic(group, stat)
        units = {pt.unit for pt in group if pt.unit}
        entry["Unit"] = units.pop() if len(units) == 1 else "None"
        datapoints.append(entry)
    return {"Label": p["MetricName"], "Datapoints": datapoints}


@handler("GetMetricData", service="cloudwatch")
def get_metric_data(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    start, end = _window(p)
    queries = p.get("MetricDataQueries") or []
    ids = [q["Id"] for q in queries]
    if len(set(ids)) != len(ids):
        raise _invalid("MetricDataQueries: each Id must be unique")
    descending = (p.get("ScanBy") or "TimestampDescending") == "TimestampDescending"
    store = _store(svc)
    results = []
    for q in queries:
        if q.get("Expression"):
            raise _invalid(
                f"query {q['Id']}: metric math expressions are not served by sparkmark's endpoint; use MetricStat"
            )
        stat_query = q.get("MetricStat")
        if stat_query is None:
            raise GlueApiError(
                "MissingRequiredParameterException", f"query {q['Id']}: a MetricStat is required"
            )
        _check_stat(stat_query["Stat"])
        period = _period(stat_query["Period"])
        metric = stat_query["Metric"]
        dims = _dims(metric.get("Dimensions"), f"query {q['Id']}")
        points = _unit_matches(
            store.datapoints(metric["Namespace"], metric["MetricName"], dims, start, end),
            stat_query.get("Unit"),
        )
        buckets = sorted(_bucket(points, period).items(), reverse=descending)
        if q.get("ReturnData", True) is False:
            continue
        results.append(
            {
                "Id": q["Id"],
                "Label": q.get("Label") or metric["MetricName"],
                "Timestamps": [at for at, _ in buckets],
                "Values": [_statistic(group, stat_query["Stat"]) for _, group in buckets],
                "StatusCode": "Complete",
            }
        )
    return {"MetricDataResults": results, "Messages": []}


@handler("ListMetrics", service="cloudwatch")
def list_metrics(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    wanted = [(d["Name"], d.get("Value")) for d in p.get("Dimensions") or []]
    since = datetime.now(UTC) - RECENTLY_ACTIVE if p.get("RecentlyActive") == "PT3H" else None
    found = []
    for namespace, name, dims in _store(svc).series(p.get("Namespace"), p.get("MetricName"), since):
        have = dict(dims)
        if all(k in have and (v is None or have[k] == v) for k, v in wanted):
            found.append(
                {
                    "Namespace": namespace,
                    "MetricName": name,
                    "Dimensions": [{"Name": k, "Value": v} for k, v in dims],
                }
            )
    try:
        offset = int(p.get("NextToken") or 0)
    except ValueError:
        raise _invalid("NextToken is not one this endpoint gave") from None
    page = found[offset : offset + LIST_PAGE]
    answer: dict[str, Any] = {"Metrics": page}
    if offset + LIST_PAGE < len(found):
        answer["NextToken"] = str(offset + LIST_PAGE)
    return answer
