"""DQDL's dynamic rules, read and worked out without Spark, as AWS's DQDL reference
describes them ("Dynamic rules"): ``last(k)`` is the k most recent earlier values, the
one value 0.0 when there are none and all of them when there are fewer than k; a list
must be reduced (avg, median, max, min, sum, std, index) before it is compared, so
``RowCount > last(5)`` is an error; ``index(last(3), 0)`` is the most recent value and
``index(last(3), 3)`` an error. The sample expressions are the reference's own."""

from __future__ import annotations

import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkmark.quality.dynamic import Dynamic, DynamicError, evaluate
from sparkmark.quality.ruleset import DQDLError, is_dynamic, parse_ruleset, settle


def operands(rule: str):
    parsed = parse_ruleset(f"Rules = [ {rule} ]").rules[0]
    return parsed, [o for c in (parsed.condition, parsed.threshold) if c for o in c.operands]


def worked_out(rule: str, earlier: list[float]) -> list[float]:
    _parsed, found = operands(rule)
    return [evaluate(o.expr, earlier) for o in found if isinstance(o, Dynamic)]


# the reference's sample dynamic rules, each read as a rule whose condition needs history
REFERENCE_SAMPLES = [
    "RowCount > avg(last(10)) *0.8",
    "RowCount > last()",
    "RowCount > avg(last(5))",
    'Uniqueness "colA" between min(last(10)) and max(last(10))',
    'Uniqueness "colA" >= avg(last(10))',
    'ColumnCorrelation "colA" "colB" < avg(last(10))',
    'DistinctValuesCount "colA" between min(last(10))-1 and max(last(10))+1',
    'Completeness "col_1" between (0.9 * avg(last(10))) and (1.1 * avg(last(10)))',
    "ColumnCount = avg(std(last(10)))",
    "RowCount > index(last(3), 0)",
]


@pytest.mark.parametrize("rule", REFERENCE_SAMPLES)
def test_the_references_dynamic_rules_are_read(rule):
    parsed, found = operands(rule)
    assert is_dynamic(parsed) and any(isinstance(o, Dynamic) for o in found)


def test_last_with_no_history_is_zero_and_with_fewer_than_k_is_all_there_is():
    assert worked_out("RowCount > avg(last(10)) * 0.8", []) == [0.0]
    assert worked_out("RowCount > last()", []) == [0.0]
    assert worked_out("RowCount > avg(last(10))", [4, 8]) == [6.0]  # both, not ten
    assert worked_out("RowCount > sum(last(2))", [1, 2, 3, 4]) == [7.0]  # the newest two
    assert worked_out("RowCount > last()", [1, 2, 3]) == [3.0]  # the most recent
    assert worked_out("RowCount > last(1)", [1, 2, 3]) == [3.0]


def test_index_counts_from_the_most_recent():
    assert worked_out("RowCount > index(last(3), 0)", [10, 20, 30, 40]) == [40.0]
    assert worked_out("RowCount > index(last(3), 2)", [10, 20, 30, 40]) == [20.0]
    _parsed, (found,) = operands("RowCount > index(last(3), 3)")
    with pytest.raises(DynamicError, match="there are 3 earlier value"):
        evaluate(found.expr, [10, 20, 30, 40])
    with pytest.raises(DynamicError, match="there are 1 earlier value"):  # no history: [0.0]
        evaluate(operands("RowCount > index(last(3), 2)")[1][0].expr, [])


def test_each_aggregate():
    earlier = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert worked_out("RowCount > median(last(5))", earlier) == [3.0]
    assert worked_out("RowCount > max(last(5))", earlier) == [5.0]
    assert worked_out("RowCount > min(last(5))", earlier) == [1.0]
    assert worked_out("RowCount > std(last(5))", earlier) == [pytest.approx(statistics.pstdev(earlier))]
    assert worked_out("RowCount > abs(0 - max(last(5)))", earlier) == [5.0]
    assert worked_out("RowCount > std(last(5))", [7.0]) == [0.0]


def test_arithmetic_is_read_left_to_right_as_awss_grammar_reads_it():
    # one precedence for + - * / (AWS's "number numberOp number"): 1 + 2 * 3 is (1 + 2) * 3
    assert parse_ruleset("Rules = [ RowCount = 1 + 2 * 3 ]").rules[0].condition.operands == (9.0,)
    assert parse_ruleset("Rules = [ RowCount = 1 + (2 * 3) ]").rules[0].condition.operands == (7.0,)
    # AWS's own parser test: 8.0 * (5.0 - (1.0 + (4.0 / 2.0))) is 16
    assert parse_ruleset("Rules = [ RowCount = 8.0 * (5.0 - (1.0 + (4.0 / 2.0))) ]").rules[
        0
    ].condition.operands == (16.0,)
    assert worked_out("RowCount > min(last(10))-1", [3, 9]) == [2.0]  # "-1" after ")" subtracts
    assert worked_out("RowCount > avg(last(2)) - 1 * 2", [3, 9]) == [10.0]


@pytest.mark.parametrize(
    "rule, said",
    [
        ("RowCount > last(5)", "last(5) is a list of earlier values; reduce it"),
        ("RowCount > average(last(3))", "unknown function average()"),
        ("RowCount > percentile(last(3))", "unknown function percentile()"),
        ("RowCount > last(0)", "last's count must be a whole number of at least 1"),
        ("RowCount > last(2.5)", "last's count must be a whole number"),
        ("RowCount > index(last(3))", "index takes last(k) and a position"),
        ("RowCount > index(last(3), -1)", "index's position must be a whole number of at least 0"),
        ("RowCount > abs(last(3))", "reduce it to a number"),
        ("RowCount > avg()", "avg needs an argument"),
        ("RowCount > 1 / 0", "division by zero"),
        ('ColumnValues "a" > avg(last(3))', "ColumnValues compares each row's value, which has no history"),
        ('ColumnLength "a" < max(last(3))', "ColumnLength compares each row's value"),
    ],
)
def test_what_cannot_be_worked_out_is_refused_when_the_ruleset_is_read(rule, said):
    with pytest.raises(DQDLError, match=said.replace("(", r"\(").replace(")", r"\)")):
        parse_ruleset(f"Rules = [ {rule} ]")


def test_a_threshold_may_be_dynamic_and_settles_to_numbers():
    parsed = parse_ruleset('Rules = [ ColumnValues "a" > 0 with threshold >= avg(last(2)) - 0.1 ]').rules[0]
    settled, shown = settle(parsed, [0.5, 0.9, 0.7])
    assert settled.threshold.operands == (pytest.approx(0.7),) and settled.condition == parsed.condition
    assert shown == "avg(last(2)) - 0.1 = 0.7 from 3 earlier value(s)"
    assert not is_dynamic(settled)


@given(st.lists(st.floats(-1e6, 1e6), max_size=30), st.integers(1, 40))
def test_last_k_aggregates_agree_with_the_newest_k_values(history, k):
    newest = list(reversed(history))[:k] or [0.0]
    for name, expected in (
        ("avg", statistics.fmean(newest)),
        ("max", max(newest)),
        ("min", min(newest)),
        ("sum", sum(newest)),
        ("median", statistics.median(newest)),
    ):
        (got,) = worked_out(f"RowCount > {name}(last({k}))", history)
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-6), name
