"""DQDL data quality: parsing, every rule type on small data with values worked out by
hand, composite rules, where, row-level outcomes, one Spark job for the aggregates,
results kept per run, and a quarantine pipeline with bookmarks."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime

import pytest
from pyspark.sql import functions as F

from sparkmark.quality import (
    FAIL_COLUMN,
    PASS_COLUMN,
    RESULT_COLUMN,
    SKIP_COLUMN,
    DQDLError,
    evaluate,
    parse_ruleset,
)
from sparkmark.quality.store import QualityStore

from .conftest import write_json

NOW = datetime(2026, 11, 23, 0, 0, tzinfo=UTC)

# id, country, name, amount, ts, code
ROWS = [
    (1, "US", "alice", 10.0, datetime(2026, 11, 20), "5"),
    (2, "CA", "bob", 20.0, datetime(2026, 11, 21), "x"),
    (3, "US", None, 30.0, datetime(2026, 11, 22), "7"),
    (4, "UK", "dave", None, None, "8"),
    (4, "", "   ", 40.0, datetime(2026, 11, 22, 12), None),
]
SCHEMA = "id int, country string, name string, amount double, ts timestamp, code string"


@pytest.fixture(scope="module")
def data(spark):
    return spark.createDataFrame(ROWS, SCHEMA)


@pytest.fixture(scope="module")
def ref(spark):
    return spark.createDataFrame([(1, "US"), (2, "CA"), (3, "US")], "id int, country string")


def outcomes(df, rules: list[str], **kw) -> dict[str, tuple[str, dict]]:
    result = evaluate(df, "Rules = [\n" + ",\n".join(rules) + "\n]", now=NOW, row_level=False, **kw)
    return {o.rule: (o.outcome, o.evaluated_metrics, o.failure_reason) for o in result.outcomes}


def metric(found, rule):
    (value,) = [v for k, v in found[rule][1].items() if "." in k][:1] or [None]
    return value


# ------------------------------------------------------------------ parsing


def test_parse_variables_labels_clauses_and_composites():
    parsed = parse_ruleset("""
        # a comment
        $low = 3
        $allowed = ["US", "CA"]
        Rules = [
            RowCount > $low,
            ColumnValues "country" in $allowed with threshold >= 0.5 where "id > 1",
            ColumnValues "ts" > (now() - 2 days) labels = {"team": "core"},
            ((IsComplete "id") or (RowCount = 0)) and (Mean "amount" between 1 and 50)
        ]
        Analyzers = [ RowCount, Completeness "name" ]""")
    first, second, third, fourth = parsed.rules
    assert first.condition.operands == (3,)
    assert second.condition.operands == ("US", "CA") and second.where == "id > 1"
    assert second.threshold.op == ">=" and second.threshold.operands == (0.5,)
    assert third.labels == {"team": "core"} and third.condition.operands[0].offset_seconds == -172800
    assert fourth.op == "and" and fourth.parts[0].op == "or"
    assert [leaf.rule_type for leaf in fourth.leaves()] == ["IsComplete", "RowCount", "Mean"]
    assert [a.rule_type for a in parsed.analyzers] == ["RowCount", "Completeness"]


@pytest.mark.parametrize(
    "text,message",
    [
        ('Rules = [ IsComplete "id" > ]', "line 1, column 29: unexpected ']'; expected"),
        ('Rules = [\n  IsComplete "id",\n  RowCount >> 3\n]', "line 3, column 13: unexpected '>'"),
        ("Rules = [ RowCount > $nope ]", "variable $nope is not defined"),
        ('Rules = [ IsComplete "id"', "unexpected the end of the ruleset"),
        ("Rulez = [ RowCount > 1 ]", "line 1, column 1: unexpected 'Rulez'"),
        ("", "the ruleset is empty"),
    ],
)
def test_parse_errors_name_line_column_and_expectation(text, message):
    with pytest.raises(DQDLError, match=message.replace("(", r"\(").replace("$", r"\$")):
        parse_ruleset(text)


@pytest.mark.parametrize(
    "rule,message",
    [
        ('IsCompleat "id"', "unknown rule type 'IsCompleat'"),
        ('IsComplete "id" > 3', "IsComplete takes no condition"),
        ('Completeness "id"', "Completeness needs a condition"),
        ('RowCount "id" > 3', "RowCount takes 0 quoted parameter"),
        ('Mean "amount" > 1 with threshold > 0.5', "Mean does not take 'with threshold'"),
    ],
)
def test_rule_shape_errors(data, rule, message):
    with pytest.raises(DQDLError, match=message):
        evaluate(data, f"Rules = [ {rule} ]")


# ------------------------------------------------------------------ rule types


def test_dataset_level_rules(data):
    found = outcomes(
        data,
        [
            "RowCount = 5",
            "RowCount between 5 and 10",
            "RowCount between 4 and 6",
            "RowCount not between 4 and 6",
            "ColumnCount = 6",
            'ColumnExists "name"',
            'ColumnExists "nope"',
            'ColumnNamesMatchPattern "[a-z]+"',
            'ColumnNamesMatchPattern "[a-c].*"',
        ],
    )
    assert found["RowCount = 5"][0] == "Passed"
    assert found["RowCount between 5 and 10"][0] == "Failed"  # between is exclusive
    assert found["RowCount between 4 and 6"][0] == "Passed"
    assert found["RowCount not between 4 and 6"][0] == "Failed"
    assert found["ColumnCount = 6"][0] == "Passed"
    assert found['ColumnExists "name"'][0] == "Passed" and found['ColumnExists "nope"'][0] == "Failed"
    assert found['ColumnNamesMatchPattern "[a-z]+"'][0] == "Passed"
    assert found['ColumnNamesMatchPattern "[a-c].*"'][0] == "Failed"


def test_completeness_uniqueness_and_frequency_rules(data):
    found = outcomes(
        data,
        [
            'Completeness "name" >= 0.8',
            'Completeness "name" > 0.8',
            'IsComplete "id"',
            'IsComplete "amount"',
            'Uniqueness "id" = 0.6',
            'IsUnique "id"',
            'UniqueValueRatio "id" = 0.75',
            'DistinctValuesCount "id" = 4',
            'Entropy "country" > 1.33',
            'IsPrimaryKey "id"',
            'IsPrimaryKey "id" "country"',
        ],
    )
    assert found['Completeness "name" >= 0.8'][0] == "Passed"  # 4 of 5 names
    assert metric(found, 'Completeness "name" >= 0.8') == 0.8
    assert found['Completeness "name" > 0.8'][0] == "Failed"
    assert found['IsComplete "id"'][0] == "Passed" and found['IsComplete "amount"'][0] == "Failed"
    assert found['Uniqueness "id" = 0.6'][0] == "Passed"  # 1, 2, 3 once; 4 twice: 3 of 5 rows
    assert found['IsUnique "id"'][0] == "Failed"
    assert found['UniqueValueRatio "id" = 0.75'][0] == "Passed"  # 3 unique of 4 distinct
    assert found['DistinctValuesCount "id" = 4'][0] == "Passed"
    # US twice, CA, UK and "" once: -(0.4 ln 0.4 + 3 * 0.2 ln 0.2) = 1.33218
    assert math.isclose(metric(found, 'Entropy "country" > 1.33'), 1.3321790402, rel_tol=1e-9)
    assert found['IsPrimaryKey "id"'][0] == "Failed"
    assert found['IsPrimaryKey "id" "country"'][0] == "Passed"


def test_statistics(data):
    found = outcomes(
        data,
        [
            'Mean "amount" = 25',
            'Sum "amount" = 100',
            'StandardDeviation "amount" between 11.18 and 11.19',
            'ColumnCorrelation "id" "amount" > 0.99',
            'Mean "country" > 1',
        ],
    )
    assert found['Mean "amount" = 25'][0] == "Passed"  # the NULL amount is left out
    assert found['Sum "amount" = 100'][0] == "Passed"
    # population standard deviation of 10, 20, 30, 40: sqrt(500 / 4) = 11.1803
    assert math.isclose(
        metric(found, 'StandardDeviation "amount" between 11.18 and 11.19'), math.sqrt(125), rel_tol=1e-9
    )
    assert found['StandardDeviation "amount" between 11.18 and 11.19'][0] == "Passed"
    assert found['ColumnCorrelation "id" "amount" > 0.99'][0] == "Passed"
    assert found['Mean "country" > 1'][0] == "Failed"
    assert "needs a numeric column" in found['Mean "country" > 1'][2]


def test_column_values_operators_and_null_rules(data):
    rules = {
        'ColumnValues "country" in ["US", "CA"]': ("Failed", 0.6),
        'ColumnValues "country" in ["US", "CA"] with threshold >= 0.6': ("Passed", 0.6),
        'ColumnValues "country" in ["US", "CA", "UK", EMPTY]': ("Passed", 1.0),
        'ColumnValues "name" in ["alice", "bob", "dave", NULL, WHITESPACES_ONLY]': ("Passed", 1.0),
        'ColumnValues "name" != "bob"': ("Failed", 0.8),  # NULL passes !=
        'ColumnValues "name" != "bob" with threshold > 0.7': ("Passed", 0.8),
        'ColumnValues "name" != NULL': ("Failed", 0.8),
        'ColumnValues "name" = NULL': ("Failed", 0.2),
        'ColumnValues "amount" > 15': ("Failed", 0.6),  # NULL fails >
        'ColumnValues "amount" not in [10.0]': ("Failed", 0.8),  # NULL passes not in
        'ColumnValues "amount" not in [10.0, NULL]': ("Failed", 0.6),
        'ColumnValues "amount" between 10 and 40': ("Failed", 0.4),  # 20, 30: exclusive ends
        'ColumnValues "amount" not between 15 and 35': ("Failed", 0.4),  # 10, 40; NULL fails
        'ColumnValues "name" matches "[a-z]+"': ("Failed", 0.6),
        'ColumnValues "name" not matches "[a-z]+"': ("Failed", 0.2),  # only "   "; NULL fails
        'ColumnValues "ts" > (now() - 2 days)': ("Failed", 0.4),  # after 2026-11-21 00:00
        'ColumnValues "ts" <= now()': ("Failed", 0.8),
        'ColumnValues "id" in [1, 2, 3, 4]': ("Passed", 1.0),
        'ColumnValues "id" <= 4': ("Passed", 1.0),
    }
    found = outcomes(data, list(rules))
    for rule, (outcome, share) in rules.items():
        assert found[rule][0] == outcome, rule
        assert math.isclose(metric(found, rule), share), (rule, found[rule])


def test_length_type_and_freshness(data):
    found = outcomes(
        data,
        [
            'ColumnLength "name" between 2 and 5',
            'ColumnLength "name" <= 5',
            'ColumnDataType "code" = "INTEGER"',
            'ColumnDataType "code" = "INTEGER" with threshold >= 0.6',
            'ColumnDataType "amount" = "DOUBLE"',
            'DataFreshness "ts" <= 36 hours',
            'DataFreshness "ts" <= 36 hours with threshold >= 0.4',
            'DataFreshness "ts" between 1 days and 4 days',
        ],
    )
    assert metric(found, 'ColumnLength "name" between 2 and 5') == 0.6  # bob, dave, "   "
    # DQDL's rule reference, "Null behavior": NULL is a string of length 0.
    assert found['ColumnLength "name" <= 5'][0] == "Passed"
    assert metric(found, 'ColumnLength "name" <= 5') == 1.0
    assert metric(found, 'ColumnDataType "code" = "INTEGER"') == 0.6  # 5, 7, 8
    assert found['ColumnDataType "code" = "INTEGER"'][0] == "Failed"
    assert found['ColumnDataType "code" = "INTEGER" with threshold >= 0.6'][0] == "Passed"
    assert found['ColumnDataType "amount" = "DOUBLE"'][1]["Column.amount.ColumnDataType.Compliance"] == 0.8
    # ages at 2026-11-23 00:00: 72 h, 48 h, 24 h, NULL, 12 h
    assert metric(found, 'DataFreshness "ts" <= 36 hours') == 0.4
    assert found['DataFreshness "ts" <= 36 hours with threshold >= 0.4'][0] == "Passed"
    assert metric(found, 'DataFreshness "ts" between 1 days and 4 days') == 0.4  # 72 h and 48 h


def test_column_length_counts_null_as_zero_length(spark):
    """The rule reference's own example: for a NULL Postal_Code, `> 4` fails and `< 6`
    succeeds; `AND ColumnValues != NULL` is how a rule fails NULLs explicitly."""
    df = spark.createDataFrame([("12345",), (None,)], "Postal_Code string")
    found = outcomes(
        df,
        [
            'ColumnLength "Postal_Code" > 4',
            'ColumnLength "Postal_Code" < 6',
            '(ColumnLength "Postal_Code" < 6) AND (ColumnValues "Postal_Code" != NULL)',
        ],
    )
    assert found['ColumnLength "Postal_Code" > 4'][0] == "Failed"
    assert metric(found, 'ColumnLength "Postal_Code" > 4') == 0.5
    assert found['ColumnLength "Postal_Code" < 6'][0] == "Passed"
    assert found['(ColumnLength "Postal_Code" < 6) AND (ColumnValues "Postal_Code" != NULL)'][0] == "Failed"


def test_where_custom_sql_and_composites(data):
    found = outcomes(
        data,
        [
            'Completeness "name" >= 1.0 where "id <= 2"',
            'ColumnValues "amount" > 15 where "country = \'US\'"',
            'CustomSql "select count(*) from primary where amount > 15" = 3',
            'CustomSql "select id from primary" > 0',
            '(IsComplete "id") and (RowCount = 5)',
            '(IsComplete "amount") or (RowCount = 4)',
            '(IsComplete "amount") or ((RowCount = 5) and (Sum "amount" = 100))',
        ],
    )
    assert found['Completeness "name" >= 1.0 where "id <= 2"'][0] == "Passed"
    assert metric(found, 'ColumnValues "amount" > 15 where "country = \'US\'"') == 0.5
    assert found['CustomSql "select count(*) from primary where amount > 15" = 3'][0] == "Passed"
    assert "one value" in found['CustomSql "select id from primary" > 0'][2]
    assert found['(IsComplete "id") and (RowCount = 5)'][0] == "Passed"
    failed = found['(IsComplete "amount") or (RowCount = 4)']
    assert failed[0] == "Failed" and 'IsComplete "amount"' in failed[2]
    assert found['(IsComplete "amount") or ((RowCount = 5) and (Sum "amount" = 100))'][0] == "Passed"


def test_reference_rules(data, ref):
    found = outcomes(
        data,
        [
            'ReferentialIntegrity "id" "ref.id" >= 0.6',
            'ReferentialIntegrity "id" "ref.id" = 1.0',
            'ReferentialIntegrity "id,country" "ref.{id,country}" = 0.6',
            'RowCountMatch "ref" > 1.6',
            'SchemaMatch "ref" between 0.3 and 0.4',
            'DatasetMatch "ref" "id" "country" = 0.6',
            'AggregateMatch "count(id)" "count(ref.id)" > 1.6',
            'RowCountMatch "other" > 1',
        ],
        reference={"ref": ref},
    )
    assert found['ReferentialIntegrity "id" "ref.id" >= 0.6'][0] == "Passed"  # ids 1, 2, 3 of 5 rows
    assert found['ReferentialIntegrity "id" "ref.id" = 1.0'][0] == "Failed"
    assert found['ReferentialIntegrity "id,country" "ref.{id,country}" = 0.6'][0] == "Passed"
    assert math.isclose(metric(found, 'RowCountMatch "ref" > 1.6'), 5 / 3)
    assert math.isclose(metric(found, 'SchemaMatch "ref" between 0.3 and 0.4'), 2 / 6)  # id, country of 6
    assert found['DatasetMatch "ref" "id" "country" = 0.6'][0] == "Passed"
    assert found['AggregateMatch "count(id)" "count(ref.id)" > 1.6'][0] == "Passed"
    assert "reference dataset 'other' was not given" in found['RowCountMatch "other" > 1'][2]


def test_missing_column_fails_that_rule_only(data):
    found = outcomes(data, ['IsComplete "nope"', "RowCount = 5"])
    assert found['IsComplete "nope"'][0] == "Failed"
    assert "column 'nope' does not exist" in found['IsComplete "nope"'][2]
    assert found["RowCount = 5"][0] == "Passed"


def test_rules_on_empty_data_as_deequ_judges_them(spark):
    """Glue's data quality runs on Deequ: on no rows the row count is 0, so
    ``RowCount = 0`` passes and ``RowCount > 0`` fails on its value, while a rule that
    needs a column's values (completeness, uniqueness, values) has nothing to judge and
    fails. A frame with no columns (a bookmarked read with no new data) says so."""
    rules = [
        "RowCount = 0",
        "RowCount > 0",
        'IsComplete "id"',
        'IsUnique "id"',
        'ColumnValues "id" > 3',
        "ColumnCount = 2",
    ]
    found = outcomes(spark.createDataFrame([], "id int, name string"), rules)
    assert found["RowCount = 0"][0] == "Passed" and found["RowCount = 0"][1] == {"Dataset.*.RowCount": 0}
    assert found["RowCount > 0"][0] == "Failed" and "Value: 0" in found["RowCount > 0"][2]
    assert found["ColumnCount = 2"][0] == "Passed"
    for rule in ('IsComplete "id"', 'IsUnique "id"', 'ColumnValues "id" > 3'):
        assert found[rule][0] == "Failed" and found[rule][2] == "no rows to evaluate", rule
    bare = outcomes(spark.createDataFrame([], ""), ["RowCount = 0", 'IsComplete "id"'])
    assert bare["RowCount = 0"][0] == "Passed"
    either = outcomes(spark.createDataFrame([], "id int"), ['(RowCount = 0) or (IsComplete "id")'])
    assert either['(RowCount = 0) or (IsComplete "id")'][0] == "Passed"  # a run may be empty
    assert bare['IsComplete "id"'][0] == "Failed" and "the data has no columns" in bare['IsComplete "id"'][2]


def test_detect_anomalies_against_history(data):
    def history(values):
        return lambda metric: values if metric == "Dataset.*.RowCount" else []

    rule = 'DetectAnomalies "RowCount"'
    fresh = evaluate(data, f"Rules = [ {rule} ]", row_level=False, history=history([])).outcomes[0]
    assert fresh.passed and fresh.evaluated_metrics["method"] == "not judged"
    steady = evaluate(data, f"Rules = [ {rule} ]", row_level=False, history=history([5, 5, 5])).outcomes[0]
    assert steady.passed
    # history 9, 10, 11 (too short for the model): mean 10, sample σ 1, so 5 is outside 10 ± 3σ
    jump = evaluate(data, f"Rules = [ {rule} ]", row_level=False, history=history([9, 10, 11])).outcomes[0]
    assert not jump.passed and jump.evaluated_metrics["expected_low"] == 7.0
    assert jump.evaluated_metrics["method"] == "mean ± 3σ"


def test_analyzers_measure_without_outcomes(data):
    result = evaluate(
        data, 'Rules = [ RowCount > 0 ] Analyzers = [ Completeness "amount", Mean "amount" ]', row_level=False
    )
    assert result.analyzer_metrics == {"Column.amount.Completeness": 0.8, "Column.amount.Mean": 25.0}
    assert len(result.outcomes) == 1


# ------------------------------------------------------------------ row level


def test_row_level_outcomes(data):
    result = evaluate(
        data, 'Rules = [ IsComplete "name", ColumnValues "amount" > 15, RowCount > 0 ]', now=NOW
    )
    rows = {(r["id"], r["country"]): r for r in result.rows.collect()}
    assert rows[(1, "US")][FAIL_COLUMN] == ['ColumnValues "amount" > 15']
    assert rows[(1, "US")][PASS_COLUMN] == ['IsComplete "name"']
    assert rows[(2, "CA")][RESULT_COLUMN] == "Passed" and rows[(2, "CA")][FAIL_COLUMN] == []
    assert rows[(3, "US")][FAIL_COLUMN] == ['IsComplete "name"']
    assert rows[(4, "UK")][FAIL_COLUMN] == ['ColumnValues "amount" > 15']
    assert rows[(4, "")][RESULT_COLUMN] == "Passed"
    assert all("RowCount > 0" not in r[PASS_COLUMN] + r[FAIL_COLUMN] for r in rows.values())
    good, bad = result.split()
    assert sorted(r["id"] for r in good.collect()) == [2, 4] and FAIL_COLUMN not in good.columns
    assert bad.count() == 3


def test_row_level_where_counts_filtered_rows_as_passed_or_skipped(data):
    rule = 'ColumnValues "amount" > 15 where "country = \'US\'"'
    passed = {r["id"]: r for r in evaluate(data, f"Rules = [ {rule} ]").rows.collect() if r["id"] != 4}
    assert passed[1][FAIL_COLUMN] == [rule] and passed[2][PASS_COLUMN] == [rule]
    skipped = evaluate(data, f"Rules = [ {rule} ]", filtered_rows="skip").rows
    by_id = {(r["id"], r["country"]): r for r in skipped.collect()}
    assert by_id[(2, "CA")][SKIP_COLUMN] == [rule] and by_id[(2, "CA")][PASS_COLUMN] == []
    assert by_id[(3, "US")][PASS_COLUMN] == [rule] and by_id[(1, "US")][FAIL_COLUMN] == [rule]


def test_row_level_uniqueness_and_composite(data):
    result = evaluate(data, 'Rules = [ IsUnique "id", (IsComplete "name") or (ColumnValues "amount" > 25) ]')
    rows = {(r["id"], r["country"]): r for r in result.rows.collect()}
    assert rows[(4, "UK")][FAIL_COLUMN] == ['IsUnique "id"']
    assert rows[(3, "US")][PASS_COLUMN] == [
        'IsUnique "id"',
        '(IsComplete "name") or (ColumnValues "amount" > 25)',
    ]


# ------------------------------------------------------------------ one pass


def test_aggregate_rules_run_as_one_scan(spark, data):
    rules = [
        "RowCount > 0",
        'Completeness "name" > 0.5',
        'Mean "amount" > 1',
        'Sum "amount" > 1',
        'StandardDeviation "amount" > 1',
        'ColumnValues "amount" > 1 with threshold > 0.1',
        'ColumnLength "name" < 10 with threshold > 0.1',
        'ColumnCorrelation "id" "amount" > 0',
        'DataFreshness "ts" <= 10 days with threshold > 0.1',
        'IsComplete "id"',
    ]
    tracker = spark.sparkContext.statusTracker()

    def jobs_for(ruleset: str, group: str) -> int:
        spark.sparkContext.setJobGroup(group, "quality one-pass test")
        try:
            result = evaluate(data, ruleset, row_level=False, now=NOW)
        finally:
            spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
        assert len(result.outcomes) >= 1
        return len(tracker.getJobIdsForGroup(group))

    one = jobs_for("Rules = [ RowCount > 0 ]", "dq-one")
    many = jobs_for("Rules = [ " + ", ".join(rules) + " ]", "dq-many")
    # Ten aggregate rules cost the Spark jobs of one: a single scan (which adaptive
    # execution runs as its partial and final stages).
    assert many == one <= 2, (one, many)


# ------------------------------------------------------------------ with a job


def test_quarantine_pipeline_with_bookmarks(runner, tmp_path, spark):
    data, out = tmp_path / "in", tmp_path / "out"
    write_json(data / "a.json", [1, 2, 3], qty=5)
    write_json(data / "b.json", [4], qty=-1)
    rules = 'Rules = [ ColumnValues "qty" > 0, IsComplete "id" ]'

    def one_run():
        job = runner.start()
        df = job.read_files(str(data), format="json", ctx="orders")
        result = job.evaluate_quality(df, rules, name="orders_checks")
        good, bad = result.split()
        job.write_files(good, str(out / "good"), format="parquet", ctx="good")
        job.write_files(
            bad.withColumn(FAIL_COLUMN, F.to_json(F.col(FAIL_COLUMN))),
            str(out / "bad"),
            format="json",
            ctx="bad",
        )
        job.commit()
        return result

    first = one_run()
    assert not first.passed and [o.rule for o in first.failed()] == ['ColumnValues "qty" > 0']
    good = spark.read.parquet(str(out / "good"))
    assert sorted(r["id"] for r in good.collect()) == [1, 2, 3]
    (bad,) = spark.read.json(str(out / "bad")).collect()
    assert bad["id"] == 4 and json.loads(bad[FAIL_COLUMN]) == ['ColumnValues "qty" > 0']

    write_json(data / "c.json", [5], qty=2)
    second = one_run()
    assert second.passed  # only c.json is new
    assert sorted(r["id"] for r in spark.read.parquet(str(out / "good")).collect()) == [1, 2, 3, 5]

    stored = QualityStore(runner.store).results(runner.name)
    assert [r.passed for r in stored] == [True, False]
    assert stored[1].metrics["Column.qty.ColumnValues.Compliance"] == 0.75
    run = runner.store.list_runs(runner.name)[0]
    assert run.metrics["quality"]["orders_checks"]["passed"] is True
    assert stored[0].run_id == run.run_id


def test_glue_evaluate_data_quality(spark, tmp_path):
    from sparkmark.glue import shim

    shim.install()
    from awsglue.context import GlueContext
    from awsglue.dynamicframe import DynamicFrame
    from awsglue.transforms import SelectFromCollection
    from awsgluedq.transforms import EvaluateDataQuality

    glue = GlueContext(spark)
    frame = DynamicFrame.fromDF(spark.createDataFrame(ROWS, SCHEMA), glue, "orders")
    collection = EvaluateDataQuality().process_rows(
        frame=frame,
        ruleset='Rules = [ RowCount = 5, IsComplete "name" ]',
        publishing_options={"dataQualityEvaluationContext": "orders_dq"},
    )
    rule_outcomes = SelectFromCollection.apply(dfc=collection, key="ruleOutcomes").toDF().collect()
    assert {(r["Rule"], r["Outcome"]) for r in rule_outcomes} == {
        ("RowCount = 5", "Passed"),
        ('IsComplete "name"', "Failed"),
    }
    rows = SelectFromCollection.apply(dfc=collection, key="rowLevelOutcomes").toDF()
    assert rows.where(F.col(RESULT_COLUMN) == "Failed").count() == 1
    with pytest.raises(Exception, match="compositeRuleEvaluation.method 'ROW' is not supported"):
        EvaluateDataQuality().process_rows(
            frame=frame,
            ruleset='Rules = [ (RowCount = 5) or (IsComplete "name") ]',
            additional_options={"compositeRuleEvaluation.method": "ROW"},
        )
    applied = EvaluateDataQuality.apply(
        frame=frame,
        ruleset="Rules = [ ColumnCount = 6 ]",
        publishing_options={"dataQualityEvaluationContext": "x"},
    )
    assert [r["Outcome"] for r in applied.toDF().collect()] == ["Passed"]


def test_cli_results_check_and_anomalies_from_stored_history(runner, tmp_path, spark, monkeypatch):
    from typer.testing import CliRunner

    from sparkmark.cli.app import app

    monkeypatch.setenv("SPARKMARK_STATE_URL", f"sqlite:///{tmp_path / 'state.db'}")  # the runner's store
    data = tmp_path / "in"
    rules = 'Rules = [ RowCount > 0, DetectAnomalies "RowCount" ]'

    def one_run(n: int):
        write_json(data / f"f{n}.json", list(range(n * 10, n * 10 + (3 if n < 5 else 30))))
        job = runner.start()
        result = job.evaluate_quality(
            job.read_files(str(data), format="json", ctx="src"), rules, name="volume"
        )
        job.commit()
        return result

    for n in range(1, 5):  # four runs of 3 new rows each: the history is 3, 3, 3
        assert one_run(n).passed
    jump = one_run(5)  # 30 rows against a steady 3
    assert not jump.passed and jump.failed()[0].rule == 'DetectAnomalies "RowCount"'

    cli = CliRunner()
    listed = cli.invoke(app, ["quality", "results", runner.name, "--json"])
    assert listed.exit_code == 0, listed.output
    stored = json.loads(listed.output)
    assert len(stored) == 5 and stored[0]["Passed"] is False and stored[0]["Ruleset"] == "volume"
    assert stored[0]["Metrics"]["Dataset.*.RowCount"] == 30
    human = cli.invoke(app, ["quality", "results", runner.name])
    assert "DetectAnomalies" in human.output and "Failed" in human.output

    good = tmp_path / "good.dqdl"
    good.write_text(rules)
    assert "2 rule(s), 0 analyzer(s): OK" in cli.invoke(app, ["quality", "check", str(good)]).output
    bad = tmp_path / "bad.dqdl"
    bad.write_text('Rules = [\n  IsComplete "id" > 3\n]')
    checked = cli.invoke(app, ["quality", "check", str(bad)])
    assert checked.exit_code == 1 and "IsComplete takes no condition" in checked.output


def test_a_rule_the_data_cannot_answer_fails_alone(data):
    """Each rule has its own outcome (AWS Glue Data Quality's rule outcomes): a rule
    that cannot be evaluated on the data, such as a timestamp compared with text that
    is no timestamp, is that rule's failure, and the others are evaluated as usual."""
    rules = [
        'ColumnValues "ts" > "not a timestamp"',
        "RowCount = 5",
        'IsComplete "id"',
        'Completeness "name" > 0.5',
    ]
    result = evaluate(data, "Rules = [\n" + ",\n".join(rules) + "\n]", now=NOW)
    found = {o.rule: o for o in result.outcomes}
    broken = found['ColumnValues "ts" > "not a timestamp"']
    assert broken.outcome == "Failed" and "could not be evaluated on this data" in broken.failure_reason
    assert [found[r].outcome for r in rules[1:]] == ["Passed", "Passed", "Passed"]
    assert result.rows is not None and result.rows.count() == 5  # row-level outcomes still come


def test_custom_sql_selecting_the_rows_that_pass(data):
    """CustomSql without a condition: the statement selects the rows that pass, and
    the rule holds when every row does, or as many as the threshold asks."""
    found = outcomes(
        data,
        [
            'CustomSql "select id from primary where amount > 15" with threshold >= 0.6',
            'CustomSql "select id from primary where amount > 15" with threshold > 0.7',
            'CustomSql "select id from primary where id > 0"',
            'CustomSql "select id from primary where id > 1"',
        ],
    )
    assert found['CustomSql "select id from primary where amount > 15" with threshold >= 0.6'][0] == "Passed"
    assert found['CustomSql "select id from primary where amount > 15" with threshold > 0.7'][0] == "Failed"
    assert found['CustomSql "select id from primary where id > 0"'][0] == "Passed"
    assert found['CustomSql "select id from primary where id > 1"'][0] == "Failed"


def test_custom_sql_rows_form_marks_each_row_it_returned(data, spark):
    """AWS's CustomSql page: in Glue ETL the rows the statement returns are successful and
    the others failed, found by joining its result back to the dataset on the columns it
    selects (a key); a statement selecting no column of the dataset, or columns that are
    not the dataset's, fails the rule with the reason."""
    rule = 'CustomSql "select id from primary where amount > 15"'
    result = evaluate(data, f"Rules = [ {rule} ]", now=NOW)
    assert result.rows is not None
    marked = {
        r["id"]: (r["DataQualityEvaluationResult"], list(r["DataQualityRulesPass"]))
        for r in result.rows.collect()
    }
    expected_pass = {r["id"] for r in data.where("amount > 15").collect()}
    assert expected_pass and len(expected_pass) < len(marked)
    for row_id, (verdict, passed) in marked.items():
        if row_id in expected_pass:
            assert (verdict, passed) == ("Passed", [rule])
        else:
            assert (verdict, passed) == ("Failed", [])
    assert result.rows.columns == [*data.columns, "DataQualityRulesPass", "DataQualityRulesFail",
                                   "DataQualityRulesSkip", "DataQualityEvaluationResult"]  # fmt: skip
    assert result.rows.count() == data.count()

    found = outcomes(
        data,
        [
            'CustomSql "select count(*) as n from primary"',
            'CustomSql "select id, amount * 2 as doubled from primary"',
        ],
    )
    aggregate = found['CustomSql "select count(*) as n from primary"']
    assert aggregate[0] == "Failed" and "at least one column of the dataset" in aggregate[2]
    foreign = found['CustomSql "select id, amount * 2 as doubled from primary"']
    assert foreign[0] == "Failed" and "not found: doubled" in foreign[2]


def test_rules_that_share_an_aggregate_each_get_their_own_metric(spark):
    """Every rule's row count is the same expression, computed once for all of them;
    each rule still reads its own figures. Completeness is the fraction of rows where
    the column is not null (AWS's DQDL reference)."""
    df = spark.createDataFrame([(1, None), (None, None), (3, "x"), (4, "y")], "a int, b string")
    found = outcomes(
        df,
        [
            "RowCount = 4",
            'Completeness "a" >= 0.75',
            'Completeness "b" = 0.5',
            'IsComplete "a"',
            'ColumnValues "a" > 2',
        ],
    )
    assert found["RowCount = 4"][0] == "Passed" and metric(found, "RowCount = 4") == 4
    assert found['Completeness "a" >= 0.75'][0] == "Passed"
    assert metric(found, 'Completeness "a" >= 0.75') == pytest.approx(0.75)
    assert found['Completeness "b" = 0.5'][0] == "Passed"
    assert metric(found, 'Completeness "b" = 0.5') == pytest.approx(0.5)
    assert found['IsComplete "a"'][0] == "Failed"
    # 3 and 4 of the four rows: a null is not > 2.
    assert found['ColumnValues "a" > 2'][0] == "Failed"
    assert metric(found, 'ColumnValues "a" > 2') == pytest.approx(0.5)
