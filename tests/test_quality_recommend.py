"""The rules a recommendation run proposes from a table's profile, without Spark: each
proposal is one the profiled data meets, and none is made that it would not."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sparkmark.quality.recommend import ColumnProfile, Profile, profile_of, rules_for, ruleset_for
from sparkmark.quality.ruleset import parse_ruleset


def test_each_kind_of_column_gets_its_rules():
    profile = Profile(
        10,
        (
            ColumnProfile("id", "bigint", 10, 10, minimum=1),
            ColumnProfile("delta", "double", 10, 7, minimum=-3.5),
            ColumnProfile("status", "string", 10, 2, longest=7, values=("open", "shipped")),
            ColumnProfile("note", "string", 6, 6, longest=40),
            ColumnProfile("rare", "string", 2, 2, longest=3),
            ColumnProfile('say "hi"', "string", 10, 1, longest=2, values=("hi",)),
        ),
    )
    assert rules_for(profile) == [
        "RowCount between 7 and 13",
        'IsComplete "id"',
        'IsUnique "id"',
        'ColumnValues "id" >= 0',
        'IsComplete "delta"',  # a negative value: no ">= 0"
        'IsComplete "status"',
        'ColumnValues "status" in ["open", "shipped"]',
        'ColumnLength "status" <= 7',
        'Completeness "note" >= 0.60',  # six of ten: not unique, not a category
        'ColumnLength "note" <= 40',
        'ColumnLength "rare" <= 3',  # two of ten: no completeness rule
        'IsComplete "say \\"hi\\""',
        'ColumnValues "say \\"hi\\"" in ["hi"]',
        'ColumnLength "say \\"hi\\"" <= 2',
    ]
    parsed = parse_ruleset(ruleset_for(profile))  # a document the DQDL parser reads
    assert len(parsed.rules) == 14 and parsed.leaves()[11].params == ('say "hi"',)


def test_a_category_with_nulls_lists_null_and_an_empty_table_proposes_nothing_of_its_columns():
    with_nulls = Profile(8, (ColumnProfile("c", "string", 6, 2, longest=1, values=("a", "b")),))
    assert 'ColumnValues "c" in ["a", "b", NULL]' in rules_for(with_nulls)
    assert rules_for(Profile(0, (ColumnProfile("c", "string", 0, 0),))) == []


def test_a_profile_from_sparks_plain_values():
    got = profile_of(3, [{"name": "a", "type": "int", "present": 3, "distinct": 3, "minimum": 0}])
    assert got == Profile(3, (ColumnProfile("a", "int", 3, 3, 0.0, None, ()),))


@given(st.integers(1, 10**9))
def test_the_row_count_bounds_hold_the_profiled_count(n):
    (rule,) = rules_for(Profile(n))
    low, high = (float(x) for x in rule.removeprefix("RowCount between ").split(" and "))
    assert low < n < high  # between is exclusive
