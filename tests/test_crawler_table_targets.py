"""Crawler DeltaTargets and IcebergTargets, as Glue's crawler registers these tables:
the schema from the table's own metadata (a Delta table's latest metaData action, an
Iceberg table's newest metadata file), table_type delta or ICEBERG, an Iceberg table's
metadata_location, and a path that is no such table reported, not silently passed over.

The tables here are written as the Delta protocol and the Iceberg table spec lay them out
(the end-to-end tests write real ones with Spark); no JVM runs."""

from __future__ import annotations

import json

import pytest

from sparkmark.catalog.hive import HiveCatalog
from sparkmark.catalog.store import CatalogStore
from sparkmark.connections import Connections
from sparkmark.crawler.crawl import run_crawl
from sparkmark.crawler.definition import load_definition
from sparkmark.crawler.store import CrawlerStore
from sparkmark.crawler.table_targets import delta_type, iceberg_type
from sparkmark.engine.store import StateStore
from sparkmark.settings import Settings


def delta_commit(folder, version: int, *actions: dict) -> None:
    log = folder / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    (log / f"{version:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in actions))


def schema_string(*fields: tuple[str, object]) -> str:
    return json.dumps(
        {
            "type": "struct",
            "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in fields],
        }
    )


def delta_table(folder, fields, partitions=()) -> None:
    delta_commit(
        folder,
        0,
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}},
                      "schemaString": schema_string(*fields), "partitionColumns": list(partitions),
                      "configuration": {}}},
        {"add": {"path": "part-0.parquet", "partitionValues": {}, "size": 1, "modificationTime": 0,
                 "dataChange": True}},
    )  # fmt: skip


def iceberg_table(folder, version: int, fields, location: str) -> None:
    meta = folder / "metadata"
    meta.mkdir(parents=True, exist_ok=True)
    doc = {
        "format-version": 2,
        "location": location,
        "current-schema-id": 1,
        "schemas": [
            {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "old", "required": False, "type": "int"}]},
            {"type": "struct", "schema-id": 1, "fields": [
                {"id": i + 1, "name": n, "required": False, "type": t} for i, (n, t) in enumerate(fields)]},
        ],
    }  # fmt: skip
    (meta / f"{version:05d}-1b1e7e1c-0000-4000-8000-000000000000.metadata.json").write_text(json.dumps(doc))


def crawl(tmp_path, monkeypatch, targets: dict):
    monkeypatch.setenv("SPARKMARK_HOME", str(tmp_path / "home"))
    settings = Settings.from_env()
    state = StateStore.from_settings(settings)
    store, crawlers = CatalogStore(state), CrawlerStore(state)
    parsed = load_definition({"Name": "lake_crawler", "DatabaseName": "lake", "Targets": targets})
    crawlers.save(parsed)
    record = run_crawl(
        lambda: pytest.fail("a table-format crawl starts no Spark"),
        state,
        HiveCatalog(None, store),
        crawlers,
        parsed,
        connections=Connections.from_settings(settings),
    )
    return record, store


def test_a_delta_target_registers_the_table_from_its_log(tmp_path, monkeypatch):
    orders = tmp_path / "lake" / "orders"
    delta_table(orders, [("id", "long"), ("amount", "decimal(10,2)"), ("day", "string")], partitions=["day"])
    # a later commit changes the schema: the latest metaData is the table's
    delta_commit(orders, 1, {"metaData": {"id": "t", "format": {"provider": "parquet"}, "partitionColumns": ["day"],
                                          "schemaString": schema_string(("id", "long"), ("amount", "decimal(10,2)"),
                                                                        ("day", "string"), ("tags", {"type": "array", "elementType": "string", "containsNull": True}))}})  # fmt: skip
    record, store = crawl(tmp_path, monkeypatch, {"DeltaTargets": [{"DeltaTables": [str(orders)]}]})
    assert record.summary["tables_created"] == ["lake.orders"]
    table = store.table("lake", "orders")
    assert table.classification == "delta"
    assert table.parameters["table_type"] == "delta"
    assert [(c.name, c.type) for c in table.columns] == [
        ("id", "bigint"), ("amount", "decimal(10,2)"), ("tags", "array<string>"),
    ]  # fmt: skip
    assert [(c.name, c.type) for c in table.partition_keys] == [("day", "string")]


def test_an_iceberg_target_registers_each_table_under_its_path(tmp_path, monkeypatch):
    warehouse = tmp_path / "warehouse"
    iceberg_table(warehouse / "db" / "events", 1, [("id", "long")], "file:/elsewhere/events")
    iceberg_table(warehouse / "db" / "events", 2, [("id", "long"), ("at", "timestamptz"),
                                                   ("attrs", {"type": "map", "key-id": 9, "key": "string",
                                                              "value-id": 10, "value": "double",
                                                              "value-required": False})], "file:/elsewhere/events")  # fmt: skip
    iceberg_table(warehouse / "db" / "users", 1, [("name", "string")], str(warehouse / "db" / "users"))
    record, store = crawl(tmp_path, monkeypatch, {"IcebergTargets": [{"Paths": [str(warehouse)]}]})
    assert sorted(record.summary["tables_created"]) == ["lake.events", "lake.users"]
    events = store.table("lake", "events")
    assert events.classification == "iceberg" and events.parameters["table_type"] == "ICEBERG"
    assert events.parameters["metadata_location"].endswith(
        "00002-1b1e7e1c-0000-4000-8000-000000000000.metadata.json"
    )
    assert events.location == "file:/elsewhere/events"  # the table's own location, from its metadata
    assert [(c.name, c.type) for c in events.columns] == [
        ("id", "bigint"), ("at", "timestamp"), ("attrs", "map<string,double>"),
    ]  # fmt: skip


def test_a_path_that_is_no_such_table_is_reported(tmp_path, monkeypatch):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.json").write_text("{}\n")
    record, store = crawl(
        tmp_path, monkeypatch,
        {"DeltaTargets": [{"DeltaTables": [str(plain)]}], "IcebergTargets": [{"Paths": [str(plain)]}]},
    )  # fmt: skip
    assert record.summary["tables_created"] == []
    messages = json.dumps(record.errors)
    assert "not a Delta table" in messages and "no Iceberg table" in messages, record.errors
    assert list(store.tables("lake")) == []


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("integer", "int"),
        ("timestamp_ntz", "timestamp_ntz"),
        ({"type": "struct", "fields": [{"name": "a", "type": "short"}]}, "struct<a:smallint>"),
        ({"type": "map", "keyType": "string", "valueType": "byte"}, "map<string,tinyint>"),
    ],
)
def test_delta_types_as_the_catalog_writes_them(given, expected):
    assert delta_type(given) == expected


@pytest.mark.parametrize(
    ("given", "expected"),
    [("decimal(9, 2)", "decimal(9,2)"), ("fixed[16]", "binary"), ("uuid", "string"), ("date", "date"),
     ({"type": "list", "element-id": 3, "element": "int", "element-required": False}, "array<int>")],
)  # fmt: skip
def test_iceberg_types_as_the_catalog_writes_them(given, expected):
    assert iceberg_type(given) == expected
