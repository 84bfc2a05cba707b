"""Data quality statistics as Glue names them: every metric a stored result holds is one
data point of a statistic, the series of that metric for the same job and ruleset (or
table and ruleset, for the API's evaluation runs). A statistic's id is stable across
results; a profile is one stored result. Annotations keep a data point out of (EXCLUDE)
the history that dynamic rules and DetectAnomalies learn from, or put it back (INCLUDE).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from . import anomaly
from .store import StoredResult

PROFILE_PREFIX = "dqprofile-"
STATISTIC_PREFIX = "dqstat-"
_TWO_PART = {"Compliance"}  # Column.c.ColumnValues.Compliance: the statistic is ColumnValues.Compliance


def profile_id(result: StoredResult) -> str:
    return f"{PROFILE_PREFIX}{result.id:016d}"


def result_number(profile: str) -> int | None:
    tail = profile[len(PROFILE_PREFIX) :]
    return int(tail) if profile.startswith(PROFILE_PREFIX) and tail.isdigit() else None


def series_key(result: StoredResult) -> str:
    """What makes two results' metrics points of the same statistics."""
    return json.dumps([result.job_name, result.ruleset, result.data_source], sort_keys=True)


def statistic_id(result: StoredResult, metric: str) -> str:
    digest = hashlib.sha256(f"{series_key(result)}\x00{metric}".encode()).hexdigest()
    return STATISTIC_PREFIX + digest[:32]


@dataclass(frozen=True)
class Described:
    level: str  # Dataset | Column | Multicolumn
    name: str
    columns: tuple[str, ...]
    datasets: tuple[str, ...]


def describe(metric: str) -> Described:
    """``Column.email.Completeness`` → Column level, Completeness, of email."""
    level, _, rest = metric.partition(".")
    middle, _, name = rest.rpartition(".")
    if name in _TWO_PART and "." in middle:
        middle, _, first = middle.rpartition(".")
        name = f"{first}.{name}"
    if level == "Dataset":
        return Described("Dataset", name, (), () if middle in ("*", "") else (middle,))
    kind = "Multicolumn" if level == "Multicolumn" else "Column"
    return Described(kind, name, tuple(c for c in middle.split(",") if c), ())


@dataclass(frozen=True)
class Point:
    result: StoredResult
    metric: str
    value: float
    inclusion: str | None  # the annotation, if any
    annotated: datetime | None


def points(
    results: list[StoredResult], annotations: dict[tuple[int, str], tuple[str, datetime]]
) -> list[Point]:
    """Every numeric metric of ``results`` as a data point, oldest first."""
    found = []
    for result in sorted(results, key=lambda r: (r.evaluated_at, r.id)):
        for metric, value in result.metrics.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                inclusion, when = annotations.get((result.id, metric), (None, None))
                found.append(Point(result, metric, float(value), inclusion, when))
    return found


def model_results(series: list[Point]) -> list[dict[str, Any]]:
    """Each point of one statistic judged as DetectAnomalies judges it, on the points
    before it (the excluded ones kept out): GetDataQualityModelResult's Model."""
    history: list[float] = []
    out = []
    for point in series:
        verdict = anomaly.judge(history, point.value)
        entry: dict[str, Any] = {"ActualValue": point.value, "Date": point.result.evaluated_at}
        if verdict.expected is not None:
            entry.update(PredictedValue=verdict.expected, LowerBound=verdict.low, UpperBound=verdict.high)
        entry["InclusionAnnotation"] = point.inclusion or "INCLUDE"
        out.append(entry)
        history.append(math.nan if point.inclusion == "EXCLUDE" else point.value)
    return out
