"""Evaluate a DQDL ruleset on a DataFrame.

Every aggregate of every rule is computed in one ``agg`` pass; value-frequency rules
(Uniqueness, IsUnique, IsPrimaryKey, UniqueValueRatio, Entropy) share one grouped plan
per column set; rules over a reference dataset or SQL run as plans of their own.
Row-level outcomes are a lazy DataFrame with Glue's four columns added.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from .. import spark_lines
from .rules import Check, Context, RuleFailure, check_rule, compile_rule, grouped_metrics
from .ruleset import DQDLError, Entry, Rule, Ruleset, parse_ruleset

PASS_COLUMN = "DataQualityRulesPass"
FAIL_COLUMN = "DataQualityRulesFail"
SKIP_COLUMN = "DataQualityRulesSkip"
RESULT_COLUMN = "DataQualityEvaluationResult"
ROW_COLUMNS = (PASS_COLUMN, FAIL_COLUMN, SKIP_COLUMN, RESULT_COLUMN)
PASSED, FAILED = "Passed", "Failed"


@dataclass
class RuleOutcome:
    rule: str
    outcome: str  # Passed | Failed
    failure_reason: str | None = None
    evaluated_metrics: dict[str, Any] = field(default_factory=dict)
    labels: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.outcome == PASSED


@dataclass
class QualityResult:
    ruleset_name: str
    evaluated_at: datetime
    outcomes: list[RuleOutcome]
    metrics: dict[str, Any]  # every computed metric, by Glue-style name
    analyzer_metrics: dict[str, Any]
    rows: DataFrame | None = None  # the data with row-level outcome columns, lazy

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outcomes)

    @property
    def score(self) -> float:
        return (sum(o.passed for o in self.outcomes) / len(self.outcomes)) if self.outcomes else 1.0

    def failed(self) -> list[RuleOutcome]:
        return [o for o in self.outcomes if not o.passed]

    def split(self) -> tuple[DataFrame, DataFrame]:
        """(rows that passed every row-level rule, without the outcome columns; rows that
        failed one, with them): the two sides of a quarantine."""
        if self.rows is None:
            raise DQDLError("row-level outcomes were not computed (row_level=False)")
        good = self.rows.where(F.col(RESULT_COLUMN) == PASSED).drop(*ROW_COLUMNS)
        return good, self.rows.where(F.col(RESULT_COLUMN) == FAILED)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ruleset": self.ruleset_name,
            "evaluated_at": self.evaluated_at.isoformat(),
            "passed": self.passed,
            "score": round(self.score, 6),
            "rules": [asdict(o) for o in self.outcomes],
            "metrics": self.metrics,
            "analyzer_metrics": self.analyzer_metrics,
        }

    def outcomes_frame(self, spark) -> DataFrame:
        """Rule outcomes as a DataFrame, in the shape of Glue's ruleOutcomes."""
        rows = [
            (
                o.rule,
                o.outcome,
                o.failure_reason,
                json.dumps(o.evaluated_metrics, default=str),
                json.dumps(o.labels),
            )
            for o in self.outcomes
        ]
        return spark.createDataFrame(
            rows, "Rule string, Outcome string, FailureReason string, EvaluatedMetrics string, Labels string"
        )


def evaluate(
    df: DataFrame,
    ruleset: str | Ruleset,
    *,
    reference: dict[str, DataFrame] | None = None,
    name: str = "default",
    row_level: bool = True,
    filtered_rows: str = "pass",
    now: datetime | None = None,
    history: Callable[[str], list[float]] | None = None,
) -> QualityResult:
    """Evaluate ``ruleset`` (DQDL text or parsed) on ``df``.

    ``reference`` names other datasets (for ReferentialIntegrity, DatasetMatch,
    RowCountMatch, SchemaMatch, AggregateMatch, CustomSql). Rows that a rule's
    ``where`` leaves out count as passed for it, or, with ``filtered_rows="skip"``,
    as skipped. ``history`` gives a metric's earlier values (DetectAnomalies)."""
    if filtered_rows not in ("pass", "skip"):
        raise DQDLError("filtered_rows must be 'pass' or 'skip'")
    parsed = parse_ruleset(ruleset) if isinstance(ruleset, str) else ruleset
    for leaf in parsed.leaves():
        check_rule(leaf)
    for analyzer in parsed.analyzers:
        check_rule(analyzer, analyzer=True)
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    ctx = Context(df, moment, dict(reference or {}), history)

    checks: dict[int, Check | RuleFailure] = {}
    for leaf in parsed.leaves():
        checks[id(leaf)] = _compile(leaf, ctx)
    analyzers: list[tuple[Rule, Check | RuleFailure]] = [
        (a, _compile(_as_measure(a), ctx)) for a in parsed.analyzers
    ]

    compiled = [c for c in list(checks.values()) + [c for _, c in analyzers] if isinstance(c, Check)]
    results: dict[str, Any] = {}
    failures: dict[int, str] = {}
    aggregates = {k: v for c in compiled for k, v in c.aggregates.items()}
    plans: list[Callable[[], dict[str, Any]]] = []
    if aggregates:
        plans.append(lambda: _one_pass(df, aggregates))
    groups = list(dict.fromkeys((c.grouped, c.rule.where) for c in compiled if c.grouped))
    for columns, where in groups:
        plans.append(partial(grouped_metrics, df, columns, where))
    # A rule the data cannot answer (a number compared with a word) is known by the error
    # its cast raises: Spark 4's ANSI mode, which the metrics are computed under on Spark 3.5 too.
    with spark_lines.ansi_mode(df.sparkSession):
        try:
            for part in _run_at_once(plans):
                results.update(part)
        except spark_lines.QUERY_ERRORS:
            # One rule the data cannot answer fails the shared pass: each rule is
            # evaluated on its own, and the ones that fail say why.
            results, failures = _one_by_one(df, compiled)
        for check in compiled:
            if check.separate is not None and id(check) not in failures:
                try:
                    results.update(check.separate())
                except RuleFailure as exc:
                    failures[id(check)] = str(exc)
    for key, leaf_check in list(checks.items()):  # row-level outcomes leave the failed rules out
        if isinstance(leaf_check, Check) and id(leaf_check) in failures:
            checks[key] = RuleFailure(failures[id(leaf_check)])

    metrics: dict[str, Any] = {}
    leaf_outcomes: dict[int, RuleOutcome] = {}
    for leaf in parsed.leaves():
        leaf_outcomes[id(leaf)] = _outcome(leaf, checks[id(leaf)], results, failures, metrics)
    outcomes = [_entry_outcome(e, leaf_outcomes) for e in parsed.rules]
    analyzer_metrics = {}
    for _rule, analyzed in analyzers:
        if isinstance(analyzed, Check) and id(analyzed) not in failures:
            analyzer_metrics[analyzed.metric] = _plain(analyzed.value(results))
    metrics.update(analyzer_metrics)

    rows = _row_level(df, parsed, checks, filtered_rows) if row_level else None
    return QualityResult(name, moment, outcomes, metrics, analyzer_metrics, rows)


def _one_by_one(df: DataFrame, compiled: list[Check]) -> tuple[dict[str, Any], dict[int, str]]:
    """Each rule's aggregates and grouped metrics on their own: the results of the rules
    that can be evaluated, and why each of the others cannot."""
    results: dict[str, Any] = {}
    failures: dict[int, str] = {}
    for check in compiled:
        try:
            if check.aggregates:
                results.update(_one_pass(df, check.aggregates))
            if check.grouped:
                results.update(grouped_metrics(df, check.grouped, check.rule.where))
        except spark_lines.QUERY_ERRORS as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            failures[id(check)] = f"the rule could not be evaluated on this data: {first}"
    return results, failures


def _one_pass(df: DataFrame, aggregates: dict[str, Column]) -> dict[str, Any]:
    """Every aggregate in one global ``agg``: one scan of the data. An expression that
    several rules share (each rule's row count, say) is computed once: Spark evaluates
    every copy it is given (20 rules on 2,000,000 rows: 29 aggregates 0.98 s, the 18
    distinct ones 0.77 s)."""
    owner: dict[str, str] = {}  # expression text -> the first key that asks for it
    distinct: dict[str, Column] = {}
    keys: dict[str, str] = {}
    for key, col in aggregates.items():
        first = owner.setdefault(str(col), key)
        if first == key:
            distinct[key] = col
        keys[key] = first
    row = df.agg(*[col.alias(key) for key, col in distinct.items()]).head(1)[0].asDict()
    return {key: row[first] for key, first in keys.items()}


def _run_at_once(plans: list[Callable[[], dict[str, Any]]]) -> list[dict[str, Any]]:
    """The independent plans (the aggregate pass, one grouped plan per column set) as
    Spark jobs submitted together from threads: a single job leaves cores idle while
    its stages start and end, and Spark's scheduler shares the executors between
    them. Nothing in the session's configuration is changed for them."""
    if len(plans) < 2:
        return [plan() for plan in plans]
    with ThreadPoolExecutor(max_workers=len(plans), thread_name_prefix="sparkmark-dq") as pool:
        return list(pool.map(lambda plan: plan(), plans))


def _compile(rule: Rule, ctx: Context) -> Check | RuleFailure:
    try:
        return compile_rule(rule, ctx)
    except RuleFailure as exc:
        return exc


def _as_measure(analyzer: Rule) -> Rule:
    """An analyzer is measured like its rule type, with a condition that always holds."""
    from .ruleset import Condition

    return Rule(
        analyzer.rule_type,
        analyzer.params,
        Condition(">=", (float("-inf"),)),
        analyzer.where,
        text=analyzer.text,
    )


def _plain(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 12)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    try:
        return float(value) if value is not None and not isinstance(value, (int, str, bool)) else value
    except (TypeError, ValueError):
        return str(value)


def _outcome(
    rule: Rule,
    check: Check | RuleFailure,
    results: dict[str, Any],
    failures: dict[int, str],
    metrics: dict[str, Any],
) -> RuleOutcome:
    if isinstance(check, RuleFailure):
        return RuleOutcome(rule.text, FAILED, str(check), {}, dict(rule.labels))
    if id(check) in failures:
        return RuleOutcome(rule.text, FAILED, failures[id(check)], {}, dict(rule.labels))
    value = _plain(check.value(results))
    evaluated = {check.metric: value}
    metrics[check.metric] = value
    try:
        ok = bool(check.passes(value))
    except DQDLError as exc:
        return RuleOutcome(rule.text, FAILED, str(exc), evaluated, dict(rule.labels))
    if check.extra_metrics:
        evaluated.update(check.extra_metrics(results))
    reason = None
    if not ok:
        reason = (
            "no rows to evaluate"
            if value is None
            else f"Value: {value} does not meet the constraint requirement!"
        )
        if check.note:
            reason += f" ({check.note})"
    return RuleOutcome(rule.text, PASSED if ok else FAILED, reason, evaluated, dict(rule.labels))


def _entry_outcome(entry: Entry, leaves: dict[int, RuleOutcome]) -> RuleOutcome:
    if isinstance(entry, Rule):
        return leaves[id(entry)]
    parts = [_entry_outcome(p, leaves) for p in entry.parts]
    ok = all(p.passed for p in parts) if entry.op == "and" else any(p.passed for p in parts)
    evaluated: dict[str, Any] = {}
    for part in parts:
        evaluated.update(part.evaluated_metrics)
    reasons = [f"{p.rule}: {p.failure_reason}" for p in parts if not p.passed]
    return RuleOutcome(entry.text, PASSED if ok else FAILED, None if ok else "; ".join(reasons), evaluated)


def _row_pass(entry: Entry, checks: dict[int, Check | RuleFailure]) -> Column | None:
    """A row's outcome for an entry, or None when the entry cannot be judged per row."""
    if isinstance(entry, Rule):
        check = checks[id(entry)]
        if not isinstance(check, Check) or check.row_pass is None:
            return None
        return F.coalesce(check.row_pass, F.lit(False))
    judged = [_row_pass(p, checks) for p in entry.parts]
    parts = [p for p in judged if p is not None]
    if len(parts) < len(judged):
        return None
    combined = parts[0]
    for part in parts[1:]:
        combined = (combined & part) if entry.op == "and" else (combined | part)
    return combined


def _selected(entry: Entry) -> Column:
    where = entry.where if isinstance(entry, Rule) else None
    if where is None:
        return F.lit(True)
    return F.coalesce(F.expr(where), F.lit(False))


def _row_level(
    df: DataFrame, parsed: Ruleset, checks: dict[int, Check | RuleFailure], filtered_rows: str
) -> DataFrame:
    passed, failed, skipped = [], [], []
    marked = df
    markers: list[str] = []
    for check in checks.values():
        if isinstance(check, Check) and check.mark is not None:
            before = set(marked.columns)
            marked = check.mark(marked)
            markers += [c for c in marked.columns if c not in before]
    for entry in parsed.rules:
        verdict = _row_pass(entry, checks)
        if verdict is None:
            continue
        text = F.lit(entry.text)
        selected = _selected(entry)
        if filtered_rows == "skip":
            passed.append(F.when(selected & verdict, text))
            skipped.append(F.when(~selected, text))
        else:
            passed.append(F.when(~selected | verdict, text))
        failed.append(F.when(selected & ~verdict, text))

    def listed(items: list[Column]) -> Column:
        if not items:
            return F.array().cast("array<string>")
        return F.filter(F.array(*items), lambda x: x.isNotNull())

    out = marked
    for name in ROW_COLUMNS:
        if name in out.columns:
            out = out.drop(name)
    out = out.withColumn(PASS_COLUMN, listed(passed)).withColumn(FAIL_COLUMN, listed(failed))
    out = out.withColumn(SKIP_COLUMN, listed(skipped))
    out = out.withColumn(
        RESULT_COLUMN, F.when(F.size(F.col(FAIL_COLUMN)) > 0, F.lit(FAILED)).otherwise(F.lit(PASSED))
    )
    return out.drop(*markers)
