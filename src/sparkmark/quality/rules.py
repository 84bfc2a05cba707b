"""The DQDL rule types: what each one computes, and how its outcome follows.

Each rule compiles to a ``Check``:
- ``aggregates``: named Spark aggregate columns, evaluated with every other rule's in
  one ``agg`` pass over the data;
- ``grouped``: the column set whose value frequencies it needs (Uniqueness, IsUnique,
  IsPrimaryKey, UniqueValueRatio, Entropy, DistinctValuesCount): one ``groupBy`` plan
  per column set (and ``where``);
- ``separate``: a plan of its own, for rules over a reference dataset or SQL;
- ``value``: the rule's value from those results; ``passes`` its outcome;
- ``row_pass``: for rules that can be judged row by row, each row's outcome.
"""

from __future__ import annotations

import functools
import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import NumericType, StringType

from . import anomaly
from .conditions import holds, row_predicate
from .dynamic import DynamicError
from .ruleset import ANALYZABLE, RULE_TYPES, Condition, DQDLError, Rule, check_rule, is_dynamic, settle  # noqa: F401

Results = Mapping[str, Any]


class RuleFailure(Exception):
    """A rule that cannot be evaluated on this data (a missing column, say): its
    outcome is Failed with this message; the other rules still run."""


@dataclass
class Check:
    rule: Rule
    metric: str  # Glue-style metric name, e.g. Column.id.Completeness
    value: Callable[[Results], Any]
    passes: Callable[[Any], bool]
    aggregates: dict[str, Column] = field(default_factory=dict)
    grouped: tuple[str, ...] | None = None
    separate: Callable[[], dict[str, Any]] | None = None
    row_pass: Column | None = None
    # Adds the column row_pass reads, when it is not an expression over the data's own
    # columns (CustomSql's rows form marks the rows its statement returned by a join).
    mark: Callable[[DataFrame], DataFrame] | None = None
    extra_metrics: Callable[[Results], dict[str, Any]] | None = None
    note: str | None = None  # a dynamic rule's numbers, as worked out


DATA_TYPES = {
    "BOOLEAN": "boolean",
    "DATE": "date",
    "TIMESTAMP": "timestamp",
    "INTEGER": "int",
    "INT": "int",
    "LONG": "bigint",
    "BIGINT": "bigint",
    "SHORT": "smallint",
    "FLOAT": "float",
    "DOUBLE": "double",
    "DECIMAL": "decimal(38,10)",
    "STRING": "string",
}


@dataclass
class Context:
    df: DataFrame
    now: datetime
    references: dict[str, DataFrame]
    history: Callable[[str], list[float]] | None = None  # earlier values of a metric
    _key: int = 0

    def key(self, what: str) -> str:
        self._key += 1
        return f"m{self._key}_{re.sub(r'[^A-Za-z0-9]', '_', what)[:40]}"

    def column(self, name: str) -> Column:
        if name not in self.df.columns:
            if not self.df.columns:
                raise RuleFailure(
                    f"column {name!r} does not exist: the data has no columns (a bookmarked read with "
                    "no new data has none)"
                )
            raise RuleFailure(f"column {name!r} does not exist; the data has " + ", ".join(self.df.columns))
        return F.col(f"`{name}`")

    def reference(self, name: str) -> DataFrame:
        if name not in self.references:
            known = ", ".join(sorted(self.references)) or "none"
            raise RuleFailure(
                f"reference dataset {name!r} was not given (given: {known}); pass reference={{{name!r}: df}}"
            )
        return self.references[name]


def _where(rule: Rule) -> Column:
    if rule.where is None:
        return F.lit(True)
    return F.coalesce(F.expr(rule.where), F.lit(False))


def _count_if(condition: Column) -> Column:
    return F.sum(F.when(condition, 1).otherwise(0))


def _ratio(results: Results, part: str, whole: str) -> float | None:
    total = results.get(whole) or 0
    return None if total == 0 else (results.get(part) or 0) / total


def _all_or_threshold(rule: Rule, now: datetime) -> Callable[[Any], bool]:
    """Every row must pass, or, with a threshold, the share of rows that pass meets it."""
    if rule.threshold is not None:
        threshold = rule.threshold
        return lambda value: value is not None and holds(threshold, value, now)
    return lambda value: value is not None and value >= 1.0


def _condition_on(rule: Rule, now: datetime) -> Callable[[Any], bool]:
    condition = _required_condition(rule)
    return lambda value: value is not None and holds(condition, value, now)


def _required_condition(rule: Rule) -> Condition:
    """The rule's condition, for the rule types that cannot go without one (the parser
    accepts a rule without; evaluating it says what is missing)."""
    if rule.condition is None:
        raise RuleFailure(f"{rule.rule_type} needs a condition, e.g. {rule.rule_type} ... > 0")
    return rule.condition


def _fraction_check(rule: Rule, ctx: Context, metric: str, predicate: Column) -> Check:
    """A rule whose value is the share of (where-selected) rows meeting ``predicate``."""
    w = _where(rule)
    n, p = ctx.key("rows"), ctx.key(metric)
    return Check(
        rule,
        metric,
        value=lambda r: _ratio(r, p, n),
        passes=_all_or_threshold(rule, ctx.now),
        aggregates={n: _count_if(w), p: _count_if(w & predicate)},
        row_pass=predicate,
    )


def compile_rule(rule: Rule, ctx: Context) -> Check:
    """The check for one rule; raises RuleFailure when it cannot run on this data. A
    dynamic rule's numbers are worked out on the history of the metric it measures."""
    check = _compile_rule(rule, ctx)
    if not is_dynamic(rule):
        return check
    earlier = [x for x in (ctx.history(check.metric) if ctx.history else []) if not math.isnan(x)]
    try:
        settled, worked_out = settle(rule, earlier)
    except DynamicError as exc:
        raise RuleFailure(str(exc)) from None
    check = _compile_rule(settled, ctx)
    check.rule = rule
    check.note = worked_out
    return check


def _compile_rule(rule: Rule, ctx: Context) -> Check:
    kind = rule.rule_type
    w = _where(rule)
    condition = _condition_on(rule, ctx.now) if rule.condition is not None else None

    def required() -> Callable[[Any], bool]:
        return _condition_on(rule, ctx.now)

    params = rule.params

    if kind == "RowCount":
        n = ctx.key("rows")
        return Check(
            rule,
            "Dataset.*.RowCount",
            value=lambda r: r.get(n) or 0,  # a sum over no rows is null: no rows is 0 rows
            passes=required(),
            aggregates={n: _count_if(w)},
        )
    if kind == "ColumnCount":
        count = len(ctx.df.columns)
        return Check(rule, "Dataset.*.ColumnCount", value=lambda r: count, passes=required())
    if kind in ("Completeness", "IsComplete"):
        col = ctx.column(params[0])
        n, c = ctx.key("rows"), ctx.key(f"{params[0]}_complete")
        return Check(
            rule,
            f"Column.{params[0]}.Completeness",
            value=lambda r: _ratio(r, c, n),
            passes=condition or (lambda v: v is not None and v >= 1.0),
            aggregates={n: _count_if(w), c: _count_if(w & col.isNotNull())},
            row_pass=col.isNotNull(),
        )
    if kind in ("ColumnValues", "ColumnLength", "DataFreshness"):
        col = ctx.column(params[0])
        if kind == "ColumnLength":
            # DQDL treats NULL as a string of length 0 (its rule reference, "Null behavior").
            subject = F.coalesce(F.length(col.cast("string")), F.lit(0))
            metric = f"Column.{params[0]}.ColumnLength.Compliance"
        elif kind == "DataFreshness":
            subject = F.unix_timestamp(
                F.lit(ctx.now.replace(tzinfo=None)).cast("timestamp")
            ) - F.unix_timestamp(col.cast("timestamp"))
            metric = f"Column.{params[0]}.DataFreshness.Compliance"
        else:
            subject, metric = col, f"Column.{params[0]}.ColumnValues.Compliance"
        return _fraction_check(rule, ctx, metric, row_predicate(_required_condition(rule), subject, ctx.now))
    if kind == "ColumnDataType":
        col = ctx.column(params[0])
        wanted = _data_types(_required_condition(rule))
        field_type = ctx.df.schema[params[0]].dataType
        fits = F.lit(False)
        for name in wanted:
            target = DATA_TYPES[name]
            if field_type.simpleString().startswith(target.split("(")[0]):
                fits = F.lit(True)
                break
            if isinstance(field_type, StringType):
                fits = fits | F.expr(f"try_cast(`{params[0]}` AS {target})").isNotNull()
        predicate = col.isNotNull() & fits
        return _fraction_check(rule, ctx, f"Column.{params[0]}.ColumnDataType.Compliance", predicate)
    if kind == "ColumnExists":
        present = params[0] in ctx.df.columns
        return Check(
            rule,
            f"Column.{params[0]}.ColumnExists",
            value=lambda r: 1.0 if present else 0.0,
            passes=lambda v: v == 1.0,
        )
    if kind == "ColumnNamesMatchPattern":
        pattern = re.compile(params[0])
        names = ctx.df.columns
        share = (sum(1 for c in names if pattern.fullmatch(c)) / len(names)) if names else 1.0
        return Check(
            rule, "Dataset.*.ColumnNamesPatternMatchRatio", value=lambda r: share, passes=lambda v: v >= 1.0
        )
    if kind in ("Mean", "StandardDeviation", "Sum"):
        col = ctx.column(params[0])
        _numeric(ctx, params[0], kind)
        selected = F.when(w, col)
        agg = {"Mean": F.avg, "StandardDeviation": F.stddev_pop, "Sum": F.sum}[kind](selected)
        m = ctx.key(f"{params[0]}_{kind}")
        return Check(
            rule,
            f"Column.{params[0]}.{kind}",
            value=lambda r: _number(r.get(m)),
            passes=required(),
            aggregates={m: agg},
        )
    if kind == "ColumnCorrelation":
        a, b = ctx.column(params[0]), ctx.column(params[1])
        m = ctx.key("corr")
        return Check(
            rule,
            f"Multicolumn.{params[0]},{params[1]}.ColumnCorrelation",
            value=lambda r: _number(r.get(m)),
            passes=required(),
            aggregates={m: F.corr(F.when(w, a.cast("double")), F.when(w, b.cast("double")))},
        )
    if kind in (
        "Uniqueness",
        "IsUnique",
        "UniqueValueRatio",
        "Entropy",
        "IsPrimaryKey",
        "DistinctValuesCount",
    ):
        columns = tuple(params)
        for name in columns:
            ctx.column(name)
        key = grouped_key(columns, rule.where)
        window_count = F.count(F.lit(1)).over(_window(columns))
        if kind == "IsPrimaryKey":
            complete = F.lit(True)
            for name in columns:
                complete = complete & ctx.column(name).isNotNull()
            n, c = ctx.key("rows"), ctx.key("pk_complete")

            def pk_value(r, n=n, c=c, key=key):
                return min(_ratio(r, c, n) or 0.0, _grouped_ratio(r, key, "singles", "rows") or 0.0)

            return Check(
                rule,
                f"Column.{','.join(columns)}.IsPrimaryKey",
                value=pk_value,
                passes=lambda v: v is not None and v >= 1.0,
                grouped=columns,
                aggregates={n: _count_if(w), c: _count_if(w & complete)},
                row_pass=complete & (window_count == 1),
            )
        if kind in ("Uniqueness", "IsUnique"):
            return Check(
                rule,
                f"Column.{','.join(columns)}.Uniqueness",
                value=lambda r: _grouped_ratio(r, key, "singles", "rows"),
                passes=condition or (lambda v: v is not None and v >= 1.0),
                grouped=columns,
                row_pass=ctx.column(columns[0]).isNotNull() & (window_count == 1),
            )
        if kind == "UniqueValueRatio":
            return Check(
                rule,
                f"Column.{','.join(columns)}.UniqueValueRatio",
                value=lambda r: _grouped_ratio(r, key, "singles", "distinct"),
                passes=required(),
                grouped=columns,
            )
        if kind == "DistinctValuesCount":
            return Check(
                rule,
                f"Column.{params[0]}.DistinctValuesCount",
                value=lambda r: r.get(f"{key}::distinct"),
                passes=required(),
                grouped=columns,
            )
        return Check(
            rule,
            f"Column.{params[0]}.Entropy",
            value=lambda r: r.get(f"{key}::entropy"),
            passes=required(),
            grouped=columns,
        )
    if kind == "CustomSql":
        if rule.condition is None:  # the rows form: the statement selects the rows that pass
            return _custom_sql_rows(rule, ctx)
        return _custom_sql(rule, ctx, required())
    if kind == "ReferentialIntegrity":
        return _referential_integrity(rule, ctx, required())
    if kind == "RowCountMatch":
        reference = ctx.reference(params[0])
        n, m = ctx.key("rows"), ctx.key("reference_rows")
        return Check(
            rule,
            f"Dataset.{params[0]}.RowCountMatch",
            value=lambda r: None if not r.get(m) else (r.get(n) or 0) / r[m],
            passes=required(),
            aggregates={n: _count_if(w)},
            separate=lambda: {m: reference.count()},
        )
    if kind == "SchemaMatch":
        reference = ctx.reference(params[0])
        mine = {f.name.lower(): f.dataType for f in ctx.df.schema.fields}
        theirs = {f.name.lower(): f.dataType for f in reference.schema.fields}
        same = sum(1 for k, t in mine.items() if theirs.get(k) == t)
        share = same / max(len(mine), len(theirs)) if (mine or theirs) else 1.0
        return Check(rule, f"Dataset.{params[0]}.SchemaMatch", value=lambda r: share, passes=required())
    if kind == "DatasetMatch":
        return _dataset_match(rule, ctx, required())
    if kind == "AggregateMatch":
        return _aggregate_match(rule, ctx, required())
    if kind == "DetectAnomalies":
        return _detect_anomalies(rule, ctx)
    raise DQDLError(f"rule type {kind} is not implemented")


def _numeric(ctx: Context, name: str, kind: str) -> None:
    if not isinstance(ctx.df.schema[name].dataType, NumericType):
        raise RuleFailure(
            f"{kind} needs a numeric column; {name!r} is {ctx.df.schema[name].dataType.simpleString()}"
        )


def _number(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


def _window(columns: tuple[str, ...]):
    from pyspark.sql.window import Window

    return Window.partitionBy(*[F.col(f"`{c}`") for c in columns])


def _grouped_ratio(results: Results, key: str, part: str, whole: str) -> float | None:
    total = results.get(f"{key}::{whole}") or 0
    return None if total == 0 else (results.get(f"{key}::{part}") or 0) / total


def grouped_key(columns: tuple[str, ...], where: str | None) -> str:
    return "|".join(columns) + (f"@{where}" if where else "")


def grouped_metrics(df: DataFrame, columns: tuple[str, ...], where: str | None) -> dict[str, Any]:
    """Value-frequency metrics of a column set, in one grouped plan: rows (with no NULL
    in the set), distinct values, values seen once, and entropy (natural log)."""
    selected = df if where is None else df.where(F.coalesce(F.expr(where), F.lit(False)))
    present = F.lit(True)
    for name in columns:
        present = present & F.col(f"`{name}`").isNotNull()
    counts = selected.where(present).groupBy(*[F.col(f"`{c}`") for c in columns]).count()
    row = counts.agg(
        F.sum("count").alias("rows"),
        F.count(F.lit(1)).alias("distinct"),
        F.sum(F.when(F.col("count") == 1, 1).otherwise(0)).alias("singles"),
        F.sum(F.col("count") * F.log(F.col("count"))).alias("clogc"),
    ).head(1)[0]
    key = grouped_key(columns, where)
    rows = int(row["rows"] or 0)
    entropy = None
    if rows:
        entropy = math.log(rows) - float(row["clogc"] or 0.0) / rows
    return {
        f"{key}::rows": rows,
        f"{key}::distinct": int(row["distinct"] or 0),
        f"{key}::singles": int(row["singles"] or 0),
        f"{key}::entropy": entropy,
    }


def _data_types(condition: Condition) -> list[str]:
    if condition.op not in ("=", "in"):
        raise DQDLError('ColumnDataType takes = "TYPE" or in ["TYPE", ...]')
    names = [str(o).upper() for o in condition.operands]
    unknown = [n for n in names if n not in DATA_TYPES]
    if unknown:
        raise DQDLError(f"unknown data type(s) {', '.join(unknown)}; use " + ", ".join(sorted(DATA_TYPES)))
    return names


def _sql(ctx: Context, sql: str, use: Callable[[DataFrame], Any]) -> Any:
    """``use`` of a CustomSql statement's result, over ``primary`` and the references; a
    statement that fails is the rule's failure."""
    ctx.df.createOrReplaceTempView("primary")
    for name, frame in ctx.references.items():
        frame.createOrReplaceTempView(name)
    try:
        return use(ctx.df.sparkSession.sql(sql))
    except Exception as exc:  # noqa: BLE001 - the user's SQL: report it as the rule's failure
        raise RuleFailure(f"the SQL failed: {str(exc).splitlines()[0]}") from None


def _custom_sql(rule: Rule, ctx: Context, condition: Callable[[Any], bool]) -> Check:
    sql = rule.params[0]
    m = ctx.key("custom_sql")

    def run() -> dict[str, Any]:
        result, rows = _sql(ctx, sql, lambda found: (found, found.limit(2).collect()))
        if len(result.columns) != 1 or len(rows) != 1:
            raise RuleFailure(
                "CustomSql needs a statement returning one value (one row, one column), "
                "e.g. select count(*) from primary where ..."
            )
        return {m: rows[0][0]}

    return Check(rule, "Dataset.*.CustomSQL", value=lambda r: r.get(m), passes=condition, separate=run)


def _custom_sql_rows(rule: Rule, ctx: Context) -> Check:
    """CustomSql without a condition: the statement selects the rows of ``primary`` that
    pass, and the rule's value is their share of the dataset's rows, held to the
    threshold (every row, without one). Its columns must all be the dataset's: each row
    of the dataset is marked passed when the statement returned its values of them."""
    sql = rule.params[0]
    n, p = ctx.key("rows"), ctx.key("custom_sql_rows")
    marker = f"__dq_{p}"

    def selected(frame: DataFrame) -> DataFrame:
        columns = list(frame.columns)
        shared = [c for c in columns if c in ctx.df.columns]
        if not shared:
            raise RuleFailure(
                "the output from CustomSql must contain at least one column of the dataset, to mark "
                "its rows; select the rows' key, not an aggregate"
            )
        others = [c for c in columns if c not in ctx.df.columns]
        if others:
            raise RuleFailure(
                "the columns the statement returns must all be the dataset's; not found: " + ", ".join(others)
            )
        return frame

    def run() -> dict[str, Any]:
        return {p: _sql(ctx, sql, lambda found: selected(found).count())}

    def mark(frame: DataFrame) -> DataFrame:
        found = _sql(ctx, sql, selected)
        keys = [f"{marker}_{i}" for i in range(len(found.columns))]
        returned = (
            found.select(*[F.col(f"`{c}`").alias(k) for c, k in zip(found.columns, keys, strict=True)])
            .distinct()
            .withColumn(marker, F.lit(True))
        )
        on = [frame[f"`{c}`"].eqNullSafe(returned[k]) for c, k in zip(found.columns, keys, strict=True)]
        joined = frame.join(returned, on=functools.reduce(operator.and_, on), how="left")
        return joined.drop(*keys)

    return Check(
        rule,
        "Dataset.*.CustomSQL.Compliance",
        value=lambda r: _ratio(r, p, n),
        passes=_all_or_threshold(rule, ctx.now),
        aggregates={n: F.count(F.lit(1))},
        separate=run,
        row_pass=F.col(f"`{marker}`"),
        mark=mark,
    )


def _split_reference(spec: str) -> tuple[str, list[str]]:
    """``ref.col`` or ``ref.{a,b}`` → (ref, [cols])."""
    match = re.fullmatch(r"([^.]+)\.(?:\{(.+)\}|(.+))", spec.strip())
    if not match:
        raise RuleFailure(f"{spec!r} must name a reference and its column(s): ref.col or ref.{{a,b}}")
    columns = match.group(2) or match.group(3)
    return match.group(1), [c.strip() for c in columns.split(",")]


def _referential_integrity(rule: Rule, ctx: Context, condition: Callable[[Any], bool]) -> Check:
    mine = [c.strip() for c in rule.params[0].strip("{}").split(",")]
    ref_name, theirs = _split_reference(rule.params[1])
    if len(mine) != len(theirs):
        raise RuleFailure(f"{len(mine)} column(s) on the left, {len(theirs)} in {rule.params[1]!r}")
    for name in mine:
        ctx.column(name)
    reference = ctx.reference(ref_name)
    missing = [c for c in theirs if c not in reference.columns]
    if missing:
        raise RuleFailure(f"reference {ref_name!r} has no column(s) {', '.join(missing)}")
    n, f = ctx.key("ri_rows"), ctx.key("ri_found")

    def run() -> dict[str, Any]:
        selected = ctx.df.where(_where(rule)).select(
            *[F.col(f"`{c}`").alias(f"k{i}") for i, c in enumerate(mine)]
        )
        keys = reference.select(*[F.col(f"`{c}`").alias(f"k{i}") for i, c in enumerate(theirs)]).distinct()
        total = selected.count()
        found = selected.join(keys, on=[f"k{i}" for i in range(len(mine))], how="left_semi").count()
        return {n: total, f: found}

    return Check(
        rule,
        f"Column.{ref_name}.ReferentialIntegrity",
        value=lambda r: _ratio(r, f, n),
        passes=condition,
        separate=run,
    )


def _mapping(spec: str) -> list[tuple[str, str]]:
    pairs = []
    for part in spec.split(","):
        left, _, right = part.partition("->")
        pairs.append((left.strip(), (right or left).strip()))
    return pairs


def _dataset_match(rule: Rule, ctx: Context, condition: Callable[[Any], bool]) -> Check:
    reference = ctx.reference(rule.params[0])
    keys = _mapping(rule.params[1])
    compared = (
        _mapping(rule.params[2])
        if len(rule.params) > 2
        else [(c, c) for c in ctx.df.columns if c not in {k for k, _ in keys} and c in reference.columns]
    )
    for mine, theirs in keys + compared:
        ctx.column(mine)
        if theirs not in reference.columns:
            raise RuleFailure(f"reference {rule.params[0]!r} has no column {theirs!r}")
    n, m = ctx.key("dm_rows"), ctx.key("dm_matched")

    def run() -> dict[str, Any]:
        left = ctx.df.where(_where(rule)).select(
            *[F.col(f"`{a}`").alias(f"k{i}") for i, (a, _) in enumerate(keys)],
            *[F.col(f"`{a}`").alias(f"v{i}") for i, (a, _) in enumerate(compared)],
        )
        right = reference.select(
            *[F.col(f"`{b}`").alias(f"k{i}") for i, (_, b) in enumerate(keys)],
            *[F.col(f"`{b}`").alias(f"r{i}") for i, (_, b) in enumerate(compared)],
            F.lit(True).alias("present"),
        ).dropDuplicates([f"k{i}" for i in range(len(keys))])
        joined = left.join(right, on=[f"k{i}" for i in range(len(keys))], how="left")
        matched = F.col("present").isNotNull()
        for i in range(len(compared)):
            matched = matched & F.col(f"v{i}").eqNullSafe(F.col(f"r{i}"))
        row = joined.agg(
            F.count(F.lit(1)).alias("n"), F.sum(F.when(matched, 1).otherwise(0)).alias("m")
        ).head(1)[0]
        return {n: int(row["n"] or 0), m: int(row["m"] or 0)}

    return Check(
        rule,
        f"Dataset.{rule.params[0]}.DatasetMatch",
        value=lambda r: _ratio(r, m, n),
        passes=condition,
        separate=run,
    )


def _aggregate_match(rule: Rule, ctx: Context, condition: Callable[[Any], bool]) -> Check:
    first, second = ctx.key("agg_a"), ctx.key("agg_b")

    def side(expression: str) -> tuple[DataFrame, str]:
        for name, frame in (("primary", ctx.df), *ctx.references.items()):
            if f"{name}." in expression:
                return frame, expression.replace(f"{name}.", "")
        return ctx.df, expression

    def run() -> dict[str, Any]:
        values = {}
        for key, expression in ((first, rule.params[0]), (second, rule.params[1])):
            frame, bare = side(expression)
            try:
                values[key] = _number(frame.agg(F.expr(bare)).head(1)[0][0])
            except Exception as exc:  # noqa: BLE001 - the user's expression: report it as the rule's failure
                raise RuleFailure(f"cannot evaluate {expression!r}: {str(exc).splitlines()[0]}") from None
        return values

    return Check(
        rule,
        "Dataset.*.AggregateMatch",
        value=lambda r: None if not r.get(second) else (r.get(first) or 0.0) / r[second],
        passes=condition,
        separate=run,
    )


def _detect_anomalies(rule: Rule, ctx: Context) -> Check:
    measured = Rule(
        rule.params[0],
        tuple(rule.params[1:]),
        Condition(">=", (0,)),
        rule.where,
        text=f"{rule.params[0]} " + " ".join(f'"{p}"' for p in rule.params[1:]),
    )
    if measured.rule_type not in ANALYZABLE:
        raise DQDLError(
            f"DetectAnomalies watches one of {', '.join(sorted(ANALYZABLE))}, not {measured.rule_type!r}"
        )
    inner = compile_rule(measured, ctx)
    earlier = ctx.history(inner.metric) if ctx.history else []
    notes: dict[str, Any] = {}

    def passes(value: Any) -> bool:
        if value is None:
            return False
        verdict = anomaly.judge(earlier, float(value))
        notes.update(verdict.notes())
        return not verdict.anomalous

    return Check(
        rule,
        inner.metric,
        value=inner.value,
        passes=passes,
        aggregates=inner.aggregates,
        grouped=inner.grouped,
        separate=inner.separate,
        extra_metrics=lambda r: dict(notes),
    )
