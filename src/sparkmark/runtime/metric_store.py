"""Metrics as the state store keeps them, the way CloudWatch models them: a metric is a
namespace, a name and a set of dimensions (name=value pairs); its datapoints are
statistic sets (sample count, sum, minimum, maximum) at a time, with a unit.

Two tables:

- ``sm_metric_data``: every datapoint put, for queries over time (GetMetricData,
  GetMetricStatistics) and for listing metrics (ListMetrics);
- ``sm_metric_latest``: each series' latest value, for an exporter scraped now
  (Prometheus's ``/metrics``). A series written with a ``group`` (a job's) replaces
  the group's earlier series, so a job's latest run stands for the job.

The engine knows no metric by name; what the names mean is its callers' business.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from sqlalchemy import (
    Column,
    Float,
    Index,
    MetaData,
    String,
    Table,
    Text,
    and_,
    delete,
    insert,
    select,
)

from ..engine.schema import UTCDateTime
from ..engine.store import StateStore
from ..state import components

metadata = MetaData()
data_table = Table(
    "sm_metric_data",
    metadata,
    Column("namespace", String(255), nullable=False),
    Column("name", String(255), nullable=False),
    Column("dims", Text, nullable=False),  # JSON: [[name, value], ...] sorted by name
    Column("at", UTCDateTime, nullable=False),
    Column("sample_count", Float, nullable=False),
    Column("total", Float, nullable=False),
    Column("minimum", Float, nullable=False),
    Column("maximum", Float, nullable=False),
    Column("unit", String(32)),
    Index("sm_metric_data_series", "namespace", "name", "dims", "at"),
    Index("sm_metric_data_at", "at"),
)
latest_table = Table(
    "sm_metric_latest",
    metadata,
    Column("namespace", String(255), primary_key=True),
    Column("name", String(255), primary_key=True),
    Column("dims", Text, primary_key=True),
    Column(
        "grp", String(255), nullable=False, default=""
    ),  # a job's name: its series replace its earlier ones
    Column("at", UTCDateTime, nullable=False),
    Column("value", Float, nullable=False),
    Column("unit", String(32)),
    Index("sm_metric_latest_group", "namespace", "grp"),
)
COMPONENT = components.declare("metrics", "metrics_schema_version", metadata, [data_table, latest_table])

Dimensions = tuple[tuple[str, str], ...]


def dims_of(dimensions: Mapping[str, str] | Iterable[tuple[str, str]]) -> Dimensions:
    items = dimensions.items() if isinstance(dimensions, Mapping) else dimensions
    return tuple(sorted((str(k), str(v)) for k, v in items))


def _encode(dims: Dimensions) -> str:
    return json.dumps([list(d) for d in dims], separators=(",", ":"))


@lru_cache(maxsize=4096)  # a run's many series share one set of dimensions
def _decode(text: str) -> Dimensions:
    return tuple((str(k), str(v)) for k, v in json.loads(text))


@dataclass(frozen=True)
class Datapoint:
    """One statistic set: ``sample_count`` values summing to ``total``."""

    namespace: str
    name: str
    dims: Dimensions
    at: datetime
    sample_count: float
    total: float
    minimum: float
    maximum: float
    unit: str | None = None

    @classmethod
    def single(
        cls, namespace: str, name: str, dims: Dimensions, at: datetime, value: float, unit: str | None = None
    ) -> Datapoint:
        return cls(namespace, name, dims, at, 1.0, float(value), float(value), float(value), unit)


@dataclass(frozen=True)
class Latest:
    namespace: str
    name: str
    dims: Dimensions
    group: str
    at: datetime
    value: float
    unit: str | None


class MetricStore:
    """The metrics of one state store."""

    def __init__(self, store: StateStore):
        self.store = store
        store.open_component(COMPONENT)

    # ------------------------------------------------------------ writing

    def put(self, points: Sequence[Datapoint]) -> None:
        if not points:
            return
        rows = [
            {
                "namespace": p.namespace,
                "name": p.name,
                "dims": _encode(p.dims),
                "at": p.at,
                "sample_count": p.sample_count,
                "total": p.total,
                "minimum": p.minimum,
                "maximum": p.maximum,
                "unit": p.unit,
            }
            for p in points
        ]
        with self.store.begin() as conn:
            conn.execute(insert(data_table), rows)

    def set_latest(
        self,
        namespace: str,
        values: Mapping[str, tuple[float, str | None]],
        dims: Dimensions,
        at: datetime,
        *,
        group: str = "",
    ) -> None:
        """Each named series' latest value; with ``group``, the group's earlier series in
        ``namespace`` are replaced by these."""
        encoded = _encode(dims)
        with self.store.begin() as conn:
            if group:
                conn.execute(
                    delete(latest_table).where(
                        and_(latest_table.c.namespace == namespace, latest_table.c.grp == group)
                    )
                )
            else:
                conn.execute(
                    delete(latest_table).where(
                        and_(
                            latest_table.c.namespace == namespace,
                            latest_table.c.dims == encoded,
                            latest_table.c.name.in_(list(values)),
                        )
                    )
                )
            if values:
                conn.execute(
                    insert(latest_table),
                    [
                        {
                            "namespace": namespace,
                            "name": name,
                            "dims": encoded,
                            "grp": group,
                            "at": at,
                            "value": float(value),
                            "unit": unit,
                        }
                        for name, (value, unit) in values.items()
                    ],
                )

    def prune(self, before: datetime) -> int:
        """Forget datapoints older than ``before``; how many."""
        with self.store.begin() as conn:
            return int(conn.execute(delete(data_table).where(data_table.c.at < before)).rowcount or 0)

    # ------------------------------------------------------------ reading

    def latest(self, namespace: str | None = None) -> list[Latest]:
        query = select(latest_table)
        if namespace is not None:
            query = query.where(latest_table.c.namespace == namespace)
        with self.store.connect() as conn:
            rows = conn.execute(query.order_by(latest_table.c.namespace, latest_table.c.name)).all()
        return [
            Latest(r.namespace, r.name, _decode(r.dims), r.grp, r.at, float(r.value), r.unit) for r in rows
        ]

    def datapoints(
        self, namespace: str, name: str, dims: Dimensions, start: datetime, end: datetime
    ) -> list[Datapoint]:
        """The series' datapoints with ``start <= at < end``, oldest first."""
        with self.store.connect() as conn:
            rows = conn.execute(
                select(data_table)
                .where(
                    data_table.c.namespace == namespace,
                    data_table.c.name == name,
                    data_table.c.dims == _encode(dims),
                    data_table.c.at >= start,
                    data_table.c.at < end,
                )
                .order_by(data_table.c.at)
            ).all()
        return [
            Datapoint(r.namespace, r.name, dims, r.at, r.sample_count, r.total, r.minimum, r.maximum, r.unit)
            for r in rows
        ]

    def series(
        self, namespace: str | None = None, name: str | None = None, since: datetime | None = None
    ) -> list[tuple[str, str, Dimensions]]:
        """Every distinct (namespace, name, dimensions) with a datapoint (since ``since``)."""
        query = select(data_table.c.namespace, data_table.c.name, data_table.c.dims).distinct()
        if namespace is not None:
            query = query.where(data_table.c.namespace == namespace)
        if name is not None:
            query = query.where(data_table.c.name == name)
        if since is not None:
            query = query.where(data_table.c.at >= since)
        with self.store.connect() as conn:
            rows = conn.execute(query).all()
        return sorted((r.namespace, r.name, _decode(r.dims)) for r in rows)
