"""A ruleset evaluated in a job's run: the result kept with the run under the
ruleset's name, and DetectAnomalies compared with what earlier successful runs of the
job recorded under the same name. The native ``Job`` and Glue's EvaluateDataQuality
both evaluate here."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..engine.names import check_name
from .evaluate import QualityResult, evaluate
from .store import QualityStore, values_of

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from ..runtime import JobRun

log = logging.getLogger("sparkmark.quality")


def history_of(
    store: QualityStore, job_name: str, ruleset: str, data_source: dict[str, Any] | None = None
) -> Callable[[str], list[float]]:
    """Earlier values of a metric, read from the store once for the whole ruleset (its
    dynamic rules and DetectAnomalies each ask), and only if one asks: a job's results
    (``job_name``), or an evaluation run's on ``data_source``."""
    earlier: list[dict[str, Any]] | None = None

    def of(metric: str) -> list[float]:
        nonlocal earlier
        if earlier is None:
            earlier = store.earlier_metrics(job_name, ruleset, data_source=data_source)
        return values_of(earlier, metric)

    return of


NAMESPACE = "Glue Data Quality"  # CloudWatch's, where Glue publishes a ruleset's counts
PASSED_METRIC, FAILED_METRIC = "glue.data.quality.rules.passed", "glue.data.quality.rules.failed"


def publish_metrics(state: Any, context: str, result: QualityResult) -> None:
    """The counts of passed and failed rules under Glue's names, with the evaluation
    context as their dimension: in the metric store, so GetMetricData and /metrics
    show them."""
    from ..runtime.metric_store import Datapoint, MetricStore, dims_of

    passed = sum(o.passed for o in result.outcomes)
    counts = {PASSED_METRIC: float(passed), FAILED_METRIC: float(len(result.outcomes) - passed)}
    dims = dims_of({"EvaluationContext": context})
    store = MetricStore(state)
    at = result.evaluated_at
    store.put([Datapoint.single(NAMESPACE, name, dims, at, value, "Count") for name, value in counts.items()])
    store.set_latest(NAMESPACE, {name: (value, "Count") for name, value in counts.items()}, dims, at)


def evaluate_in_run(
    run: JobRun,
    df: DataFrame,
    ruleset: str,
    *,
    name: str = "default",
    reference: Mapping[str, DataFrame] | None = None,
    row_level: bool = True,
    filtered_rows: str = "pass",
    cloudwatch_metrics: bool = False,
) -> QualityResult:
    run.require_running()
    check_name("ruleset name", name)
    store = QualityStore(run.store)
    result = evaluate(
        df,
        ruleset,
        reference=dict(reference or {}),
        name=name,
        row_level=row_level,
        filtered_rows=filtered_rows,
        history=history_of(store, run.name, name),
    )
    document = result.to_dict()
    store.save(run.name, run.run_id, document)
    if cloudwatch_metrics:
        publish_metrics(run.store, name, result)
    run.record_quality(
        name,
        {
            "passed": result.passed,
            "score": document["score"],
            "failed_rules": [o.rule for o in result.failed()],
        },
    )
    log.info(
        "job %s: data quality %s: %d of %d rules passed",
        run.name,
        name,
        sum(o.passed for o in result.outcomes),
        len(result.outcomes),
    )
    return result
