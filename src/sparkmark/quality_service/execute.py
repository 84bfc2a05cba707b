"""What runs in the data quality engine's session process: a ruleset evaluation run or a
rule recommendation run on catalog tables, read through the session's Spark SQL (which
shares the Glue catalog). Each prints one line, ``SPARKMARK_QUALITY {json}``: the result
numbers it kept, or the ruleset it proposes, or why it could not."""

from __future__ import annotations

import json
from typing import Any

MARK = "SPARKMARK_QUALITY "


def _table(spark: Any, source: dict[str, Any]) -> Any:
    glue = source.get("GlueTable") or {}
    database = str(glue["DatabaseName"]).lower().replace("-", "_")
    frame = spark.table(f"`{database}`.`{str(glue['TableName']).lower()}`")
    where = (glue.get("AdditionalOptions") or {}).get("pushDownPredicate")
    return frame.where(where) if where else frame


def _store(spark: Any) -> Any:
    from ..catalog.session_sync import active
    from ..engine.store import StateStore
    from ..quality.store import QualityStore
    from ..settings import Settings

    sync = active()
    state = sync.store.state if sync is not None else StateStore.from_settings(Settings.from_env())
    return QualityStore(state)


def _one_line(exc: BaseException) -> str:
    java = getattr(exc, "java_exception", None)
    text = str(java.getMessage() if java is not None else exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def evaluate(spark: Any, order_json: str) -> None:
    """Evaluate each of the order's rulesets on its data source; keep each result."""
    from ..quality.evaluate import evaluate as evaluate_rules
    from ..quality.runs import history_of, publish_metrics

    order = json.loads(order_json)
    try:
        frame = _table(spark, order["data_source"])
        references = {
            alias: _table(spark, source) for alias, source in (order.get("additional") or {}).items()
        }
        store = _store(spark)
        kept = []
        for name, text in order["rulesets"]:
            result = evaluate_rules(
                frame,
                text,
                reference=references,
                name=name,
                row_level=False,
                history=history_of(store, "", name, order["data_source"]),
            )
            if order.get("cloudwatch", True):
                publish_metrics(store.state, name, result)
            kept.append(
                store.save(
                    "",
                    None,
                    result.to_dict(),
                    evaluation_run_id=order["run_id"],
                    data_source=order["data_source"],
                )
            )
        print(MARK + json.dumps({"ok": True, "results": kept}))
    except Exception as exc:  # noqa: BLE001 - a missing table, a failed read: the run fails with the reason
        print(MARK + json.dumps({"ok": False, "error": _one_line(exc)}))


def recommend(spark: Any, order_json: str) -> None:
    """Profile the order's data source in one pass and propose a ruleset for it."""
    from pyspark.sql import functions as F

    from ..quality.recommend import CATEGORIES, profile_of, ruleset_for

    order = json.loads(order_json)
    try:
        frame = _table(spark, order["data_source"])
        fields = [f for f in frame.schema.fields if f.dataType.simpleString().split("(")[0] in _PROFILED]
        aggregates = [F.count(F.lit(1)).alias("rows")]
        for i, f in enumerate(fields):
            col = F.col(f"`{f.name}`")
            kind = f.dataType.simpleString()
            aggregates += [F.count(col).alias(f"p{i}"), F.approx_count_distinct(col, 0.01).alias(f"d{i}")]
            if kind not in {"string", "boolean"}:
                aggregates.append(F.min(col).cast("double").alias(f"m{i}"))
            if kind == "string":
                aggregates.append(F.max(F.length(col)).alias(f"l{i}"))
                aggregates.append(F.slice(F.collect_set(col), 1, CATEGORIES + 1).alias(f"v{i}"))
        row = frame.agg(*aggregates).head(1)[0].asDict()
        columns = []
        for i, f in enumerate(fields):
            kind, present = f.dataType.simpleString(), int(row[f"p{i}"] or 0)
            values = row.get(f"v{i}") or []
            if kind == "string" and len(values) <= CATEGORIES:
                distinct = len(values)  # every value listed: the count is exact
            else:
                values = []
                distinct = _distinct(frame, f.name, present, int(row[f"d{i}"] or 0))
            columns.append(
                {
                    "name": f.name,
                    "type": kind,
                    "present": present,
                    "distinct": distinct,
                    "minimum": row.get(f"m{i}"),
                    "longest": row.get(f"l{i}"),
                    "values": values,
                }
            )
        text = ruleset_for(profile_of(int(row["rows"]), columns))
        print(MARK + json.dumps({"ok": True, "ruleset": text}))
    except Exception as exc:  # noqa: BLE001 - the run fails with the reason, in one line
        print(MARK + json.dumps({"ok": False, "error": _one_line(exc)}))


_PROFILED = (
    "string",
    "tinyint",
    "smallint",
    "int",
    "bigint",
    "float",
    "double",
    "decimal",
    "boolean",
    "date",
    "timestamp",
)


def _distinct(frame: Any, name: str, present: int, estimate: int) -> int:
    """The estimate, or, where it says every value may differ (an IsUnique proposal
    depends on it), the distinct values counted exactly."""
    if estimate * 100 < present * 97:
        return estimate
    return int(frame.where(f"`{name}` IS NOT NULL").select(f"`{name}`").distinct().count())


def outcome_of(text: str) -> dict[str, Any] | None:
    """The outcome line in a statement's printed output."""
    from ..sessions.owned import marked

    return marked(text, MARK)
