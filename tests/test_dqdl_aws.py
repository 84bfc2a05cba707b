"""DQDL as AWS's own parser reads it (awslabs/dqdl: its grammar, rules-config.json and
parser tests): every ruleset it refuses is refused here, with one clear error; the
forms it accepts that real rulesets use (variables written ``name = "…"``, labels
written ``["key" = "value"]``, a label on a parenthesised rule, ``$name`` as a
parameter, ``Completeness of "col"``, CustomSql without a condition, a regular
expression with ``\\d``) are read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparkmark.quality.ruleset import DQDLError, parse_ruleset

INVALID = json.loads(
    (Path(__file__).parent / "fixtures" / "dqdl" / "aws_invalid.json").read_text(encoding="utf-8")
)


@pytest.mark.parametrize("ruleset", INVALID["rulesets"], ids=range(len(INVALID["rulesets"])))
def test_a_ruleset_aws_refuses_is_refused_in_one_line(ruleset):
    with pytest.raises(DQDLError) as refused:
        parse_ruleset(ruleset)
    first = str(refused.value).splitlines()[0]
    assert first and "Traceback" not in first


def test_only_dqdls_two_escapes_are_escapes():
    """DQDL's quoted strings escape only \\" and \\\\: a regular expression keeps its \\d."""
    parsed = parse_ruleset(
        'Rules = [ ColumnValues "phone" matches "\\d{3}-\\d{4}", ColumnValues "q" = "say \\"hi\\"" ]'
    )
    assert [r.condition.operands for r in parsed.rules] == [("\\d{3}-\\d{4}",), ('say "hi"',)]


def test_variables_as_aws_writes_them():
    parsed = parse_ruleset(
        'allowed_statuses = ["Active", "Pending"]\nsql = "select id from primary where amount > 10"\n'
        'Rules = [ ColumnValues "status" in $allowed_statuses, CustomSql $sql with threshold > 0.5 ]'
    )
    first, second = parsed.rules
    assert first.condition.operands == ("Active", "Pending")
    assert second.params == ("select id from primary where amount > 10",)
    with pytest.raises(DQDLError, match="holds a quoted string or a list of them"):
        parse_ruleset("min_count = 100\nRules = [ RowCount > $min_count ]")
    with pytest.raises(DQDLError, match=r"variable \$a is declared twice"):
        parse_ruleset('a = "x"\na = "y"\nRules = [ ColumnValues "c" = $a ]')


def test_labels_in_aws_form_on_rules_and_parenthesised_rules():
    parsed = parse_ruleset(
        'Rules = [ IsComplete "a" labels = ["team" = "billing", "tier" = "1"],\n'
        '  (IsComplete "b" AND IsUnique "b") labels = ["rule_id" = "123"] ]'
    )
    single, grouped = parsed.rules
    assert single.labels == {"team": "billing", "tier": "1"}
    assert grouped.labels == {"rule_id": "123"} and grouped.op == "and"


def test_forms_aws_accepts():
    assert (
        parse_ruleset('Rules = [ CustomSql "select id from primary where age < 100" ]').rules[0].condition
        is None
    )
    only_analyzers = parse_ruleset('Rules = [] Analyzers = [ RowCount, Completeness of "col-A" ]')
    assert only_analyzers.rules == () and [a.params for a in only_analyzers.analyzers] == [(), ("col-A",)]
    ordered = parse_ruleset(
        'Metadata = { "Version": "1.0" } DataSources = { "Primary": "orders" } Rules = [ RowCount > 0 ]'
    )
    assert ordered.metadata == {"Version": "1.0"} and ordered.sources == {"Primary": "orders"}


@pytest.mark.parametrize(
    ("ruleset", "message"),
    [
        ('Rules = [ RowCount > 0 ] Metadata = { "Version": "1.0" }', "Metadata comes after Rules"),
        (
            'Rules = [ IsComplete "a" with threshold > 0.5 with threshold > 0.6 ]',
            "takes 'with threshold' once",
        ),
        ('Rules = [ RowCountMatch "ref" > 0.9 where "id > 1" ]', "RowCountMatch does not take 'where'"),
        ('Rules = [ ColumnValues "a" in [1, "2"] ]', "mixes numbers and text"),
        ('Rules = [ DataFreshness "ts" <= 3 ]', "DataFreshness compares with a duration"),
        ("Rules = [ RowCount > 0, ]", "DQDL syntax error"),
    ],
)
def test_each_shape_mistake_is_named(ruleset, message):
    with pytest.raises(DQDLError, match=message):
        parse_ruleset(ruleset)
