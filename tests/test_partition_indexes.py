"""Glue's partition indexes (CreatePartitionIndex): GetPartitions gives the same
partitions with an index as without, for any expression; an expression over an index's
keys reads the index's entries, not every partition. A real SQLite state store."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import event

from sparkmark.catalog.models import Column, Partition, Table
from sparkmark.catalog.partition_index import check_index, matching_partitions
from sparkmark.catalog.store import CatalogStore
from sparkmark.engine.store import StateStore
from sparkmark.errors import AlreadyExists, NotFound, SparkmarkError

KEYS = (Column("year", "int"), Column("region", "string"), Column("day", "string"))
YEARS, REGIONS, DAYS = range(2020, 2026), ("eu", "us", "ap"), ("01", "15")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    state = StateStore(f"sqlite:///{tmp_path_factory.mktemp('state') / 'state.db'}")
    catalog = CatalogStore(state)
    table = Table("lake", "events", "/data/events", "parquet", (Column("v", "bigint"),), KEYS)
    catalog.put_table(table)
    half = [Partition((str(y), r, d), f"/data/{y}/{r}/{d}") for y in YEARS for r in REGIONS for d in DAYS]
    catalog.put_partitions("lake", "events", half[: len(half) // 2])
    catalog.create_partition_index("lake", "events", "by_year_region", ["year", "region"])  # backfilled
    catalog.put_partitions("lake", "events", half[len(half) // 2 :])  # kept up to date
    return catalog, table


EXPRESSIONS = st.sampled_from(
    [
        "year = {y}",
        "year >= {y} AND region = '{r}'",
        "region IN ('{r}', 'ap') AND year < {y}",
        "year BETWEEN {y} AND 2024 OR region = '{r}'",
        "day = '15' AND year = {y}",  # a key the index does not hold: every partition is read
        "NOT (region = '{r}')",
    ]
)


@settings(max_examples=60, deadline=None)
@given(EXPRESSIONS, st.sampled_from(list(YEARS)), st.sampled_from(REGIONS))
def test_an_index_gives_the_same_partitions_as_a_full_read(store, template, year, region):
    catalog, table = store
    expression = template.format(y=year, r=region)
    unindexed = Table(table.database, table.name, table.location, table.classification, table.columns, KEYS)
    from sparkmark.catalog.expression import select_partitions

    everything = select_partitions(KEYS, catalog.partitions("lake", "events"), expression)
    assert matching_partitions(catalog, unindexed, expression) == everything


def test_an_expression_over_the_indexed_keys_reads_the_index_not_every_partition(store):
    catalog, table = store
    statements: list[str] = []

    def seen(_conn, _cursor, statement, *_args):
        statements.append(statement)

    event.listen(catalog.state.engine, "before_cursor_execute", seen)
    try:
        found = matching_partitions(catalog, table, "year = 2024 AND region = 'eu'")
        assert [p.values for p in found] == [("2024", "eu", "01"), ("2024", "eu", "15")]
        assert any("sm_catalog_partition_index_entries" in s for s in statements)
        full_reads = [s for s in statements if "FROM sm_catalog_partitions" in s and "JOIN" not in s]
        assert full_reads == []
        statements.clear()
        matching_partitions(catalog, table, "day = '01'")  # not the index's: a full read
        assert any("FROM sm_catalog_partitions" in s and "JOIN" not in s for s in statements)
    finally:
        event.remove(catalog.state.engine, "before_cursor_execute", seen)


def test_indexes_follow_deletes_and_are_checked_as_glue_checks_them(store):
    catalog, table = store
    catalog.drop_partitions("lake", "events", [Partition(("2021", "us", "01"), "")])
    assert matching_partitions(catalog, table, "year = 2021 AND region = 'us'") == [
        Partition(("2021", "us", "15"), "/data/2021/us/15")
    ]
    with pytest.raises(AlreadyExists):
        catalog.create_partition_index("lake", "events", "by_year_region", ["year"])
    with pytest.raises(SparkmarkError, match="'month' is not a partition key"):
        check_index(table, ["month"], {})
    with pytest.raises(SparkmarkError, match="3 partition indexes"):
        check_index(table, ["day"], {"a": ["year"], "b": ["region"], "c": ["day"]})
    catalog.create_partition_index("lake", "events", "by_day", ["day"])
    assert catalog.partition_indexes("lake", "events") == {
        "by_year_region": ["year", "region"],
        "by_day": ["day"],
    }
    catalog.drop_partition_index("lake", "events", "by_day")
    with pytest.raises(NotFound):
        catalog.drop_partition_index("lake", "events", "by_day")


def test_new_partition_keys_drop_the_indexes_that_no_longer_fit(tmp_path):
    """An index's entries hold values of the keys it was made over: a table whose
    partition keys change loses its indexes rather than answering from stale entries."""
    catalog = CatalogStore(StateStore(f"sqlite:///{tmp_path / 'state.db'}"))
    table = Table("lake", "t", "/d", "parquet", (Column("v", "bigint"),), KEYS[:2])
    catalog.put_table(table)
    catalog.put_partitions(
        "lake", "t", [Partition(("2025", "eu"), "/d/a"), Partition(("2026", "us"), "/d/b")]
    )
    catalog.create_partition_index("lake", "t", "by_year", ["year"])
    catalog.put_table(table)  # the same keys: the index stays
    assert catalog.partition_indexes("lake", "t") == {"by_year": ["year"]}
    swapped = Table("lake", "t", "/d", "parquet", (Column("v", "bigint"),), (KEYS[1], KEYS[0]))
    catalog.put_table(swapped)
    assert catalog.partition_indexes("lake", "t") == {}
    assert [
        p.values for p in matching_partitions(catalog, swapped, "year = 2026")
    ] == []  # values are by the old order
