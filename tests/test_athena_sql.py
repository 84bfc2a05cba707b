"""Athena's SQL as the Athena API reads it, and results as Athena writes them, with no
Spark: what kind of statement each is, its Spark SQL where Trino's and Spark's differ,
the one-line refusals, and the text, types and CSV of results."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkmark.athena import dialect, results
from sparkmark.athena.dialect import AthenaSqlError, plan, translate


@pytest.mark.parametrize(
    ("trino", "spark_has"),
    [
        # Trino's regexp_extract takes the whole match (group 0) by default, Spark's group 1
        ("SELECT regexp_extract(s, '\\d+') FROM t", "REGEXP_EXTRACT(s, '\\\\d+', 0)"),
        # Trino sorts nulls last in an ascending order, Spark first
        ("SELECT x FROM t ORDER BY x", "ORDER BY x NULLS LAST"),
        ("SELECT date_format(ts, '%Y-%m-%d %H:%i:%s') FROM t", "DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss')"),
        ("SELECT n FROM t CROSS JOIN UNNEST(xs) AS u(n)", "EXPLODE(xs)"),
        ("SELECT approx_distinct(x) FROM t", "APPROX_COUNT_DISTINCT(x)"),
        ('SELECT "year" FROM "db"."tbl"', "SELECT `year` FROM `db`.`tbl`"),
        ("SELECT cardinality(xs) FROM t", "SIZE(xs)"),
        ("SELECT day_of_week(d) FROM t", "DAYOFWEEK(d)"),
    ],
)
def test_trino_constructs_get_their_spark_counterparts(trino, spark_has):
    assert spark_has in translate(trino)


def test_statements_are_planned_by_kind_with_athenas_statement_type():
    assert plan("SELECT 1").statement_type == dialect.DML
    assert plan("  -- a comment\n(SELECT 1)").kind == "query"
    assert plan("WITH a AS (SELECT 1 AS x) SELECT x FROM a").kind == "query"
    shown = plan("SHOW TABLES")
    assert (shown.kind, shown.show, shown.statement_type) == ("show", "tables", dialect.UTILITY)
    assert plan("DESCRIBE t").show == "describe"
    external = plan("CREATE EXTERNAL TABLE db.t (a int) LOCATION 's3://b/t/'", database="other")
    assert (external.kind, external.created) == ("ddl", ("db", "t"))
    repair = plan("MSCK REPAIR TABLE visits", database="crawled")
    assert repair.partitions == ("crawled", "visits")
    assert plan("ALTER TABLE t SET TBLPROPERTIES ('a'='b')").partitions is None
    assert plan("ALTER TABLE t ADD PARTITION (p='1')", database="d").partitions == ("d", "t")
    insert = plan("INSERT INTO t SELECT 1", database="d")
    assert (insert.kind, insert.write.table if insert.write else None) == ("insert", ("d", "t"))
    view = plan("CREATE OR REPLACE VIEW v AS SELECT cardinality(xs) AS n FROM t")
    assert view.sql == "CREATE OR REPLACE VIEW v AS SELECT SIZE(xs) AS n FROM t"


def test_ctas_properties_become_the_write():
    found = plan(
        "CREATE TABLE \"db\".\"t\" WITH (format = 'PARQUET', external_location = 's3://b/t', "
        "partitioned_by = ARRAY['region'], write_compression = 'SNAPPY') AS SELECT a, region FROM s",
        database="other",
        ctas_location="s3://results/tables/q1",
    )
    assert found.kind == "ctas" and found.statement_type == dialect.DDL
    assert found.write == dialect.Write(
        location="s3://b/t",
        format="parquet",
        partitioned_by=("region",),
        compression="snappy",
        table=("db", "t"),
    )
    default = plan("CREATE TABLE t AS SELECT 1 AS x", database="d", ctas_location="s3://results/tables/q1")
    assert default.write is not None and default.write.location == "s3://results/tables/q1"
    assert default.write.format == "parquet"  # Athena's CTAS default
    nodata = plan("CREATE TABLE t WITH (format = 'ORC') AS SELECT 1 AS x WITH NO DATA", ctas_location="/r")
    assert nodata.write is not None and (nodata.write.format, nodata.write.with_data) == ("orc", False)


def test_unload_writes_the_query_to_its_location():
    found = plan("UNLOAD (SELECT a FROM t) TO 's3://b/out/' WITH (format = 'PARQUET')")
    assert found.kind == "unload" and found.sql == "SELECT a FROM t"
    assert found.write is not None and (found.write.location, found.write.format) == (
        "s3://b/out/",
        "parquet",
    )


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("SELECT FROM WHERE", "SYNTAX_ERROR: line 1:17:"),
        ("", "SYNTAX_ERROR: the query is empty"),
        ("SELECT 1; SELECT 2", "NOT_SUPPORTED: a query holds one statement"),
        ("MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN DELETE", "NOT_SUPPORTED: MERGE"),
        ("DELETE FROM t WHERE a = 1", "NOT_SUPPORTED: DELETE"),
        ("SELECT array_agg(x ORDER BY x) FROM t", "NOT_SUPPORTED: array_agg"),
        (
            "CREATE TABLE t WITH (table_type = 'ICEBERG') AS SELECT 1 AS x",
            "NOT_SUPPORTED: CTAS with table_type",
        ),
        ("CREATE TABLE t WITH (format = 'XML') AS SELECT 1 AS x", "NOT_SUPPORTED: format 'XML'"),
        (
            "CREATE TABLE t WITH (bucketed_by = ARRAY['a'], bucket_count = 2) AS SELECT 1 AS a",
            "NOT_SUPPORTED: bucketed_by",
        ),
        ("GRANT SELECT ON t TO u", "NOT_SUPPORTED: statements beginning GRANT"),
        ("SELECT ? FROM t", "INVALID_PARAMETER: the query has 1 parameter(s)"),
    ],
)
def test_what_cannot_run_is_refused_in_one_line_naming_it(sql, reason):
    with pytest.raises(AthenaSqlError) as found:
        plan(sql, ctas_location="s3://r/tables/q")
    assert str(found.value).startswith(reason)
    assert "\n" not in str(found.value)


def test_execution_parameters_take_the_places_of_the_question_marks_in_order():
    assert translate("SELECT a FROM t WHERE b = ? AND c > ?", ["'x'", "3"]) == (
        "SELECT a FROM t WHERE b = 'x' AND c > 3"
    )
    assert translate("SELECT ?, ?, ?", ["DATE '2024-01-02'", "-1.5", "NULL"]) == (
        "SELECT CAST('2024-01-02' AS DATE), -1.5, NULL"
    )
    for injected in ("'x' AND 1=1 --", "(SELECT 1)", "a"):
        with pytest.raises(AthenaSqlError, match="INVALID_PARAMETER: .* is not a SQL literal"):
            translate("SELECT ?", [injected])


@pytest.mark.parametrize(
    ("simple", "expected"),
    [
        ("string", ("varchar", 2147483647, 0)),
        ("int", ("integer", 10, 0)),
        ("bigint", ("bigint", 19, 0)),
        ("double", ("double", 17, 0)),
        ("float", ("float", 7, 0)),
        ("decimal(12,2)", ("decimal", 12, 2)),
        ("array<int>", ("array", 0, 0)),
        ("map<string,int>", ("map", 0, 0)),
        ("struct<a:int,b:string>", ("row", 0, 0)),
        ("timestamp", ("timestamp", 3, 0)),
        ("date", ("date", 0, 0)),
        ("boolean", ("boolean", 0, 0)),
        ("binary", ("varbinary", 1073741824, 0)),
    ],
)
def test_spark_types_have_athenas_names(simple, expected):
    assert results.athena_type(simple) == expected


def test_values_are_written_as_athena_writes_them():
    from pyspark.sql import Row

    assert results.text(None) is None
    assert results.text(True) == "true"
    assert results.text(1.5) == "1.5"
    assert results.text(3.0) == "3.0"
    assert results.text(1e10) == "1.0E10"
    assert results.text(-2.5e-5) == "-2.5E-5"
    assert results.text(12345678.9) == "1.23456789E7"
    assert results.text(Decimal("12.50")) == "12.50"
    assert results.text(date(2024, 1, 2)) == "2024-01-02"
    assert results.text(datetime(2024, 1, 2, 3, 4, 5, 678900)) == "2024-01-02 03:04:05.678"
    assert results.text([1, None, 3]) == "[1, null, 3]"
    assert results.text({"a": 1}) == "{a=1}"
    assert results.text(Row(x=1, y="a")) == "{x=1, y=a}"
    assert results.text(b"hi") == "68 69"


@given(st.lists(st.one_of(st.none(), st.text(alphabet=st.characters(blacklist_characters="\r\n\x00")))))
def test_a_csv_line_reads_back_with_nulls_and_empty_strings_apart(values):
    line = results.csv_line(values)
    if not values:
        assert line == "\n"
        return
    assert list(results.read_csv([line])) == [values]


def test_iceberg_tables_resolve_through_the_engines_iceberg_catalog_and_take_dml():
    names = dialect.Names("ice", lambda db, t: (db, t) == ("ice", "orders"), "athena_iceberg")
    query = plan(
        "WITH orders AS (SELECT 1 AS id) SELECT * FROM orders JOIN crawled.s ON 1 = 1", "ice", names=names
    )
    assert "athena_iceberg" not in query.sql  # a CTE of the same name is not the table
    assert plan("SELECT * FROM orders", "ice", names=names).sql == "SELECT * FROM athena_iceberg.ice.orders"
    merge = plan(
        "MERGE INTO orders t USING (VALUES (1, 'x')) AS s(id, status) ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET status = s.status",
        "ice",
        names=names,
    )
    assert merge.statement_type == dialect.DML
    assert merge.sql.startswith(
        "MERGE INTO athena_iceberg.ice.orders AS t USING (SELECT * FROM VALUES (1, 'x') AS s(id, status)) AS s"
    )
    optimize = plan("OPTIMIZE orders REWRITE DATA USING BIN_PACK WHERE id > 2", "ice", names=names)
    assert optimize.sql == (
        "CALL athena_iceberg.system.rewrite_data_files(table => 'ice.orders', where => 'id > 2', "
        "options => map('min-input-files', '2'))"
    )
    assert plan("VACUUM orders", "ice", names=names).sql == (
        "CALL athena_iceberg.system.expire_snapshots(table => 'ice.orders')"
    )
    with pytest.raises(AthenaSqlError, match=r"^NOT_SUPPORTED: DELETE on ice\.hive_t: Athena changes rows"):
        plan("DELETE FROM hive_t WHERE a = 1", "ice", names=names)
    without = dialect.Names("ice", lambda db, t: True, None)
    with pytest.raises(
        AthenaSqlError, match="NOT_SUPPORTED: Iceberg table ice.orders: the Athena engine reads"
    ):
        plan("SELECT * FROM orders", "ice", names=without)
    with pytest.raises(AthenaSqlError, match="^SYNTAX_ERROR: OPTIMIZE table REWRITE DATA"):
        plan("OPTIMIZE orders", "ice", names=names)
