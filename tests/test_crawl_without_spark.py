"""A crawl that needs no JVM: schemas typed by pyarrow exactly as Spark's readers type
them (checked against real Spark on the same files), metastore changes deferred to the
next Spark session, and a whole `sparkmark crawler run` that cannot start Spark."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkmark.catalog.hive import HiveCatalog, sync_metastore
from sparkmark.catalog.models import Column, Table
from sparkmark.catalog.store import CatalogStore
from sparkmark.crawler.arrow_schema import infer_columns
from sparkmark.crawler.crawl import _glue_type, _read_schema, json_field_order
from sparkmark.engine.store import StateStore
from sparkmark.settings import Settings

SPARKMARK = Path(sys.executable).with_name("sparkmark")


def lines(path: Path, *records: object) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return f"file://{path}"


def spark_columns(spark, kind: str, urls: list[str]) -> list[tuple[str, str]]:
    """What the crawl's Spark path makes of the same files: Spark's types, and for JSON
    the records' order of the fields (Spark's reader sorts them; the crawl puts them back)."""
    schema = _read_schema(spark, kind, urls, {})
    if kind == "json":
        order = json_field_order(urls)
        fields = sorted(schema.fields, key=lambda f: order.get(f.name, len(order)))
        return [(f.name, _glue_type(f.dataType)) for f in fields]
    return [(f.name, f.dataType.simpleString()) for f in schema.fields]


JSON_SAMPLES = {
    "flat": [
        [
            {"id": 1, "amount": 2.5, "name": "a", "ok": True},
            {"id": 2, "amount": 3.0, "name": None, "ok": False},
        ]
    ],
    "nested, unsorted fields": [
        [{"z": 1, "a": {"y": "x", "b": [1, 2]}, "m": [{"k": 1.5}]}, {"z": 2, "a": {"y": "w", "b": []}}]
    ],
    "timestamps stay strings, nulls are strings": [
        [{"at": "2026-11-01T10:00:00", "day": "2026-11-01", "nothing": None}]
    ],
    "long in one file, double in another": [[{"id": 1, "v": 1}], [{"id": 2, "v": 1.5}]],
    "a field only in the second file": [[{"id": 1}], [{"id": 2, "extra": "x"}]],
}


@pytest.mark.parametrize("case", sorted(JSON_SAMPLES))
def test_json_types_are_sparks(spark, tmp_path, case):
    urls = [lines(tmp_path / f"f{i}.json", *records) for i, records in enumerate(JSON_SAMPLES[case])]
    ours = infer_columns("json", urls)
    assert ours is not None, "pyarrow should type this sample"
    assert ours == spark_columns(spark, "json", urls)


@pytest.mark.parametrize(
    "files",
    [
        [[{"v": 1}, {"v": "one"}]],  # a field of two types within a file: Spark widens to string
        [[{"v": 1}], [{"v": "one"}]],  # ... or across files
        [[{"v": {}}]],  # an empty object: Spark drops the field
        [[{"v": 1}, [1, 2]]],  # a line that is not an object
    ],
    ids=["two types in a file", "two types across files", "empty object", "not an object"],
)
def test_json_that_only_spark_can_type_is_left_to_it(tmp_path, files):
    urls = [lines(tmp_path / f"f{i}.json", *records) for i, records in enumerate(files)]
    assert infer_columns("json", urls) is None


def test_bad_json_is_left_to_spark(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"id": 1}\n{"id": \n')
    assert infer_columns("json", [f"file://{bad}"]) is None


def test_flat_parquet_types_are_sparks(spark, tmp_path):
    from datetime import UTC, date, datetime
    from decimal import Decimal

    table = pa.table(
        {
            "i8": pa.array([1], pa.int8()),
            "i16": pa.array([1], pa.int16()),
            "i32": pa.array([1], pa.int32()),
            "I64": pa.array([1], pa.int64()),
            "f": pa.array([1.5], pa.float32()),
            "d": pa.array([1.5], pa.float64()),
            "b": pa.array([True]),
            "s": pa.array(["x"]),
            "bin": pa.array([b"x"]),
            "day": pa.array([date(2026, 1, 1)]),
            "dec": pa.array([Decimal("1.25")], pa.decimal128(10, 2)),
            "at": pa.array([datetime(2026, 1, 1, tzinfo=UTC)], pa.timestamp("us", tz="UTC")),
        }
    )
    pq.write_table(table, tmp_path / "a.parquet")
    pq.write_table(table.select(["i32", "s"]).append_column("more", pa.array([2])), tmp_path / "b.parquet")
    urls = [f"file://{tmp_path}/a.parquet", f"file://{tmp_path}/b.parquet"]
    ours = infer_columns("parquet", urls)
    assert ours == spark_columns(spark, "parquet", urls)


def test_nested_or_local_time_parquet_is_left_to_spark(tmp_path):
    from datetime import datetime

    pq.write_table(pa.table({"s": pa.array([{"a": 1}])}), tmp_path / "nested.parquet")
    pq.write_table(
        pa.table({"t": pa.array([datetime(2026, 1, 1)], pa.timestamp("us"))}), tmp_path / "ntz.parquet"
    )
    assert infer_columns("parquet", [f"file://{tmp_path}/nested.parquet"]) is None
    assert infer_columns("parquet", [f"file://{tmp_path}/ntz.parquet"]) is None
    assert infer_columns("csv", [f"file://{tmp_path}/nested.parquet"]) is None  # CSV: Spark's inference


def crawler_file(tmp_path: Path, db: str, lake: Path) -> Path:
    spec = tmp_path / "crawler.toml"
    spec.write_text(
        f'[crawler]\nName = "c_{db}"\nDatabaseName = "{db}"\n'
        f'[crawler.Targets]\nS3Targets = [{{ Path = "{lake}" }}]\n'
    )
    return spec


def test_a_crawl_of_json_starts_no_spark_and_the_next_session_sees_its_tables(spark, tmp_path):
    """The crawl runs as its own process with a Spark master that does not exist: had it
    started Spark, it would have failed. Its tables are in the state store at once; the
    metastore statements wait for the next Spark session, which runs them."""
    db = f"db_{uuid.uuid4().hex[:8]}"
    lake = tmp_path / "orders"
    for n in range(20):
        lines(
            lake / f"dt=2026-11-{n % 4 + 1:02d}" / f"o{n:02d}.json", {"id": n, "amount": n * 1.5, "who": "x"}
        )
    env = dict(os.environ, SPARKMARK_SPARK_MASTER="spark://127.0.0.1:9")  # nothing listens there
    for argv in (
        ["crawler", "create", "--file", str(crawler_file(tmp_path, db, lake))],
        ["crawler", "run", f"c_{db}"],
    ):
        done = subprocess.run([str(SPARKMARK), *argv], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
    assert "partitions added 4" in done.stdout

    state = StateStore.from_settings(Settings.from_env())
    catalog = CatalogStore(state)
    table = catalog.table(db, "orders")
    assert [(c.name, c.type) for c in table.columns] == [  # the records' order, as Glue keeps it
        ("id", "bigint"),
        ("amount", "double"),
        ("who", "string"),
    ]
    assert len(catalog.deferred()) == 6  # the database, the table, its 4 partitions
    assert not spark.catalog.tableExists(f"{db}.orders")

    assert sync_metastore(spark, state) == 6
    assert catalog.deferred() == []
    assert spark.sql(f"SELECT count(*), sum(id) FROM {db}.orders").first() == (20, sum(range(20)))
    assert sync_metastore(spark, state) == 0  # applied once


def test_a_deferred_statement_that_fails_is_reported_and_dropped(spark, tmp_path, caplog):
    state = StateStore.from_settings(Settings.from_env())
    catalog = CatalogStore(state)
    db = f"db_{uuid.uuid4().hex[:8]}"
    catalog.defer(f"CREATE DATABASE IF NOT EXISTS `{db}`")
    catalog.defer(f"ALTER TABLE `{db}`.`missing` ADD PARTITION (dt='x')")
    catalog.defer(f"CREATE TABLE `{db}`.`t` (id bigint) USING json LOCATION '{tmp_path}'")
    assert sync_metastore(spark, state) == 2
    assert "a deferred metastore statement failed" in caplog.text
    assert spark.catalog.tableExists(f"{db}.t") and catalog.deferred() == []


def test_a_deferred_table_another_session_already_made_from_the_catalog_is_kept_quietly(
    spark, tmp_path, caplog
):
    """A crawl without Spark writes its table to the catalog and defers the metastore's
    statements; a session elsewhere (a warm process's run) may make the table from the
    catalog first. The deferred statements then find it there: no failure is reported."""
    state = StateStore.from_settings(Settings.from_env())
    catalog = CatalogStore(state)
    db = f"db_{uuid.uuid4().hex[:8]}"
    lines(tmp_path / "t" / "a.json", {"id": 1})
    table = Table(db, "t", str(tmp_path / "t"), "json", (Column("id", "bigint"),), (), {})
    HiveCatalog(None, catalog).create_table(table)  # as a crawl without Spark does
    assert len(catalog.deferred()) == 2
    spark.sql(f"CREATE DATABASE `{db}`")
    spark.sql(f"CREATE TABLE `{db}`.`t` (id bigint) USING json LOCATION '{tmp_path / 't'}'")
    caplog.set_level("INFO", logger="sparkmark.catalog")
    assert sync_metastore(spark, state) == 2
    assert "failed" not in caplog.text and catalog.deferred() == []
    assert spark.sql(f"SELECT id FROM `{db}`.`t`").collect() == [(1,)]
