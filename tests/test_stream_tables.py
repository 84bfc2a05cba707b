"""Streaming catalog tables as Glue keeps them. AWS's "Creating tables for streaming
sources" and Terraform's aws_glue_catalog_table put ``typeOfData``, ``topicName`` and
``streamARN`` in the StorageDescriptor's Parameters, and a streaming table need not
have a location; ``additional_options={"inferSchema": "false"}`` keeps the table's
columns as the records' schema, "true" infers it from the stream."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from sparkmark.api.catalog import table_from_input
from sparkmark.api.protocol import GlueApiError
from sparkmark.catalog.models import Database
from sparkmark.catalog.store import CatalogStore
from sparkmark.engine.store import StateStore
from sparkmark.glue.reading import stream_table

COLUMNS = [{"Name": "id", "Type": "bigint"}, {"Name": "name", "Type": "string"}]


@pytest.fixture
def catalog(tmp_path):
    store = CatalogStore(StateStore(f"sqlite:///{tmp_path / 'state.db'}"))
    store.put_database(Database("streams"))
    return store


def put(catalog, name: str, sd_parameters: dict, parameters: dict | None = None):
    given = {
        "Name": name,
        "StorageDescriptor": {"Columns": COLUMNS, "Parameters": sd_parameters},
        "Parameters": parameters or {"classification": "json"},
    }
    catalog.put_table(table_from_input("streams", given))


def test_a_table_whose_stream_is_in_its_storage_descriptor_reads_as_that_stream(catalog):
    put(catalog, "orders", {"typeOfData": "kafka", "topicName": "orders", "connectionName": "msk"})
    gc = SimpleNamespace(catalog_store=lambda: catalog)
    kind, options = stream_table(gc, "streams", "orders", {})
    assert kind == "kafka"
    assert options["topicName"] == "orders" and options["connectionName"] == "msk"
    assert options["schema"] == "`id` bigint, `name` string"
    assert stream_table(gc, "streams", "orders", {"inferSchema": "false"})[1]["schema"] == options["schema"]
    inferred = stream_table(gc, "streams", "orders", {"inferSchema": "true"})[1]
    assert "schema" not in inferred and inferred["inferSchema"] == "true"


def test_a_kinesis_table_from_terraform_with_its_arn(catalog):
    arn = "arn:aws:kinesis:eu-west-1:123456789012:stream/clicks"
    put(catalog, "clicks", {"typeOfData": "kinesis", "streamARN": arn, "classification": "json"}, {})
    kind, options = stream_table(SimpleNamespace(catalog_store=lambda: catalog), "streams", "clicks", {})
    assert (kind, options["streamARN"], options["classification"]) == ("kinesis", arn, "json")


def test_a_file_table_still_needs_its_location(catalog):
    with pytest.raises(GlueApiError, match="StorageDescriptor.Location is required"):
        put(catalog, "files", {"skip.header.line.count": "1"})
    table = {
        "Name": "t",
        "StorageDescriptor": {"Columns": COLUMNS, "Location": "/data/t"},
        "Parameters": {"classification": "json"},
    }
    catalog.put_table(table_from_input("streams", table))
    assert stream_table(SimpleNamespace(catalog_store=lambda: catalog), "streams", "t", {}) is None
