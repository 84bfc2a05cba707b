"""The Glue API endpoint, driven by the real boto3 and the real AWS CLI over HTTP.

What is asserted is Glue's documented behaviour: names kept in lower case, errors as
Glue's exception types (which boto3 raises by name), partial failures of batch calls
listed per partition, partition expressions comparing keys as their declared types,
GetTableVersions newest first, ResetJobBookmark with a RunId rewinding to just after
that run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
from pathlib import Path

import boto3
import pyspark
import pytest
from botocore.config import Config

from sparkmark import glue_versions
from sparkmark.access import local_token
from sparkmark.api.server import start_in_thread
from sparkmark.crawler.store import CrawlerStore
from sparkmark.engine.store import StateStore
from sparkmark.errors import ConfigError
from sparkmark.settings import Settings
from sparkmark.workflow.registry import ProjectSource
from sparkmark.workflow.scheduler import Scheduler

from .conftest import write_json

ACCOUNT = "123456789012"  # any account names the one catalog
REPO = Path(__file__).resolve().parents[1]
SEED_COMMANDS = REPO / "tests" / "fixtures" / "glue_cli" / "seed_commands.sh"


@pytest.fixture
def config(tmp_path, monkeypatch):
    path = tmp_path / "project" / "sparkmark.toml"
    path.parent.mkdir(parents=True)
    monkeypatch.setenv("SPARKMARK_CONFIG", str(path))
    return path


@pytest.fixture
def endpoint(config, sparkmark_home):
    running = start_in_thread(Settings.from_env())
    yield running
    running.stop()


def home_token() -> str:
    """The token every sparkmark server of this test's home checks (made on first use)."""
    return local_token(Settings.from_env().home)


def client(url: str, secret: str | None = None):
    secret = secret or home_token()
    return boto3.client(
        "glue",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key=secret,
        config=Config(retries={"max_attempts": 1}),
    )


@pytest.fixture
def glue(endpoint):
    return client(endpoint.url)


def drive(until, seconds: float = 120) -> Scheduler:
    """Lead a scheduler over the current definitions until ``until()`` holds."""
    state = StateStore.from_settings()
    source = ProjectSource(Settings.from_env().config, state)
    scheduler = Scheduler(source.current(), state, source=source, owner="test-leader")
    assert scheduler.run(until=until, max_seconds=seconds, poll_seconds=0.05), "the runs did not end in time"
    return scheduler


# ------------------------------------------------------------------ catalog


def orders_table(location: str, name: str = "Orders") -> dict:
    return {
        "Name": name,
        "StorageDescriptor": {
            "Columns": [
                {"Name": "ID", "Type": "bigint", "Comment": "order id"},
                {"Name": "amount", "Type": "double"},
            ],
            "Location": location,
            "SerdeInfo": {
                "SerializationLibrary": "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
                "Parameters": {"field.delim": "|"},
            },
        },
        "PartitionKeys": [{"Name": "year", "Type": "int"}, {"Name": "region", "Type": "string"}],
        "Parameters": {"classification": "csv", "owner_team": "sales"},
    }


def test_partition_indexes_are_made_listed_used_and_deleted(glue, tmp_path):
    """CreateTable's PartitionIndexes and CreatePartitionIndex (backfilled from the
    partitions the table has), GetPartitionIndexes as Terraform's aws_glue_partition_index
    polls it (ACTIVE), GetPartitions through the index, DeletePartitionIndex; Glue's
    checks: keys must be partition keys, three indexes a table at most."""
    glue.create_database(DatabaseInput={"Name": "sales"})
    table = orders_table(str(tmp_path / "orders"), name="orders")
    glue.create_table(
        DatabaseName="sales", TableInput=table, PartitionIndexes=[{"IndexName": "by_year", "Keys": ["year"]}]
    )
    glue.batch_create_partition(
        DatabaseName="sales",
        TableName="orders",
        PartitionInputList=[
            {"Values": [str(y), r], "StorageDescriptor": {"Location": str(tmp_path / f"{y}{r}")}}
            for y in (2024, 2025, 2026)
            for r in ("eu", "us")
        ],
    )
    glue.create_partition_index(
        DatabaseName="sales",
        TableName="orders",
        PartitionIndex={"IndexName": "by_both", "Keys": ["region", "year"]},
    )
    listed = glue.get_partition_indexes(DatabaseName="sales", TableName="orders")[
        "PartitionIndexDescriptorList"
    ]
    assert [(i["IndexName"], [k["Name"] for k in i["Keys"]], i["IndexStatus"]) for i in listed] == [
        ("by_both", ["region", "year"], "ACTIVE"),
        ("by_year", ["year"], "ACTIVE"),
    ]
    assert listed[0]["Keys"][1] == {"Name": "year", "Type": "int"}
    found = glue.get_partitions(
        DatabaseName="sales", TableName="orders", Expression="year > 2024 AND region = 'eu'"
    )
    assert sorted(p["Values"] for p in found["Partitions"]) == [["2025", "eu"], ["2026", "eu"]]
    with pytest.raises(glue.exceptions.AlreadyExistsException):
        glue.create_partition_index(
            DatabaseName="sales",
            TableName="orders",
            PartitionIndex={"IndexName": "by_year", "Keys": ["year"]},
        )
    with pytest.raises(glue.exceptions.InvalidInputException, match="'amount' is not a partition key"):
        glue.create_partition_index(
            DatabaseName="sales", TableName="orders", PartitionIndex={"IndexName": "x", "Keys": ["amount"]}
        )
    glue.create_partition_index(
        DatabaseName="sales",
        TableName="orders",
        PartitionIndex={"IndexName": "by_region", "Keys": ["region"]},
    )
    with pytest.raises(glue.exceptions.ResourceNumberLimitExceededException):
        glue.create_partition_index(
            DatabaseName="sales", TableName="orders", PartitionIndex={"IndexName": "fourth", "Keys": ["year"]}
        )
    glue.delete_partition_index(DatabaseName="sales", TableName="orders", IndexName="by_both")
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.delete_partition_index(DatabaseName="sales", TableName="orders", IndexName="by_both")
    remaining = glue.get_partition_indexes(DatabaseName="sales", TableName="orders")[
        "PartitionIndexDescriptorList"
    ]
    assert [i["IndexName"] for i in remaining] == ["by_region", "by_year"]


def iceberg_table(name: str, location: str) -> dict:
    return {
        "Name": name,
        "TableType": "EXTERNAL_TABLE",
        "Parameters": {
            "table_type": "ICEBERG",
            "metadata_location": f"{location}/metadata/00000.metadata.json",
        },
        "StorageDescriptor": {"Location": location, "Columns": [{"Name": "id", "Type": "bigint"}]},
    }


def test_table_optimizer_operations_as_terraform_calls_them(glue, tmp_path):
    """Terraform's aws_glue_catalog_table_optimizer: CreateTableOptimizer, then
    GetTableOptimizer on every refresh, UpdateTableOptimizer, DeleteTableOptimizer;
    BatchGetTableOptimizer answers what it finds and a failure for the rest; only
    Iceberg tables take one; ListTableOptimizerRuns of a new optimizer is empty."""
    glue.create_database(DatabaseInput={"Name": "opt"})
    glue.create_table(DatabaseName="opt", TableInput=iceberg_table("events", str(tmp_path / "events")))
    plain = iceberg_table("plain", str(tmp_path / "plain"))
    plain["Parameters"] = {"classification": "parquet"}
    glue.create_table(DatabaseName="opt", TableInput=plain)
    config = {
        "roleArn": "arn:aws:iam::123456789012:role/optimizer",
        "enabled": True,
        "compactionConfiguration": {"icebergConfiguration": {"strategy": "binpack", "minInputFiles": 10}},
    }

    def create(table: str, kind: str = "compaction", configuration: dict = config) -> None:
        glue.create_table_optimizer(
            CatalogId=ACCOUNT, DatabaseName="opt", TableName=table, Type=kind,
            TableOptimizerConfiguration=configuration,
        )  # fmt: skip

    create("events")
    with pytest.raises(glue.exceptions.AlreadyExistsException):
        create("events")
    with pytest.raises(glue.exceptions.ValidationException, match="not an Iceberg table"):
        create("plain")
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        create("nope")
    with pytest.raises(glue.exceptions.InvalidInputException, match="cleanExpiredFiles=false"):
        create("events", "retention", {"enabled": True, "retentionConfiguration": {
            "icebergConfiguration": {"cleanExpiredFiles": False}}})  # fmt: skip
    got = glue.get_table_optimizer(
        CatalogId=ACCOUNT, DatabaseName="opt", TableName="events", Type="compaction"
    )
    assert (got["DatabaseName"], got["TableName"]) == ("opt", "events")
    assert got["TableOptimizer"]["type"] == "compaction"
    assert (
        got["TableOptimizer"]["configuration"]["compactionConfiguration"] == config["compactionConfiguration"]
    )
    assert "lastRun" not in got["TableOptimizer"]
    glue.update_table_optimizer(
        CatalogId=ACCOUNT, DatabaseName="opt", TableName="events", Type="compaction",
        TableOptimizerConfiguration={**config, "enabled": False},
    )  # fmt: skip
    assert not glue.get_table_optimizer(
        CatalogId=ACCOUNT, DatabaseName="opt", TableName="events", Type="compaction"
    )["TableOptimizer"]["configuration"]["enabled"]
    batch = glue.batch_get_table_optimizer(
        Entries=[
            {"databaseName": "opt", "tableName": "events", "type": "compaction"},
            {"databaseName": "opt", "tableName": "events", "type": "retention"},
        ]
    )
    assert [t["tableName"] for t in batch["TableOptimizers"]] == ["events"]
    assert [(f["type"], f["error"]["ErrorCode"]) for f in batch["Failures"]] == [
        ("retention", "EntityNotFoundException")
    ]
    runs = glue.list_table_optimizer_runs(
        CatalogId=ACCOUNT, DatabaseName="opt", TableName="events", Type="compaction"
    )
    assert runs["TableOptimizerRuns"] == []
    glue.delete_table_optimizer(CatalogId=ACCOUNT, DatabaseName="opt", TableName="events", Type="compaction")
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_table_optimizer(CatalogId=ACCOUNT, DatabaseName="opt", TableName="events", Type="compaction")
    # a deleted table's optimizers go with it
    create("events")
    glue.delete_table(DatabaseName="opt", Name="events")
    glue.create_table(DatabaseName="opt", TableInput=iceberg_table("events", str(tmp_path / "events")))
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_table_optimizer(CatalogId=ACCOUNT, DatabaseName="opt", TableName="events", Type="compaction")


def test_user_defined_functions_are_kept_and_listed(glue):
    """Terraform's aws_glue_user_defined_function: CreateUserDefinedFunction,
    GetUserDefinedFunction, UpdateUserDefinedFunction, DeleteUserDefinedFunction;
    GetUserDefinedFunctions by Glue's name pattern, in a database or in all; names kept
    in lower case; a deleted database's functions go with it."""
    glue.create_database(DatabaseInput={"Name": "udfs"})
    glue.create_database(DatabaseInput={"Name": "other"})
    jar = [{"ResourceType": "JAR", "Uri": "s3://libs/udfs.jar"}]
    glue.create_user_defined_function(
        DatabaseName="udfs",
        FunctionInput={"FunctionName": "Mask_Email", "ClassName": "com.acme.Mask", "OwnerName": "data",
                       "OwnerType": "ROLE", "FunctionType": "REGULAR_FUNCTION", "ResourceUris": jar},
    )  # fmt: skip
    glue.create_user_defined_function(
        DatabaseName="other", FunctionInput={"FunctionName": "mask_phone", "ClassName": "com.acme.Phone"}
    )
    with pytest.raises(glue.exceptions.AlreadyExistsException):
        glue.create_user_defined_function(
            DatabaseName="udfs", FunctionInput={"FunctionName": "mask_email", "ClassName": "x"}
        )
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.create_user_defined_function(
            DatabaseName="nope", FunctionInput={"FunctionName": "f", "ClassName": "x"}
        )
    got = glue.get_user_defined_function(DatabaseName="udfs", FunctionName="MASK_EMAIL")[
        "UserDefinedFunction"
    ]
    assert (got["FunctionName"], got["ClassName"], got["DatabaseName"], got["ResourceUris"]) == (
        "mask_email", "com.acme.Mask", "udfs", jar,
    )  # fmt: skip
    assert got["CreateTime"]
    everywhere = glue.get_user_defined_functions(Pattern="mask*")["UserDefinedFunctions"]
    assert sorted((f["DatabaseName"], f["FunctionName"]) for f in everywhere) == [
        ("other", "mask_phone"), ("udfs", "mask_email"),
    ]  # fmt: skip
    assert [f["FunctionName"] for f in glue.get_user_defined_functions(DatabaseName="udfs", Pattern="*")[
        "UserDefinedFunctions"]] == ["mask_email"]  # fmt: skip
    assert glue.get_user_defined_functions(Pattern="nothing*")["UserDefinedFunctions"] == []
    glue.update_user_defined_function(
        DatabaseName="udfs", FunctionName="mask_email",
        FunctionInput={"FunctionName": "mask_email", "ClassName": "com.acme.Mask2"},
    )  # fmt: skip
    assert glue.get_user_defined_function(DatabaseName="udfs", FunctionName="mask_email")[
        "UserDefinedFunction"]["ClassName"] == "com.acme.Mask2"  # fmt: skip
    glue.delete_user_defined_function(DatabaseName="udfs", FunctionName="mask_email")
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_user_defined_function(DatabaseName="udfs", FunctionName="mask_email")
    glue.delete_database(Name="other")
    assert glue.get_user_defined_functions(Pattern="*")["UserDefinedFunctions"] == []


def test_the_schema_registry_keeps_versions_and_checks_compatibility(glue):
    """The Glue Schema Registry's operations through boto3: registries, schemas with a
    first version, versions checked against the compatibility mode (BACKWARD by
    default), the same definition answered with its existing version, lookups by id,
    number, latest and definition, metadata, diffs, deletes; a schema made without a
    registry goes to default-registry."""
    order = {"type": "record", "name": "order", "fields": [{"name": "id", "type": "long"}]}
    v2_def = {**order, "fields": [*order["fields"], {"name": "channel", "type": "string", "default": "web"}]}
    made = glue.create_registry(RegistryName="streams", Description="topics", Tags={"team": "data"})
    assert made["RegistryArn"].endswith(":registry/streams")
    with pytest.raises(glue.exceptions.AlreadyExistsException):
        glue.create_registry(RegistryName="streams")
    schema = glue.create_schema(
        RegistryId={"RegistryName": "streams"}, SchemaName="orders", DataFormat="AVRO",
        SchemaDefinition=json.dumps(order),
    )  # fmt: skip
    assert (schema["Compatibility"], schema["LatestSchemaVersion"], schema["SchemaVersionStatus"]) == (
        "BACKWARD", 1, "AVAILABLE",
    )  # fmt: skip
    v1_id = schema["SchemaVersionId"]
    schema_id = {"SchemaArn": schema["SchemaArn"]}
    v2 = glue.register_schema_version(SchemaId=schema_id, SchemaDefinition=json.dumps(v2_def))
    assert v2["VersionNumber"] == 2 and v2["Status"] == "AVAILABLE"
    again = glue.register_schema_version(SchemaId=schema_id, SchemaDefinition=json.dumps(v2_def))
    assert again["SchemaVersionId"] == v2["SchemaVersionId"]  # the same definition: the same version
    breaking = {**order, "fields": [{"name": "id", "type": "string"}]}
    with pytest.raises(glue.exceptions.InvalidInputException, match="not BACKWARD compatible with version 2"):
        glue.register_schema_version(SchemaId=schema_id, SchemaDefinition=json.dumps(breaking))
    with pytest.raises(glue.exceptions.InvalidInputException, match="not a valid Avro schema"):
        glue.register_schema_version(SchemaId=schema_id, SchemaDefinition='{"type": "record"}')
    named = {"RegistryName": "streams", "SchemaName": "orders"}
    latest = glue.get_schema_version(SchemaId=named, SchemaVersionNumber={"LatestVersion": True})
    assert latest["VersionNumber"] == 2 and json.loads(latest["SchemaDefinition"]) == v2_def
    assert glue.get_schema_version(SchemaVersionId=v1_id)["VersionNumber"] == 1
    by_definition = glue.get_schema_by_definition(SchemaId=named, SchemaDefinition=json.dumps(order))
    assert by_definition["SchemaVersionId"] == v1_id
    listed = glue.list_schema_versions(SchemaId=named)["Schemas"]
    assert [v["VersionNumber"] for v in listed] == [1, 2]
    assert glue.get_schema(SchemaId=named)["LatestSchemaVersion"] == 2
    diff = glue.get_schema_versions_diff(
        SchemaId=named, FirstSchemaVersionNumber={"VersionNumber": 1}, SecondSchemaVersionNumber={"VersionNumber": 2},
        SchemaDiffType="SYNTAX_DIFF",
    )["Diff"]  # fmt: skip
    assert '+      "name": "channel"' in diff

    glue.update_schema(SchemaId=named, Compatibility="NONE", Description="anything goes")
    assert (
        glue.register_schema_version(SchemaId=named, SchemaDefinition=json.dumps(breaking))["VersionNumber"]
        == 3
    )
    got = glue.get_schema(SchemaId=named)
    assert (got["Compatibility"], got["Description"]) == ("NONE", "anything goes")

    glue.put_schema_version_metadata(
        SchemaId=named, SchemaVersionNumber={"VersionNumber": 2}, MetadataKeyValue={"MetadataKey": "owner", "MetadataValue": "ops"}
    )  # fmt: skip
    meta = glue.query_schema_version_metadata(SchemaId=named, SchemaVersionNumber={"VersionNumber": 2})
    assert meta["MetadataInfoMap"]["owner"]["MetadataValue"] == "ops"
    glue.remove_schema_version_metadata(
        SchemaId=named, SchemaVersionNumber={"VersionNumber": 2}, MetadataKeyValue={"MetadataKey": "owner", "MetadataValue": "ops"}
    )  # fmt: skip
    assert glue.query_schema_version_metadata(SchemaVersionId=v2["SchemaVersionId"])["MetadataInfoMap"] == {}

    assert glue.check_schema_version_validity(DataFormat="JSON", SchemaDefinition='{"type": "object"}')[
        "Valid"
    ]
    invalid = glue.check_schema_version_validity(DataFormat="JSON", SchemaDefinition='{"type": 3}')
    assert invalid["Valid"] is False and "not a valid JSON Schema" in invalid["Error"]
    loose = glue.create_schema(SchemaName="events", DataFormat="JSON", Compatibility="FULL")
    assert loose["RegistryName"] == "default-registry" and "LatestSchemaVersion" not in loose
    names = sorted(r["RegistryName"] for r in glue.list_registries()["Registries"])
    assert names == ["default-registry", "streams"]
    assert [
        x["SchemaName"] for x in glue.list_schemas(RegistryId={"RegistryName": "streams"})["Schemas"]
    ] == ["orders"]

    errors = glue.delete_schema_versions(SchemaId=named, Versions="2-4")["SchemaVersionErrors"]
    assert [e["VersionNumber"] for e in errors] == [4]  # 2 and 3 deleted; there is no 4
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_schema_version(SchemaId=named, SchemaVersionNumber={"VersionNumber": 2})
    glue.delete_registry(RegistryId={"RegistryName": "streams"})
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_schema(SchemaId=named)
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_registry(RegistryId={"RegistryName": "streams"})


def test_databases_and_tables_keep_glue_names_and_shapes(glue, tmp_path):
    glue.create_database(DatabaseInput={"Name": "Raw-Data", "Description": "landing zone"})
    db = glue.get_database(Name="raw-data")["Database"]
    assert (db["Name"], db["Description"]) == ("raw-data", "landing zone")
    with pytest.raises(glue.exceptions.AlreadyExistsException):
        glue.create_database(DatabaseInput={"Name": "raw-data"})

    glue.create_table(DatabaseName="RAW-DATA", TableInput=orders_table(str(tmp_path / "orders")))
    table = glue.get_table(DatabaseName="raw-data", Name="orders")["Table"]
    assert table["Name"] == "orders"
    assert table["DatabaseName"] == "raw-data"
    assert table["StorageDescriptor"]["Columns"] == [
        {"Name": "id", "Type": "bigint", "Comment": "order id"},
        {"Name": "amount", "Type": "double"},
    ]
    assert table["StorageDescriptor"]["SerdeInfo"]["Parameters"] == {"field.delim": "|"}
    assert [k["Name"] for k in table["PartitionKeys"]] == ["year", "region"]
    assert table["Parameters"] == {"classification": "csv", "owner_team": "sales"}
    assert [t["Name"] for t in glue.get_tables(DatabaseName="raw-data")["TableList"]] == ["orders"]
    assert glue.get_tables(DatabaseName="raw-data", Expression="ord.*")["TableList"]
    assert not glue.get_tables(DatabaseName="raw-data", Expression="x.*")["TableList"]
    for pattern in ("ord*", "*rde*", "returns|ord*", "ORDERS"):  # Glue's `*` and `|`
        assert [
            t["Name"] for t in glue.get_tables(DatabaseName="raw-data", Expression=pattern)["TableList"]
        ] == ["orders"], pattern
    assert not glue.get_tables(DatabaseName="raw-data", Expression="(a|a)+")["TableList"]
    assert [d["Name"] for d in glue.get_databases()["DatabaseList"]] == ["raw-data"]

    with pytest.raises(glue.exceptions.EntityNotFoundException, match="Table nope not found"):
        glue.get_table(DatabaseName="raw-data", Name="nope")
    with pytest.raises(glue.exceptions.EntityNotFoundException, match="Database elsewhere not found"):
        glue.get_table(DatabaseName="elsewhere", Name="orders")
    with pytest.raises(glue.exceptions.AlreadyExistsException):
        glue.create_table(DatabaseName="raw-data", TableInput=orders_table(str(tmp_path / "orders")))


def test_a_table_made_through_the_api_is_read_by_from_catalog(glue, spark, tmp_path):
    from sparkmark.glue.context import GlueContext

    data = tmp_path / "orders"
    (data / "year=2026" / "region=eu").mkdir(parents=True)
    (data / "year=2026" / "region=eu" / "part.csv").write_text("1|10.5\n2|20.0\n")
    glue.create_database(DatabaseInput={"Name": "sales"})
    glue.create_table(DatabaseName="sales", TableInput=orders_table(str(data)))
    glue.batch_create_partition(
        DatabaseName="sales", TableName="orders", PartitionInputList=[{"Values": ["2026", "eu"]}]
    )
    frame = GlueContext(spark.sparkContext).create_dynamic_frame.from_catalog(
        database="sales", table_name="orders"
    )
    rows = sorted((r["id"], r["amount"], r["year"], r["region"]) for r in frame.toDF().collect())
    assert rows == [(1, 10.5, 2026, "eu"), (2, 20.0, 2026, "eu")]


def test_partitions_batch_errors_and_typed_expressions(glue, tmp_path):
    glue.create_database(DatabaseInput={"Name": "sales"})
    glue.create_table(DatabaseName="sales", TableInput=orders_table(str(tmp_path / "orders")))
    out = glue.batch_create_partition(
        DatabaseName="sales",
        TableName="orders",
        PartitionInputList=[
            {"Values": ["9", "eu"]},
            {"Values": ["10", "us"]},
            {"Values": ["2024", "eu"], "StorageDescriptor": {"Location": str(tmp_path / "elsewhere")}},
            {"Values": ["9", "eu"]},  # a duplicate: reported, the others still go in
            {"Values": ["1"]},  # too few values
        ],
    )
    errors = {tuple(e["PartitionValues"]): e["ErrorDetail"]["ErrorCode"] for e in out["Errors"]}
    assert errors == {("9", "eu"): "AlreadyExistsException", ("1",): "InvalidInputException"}

    def values(expression: str = "") -> list[list[str]]:
        parts = glue.get_partitions(DatabaseName="sales", TableName="orders", Expression=expression)
        return sorted(p["Values"] for p in parts["Partitions"])

    assert len(values()) == 3
    # year is an int key: 10 > 9 as numbers, though '10' < '9' as text
    assert values("year > 9") == [["10", "us"], ["2024", "eu"]]
    assert values("year BETWEEN 9 AND 10 AND region <> 'us'") == [["9", "eu"]]
    assert values("region IN ('us') OR year = 2024") == [["10", "us"], ["2024", "eu"]]
    assert values("region LIKE 'e%' AND NOT year = 9") == [["2024", "eu"]]
    one = glue.get_partition(DatabaseName="sales", TableName="orders", PartitionValues=["2024", "eu"])
    assert one["Partition"]["StorageDescriptor"]["Location"] == str(tmp_path / "elsewhere")
    default = glue.get_partition(DatabaseName="sales", TableName="orders", PartitionValues=["9", "eu"])
    assert default["Partition"]["StorageDescriptor"]["Location"] == str(
        tmp_path / "orders" / "year=9" / "region=eu"
    )
    with pytest.raises(glue.exceptions.InvalidInputException, match="invalid partition expression"):
        values("year >")
    with pytest.raises(glue.exceptions.InvalidInputException):
        values("year = 1; DELETE FROM partitions")

    gone = glue.batch_delete_partition(
        DatabaseName="sales",
        TableName="orders",
        PartitionsToDelete=[{"Values": ["9", "eu"]}, {"Values": ["3", "xx"]}],
    )
    assert [e["PartitionValues"] for e in gone["Errors"]] == [["3", "xx"]]
    assert gone["Errors"][0]["ErrorDetail"]["ErrorCode"] == "EntityNotFoundException"
    assert values() == [["10", "us"], ["2024", "eu"]]
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_partition(DatabaseName="sales", TableName="orders", PartitionValues=["9", "eu"])


def test_table_versions_newest_first_and_delete(glue, tmp_path):
    glue.create_database(DatabaseInput={"Name": "sales"})
    table = orders_table(str(tmp_path / "orders"))
    glue.create_table(DatabaseName="sales", TableInput=table)
    table["StorageDescriptor"]["Columns"].append({"Name": "note", "Type": "string"})
    glue.update_table(DatabaseName="sales", TableInput=table)
    versions = glue.get_table_versions(DatabaseName="sales", TableName="orders")["TableVersions"]
    assert [v["VersionId"] for v in versions] == ["2", "1"]
    assert [c["Name"] for c in versions[0]["Table"]["StorageDescriptor"]["Columns"]] == [
        "id",
        "amount",
        "note",
    ]
    assert [c["Name"] for c in versions[1]["Table"]["StorageDescriptor"]["Columns"]] == ["id", "amount"]
    assert glue.get_table(DatabaseName="sales", Name="orders")["Table"]["VersionId"] == "2"
    glue.delete_table(DatabaseName="sales", Name="orders")
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_table(DatabaseName="sales", Name="orders")
    glue.delete_database(Name="sales")
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_database(Name="sales")


def post(
    url: str, target: str, body: bytes, *, secret: str | None = "home", headers: dict | None = None
) -> tuple[int, dict]:
    """A raw request, signed with the home's token (``secret=None``: unsigned)."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    sent = {"X-Amz-Target": target, "Content-Type": "application/x-amz-json-1.1", **(headers or {})}
    if secret is not None:
        signed = AWSRequest(method="POST", url=url + "/", data=body, headers=sent)
        key = home_token() if secret == "home" else secret
        SigV4Auth(Credentials("test", key), "glue", "us-east-1").add_auth(signed)
        sent = dict(signed.headers.items())
    request = urllib.request.Request(url + "/", data=body, headers=sent)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_requests_glue_would_refuse_are_refused_by_shape(glue, endpoint):
    # a client without boto3's own checks: the endpoint validates with Glue's model
    unchecked = boto3.client(
        "glue",
        endpoint_url=endpoint.url,
        region_name="us-east-1",
        aws_access_key_id="t",
        aws_secret_access_key=endpoint.token,
        config=Config(parameter_validation=False, retries={"max_attempts": 1}),
    )
    with pytest.raises(unchecked.exceptions.InvalidInputException, match="Missing required parameter"):
        unchecked.get_table(DatabaseName="x")
    with pytest.raises(unchecked.exceptions.InvalidInputException, match="Invalid type for parameter"):
        unchecked.get_table(DatabaseName="x", Name=5)
    assert post(endpoint.url, "AWSGlue.GetTable", b"not json") == (
        400,
        {"__type": "SerializationException", "message": "the request body is not JSON"},
    )
    status, answer = post(endpoint.url, "Glue.GetTable", b"{}")
    assert (status, answer["__type"]) == (400, "UnknownOperationException")
    with pytest.raises(glue.exceptions.ClientError, match="UnsupportedOperationException"):
        glue.list_blueprints()


# ------------------------------------------------------------------ jobs and bookmarks


def test_jobs_created_through_the_api_and_declared_in_the_file(glue, config):
    config.write_text('[jobs.declared]\nScript = "declared.py"\nMaxRetries = 2\n')
    glue.create_job(
        Name="orders-transform",
        Role="arn:aws:iam::123456789012:role/GlueServiceRole",
        Command={
            "Name": "glueetl",
            "ScriptLocation": "s3://my-scripts/orders_transform.py",
            "PythonVersion": "3",
        },
        DefaultArguments={"--job-bookmark-option": "job-bookmark-enable", "--TempDir": "s3://tmp/"},
        WorkerType="G.1X",
        NumberOfWorkers=10,
        GlueVersion="4.0",
    )
    job = glue.get_job(JobName="orders-transform")["Job"]
    assert job["Command"]["ScriptLocation"] == "s3://my-scripts/orders_transform.py"
    assert (job["WorkerType"], job["NumberOfWorkers"], job["GlueVersion"]) == ("G.1X", 10, "4.0")
    assert (job["MaxRetries"], job["Timeout"]) == (0, 2880)  # Glue's defaults
    glue.update_job(
        JobName="orders-transform",
        JobUpdate={"DefaultArguments": {"--job-bookmark-option": "job-bookmark-pause"}},
    )
    job = glue.get_job(JobName="orders-transform")["Job"]
    assert job["DefaultArguments"] == {"--job-bookmark-option": "job-bookmark-pause"}
    assert job["Command"]["ScriptLocation"] == "s3://my-scripts/orders_transform.py"
    assert sorted(j["Name"] for j in glue.get_jobs()["Jobs"]) == ["declared", "orders-transform"]
    assert glue.get_job(JobName="declared")["Job"]["MaxRetries"] == 2

    with pytest.raises(glue.exceptions.AlreadyExistsException):
        glue.create_job(Name="declared", Role="r", Command={"Name": "glueetl", "ScriptLocation": "x.py"})
    with pytest.raises(glue.exceptions.InvalidInputException, match="declared in"):
        glue.update_job(JobName="declared", JobUpdate={"MaxRetries": 1})
    with pytest.raises(glue.exceptions.InvalidInputException, match="argument names start with '--'"):
        glue.create_job(
            Name="bad",
            Role="r",
            Command={"Name": "glueetl", "ScriptLocation": "x.py"},
            DefaultArguments={"x": "1"},
        )
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_job(JobName="nope")
    glue.delete_job(JobName="orders-transform")
    assert [j["Name"] for j in glue.get_jobs()["Jobs"]] == ["declared"]

    # the CLI sees the job the API made, from the same registry
    glue.create_job(Name="from-api", Role="r", Command={"Name": "glueetl", "ScriptLocation": "/x/a.py"})
    listed = subprocess.run(
        [sys.executable, "-m", "sparkmark", "job", "list", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert sorted(j["Name"] for j in json.loads(listed.stdout)) == ["declared", "from-api"]


def test_get_and_reset_job_bookmark_match_the_cli(glue, spark, tmp_path):
    from sparkmark import Job

    store = StateStore.from_settings()
    data = tmp_path / "data"

    def run() -> str:
        job = Job.from_args(
            ["job.py", "--JOB_NAME", "orders", "--job-bookmark-option", "job-bookmark-enable"],
            spark=spark,
            store=store,
            settings=Settings.from_env(),
        )
        job.read_files(str(data), format="json", ctx="src").count()
        job.commit()
        return job.run_id

    write_json(data / "a.json", [1])
    first = run()
    write_json(data / "b.json", [2])
    second = run()

    entry = glue.get_job_bookmark(JobName="orders")["JobBookmarkEntry"]
    shown = json.loads(
        subprocess.run(
            [sys.executable, "-m", "sparkmark", "bookmark", "get", "orders", "--json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    for key in ("JobName", "Version", "Run", "Attempt", "RunId", "PreviousRunId"):
        assert entry.get(key) == shown[key], key
    assert json.loads(entry["JobBookmark"]) == shown["JobBookmark"]
    assert entry["RunId"] == second
    assert json.loads(entry["JobBookmark"])["src"]["files_committed"] == 2

    rewound = glue.reset_job_bookmark(JobName="orders", RunId=first)["JobBookmarkEntry"]
    assert json.loads(rewound["JobBookmark"])["src"]["files_committed"] == 1
    write_json(data / "c.json", [3])
    job = Job.from_args(
        ["job.py", "--JOB_NAME", "orders", "--job-bookmark-option", "job-bookmark-enable"],
        spark=spark,
        store=store,
        settings=Settings.from_env(),
    )
    assert sorted(r["id"] for r in job.read_files(str(data), format="json", ctx="src").collect()) == [2, 3]
    job.commit()

    glue.reset_job_bookmark(JobName="orders")
    assert json.loads(glue.get_job_bookmark(JobName="orders")["JobBookmarkEntry"]["JobBookmark"]) == {}
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_job_bookmark(JobName="never-ran")
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.reset_job_bookmark(JobName="orders", RunId="jr_" + "0" * 64)


PLAIN_SCRIPT = """
import json, sys
from awsglue.utils import getResolvedOptions
args = getResolvedOptions(sys.argv, ["JOB_NAME", "out"])
with open(args["out"], "w") as f:
    json.dump(args, f)
"""


def test_start_job_run_runs_the_script_and_reports_it(glue, tmp_path):
    script = tmp_path / "plain.py"
    script.write_text(PLAIN_SCRIPT)
    out = tmp_path / "out.json"
    glue.create_job(
        Name="plain",
        Role="r",
        Command={"Name": "glueetl", "ScriptLocation": str(script)},
        DefaultArguments={"--out": str(tmp_path / "wrong.json")},
    )
    run_id = glue.start_job_run(JobName="plain", Arguments={"--out": str(out)})["JobRunId"]
    assert run_id.startswith("jr_")
    assert glue.get_job_run(JobName="plain", RunId=run_id)["JobRun"]["JobRunState"] == "STARTING"
    drive(lambda: glue.get_job_run(JobName="plain", RunId=run_id)["JobRun"]["JobRunState"] == "SUCCEEDED")
    assert json.loads(out.read_text())["JOB_NAME"] == "plain"  # the run's arguments win over the defaults
    runs = glue.get_job_runs(JobName="plain")["JobRuns"]
    assert [r["Id"] for r in runs] == [run_id]
    assert runs[0]["Arguments"]["--out"] == str(out)
    assert runs[0]["CompletedOn"] >= runs[0]["StartedOn"]
    # One record per run: the script started no Job, and the run store (what `sparkmark
    # runs list` and the console read) has the same run in the same state.
    store = StateStore.from_settings()
    try:
        assert [(r.run_id, r.state.value) for r in store.list_runs("plain")] == [(run_id, "SUCCEEDED")]
    finally:
        store.close()
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.start_job_run(JobName="missing")

    queued = glue.start_job_run(JobName="plain", Arguments={"--out": str(out)})["JobRunId"]
    stopped = glue.batch_stop_job_run(JobName="plain", JobRunIds=[queued, "jr_unknown"])
    assert stopped["SuccessfulSubmissions"] == [{"JobName": "plain", "JobRunId": queued}]
    assert [e["JobRunId"] for e in stopped["Errors"]] == ["jr_unknown"]
    assert glue.get_job_run(JobName="plain", RunId=queued)["JobRun"]["JobRunState"] == "STOPPED"


def test_a_plain_script_that_fails_has_one_record_everywhere(glue, tmp_path):
    """A Python script with no Job (as a Python shell job is) that exits with status 3:
    GetJobRun, GetJobRuns and the run store agree on the one run, FAILED, with why."""
    script = tmp_path / "fails.py"
    script.write_text("import sys\nprint('giving up')\nsys.exit(3)\n")
    glue.create_job(Name="fails", Role="r", Command={"Name": "glueetl", "ScriptLocation": str(script)})
    run_id = glue.start_job_run(JobName="fails")["JobRunId"]
    drive(lambda: glue.get_job_run(JobName="fails", RunId=run_id)["JobRun"]["JobRunState"] == "FAILED")
    run = glue.get_job_run(JobName="fails", RunId=run_id)["JobRun"]
    assert "status 3" in run["ErrorMessage"]
    assert [r["Id"] for r in glue.get_job_runs(JobName="fails")["JobRuns"]] == [run_id]
    store = StateStore.from_settings()
    try:
        [record] = store.list_runs("fails")
    finally:
        store.close()
    assert (record.run_id, record.state.value) == (run_id, "FAILED")
    assert "status 3" in (record.error or "")


SECRETS_SCRIPT = """
import json, sys
from awsglue.utils import getResolvedOptions
args = getResolvedOptions(sys.argv, ["JOB_NAME", "out", "db_password", "password", "jdbc_url"])
with open(args["out"], "w") as f:
    json.dump(args, f)
"""


def test_run_arguments_reach_the_script_as_given_secrets_included(glue, tmp_path, sparkmark_home):
    """Glue: the arguments of StartJobRun replace the job's DefaultArguments for that run
    (the Glue developer guide's job parameters page). Secret-named ones too: masking is
    for what is shown and stored, never for what the script receives."""
    script = tmp_path / "secrets.py"
    script.write_text(SECRETS_SCRIPT)
    out = tmp_path / "out.json"
    glue.create_job(
        Name="secretive",
        Role="r",
        Command={"Name": "glueetl", "ScriptLocation": str(script)},
        DefaultArguments={"--db_password": "the-default-pw", "--jdbc_url": "postgresql://u:defaultpw@h/db"},
    )
    given = {
        "--out": str(out),
        "--db_password": "the-runs-own-pw",  # overrides a default
        "--password": "only-in-this-run",  # no default at all
        "--jdbc_url": "postgresql://etl:url-held-pw@db.internal/sales",  # a password inside a URL
    }
    run_id = glue.start_job_run(JobName="secretive", Arguments=given)["JobRunId"]
    drive(lambda: glue.get_job_run(JobName="secretive", RunId=run_id)["JobRun"]["JobRunState"] == "SUCCEEDED")
    received = json.loads(out.read_text())
    assert {k: received[k.removeprefix("--")] for k in given} == given
    shown = glue.get_job_run(JobName="secretive", RunId=run_id)["JobRun"]["Arguments"]
    assert shown["--db_password"] == shown["--password"] == "****"
    assert "url-held-pw" not in shown["--jdbc_url"]
    stored = b"".join(p.read_bytes() for p in sparkmark_home.glob("state.db*"))
    for secret in ("the-runs-own-pw", "only-in-this-run", "url-held-pw"):
        assert secret.encode() not in stored  # sealed, never in clear


GLUE_CATALOG_SCRIPT = """
import sys
import boto3
import pyspark
from awsglue.utils import getResolvedOptions

args = getResolvedOptions(sys.argv, ["JOB_NAME", "database", "table", "day"])
glue = boto3.client("glue")
table = glue.get_table(DatabaseName=args["database"], Name=args["table"])["Table"]
keys = [k["Name"] for k in table["PartitionKeys"]]
location = table["StorageDescriptor"]["Location"].rstrip("/") + "/" + keys[0] + "=" + args["day"]
result = glue.batch_create_partition(
    DatabaseName=args["database"],
    TableName=args["table"],
    PartitionInputList=[{"Values": [args["day"]], "StorageDescriptor": {
        **table["StorageDescriptor"], "Location": location}}],
)
assert not result["Errors"], result["Errors"]
"""


def test_batch_get_partition_segments_and_column_statistics_as_trino_calls_them(glue, tmp_path):
    """The calls Trino's Glue metastore makes (AWS's API reference for each): partitions
    fetched by value, missing ones left out; GetPartitions in segments that together
    give every partition once; column statistics, of which none are kept."""
    glue.create_database(DatabaseInput={"Name": "trino"})
    glue.create_table(DatabaseName="trino", TableInput=orders_table(str(tmp_path / "orders")))
    made = [[str(year), region] for year in range(2019, 2026) for region in ("eu", "us")]
    glue.batch_create_partition(
        DatabaseName="trino", TableName="orders", PartitionInputList=[{"Values": v} for v in made]
    )
    got = glue.batch_get_partition(
        DatabaseName="trino",
        TableName="orders",
        PartitionsToGet=[{"Values": ["2020", "eu"]}, {"Values": ["1999", "eu"]}, {"Values": ["2025", "us"]}],
    )
    assert sorted(p["Values"] for p in got["Partitions"]) == [["2020", "eu"], ["2025", "us"]]
    assert got["UnprocessedKeys"] == []
    assert (
        glue.batch_get_partition(DatabaseName="trino", TableName="orders", PartitionsToGet=[])["Partitions"]
        == []
    )

    segments = [
        [p["Values"] for p in glue.get_partitions(
            DatabaseName="trino", TableName="orders", Segment={"SegmentNumber": n, "TotalSegments": 3}
        )["Partitions"]]
        for n in range(3)
    ]  # fmt: skip
    assert all(segments) and sorted(v for seg in segments for v in seg) == sorted(made)  # each once
    in_segment = glue.get_partitions(
        DatabaseName="trino", TableName="orders", Expression="year >= 2024",
        Segment={"SegmentNumber": 0, "TotalSegments": 1},
    )["Partitions"]  # fmt: skip
    assert sorted(p["Values"] for p in in_segment) == [
        ["2024", "eu"],
        ["2024", "us"],
        ["2025", "eu"],
        ["2025", "us"],
    ]
    with pytest.raises(glue.exceptions.InvalidInputException, match="SegmentNumber"):
        glue.get_partitions(
            DatabaseName="trino", TableName="orders", Segment={"SegmentNumber": 3, "TotalSegments": 3}
        )

    stats = glue.get_column_statistics_for_table(DatabaseName="trino", TableName="orders", ColumnNames=["id"])
    assert (stats["ColumnStatisticsList"], stats["Errors"]) == ([], [])
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_column_statistics_for_table(DatabaseName="trino", TableName="orders", ColumnNames=["nope"])
    part = glue.get_column_statistics_for_partition(
        DatabaseName="trino", TableName="orders", PartitionValues=["2020", "eu"], ColumnNames=["id"]
    )
    assert part["ColumnStatisticsList"] == []
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_column_statistics_for_partition(
            DatabaseName="trino", TableName="orders", PartitionValues=["1999", "eu"], ColumnNames=["id"]
        )


def test_a_glue_script_calls_get_table_and_batch_create_partition_under_sparkmark_run(glue, tmp_path):
    glue.create_database(DatabaseInput={"Name": "lake"})
    table = orders_table(str(tmp_path / "events"), name="events")
    table["PartitionKeys"] = [{"Name": "dt", "Type": "string"}]
    glue.create_table(DatabaseName="lake", TableInput=table)
    script = tmp_path / "partitions.py"
    script.write_text(GLUE_CATALOG_SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    done = subprocess.run(
        [sys.executable, "-m", "sparkmark", "run", str(script), "--JOB_NAME", "partitions",
         "--database", "lake", "--table", "events", "--day", "2026-11-24"],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    parts = glue.get_partitions(DatabaseName="lake", TableName="events")["Partitions"]
    assert [(p["Values"], p["StorageDescriptor"]["Location"]) for p in parts] == [
        (["2026-11-24"], str(tmp_path / "events" / "dt=2026-11-24"))
    ]


# ------------------------------------------------------------------ crawlers


def test_a_crawler_with_dynamodb_targets_is_kept_and_shown_back(glue):
    """DynamoDBTargets with Glue's field names (``scanAll``, ``scanRate``, lower case);
    a scanRate outside 0.1–1.5 is refused. The crawl itself: tests/test_dynamodb.py."""
    target = {"Path": "orders", "scanAll": False, "scanRate": 0.25}
    glue.create_crawler(
        Name="ddb-crawler", Role="r", DatabaseName="shop", Targets={"DynamoDBTargets": [target]}
    )
    shown = glue.get_crawler(Name="ddb-crawler")["Crawler"]["Targets"]["DynamoDBTargets"]
    assert shown == [target]
    with pytest.raises(glue.exceptions.InvalidInputException, match="scanRate"):
        glue.create_crawler(
            Name="ddb-bad", Role="r", DatabaseName="shop",
            Targets={"DynamoDBTargets": [{"Path": "orders", "scanRate": 3.0}]},
        )  # fmt: skip


def test_crawler_created_started_and_measured_through_the_api(glue, tmp_path):
    data = tmp_path / "lake" / "orders"
    data.mkdir(parents=True)
    (data / "a.csv").write_text("order_id,amount\n1,2.5\n2,3.0\n")
    glue.create_crawler(
        Name="raw-orders-crawler",
        Role="arn:aws:iam::123456789012:role/GlueServiceRole",
        DatabaseName="raw_data",
        Targets={"S3Targets": [{"Path": str(data), "Exclusions": ["**/_temporary/**"]}]},
        SchemaChangePolicy={"UpdateBehavior": "UPDATE_IN_DATABASE", "DeleteBehavior": "LOG"},
        Schedule="cron(0 2 * * ? *)",
    )
    crawler = glue.get_crawler(Name="raw-orders-crawler")["Crawler"]
    assert (crawler["State"], crawler["DatabaseName"], crawler["Role"]) == (
        "READY",
        "raw_data",
        "arn:aws:iam::123456789012:role/GlueServiceRole",
    )
    assert crawler["Schedule"]["ScheduleExpression"] == "cron(0 2 * * ? *)"
    with pytest.raises(glue.exceptions.AlreadyExistsException):
        glue.create_crawler(Name="raw-orders-crawler", Role="r", DatabaseName="x", Targets={"S3Targets": []})
    glue.start_crawler(Name="raw-orders-crawler")
    assert glue.get_crawler(Name="raw-orders-crawler")["Crawler"]["State"] == "RUNNING"
    with pytest.raises(glue.exceptions.CrawlerRunningException):
        glue.start_crawler(Name="raw-orders-crawler")

    def crawled() -> bool:
        now = glue.get_crawler(Name="raw-orders-crawler")["Crawler"]
        return now["State"] == "READY" and "LastCrawl" in now

    drive(crawled, 240)
    crawler = glue.get_crawler(Name="raw-orders-crawler")["Crawler"]
    assert crawler["LastCrawl"]["Status"] == "SUCCEEDED", crawler["LastCrawl"]
    assert crawler["State"] == "READY"
    metrics = glue.get_crawler_metrics(CrawlerNameList=["raw-orders-crawler"])["CrawlerMetricsList"][0]
    assert (metrics["TablesCreated"], metrics["TablesUpdated"], metrics["TablesDeleted"]) == (1, 0, 0)
    table = glue.get_table(DatabaseName="raw_data", Name="orders")["Table"]
    assert [(c["Name"], c["Type"]) for c in table["StorageDescriptor"]["Columns"]] == [
        ("order_id", "bigint"),
        ("amount", "double"),
    ]
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.start_crawler(Name="nope")

    # a started crawl that no scheduler has picked up yet is stopped before it starts
    glue.start_crawler(Name="raw-orders-crawler")
    with pytest.raises(glue.exceptions.CrawlerRunningException):
        glue.delete_crawler(Name="raw-orders-crawler")
    glue.stop_crawler(Name="raw-orders-crawler")
    assert glue.get_crawler(Name="raw-orders-crawler")["Crawler"]["State"] == "READY"
    with pytest.raises(glue.exceptions.CrawlerNotRunningException):
        glue.stop_crawler(Name="raw-orders-crawler")
    glue.delete_crawler(Name="raw-orders-crawler")
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_crawler(Name="raw-orders-crawler")
    assert glue.get_table(DatabaseName="raw_data", Name="orders")  # its tables stay, as on Glue


# ------------------------------------------------------------------ triggers and workflows


def test_workflow_run_through_the_api_with_run_properties(glue, tmp_path):
    script = tmp_path / "step.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            import boto3
            from awsglue.utils import getResolvedOptions
            args = getResolvedOptions(sys.argv, ["JOB_NAME", "WORKFLOW_NAME", "WORKFLOW_RUN_ID"])
            glue = boto3.client("glue")
            props = glue.get_workflow_run_properties(Name=args["WORKFLOW_NAME"], RunId=args["WORKFLOW_RUN_ID"])
            seen = props["RunProperties"].get("seen", "")
            glue.put_workflow_run_properties(Name=args["WORKFLOW_NAME"], RunId=args["WORKFLOW_RUN_ID"],
                                             RunProperties={"seen": seen + args["JOB_NAME"] + ";"})
            """
        )
    )
    for name in ("first", "second"):
        glue.create_job(Name=name, Role="r", Command={"Name": "glueetl", "ScriptLocation": str(script)})
    glue.create_workflow(Name="daily-orders-pipeline", DefaultRunProperties={"env": "test"})
    glue.create_trigger(
        Name="start", WorkflowName="daily-orders-pipeline", Type="ON_DEMAND", Actions=[{"JobName": "first"}]
    )
    glue.create_trigger(
        Name="after-first",
        WorkflowName="daily-orders-pipeline",
        Type="CONDITIONAL",
        StartOnCreation=True,
        Predicate={"Logical": "AND", "Conditions": [
            {"LogicalOperator": "EQUALS", "JobName": "first", "State": "SUCCEEDED"}]},
        Actions=[{"JobName": "second"}],
    )  # fmt: skip
    assert glue.get_trigger(Name="after-first")["Trigger"]["State"] == "ACTIVATED"
    assert glue.get_trigger(Name="start")["Trigger"]["State"] == "CREATED"
    assert sorted(t["Name"] for t in glue.get_triggers(DependentJobName="second")["Triggers"]) == [
        "after-first"
    ]
    # An API user is advised in the API's terms, not told to edit a project file.
    with pytest.raises(
        glue.exceptions.InvalidInputException, match=r"create it first \(CreateJob\)"
    ) as refused:
        glue.create_trigger(Name="dangling", Type="ON_DEMAND", Actions=[{"JobName": "no-such-job"}])
    assert "[jobs." not in str(refused.value) and "sparkmark.toml" not in str(refused.value)
    with pytest.raises(glue.exceptions.InvalidInputException, match="cycle"):
        glue.create_trigger(
            Name="loop",
            WorkflowName="daily-orders-pipeline",
            Type="CONDITIONAL",
            Predicate={
                "Conditions": [{"LogicalOperator": "EQUALS", "JobName": "second", "State": "SUCCEEDED"}]
            },
            Actions=[{"JobName": "first"}],
        )

    run_id = glue.start_workflow_run(Name="daily-orders-pipeline", RunProperties={"day": "2026-11-24"})[
        "RunId"
    ]
    drive(
        lambda: (
            glue.get_workflow_run(Name="daily-orders-pipeline", RunId=run_id)["Run"]["Status"] == "COMPLETED"
        )
    )
    run = glue.get_workflow_run(Name="daily-orders-pipeline", RunId=run_id, IncludeGraph=True)["Run"]
    assert run["Statistics"]["SucceededActions"] == 2
    assert run["WorkflowRunProperties"] == {"env": "test", "day": "2026-11-24", "seen": "first;second;"}
    jobs = {
        n["Name"]: n["JobDetails"]["JobRuns"][0]["JobRunState"]
        for n in run["Graph"]["Nodes"]
        if n["Type"] == "JOB"
    }
    assert jobs == {"first": "SUCCEEDED", "second": "SUCCEEDED"}
    props = glue.get_workflow_run_properties(Name="daily-orders-pipeline", RunId=run_id)["RunProperties"]
    assert props["seen"] == "first;second;"
    workflow = glue.get_workflow(Name="daily-orders-pipeline", IncludeGraph=True)["Workflow"]
    assert workflow["LastRun"]["WorkflowRunId"] == run_id
    assert {n["Name"] for n in workflow["Graph"]["Nodes"]} == {"start", "after-first", "first", "second"}
    glue.stop_trigger(Name="after-first")
    assert glue.get_trigger(Name="after-first")["Trigger"]["State"] == "DEACTIVATED"
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_workflow_run(Name="daily-orders-pipeline", RunId="wr_missing")


# ------------------------------------------------------------------ data quality


def test_data_quality_results_listed_and_read(glue, spark):
    from sparkmark import Job

    job = Job.from_args(
        ["job.py", "--JOB_NAME", "checked", "--job-bookmark-option", "job-bookmark-disable"],
        spark=spark,
        store=StateStore.from_settings(),
        settings=Settings.from_env(),
    )
    df = spark.createDataFrame([(1, "a"), (2, None)], "id int, name string")
    job.evaluate_quality(df, 'Rules = [ IsComplete "id", IsComplete "name" ]', name="orders_rules")
    job.commit()
    listed = glue.list_data_quality_results(Filter={"JobName": "checked"})["Results"]
    assert [(r["JobName"], r["JobRunId"]) for r in listed] == [("checked", job.run_id)]
    result = glue.get_data_quality_result(ResultId=listed[0]["ResultId"])
    assert (result["RulesetName"], result["Score"]) == ("orders_rules", 0.5)
    outcomes = {r["Name"]: r["Result"] for r in result["RuleResults"]}
    assert outcomes == {'IsComplete "id"': "PASS", 'IsComplete "name"': "FAIL"}
    assert not glue.list_data_quality_results(Filter={"JobName": "other"})["Results"]
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_data_quality_result(ResultId="dqresult-9999")


# ------------------------------------------------------------------ signatures


@pytest.mark.slow
def test_a_token_is_checked_against_the_request_signature(config, sparkmark_home, monkeypatch):
    monkeypatch.setenv("SPARKMARK_API_TOKEN", "s3cret-token")
    running = start_in_thread(Settings.from_env())
    try:
        assert client(running.url, secret="s3cret-token").get_databases()["DatabaseList"] == []
        wrong = client(running.url, secret="guess")
        with pytest.raises(wrong.exceptions.AccessDeniedException, match="signature does not match"):
            wrong.get_databases()
        status, answer = post(running.url, "AWSGlue.GetDatabases", b"{}", secret=None)  # not signed
        assert (status, answer["__type"]) == (403, "AccessDeniedException")
    finally:
        running.stop()


@pytest.mark.slow
def test_binding_beyond_loopback_needs_a_long_token(config, sparkmark_home, monkeypatch):
    from sparkmark.api.server import listen_of

    assert len(listen_of(Settings.from_env(), "0.0.0.0", 0).token) >= 32  # the home's own
    monkeypatch.setenv("SPARKMARK_API_TOKEN", "t" * 32)
    listen_of(Settings.from_env(), "0.0.0.0", 0)
    monkeypatch.setenv("SPARKMARK_API_TOKEN", "short")
    listen_of(Settings.from_env(), "127.0.0.1", 0)  # on this machine only: the user's choice
    with pytest.raises(ConfigError, match="SPARKMARK_API_TOKEN"):
        listen_of(Settings.from_env(), "0.0.0.0", 0)
    done = subprocess.run(
        [sys.executable, "-m", "sparkmark", "api", "--host", "0.0.0.0", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.strip().count("\n") == 0 and "at least 32 characters" in done.stderr
    assert "short" not in done.stderr


# ------------------------------------------------------------------ the AWS CLI


def test_the_seed_guides_cli_commands_run_against_the_endpoint(glue, spark, tmp_path):
    """The `aws glue` commands of the guides, unchanged but for the endpoint (see the
    script), through the real AWS CLI."""
    from sparkmark import Job

    data = tmp_path / "orders"
    write_json(data / "a.json", [1])
    job = Job.from_args(
        ["job.py", "--JOB_NAME", "orders-transform", "--job-bookmark-option", "job-bookmark-enable"],
        spark=spark,
        store=StateStore.from_settings(),
        settings=Settings.from_env(),
    )
    job.read_files(str(data), format="json", ctx="src").count()
    job.commit()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AWS_")},
        "GLUE_ENDPOINT": glue.meta.endpoint_url,
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": home_token(),
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    done = subprocess.run(["bash", str(SEED_COMMANDS)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "RUNNING" in lines  # get-crawler --query Crawler.State --output text, after start-crawler
    assert glue.get_job(JobName="orders-transform")["Job"]["DefaultArguments"]["--job-bookmark-option"] == (
        "job-bookmark-disable"
    )
    assert (
        json.loads(glue.get_job_bookmark(JobName="orders-transform")["JobBookmarkEntry"]["JobBookmark"]) == {}
    )
    assert glue.get_trigger(Name="start-raw-crawl")["Trigger"]["State"] == "ACTIVATED"
    assert glue.get_trigger(Name="after-raw-crawl")["Trigger"]["Predicate"]["Conditions"][0][
        "CrawlState"
    ] == ("SUCCEEDED")
    runs = glue.get_workflow_runs(Name="daily-orders-pipeline")["Runs"]
    assert len(runs) == 1
    assert f"workflow run: {runs[0]['WorkflowRunId']}" in lines
    graph_types = {t for line in lines for t in line.split() if t in ("TRIGGER", "JOB", "CRAWLER")}
    assert graph_types == {"TRIGGER", "JOB", "CRAWLER"}  # --include-graph, crawler nodes included
    connection = glue.get_connection(Name="rds-postgres-prod", HidePassword=True)["Connection"]
    assert connection["ConnectionProperties"]["USERNAME"] == "glue_reader"
    assert connection["PhysicalConnectionRequirements"]["SubnetId"] == "subnet-0abc1234"


DEVUTILS_SCRIPT = """
import sys
from awsglue.context import GlueContext
from awsglue.devutils import Command, GlueJobUtils, Job
from awsglue.utils import getResolvedOptions

args = getResolvedOptions(sys.argv, ["JOB_NAME", "source", "target"])
utils = GlueJobUtils(None)
job = Job()
job.name = "made-by-devutils"
job.command = Command("glueetl", args["target"])
job.defaultArguments = {"--job-bookmark-option": "job-bookmark-enable"}
utils.create_job(job, args["source"])
found = utils.get_job("made-by-devutils")
found.maxRetries = 2
utils.update_job(found)
assert [j.name for j in utils.get_jobs()["jobs"]] == ["made-by-devutils"]
"""


def test_devutils_manages_jobs_through_the_endpoint(glue, tmp_path):
    """awsglue.devutils: a script creates and updates a job; its script file is copied
    to the job's script location."""
    script = tmp_path / "manage.py"
    script.write_text(DEVUTILS_SCRIPT)
    source = tmp_path / "etl.py"
    source.write_text("print('the job script')\n")
    target = tmp_path / "published" / "etl.py"
    target.parent.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    done = subprocess.run(
        [sys.executable, "-m", "sparkmark", "run", str(script), "--JOB_NAME", "manage",
         "--source", str(source), "--target", str(target)],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert target.read_text() == "print('the job script')\n"
    job = glue.get_job(JobName="made-by-devutils")["Job"]
    assert job["Command"]["ScriptLocation"] == str(target)
    assert job["MaxRetries"] == 2
    assert job["DefaultArguments"] == {"--job-bookmark-option": "job-bookmark-enable"}


@pytest.mark.slow
def test_sparkmark_api_serves_records_itself_and_starts_what_it_queues(config, sparkmark_home, tmp_path):
    """`sparkmark api` in its own process: it announces its URL, records it for other
    sparkmark processes, and its scheduler starts a run queued through it."""
    from sparkmark.api.server import running_endpoint

    server = subprocess.Popen(
        [sys.executable, "-m", "sparkmark", "api", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith("Glue API endpoint: http://127.0.0.1:"), line
        url = line.split(": ", 1)[1].strip()
        assert running_endpoint(Settings.from_env()) == url
        glue = client(url)
        script = tmp_path / "plain.py"
        script.write_text(PLAIN_SCRIPT)
        out = tmp_path / "out.json"
        glue.create_job(Name="plain", Role="r", Command={"Name": "glueetl", "ScriptLocation": str(script)})
        run_id = glue.start_job_run(JobName="plain", Arguments={"--out": str(out)})["JobRunId"]
        waiter = StateStore.from_settings()
        scheduler = Scheduler(ProjectSource(config, waiter).current(), waiter, leading=False)

        def state() -> str:
            return glue.get_job_run(JobName="plain", RunId=run_id)["JobRun"]["JobRunState"]

        assert scheduler.run(until=lambda: state() == "SUCCEEDED", max_seconds=120, poll_seconds=0.1)
        assert json.loads(out.read_text())["JOB_NAME"] == "plain"
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert running_endpoint(Settings.from_env()) is None  # it removed its record on the way out


# ------------------------------------------------------------------ what the ecosystem's clients call
# Terraform's provider reads tags after each create and batch-gets what it manages; the
# AWS CLI and awswrangler list crawlers and triggers. Expectations are Glue's API
# reference: names not found listed beside the ones found, tags keyed by the resource's
# ARN, crawls newest first as CrawlerHistory.

ARN = "arn:aws:glue:eu-west-1:123456789012:{}"


def _job(glue, name: str, **extra) -> None:
    glue.create_job(
        Name=name, Role="r", Command={"Name": "glueetl", "ScriptLocation": "/tmp/none.py"}, **extra
    )


def _crawler(glue, name: str, tmp_path, **extra) -> None:
    glue.create_crawler(
        Name=name, Role="r", DatabaseName="sales", Targets={"S3Targets": [{"Path": str(tmp_path)}]}, **extra
    )


def test_batch_gets_list_what_is_found_and_what_is_not(glue, tmp_path):
    _job(glue, "load")
    _job(glue, "report")
    _crawler(glue, "orders", tmp_path)
    glue.create_workflow(Name="nightly")
    glue.create_trigger(Name="go", WorkflowName="nightly", Type="ON_DEMAND", Actions=[{"JobName": "load"}])

    jobs = glue.batch_get_jobs(JobNames=["report", "missing", "load"])
    assert [j["Name"] for j in jobs["Jobs"]] == ["report", "load"]
    assert jobs["JobsNotFound"] == ["missing"]
    crawlers = glue.batch_get_crawlers(CrawlerNames=["orders", "nope"])
    assert [c["Name"] for c in crawlers["Crawlers"]] == ["orders"] and crawlers["CrawlersNotFound"] == [
        "nope"
    ]
    triggers = glue.batch_get_triggers(TriggerNames=["go", "gone"])
    assert [t["Name"] for t in triggers["Triggers"]] == ["go"] and triggers["TriggersNotFound"] == ["gone"]
    workflows = glue.batch_get_workflows(Names=["nightly", "weekly"], IncludeGraph=True)
    assert workflows["MissingWorkflows"] == ["weekly"]
    assert {n["Name"] for n in workflows["Workflows"][0]["Graph"]["Nodes"]} == {"go", "load"}
    assert glue.batch_get_jobs(JobNames=["missing"])["Jobs"] == []

    assert glue.list_crawlers()["CrawlerNames"] == ["orders"]
    assert glue.list_triggers()["TriggerNames"] == ["go"]
    assert glue.list_triggers(DependentJobName="load")["TriggerNames"] == ["go"]
    assert glue.list_triggers(DependentJobName="report")["TriggerNames"] == []
    first = glue.list_crawlers(MaxResults=1)
    assert first["CrawlerNames"] == ["orders"] and "NextToken" not in first


def test_tags_given_on_create_added_removed_and_read_by_arn(glue, tmp_path):
    _job(glue, "load", Tags={"team": "data", "cost": "etl"})
    job_arn = ARN.format("job/load")
    assert glue.get_tags(ResourceArn=job_arn)["Tags"] == {"team": "data", "cost": "etl"}
    # Another region and account in the ARN name the same job.
    assert glue.get_tags(ResourceArn="arn:aws:glue:us-east-1:000000000000:job/load")["Tags"]["team"] == "data"
    glue.tag_resource(ResourceArn=job_arn, TagsToAdd={"team": "platform", "tier": "gold"})
    glue.untag_resource(ResourceArn=job_arn, TagsToRemove=["cost", "absent"])
    assert glue.get_tags(ResourceArn=job_arn)["Tags"] == {"team": "platform", "tier": "gold"}

    _crawler(glue, "orders", tmp_path, Tags={"owner": "ann"})
    assert glue.get_tags(ResourceArn=ARN.format("crawler/orders"))["Tags"] == {"owner": "ann"}
    glue.create_workflow(Name="nightly", Tags={"k": "v"})
    assert glue.get_tags(ResourceArn=ARN.format("workflow/nightly"))["Tags"] == {"k": "v"}
    glue.create_database(DatabaseInput={"Name": "sales"}, Tags={"domain": "sales"})
    assert glue.get_tags(ResourceArn=ARN.format("database/sales"))["Tags"] == {"domain": "sales"}
    glue.create_trigger(Name="go", Type="ON_DEMAND", Actions=[{"JobName": "load"}])
    assert glue.get_tags(ResourceArn=ARN.format("trigger/go"))["Tags"] == {}

    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_tags(ResourceArn=ARN.format("job/never"))
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.tag_resource(ResourceArn=ARN.format("crawler/never"), TagsToAdd={"a": "b"})
    with pytest.raises(glue.exceptions.InvalidInputException, match="not the ARN of a Glue"):
        glue.get_tags(ResourceArn="arn:aws:s3:::bucket")

    with pytest.raises(glue.exceptions.InvalidInputException, match=r"named by trigger\(s\) go"):
        glue.delete_job(JobName="load")  # the trigger would name nothing
    glue.delete_trigger(Name="go")
    glue.delete_job(JobName="load")  # a job made again under the name starts with no tags
    _job(glue, "load")
    assert glue.get_tags(ResourceArn=job_arn)["Tags"] == {}


def test_list_crawls_newest_first_with_filters(glue, tmp_path):
    _crawler(glue, "orders", tmp_path)
    assert glue.list_crawls(CrawlerName="orders")["Crawls"] == []
    crawlers = CrawlerStore(StateStore.from_settings())
    crawlers.begin("orders", "cr_1")
    crawlers.finish("orders", "cr_1", "SUCCEEDED", {"tables_created": 1}, [])
    crawlers.begin("orders", "cr_2")
    crawlers.finish("orders", "cr_2", "FAILED", {}, [{"path": "s3://b/x.csv", "error": "unreadable"}])

    crawls = glue.list_crawls(CrawlerName="orders")["Crawls"]
    assert [(c["CrawlId"], c["State"]) for c in crawls] == [("cr_2", "FAILED"), ("cr_1", "COMPLETED")]
    assert json.loads(crawls[1]["Summary"]) == {"tables_created": 1}
    assert "unreadable" in crawls[0]["ErrorMessage"]
    assert crawls[0]["LogGroup"] == "/aws-glue/crawlers" and crawls[0]["LogStream"] == "orders"
    failed = glue.list_crawls(
        CrawlerName="orders", Filters=[{"FieldName": "STATE", "FilterOperator": "EQ", "FieldValue": "FAILED"}]
    )["Crawls"]
    assert [c["CrawlId"] for c in failed] == ["cr_2"]
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.list_crawls(CrawlerName="nope")
    with pytest.raises(glue.exceptions.InvalidInputException, match="does not apply"):
        glue.list_crawls(
            CrawlerName="orders", Filters=[{"FieldName": "STATE", "FilterOperator": "GT", "FieldValue": "A"}]
        )


def test_classifiers_made_through_the_api_and_declared_in_the_file(glue, config):
    """CreateClassifier, GetClassifier(s), UpdateClassifier and DeleteClassifier for the
    four kinds (botocore's Glue model); the file's classifiers are listed and read, not
    changed; an update cannot change a classifier's kind (Glue's InvalidInputException)."""
    assert glue.get_classifiers()["Classifiers"] == []
    config.write_text(
        '[classifiers.pipes.CsvClassifier]\nDelimiter = "|"\nContainsHeader = "PRESENT"\n', encoding="utf-8"
    )
    glue.create_classifier(
        GrokClassifier={
            "Name": "access",
            "Classification": "access_log",
            "GrokPattern": "%{IPV4:client} %{STATUS:status:int}",
            "CustomPatterns": "STATUS [1-5][0-9]{2}",
        }
    )
    glue.create_classifier(JsonClassifier={"Name": "items", "JsonPath": "$.items[*]"})
    glue.create_classifier(XMLClassifier={"Name": "books", "Classification": "xml", "RowTag": "book"})
    with pytest.raises(glue.exceptions.AlreadyExistsException):
        glue.create_classifier(JsonClassifier={"Name": "items", "JsonPath": "$[*]"})
    with pytest.raises(glue.exceptions.InvalidInputException, match="NOPE"):
        glue.create_classifier(
            GrokClassifier={"Name": "bad", "Classification": "x", "GrokPattern": "%{NOPE:a}"}
        )
    with pytest.raises(glue.exceptions.InvalidInputException, match="pipes.*change it there"):
        glue.create_classifier(CsvClassifier={"Name": "pipes", "Delimiter": ","})
    names = [next(iter(c.values()))["Name"] for c in glue.get_classifiers()["Classifiers"]]
    assert names == ["access", "books", "items", "pipes"]
    grok = glue.get_classifier(Name="access")["Classifier"]["GrokClassifier"]
    assert grok["Classification"] == "access_log" and grok["Version"] == 1 and grok["CreationTime"]
    pipes = glue.get_classifier(Name="pipes")["Classifier"]["CsvClassifier"]
    assert pipes["Delimiter"] == "|" and pipes["ContainsHeader"] == "PRESENT" and pipes["QuoteSymbol"] == '"'

    glue.update_classifier(XMLClassifier={"Name": "books", "RowTag": "volume"})
    books = glue.get_classifier(Name="books")["Classifier"]["XMLClassifier"]
    assert (books["RowTag"], books["Classification"], books["Version"]) == ("volume", "xml", 2)
    with pytest.raises(glue.exceptions.InvalidInputException, match="cannot change its type"):
        glue.update_classifier(JsonClassifier={"Name": "books", "JsonPath": "$"})
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.update_classifier(JsonClassifier={"Name": "nope", "JsonPath": "$"})
    with pytest.raises(glue.exceptions.InvalidInputException, match="change it there"):
        glue.delete_classifier(Name="pipes")
    glue.delete_classifier(Name="books")
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_classifier(Name="books")
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.delete_classifier(Name="books")


def test_security_configurations_policies_and_encryption_settings_are_kept(glue):
    """The calls Terraform's aws_glue_security_configuration (Create, Get, Delete),
    aws_glue_resource_policy (Put, Get, Delete) and
    aws_glue_data_catalog_encryption_settings (Put, Get) make, answered as Glue answers
    them: a catalog never given settings has encryption DISABLED; a policy's hash
    conditions are checked (ConditionCheckFailureException)."""
    encryption = {
        "S3Encryption": [{"S3EncryptionMode": "SSE-S3"}],
        "CloudWatchEncryption": {"CloudWatchEncryptionMode": "DISABLED"},
        "JobBookmarksEncryption": {"JobBookmarksEncryptionMode": "DISABLED"},
    }
    made = glue.create_security_configuration(Name="s3-sse", EncryptionConfiguration=encryption)
    assert made["Name"] == "s3-sse" and made["CreatedTimestamp"]
    with pytest.raises(glue.exceptions.AlreadyExistsException):
        glue.create_security_configuration(Name="s3-sse", EncryptionConfiguration=encryption)
    found = glue.get_security_configuration(Name="s3-sse")["SecurityConfiguration"]
    assert found["EncryptionConfiguration"] == encryption
    assert [c["Name"] for c in glue.get_security_configurations()["SecurityConfigurations"]] == ["s3-sse"]
    glue.delete_security_configuration(Name="s3-sse")
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_security_configuration(Name="s3-sse")
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.delete_security_configuration(Name="s3-sse")

    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_resource_policy()
    policy = '{"Version": "2012-10-17", "Statement": []}'
    with pytest.raises(glue.exceptions.ConditionCheckFailureException):
        glue.put_resource_policy(PolicyInJson=policy, PolicyExistsCondition="MUST_EXIST")
    first = glue.put_resource_policy(PolicyInJson=policy, PolicyExistsCondition="NOT_EXIST")["PolicyHash"]
    got = glue.get_resource_policy()
    assert got["PolicyInJson"] == policy and got["PolicyHash"] == first
    changed = '{"Version": "2012-10-17", "Statement": [{"Effect": "Deny"}]}'
    with pytest.raises(glue.exceptions.ConditionCheckFailureException):
        glue.put_resource_policy(PolicyInJson=changed, PolicyHashCondition="not-the-hash")
    second = glue.put_resource_policy(PolicyInJson=changed, PolicyHashCondition=first)["PolicyHash"]
    assert second != first
    assert [p["PolicyHash"] for p in glue.get_resource_policies()["GetResourcePoliciesResponseList"]] == [
        second
    ]
    with pytest.raises(glue.exceptions.InvalidInputException, match="not a JSON document"):
        glue.put_resource_policy(PolicyInJson="{nope")
    glue.delete_resource_policy(PolicyHashCondition=second)
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_resource_policy()

    default = glue.get_data_catalog_encryption_settings()["DataCatalogEncryptionSettings"]
    assert default["EncryptionAtRest"]["CatalogEncryptionMode"] == "DISABLED"
    wanted = {
        "EncryptionAtRest": {"CatalogEncryptionMode": "SSE-KMS", "SseAwsKmsKeyId": "alias/glue"},
        "ConnectionPasswordEncryption": {
            "ReturnConnectionPasswordEncrypted": True,
            "AwsKmsKeyId": "alias/pw",
        },
    }
    glue.put_data_catalog_encryption_settings(DataCatalogEncryptionSettings=wanted)
    assert glue.get_data_catalog_encryption_settings()["DataCatalogEncryptionSettings"] == wanted
    with pytest.raises(glue.exceptions.InvalidInputException, match="SseAwsKmsKeyId"):
        glue.put_data_catalog_encryption_settings(
            DataCatalogEncryptionSettings={"EncryptionAtRest": {"CatalogEncryptionMode": "SSE-KMS"}}
        )


def test_ml_transforms_and_dev_endpoints_are_refused_saying_why(glue):
    with pytest.raises(
        glue.exceptions.ClientError, match="CreateMLTransform: ML transforms .* AWS trains and hosts"
    ):
        glue.create_ml_transform(
            Name="dedupe",
            InputRecordTables=[{"DatabaseName": "d", "TableName": "t"}],
            Parameters={
                "TransformType": "FIND_MATCHES",
                "FindMatchesParameters": {"PrimaryKeyColumnName": "id"},
            },
            Role="r",
        )
    with pytest.raises(
        glue.exceptions.ClientError, match="GetDevEndpoints: development endpoints are retired"
    ):
        glue.get_dev_endpoints()


LOGGING_SCRIPT = """
import sys
from awsglue.utils import getResolvedOptions
args = getResolvedOptions(sys.argv, ["JOB_NAME", "day"])
for number in range(3):
    print(f"processed batch {number} of day {args['day']}")
print("connecting to postgresql://etl:hunter2pw@db.internal/sales")
print("a connection's password, printed bare: pw-printed-4242")
print("WARN a warning for the error group", file=sys.stderr)
"""


def logs_client(url: str):
    return boto3.client(
        "logs",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key=home_token(),
        config=Config(retries={"max_attempts": 1}),
    )


def test_a_runs_logs_are_served_as_cloudwatch_logs_glue_tools_read(glue, endpoint, tmp_path):
    """Glue writes a run's stdout to the log group /aws-glue/jobs/output and its stderr to
    /aws-glue/jobs/error, a stream per run named by its id, and JobRun.LogGroupName names
    the prefix (Airflow's Glue operator with verbose=True reads them so, through
    FilterLogEvents with the run id as the stream)."""
    script = tmp_path / "logging.py"
    script.write_text(LOGGING_SCRIPT)
    glue.create_connection(
        ConnectionInput={
            "Name": "printed",
            "ConnectionType": "JDBC",
            "ConnectionProperties": {
                "JDBC_CONNECTION_URL": PG_JDBC,
                "USERNAME": "u",
                "PASSWORD": "pw-printed-4242",
            },
        }
    )
    glue.create_job(Name="chatty", Role="r", Command={"Name": "glueetl", "ScriptLocation": str(script)})
    run_id = glue.start_job_run(JobName="chatty", Arguments={"--day": "2026-11-26"})["JobRunId"]
    drive(lambda: glue.get_job_run(JobName="chatty", RunId=run_id)["JobRun"]["JobRunState"] == "SUCCEEDED")
    run = glue.get_job_run(JobName="chatty", RunId=run_id)["JobRun"]
    assert run["LogGroupName"] == "/aws-glue/jobs"
    # A job that names no capacity runs, on Glue, on its default of 10 G.1X workers; one that
    # names no GlueVersion runs on sparkmark's own Spark, and shows the Glue version that is.
    own = glue_versions.release_for_spark(pyspark.__version__).version
    assert (run["GlueVersion"], run["WorkerType"], run["NumberOfWorkers"]) == (own, "G.1X", 10)
    assert run["ExecutionClass"] == "STANDARD"
    assert run["Arguments"] == {"--day": "2026-11-26"}

    logs = logs_client(endpoint.url)
    output = logs.get_log_events(
        logGroupName=f"{run['LogGroupName']}/output", logStreamName=run_id, startFromHead=True
    )
    printed = [e["message"] for e in output["events"]]
    assert printed[:3] == [f"processed batch {n} of day 2026-11-26" for n in range(3)]
    assert not any("hunter2pw" in line for line in printed)  # masked, as everywhere
    # A connection's password is masked wherever a job prints it, shape or none.
    assert "a connection's password, printed bare: ****" in printed
    assert any("postgresql://etl:" in line for line in printed)
    more = logs.get_log_events(
        logGroupName="/aws-glue/jobs/output", logStreamName=run_id, nextToken=output["nextForwardToken"]
    )
    assert more["events"] == []  # nothing after the last line

    # Airflow's way: a paginator over FilterLogEvents, then a later call from its last token.
    pages = logs.get_paginator("filter_log_events").paginate(
        logGroupName="/aws-glue/jobs/error", logStreamNames=[run_id]
    )
    seen, token = [], None
    for page in pages:
        seen += [e["message"] for e in page["events"]]
        token = page.get("nextToken") or token
    assert "WARN a warning for the error group" in seen
    assert not any(line.startswith("processed batch") for line in seen)
    later = logs.filter_log_events(
        logGroupName="/aws-glue/jobs/error", logStreamNames=[run_id], nextToken=token
    )
    assert later["events"] == [] and "nextToken" not in later
    only = logs.filter_log_events(
        logGroupName="/aws-glue/jobs/output", logStreamNames=[run_id], filterPattern='"batch 1"'
    )
    assert [e["message"] for e in only["events"]] == ["processed batch 1 of day 2026-11-26"]
    streams = logs.describe_log_streams(logGroupName="/aws-glue/jobs/output")["logStreams"]
    assert [s["logStreamName"] for s in streams] == [run_id]

    with pytest.raises(logs.exceptions.ResourceNotFoundException):
        logs.get_log_events(logGroupName="/aws-glue/jobs/logs-v2", logStreamName=run_id)
    with pytest.raises(logs.exceptions.ResourceNotFoundException):
        logs.get_log_events(logGroupName="/aws-glue/jobs/output", logStreamName="jr_unknown")
    assert (
        logs.filter_log_events(logGroupName="/aws-glue/jobs/output", logStreamNames=["jr_unknown"])["events"]
        == []
    )


def test_a_run_started_by_sparkmark_run_shows_its_arguments_as_glue_does(glue, spark):
    """JobRun.Arguments are the run's arguments in Glue's form (``--job-bookmark-option``),
    not the names sparkmark records them under, and not what it adds itself."""
    from sparkmark import Job

    job = Job.from_args(
        [
            "job.py",
            "--JOB_NAME",
            "cli-run",
            "--job-bookmark-option",
            "job-bookmark-enable",
            "--input",
            "s3://b/in",
        ],
        spark=spark,
        store=StateStore.from_settings(),
        settings=Settings.from_env(),
    )
    job.commit()
    run = glue.get_job_run(JobName="cli-run", RunId=job.run_id)["JobRun"]
    assert run["Arguments"] == {"--job-bookmark-option": "job-bookmark-enable", "--input": "s3://b/in"}
    assert run["LogGroupName"] == "/aws-glue/jobs"


def test_tables_carry_their_create_and_update_times(glue, tmp_path):
    """Glue's Table has CreateTime and UpdateTime: an update moves UpdateTime, never
    CreateTime. GetTables gives them for every table."""
    glue.create_database(DatabaseInput={"Name": "timed"})
    glue.create_table(DatabaseName="timed", TableInput=orders_table(str(tmp_path / "orders"), name="orders"))
    made = glue.get_table(DatabaseName="timed", Name="orders")["Table"]
    assert made["CreateTime"] <= made["UpdateTime"]
    changed = orders_table(str(tmp_path / "orders"), name="orders")
    changed["StorageDescriptor"]["Columns"].append({"Name": "note", "Type": "string"})
    glue.update_table(DatabaseName="timed", TableInput=changed)
    after = glue.get_table(DatabaseName="timed", Name="orders")["Table"]
    assert after["CreateTime"] == made["CreateTime"]
    assert after["UpdateTime"] >= made["UpdateTime"]
    listed = glue.get_tables(DatabaseName="timed")["TableList"]
    assert [(t["Name"], t["CreateTime"]) for t in listed] == [("orders", made["CreateTime"])]


def test_sts_get_caller_identity_answers_an_authenticated_caller(endpoint):
    """Terraform's provider and Airflow's crawler operator ask STS who they are before
    building ARNs; the endpoint answers for the caller it authenticated, and no one else."""
    from botocore.exceptions import ClientError

    def sts(secret: str):
        return boto3.client(
            "sts",
            endpoint_url=endpoint.url,
            region_name="us-east-1",
            aws_access_key_id="etl-user",
            aws_secret_access_key=secret,
            config=Config(retries={"max_attempts": 1}),
        )

    me = sts(home_token()).get_caller_identity()
    assert (me["Account"], me["Arn"], me["UserId"]) == (
        "000000000000",
        "arn:aws:iam::000000000000:user/etl-user",
        "etl-user",
    )
    with pytest.raises(ClientError, match="AccessDeniedException"):
        sts("not-the-token").get_caller_identity()


# ------------------------------------------------------------------ connections


PG_JDBC = "jdbc:postgresql://127.0.0.1:5432/test"


def test_connections_created_read_updated_and_deleted_as_glue_does(glue, config, sparkmark_home):
    """CreateConnection keeps a JDBC connection; GetConnection answers its password only
    when HidePassword is false; UpdateConnection without a password keeps it; the ones
    sparkmark.toml declares are listed (never with a password) and read-only here."""
    config.write_text('[connections.filed]\nurl = "jdbc:postgresql://db.internal/x"\nuser = "etl"\n')
    glue.create_connection(
        ConnectionInput={
            "Name": "warehouse",
            "ConnectionType": "JDBC",
            "ConnectionProperties": {
                "JDBC_CONNECTION_URL": PG_JDBC,
                "USERNAME": "postgres",
                "PASSWORD": "pw-0xC0FFEE",
            },
            "MatchCriteria": ["prod"],
        },
        Tags={"team": "data"},
    )
    shown = glue.get_connection(Name="warehouse")["Connection"]
    assert shown["ConnectionType"] == "JDBC" and shown["MatchCriteria"] == ["prod"]
    assert shown["ConnectionProperties"] == {
        "JDBC_CONNECTION_URL": PG_JDBC,
        "USERNAME": "postgres",
        "PASSWORD": "pw-0xC0FFEE",
    }
    hidden = glue.get_connection(Name="warehouse", HidePassword=True)["Connection"]
    assert "PASSWORD" not in hidden["ConnectionProperties"]
    # A password written inside the address is hidden too.
    glue.create_connection(
        ConnectionInput={
            "Name": "inline",
            "ConnectionType": "JDBC",
            "ConnectionProperties": {
                "JDBC_CONNECTION_URL": "jdbc:postgresql://etl:pw-in-url-9@db.internal/x?password=pw-in-query-9"
            },
        }
    )
    inline = glue.get_connection(Name="inline", HidePassword=True)["Connection"]["ConnectionProperties"]
    assert inline["JDBC_CONNECTION_URL"] == "jdbc:postgresql://etl:****@db.internal/x?password=****"
    shown_inline = glue.get_connection(Name="inline")["Connection"]["ConnectionProperties"]
    assert "pw-in-url-9" in shown_inline["JDBC_CONNECTION_URL"]  # as Glue, when not hidden
    glue.delete_connection(ConnectionName="inline")
    stored = b"".join(p.read_bytes() for p in sparkmark_home.glob("state.db*"))
    assert b"pw-0xC0FFEE" not in stored  # sealed in the state store
    assert glue.get_tags(ResourceArn=ARN.format("connection/warehouse"))["Tags"] == {"team": "data"}
    assert [
        c["Name"] for c in glue.get_connections(Filter={"MatchCriteria": ["prod"]})["ConnectionList"]
    ] == ["warehouse"]
    assert glue.get_connections(Filter={"MatchCriteria": ["test"]})["ConnectionList"] == []

    glue.update_connection(
        Name="warehouse",
        ConnectionInput={
            "Name": "warehouse",
            "ConnectionType": "JDBC",
            "ConnectionProperties": {"JDBC_CONNECTION_URL": PG_JDBC, "USERNAME": "etl_user"},
        },
    )
    updated = glue.get_connection(Name="warehouse")["Connection"]["ConnectionProperties"]
    assert (updated["USERNAME"], updated["PASSWORD"]) == ("etl_user", "pw-0xC0FFEE")

    listed = glue.get_connections(HidePassword=True)["ConnectionList"]
    assert [c["Name"] for c in listed] == ["filed", "warehouse"]
    filed = glue.get_connection(Name="filed")["Connection"]
    assert filed["ConnectionProperties"] == {
        "JDBC_CONNECTION_URL": "jdbc:postgresql://db.internal/x",
        "USERNAME": "etl",
    }
    with pytest.raises(glue.exceptions.InvalidInputException, match="declared in"):
        glue.delete_connection(ConnectionName="filed")
    with pytest.raises(glue.exceptions.AlreadyExistsException):
        glue.create_connection(
            ConnectionInput={"Name": "warehouse", "ConnectionType": "JDBC",
                             "ConnectionProperties": {"JDBC_CONNECTION_URL": PG_JDBC}}
        )  # fmt: skip
    with pytest.raises(glue.exceptions.InvalidInputException, match="not supported"):
        glue.create_connection(
            ConnectionInput={"Name": "net", "ConnectionType": "NETWORK", "ConnectionProperties": {}}
        )
    with pytest.raises(glue.exceptions.InvalidInputException, match="JDBC_CONNECTION_URL"):
        glue.create_connection(
            ConnectionInput={
                "Name": "nourl",
                "ConnectionType": "JDBC",
                "ConnectionProperties": {"USERNAME": "u"},
            }
        )
    glue.delete_connection(ConnectionName="warehouse")
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_connection(Name="warehouse")
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.delete_connection(ConnectionName="warehouse")


def test_a_script_reads_postgresql_through_a_connection_made_by_the_api(glue, spark, pg_schemas):
    """connectionName and extract_jdbc_conf resolve a connection created with
    CreateConnection as they resolve one of sparkmark.toml."""
    import psycopg

    from sparkmark.glue.context import GlueContext

    from .conftest import PG_DSN

    schema = pg_schemas()
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {schema}.customers (id int primary key, name text)")
        conn.execute(f"INSERT INTO {schema}.customers VALUES (1, 'ann'), (2, 'bob')")
    glue.create_connection(
        ConnectionInput={
            "Name": "pg-api",
            "ConnectionType": "JDBC",
            "ConnectionProperties": {
                "JDBC_CONNECTION_URL": PG_JDBC,
                "USERNAME": "postgres",
                "PASSWORD": "unused",
            },
        }
    )
    context = GlueContext(spark)
    assert context.extract_jdbc_conf("pg-api")["url"] == PG_JDBC
    frame = context.create_dynamic_frame.from_options(
        "postgresql", {"connectionName": "pg-api", "dbtable": f"{schema}.customers"}
    )
    assert sorted(r["name"] for r in frame.toDF().collect()) == ["ann", "bob"]


def test_a_connection_whose_credentials_are_in_secrets_manager(glue, s3_server, monkeypatch):
    """A connection may name a secret (SECRET_ID) instead of a password: its username and
    password are read from the Secrets Manager endpoint AWS's variables name, here
    moto's server."""
    from sparkmark.connections import Connections
    from sparkmark.errors import ConfigError as SparkmarkConfigError

    monkeypatch.setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", s3_server.endpoint_url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    secrets = boto3.client("secretsmanager", endpoint_url=s3_server.endpoint_url, region_name="us-east-1")
    secret = secrets.create_secret(
        Name="pg-creds", SecretString=json.dumps({"username": "etl", "password": "s3cr3t"})
    )
    glue.create_connection(
        ConnectionInput={
            "Name": "via-secret",
            "ConnectionType": "JDBC",
            "ConnectionProperties": {"JDBC_CONNECTION_URL": PG_JDBC, "SECRET_ID": secret["ARN"]},
        }
    )
    resolved = Connections.from_settings(Settings.from_env()).resolve("via-secret")
    assert (resolved.url, resolved.user, resolved.password) == (PG_JDBC, "etl", "s3cr3t")
    assert (
        glue.get_connection(Name="via-secret")["Connection"]["ConnectionProperties"]["SECRET_ID"]
        == secret["ARN"]
    )

    glue.create_connection(
        ConnectionInput={
            "Name": "lost-secret",
            "ConnectionType": "JDBC",
            "ConnectionProperties": {"JDBC_CONNECTION_URL": PG_JDBC, "SECRET_ID": "no-such-secret"},
        }
    )
    with pytest.raises(SparkmarkConfigError, match="secret 'no-such-secret', which could not be read"):
        Connections.from_settings(Settings.from_env()).resolve("lost-secret")


# ------------------------------------------------------------------ awswrangler, a client nobody here wrote


@pytest.fixture
def wrangler(endpoint, s3_server, monkeypatch):
    """awswrangler as its users run it: boto3's default session, with AWS's variables
    pointing Glue at the endpoint and S3 at moto's server; a fresh bucket."""
    import uuid

    import awswrangler as wr

    monkeypatch.setenv("AWS_ENDPOINT_URL_GLUE", endpoint.url)
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", s3_server.endpoint_url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "wrangler")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", home_token())
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    bucket = f"wr-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_server.endpoint_url).create_bucket(Bucket=bucket)
    boto3.setup_default_session()
    yield wr, bucket
    boto3.DEFAULT_SESSION = None


def test_awswrangler_catalog_functions_against_the_endpoint(wrangler):
    """awswrangler's catalog module: every call below is its own, unchanged, over HTTP."""
    import pandas as pd

    wr, bucket = wrangler
    wr.catalog.create_database("sales", description="sales data")
    assert "sales" in wr.catalog.databases()["Database"].tolist()
    assert wr.catalog.does_table_exist(database="sales", table="orders") is False

    frame = pd.DataFrame({"id": [1, 2, 3], "amount": [10.5, 3.0, 7.25], "day": ["d1", "d1", "d2"]})
    wr.s3.to_parquet(
        frame,
        path=f"s3://{bucket}/orders/",
        dataset=True,
        database="sales",
        table="orders",
        partition_cols=["day"],
        glue_table_settings={
            "description": "the orders",
            "parameters": {"owner": "ann"},
            "columns_comments": {"amount": "in euros"},
        },
    )
    assert wr.catalog.does_table_exist(database="sales", table="orders") is True
    assert wr.catalog.get_table_types(database="sales", table="orders") == {
        "id": "bigint",
        "amount": "double",
        "day": "string",
    }
    assert wr.catalog.get_table_location(database="sales", table="orders") == f"s3://{bucket}/orders/"
    assert wr.catalog.get_table_description(database="sales", table="orders") == "the orders"
    assert wr.catalog.get_columns_comments(database="sales", table="orders")["amount"] == "in euros"
    assert wr.catalog.get_table_parameters(database="sales", table="orders")["owner"] == "ann"
    wr.catalog.upsert_table_parameters(parameters={"tier": "gold"}, database="sales", table="orders")
    assert wr.catalog.get_table_parameters(database="sales", table="orders")["tier"] == "gold"
    partitions = wr.catalog.get_parquet_partitions(database="sales", table="orders")
    assert sorted(v for values in partitions.values() for v in values) == ["d1", "d2"]

    back = wr.s3.read_parquet_table(database="sales", table="orders")
    assert sorted(back["id"].tolist()) == [1, 2, 3]

    wr.catalog.create_csv_table(
        database="sales",
        table="refunds",
        path=f"s3://{bucket}/refunds/",
        columns_types={"id": "bigint", "reason": "string"},
    )
    names = lambda **kw: sorted(t["Name"] for t in wr.catalog.get_tables(database="sales", **kw))  # noqa: E731
    assert names() == ["orders", "refunds"]
    assert names(name_contains="der") == ["orders"]
    assert names(name_prefix="ref") == ["refunds"]
    assert names(name_suffix="ers") == ["orders"]
    assert names(name_prefix="zz") == []
    assert wr.catalog.get_table_number_of_versions(database="sales", table="orders") >= 1
    assert [t["Name"] for t in wr.catalog.search_tables(text="refund")] == ["refunds"]
    boto3.client("glue").create_connection(
        ConnectionInput={
            "Name": "pg",
            "ConnectionType": "JDBC",
            "ConnectionProperties": {"JDBC_CONNECTION_URL": PG_JDBC, "USERNAME": "etl", "PASSWORD": "pw"},
        }
    )
    connection = wr.catalog.get_connection("pg")
    assert connection["ConnectionProperties"]["PASSWORD"] == "pw"
    assert wr.catalog.delete_table_if_exists(database="sales", table="refunds") is True
    assert wr.catalog.delete_table_if_exists(database="sales", table="refunds") is False
    wr.catalog.delete_database("sales")
    assert "sales" not in wr.catalog.databases()["Database"].tolist()


def test_search_tables_by_text_and_by_token_filters(glue, tmp_path):
    """SearchTables (AWS's API reference): text is found in names, descriptions and
    columns, a quoted text must equal one of them; a filter on a string field splits it
    on punctuation and matches a whole token (Name=link finds customer-link, not xxlinkyy)."""
    glue.create_database(DatabaseInput={"Name": "web"})
    for name in ("customer-link", "xx-link-yy", "xxlinkyy"):
        glue.create_table(DatabaseName="web", TableInput=orders_table(str(tmp_path / name), name=name))
    found = lambda **kw: sorted(t["Name"] for t in glue.search_tables(**kw)["TableList"])  # noqa: E731
    assert found(Filters=[{"Key": "Name", "Value": "link"}]) == ["customer-link", "xx-link-yy"]
    assert found(SearchText="link") == ["customer-link", "xx-link-yy", "xxlinkyy"]
    assert found(SearchText='"xxlinkyy"') == ["xxlinkyy"]
    assert found(SearchText="amount") == ["customer-link", "xx-link-yy", "xxlinkyy"]  # a column's name
    assert found(SearchText="nothing-like-it") == []
    assert found(Filters=[{"Key": "DatabaseName", "Value": "other"}]) == []
    newest_first = glue.search_tables(SortCriteria=[{"FieldName": "Name", "Sort": "DESC"}])["TableList"]
    assert [t["Name"] for t in newest_first] == ["xxlinkyy", "xx-link-yy", "customer-link"]


# ------------------------------------------------------------------ Terraform's calls, replayed


def test_terraform_resources_call_sequences_replayed(glue, endpoint, tmp_path):
    """Each Glue resource of Terraform's AWS provider (internal/service/glue/*.go in
    hashicorp/terraform-provider-aws) makes these calls on apply, refresh, change and
    destroy: create (tags given), read back with Get*, tags read with GetTags on the ARN
    it builds (its account from STS, or empty with skip_requesting_account_id), update
    (Update* and TagResource/UntagResource), delete (a missing resource is no error to it)
    and, for a trigger, polling GetTrigger until it is gone. Replayed here through boto3."""
    sts = boto3.client(
        "sts",
        endpoint_url=endpoint.url,
        region_name="us-east-1",
        aws_access_key_id="terraform",
        aws_secret_access_key=home_token(),
    )
    account = sts.get_caller_identity()["Account"]
    arn = lambda resource: f"arn:aws:glue:us-east-1:{account}:{resource}"  # noqa: E731

    def tags_of(resource: str) -> dict:
        # Terraform reads tags after every create and refresh.
        return glue.get_tags(ResourceArn=arn(resource))["Tags"]

    def retag(resource: str, old: dict, new: dict) -> None:  # the provider's UpdateTags
        removed = [k for k in old if k not in new]
        if removed:
            glue.untag_resource(ResourceArn=arn(resource), TagsToRemove=removed)
        changed = {k: v for k, v in new.items() if old.get(k) != v}
        if changed:
            glue.tag_resource(ResourceArn=arn(resource), TagsToAdd=changed)

    # aws_glue_catalog_database
    glue.create_database(
        CatalogId=account,
        DatabaseInput={"Name": "lake", "Description": "raw", "Parameters": {"k": "v"}},
        Tags={"env": "dev"},
    )
    assert glue.get_database(CatalogId=account, Name="lake")["Database"]["Description"] == "raw"
    assert tags_of("database/lake") == {"env": "dev"}
    glue.update_database(
        CatalogId=account, Name="lake", DatabaseInput={"Name": "lake", "Description": "curated"}
    )
    retag("database/lake", {"env": "dev"}, {"env": "prod"})
    assert glue.get_database(Name="lake")["Database"]["Description"] == "curated"
    assert tags_of("database/lake") == {"env": "prod"}

    # aws_glue_catalog_table and aws_glue_partition
    table = orders_table(str(tmp_path / "orders"), name="orders")
    table["PartitionKeys"] = [{"Name": "dt", "Type": "string"}]
    glue.create_table(CatalogId=account, DatabaseName="lake", TableInput=table)
    assert glue.get_table(CatalogId=account, DatabaseName="lake", Name="orders")["Table"]["PartitionKeys"]
    table["Description"] = "orders, daily"
    glue.update_table(CatalogId=account, DatabaseName="lake", TableInput=table)
    assert glue.get_table(DatabaseName="lake", Name="orders")["Table"]["Description"] == "orders, daily"
    part = {
        "Values": ["2026-11-26"],
        "StorageDescriptor": {"Location": str(tmp_path / "orders" / "dt=2026-11-26")},
    }
    glue.create_partition(CatalogId=account, DatabaseName="lake", TableName="orders", PartitionInput=part)
    assert glue.get_partition(DatabaseName="lake", TableName="orders", PartitionValues=["2026-11-26"])[
        "Partition"
    ]
    glue.update_partition(
        DatabaseName="lake", TableName="orders", PartitionValueList=["2026-11-26"], PartitionInput=part
    )

    # aws_glue_connection
    glue.create_connection(
        CatalogId=account,
        ConnectionInput={
            "Name": "warehouse",
            "ConnectionType": "JDBC",
            "ConnectionProperties": {"JDBC_CONNECTION_URL": PG_JDBC, "USERNAME": "u", "PASSWORD": "p"},
        },
        Tags={"owner": "data"},
    )
    assert glue.get_connection(CatalogId=account, Name="warehouse")["Connection"]["ConnectionType"] == "JDBC"
    assert tags_of("connection/warehouse") == {"owner": "data"}
    glue.update_connection(
        CatalogId=account,
        Name="warehouse",
        ConnectionInput={
            "Name": "warehouse",
            "ConnectionType": "JDBC",
            "ConnectionProperties": {"JDBC_CONNECTION_URL": PG_JDBC, "USERNAME": "v", "PASSWORD": "q"},
        },
    )

    # aws_glue_job
    script = tmp_path / "job.py"
    script.write_text("print('hello')\n")
    glue.create_job(
        Name="nightly",
        Role="arn:aws:iam::000000000000:role/glue",
        Command={"Name": "glueetl", "ScriptLocation": str(script), "PythonVersion": "3"},
        DefaultArguments={"--job-bookmark-option": "job-bookmark-enable"},
        GlueVersion="5.0",
        WorkerType="G.1X",
        NumberOfWorkers=2,
        Timeout=60,
        MaxRetries=0,
        ExecutionProperty={"MaxConcurrentRuns": 1},
        Tags={"team": "data"},
    )
    job = glue.get_job(JobName="nightly")["Job"]
    assert (job["GlueVersion"], job["WorkerType"], job["NumberOfWorkers"]) == ("5.0", "G.1X", 2)
    assert tags_of("job/nightly") == {"team": "data"}
    glue.update_job(
        JobName="nightly",
        JobUpdate={
            "Command": {"Name": "glueetl", "ScriptLocation": str(script)},
            "Role": "arn:aws:iam::000000000000:role/glue",
            "Timeout": 30,
        },
    )
    assert glue.get_job(JobName="nightly")["Job"]["Timeout"] == 30
    # With skip_requesting_account_id the provider builds ARNs with no account in them.
    assert glue.get_tags(ResourceArn="arn:aws:glue:us-east-1::job/nightly")["Tags"] == {"team": "data"}

    # aws_glue_crawler
    glue.create_crawler(
        Name="lake-crawler",
        Role="arn:aws:iam::000000000000:role/glue",
        DatabaseName="lake",
        Targets={"S3Targets": [{"Path": str(tmp_path / "orders")}]},
        SchemaChangePolicy={"UpdateBehavior": "UPDATE_IN_DATABASE", "DeleteBehavior": "LOG"},
        Tags={"team": "data"},
    )
    assert glue.get_crawler(Name="lake-crawler")["Crawler"]["DatabaseName"] == "lake"
    assert tags_of("crawler/lake-crawler") == {"team": "data"}
    glue.update_crawler(Name="lake-crawler", Role="arn:aws:iam::000000000000:role/glue", TablePrefix="raw_")
    assert glue.get_crawler(Name="lake-crawler")["Crawler"]["TablePrefix"] == "raw_"

    # aws_glue_workflow
    glue.create_workflow(
        Name="daily", Description="d", DefaultRunProperties={"a": "1"}, MaxConcurrentRuns=1, Tags={"x": "y"}
    )
    assert glue.get_workflow(Name="daily")["Workflow"]["DefaultRunProperties"] == {"a": "1"}
    assert tags_of("workflow/daily") == {"x": "y"}
    glue.update_workflow(
        Name="daily", Description="daily loads", DefaultRunProperties={"a": "2"}, MaxConcurrentRuns=2
    )
    updated = glue.get_workflow(Name="daily")["Workflow"]
    assert (updated["Description"], updated["DefaultRunProperties"], updated["MaxConcurrentRuns"]) == (
        "daily loads",
        {"a": "2"},
        2,
    )

    # aws_glue_trigger: created, waited for, changed, disabled, deleted and waited for
    glue.create_trigger(
        Name="nightly-at-two",
        Type="SCHEDULED",
        Schedule="cron(0 2 * * ? *)",
        Actions=[{"JobName": "nightly"}],
        StartOnCreation=True,
        Tags={"team": "data"},
    )
    assert glue.get_trigger(Name="nightly-at-two")["Trigger"]["State"] == "ACTIVATED"
    assert tags_of("trigger/nightly-at-two") == {"team": "data"}
    glue.update_trigger(
        Name="nightly-at-two",
        TriggerUpdate={"Actions": [{"JobName": "nightly"}], "Schedule": "cron(0 3 * * ? *)"},
    )
    assert glue.get_trigger(Name="nightly-at-two")["Trigger"]["Schedule"] == "cron(0 3 * * ? *)"
    glue.stop_trigger(Name="nightly-at-two")
    assert glue.get_trigger(Name="nightly-at-two")["Trigger"]["State"] == "DEACTIVATED"

    # aws_glue_classifier: create, read (GetClassifier), update in place, destroy
    glue.create_classifier(
        GrokClassifier={"Name": "apache", "Classification": "web", "GrokPattern": "%{COMMONAPACHELOG}"}
    )
    assert glue.get_classifier(Name="apache")["Classifier"]["GrokClassifier"]["Classification"] == "web"
    glue.update_classifier(
        GrokClassifier={"Name": "apache", "Classification": "web", "GrokPattern": "%{COMBINEDAPACHELOG}"}
    )
    assert glue.get_classifier(Name="apache")["Classifier"]["GrokClassifier"]["Version"] == 2
    # aws_glue_security_configuration: create, read; any change replaces it
    glue.create_security_configuration(
        Name="sse",
        EncryptionConfiguration={
            "S3Encryption": [{"S3EncryptionMode": "SSE-S3"}],
            "CloudWatchEncryption": {"CloudWatchEncryptionMode": "DISABLED"},
            "JobBookmarksEncryption": {"JobBookmarksEncryptionMode": "DISABLED"},
        },
    )
    assert glue.get_security_configuration(Name="sse")["SecurityConfiguration"]["Name"] == "sse"
    # aws_glue_resource_policy: put (NOT_EXIST on create, MUST_EXIST on update), read, delete
    policy = '{"Version":"2012-10-17","Statement":[]}'
    glue.put_resource_policy(PolicyInJson=policy, PolicyExistsCondition="NOT_EXIST")
    glue.put_resource_policy(
        PolicyInJson=policy.replace("[]", '[{"Effect":"Allow"}]'), PolicyExistsCondition="MUST_EXIST"
    )
    assert "Allow" in glue.get_resource_policy()["PolicyInJson"]
    # aws_glue_data_catalog_encryption_settings: put on create and update, read; destroy puts the defaults back
    glue.put_data_catalog_encryption_settings(
        CatalogId=account,
        DataCatalogEncryptionSettings={
            "EncryptionAtRest": {"CatalogEncryptionMode": "SSE-KMS", "SseAwsKmsKeyId": "alias/k"},
            "ConnectionPasswordEncryption": {"ReturnConnectionPasswordEncrypted": False},
        },
    )
    at_rest = glue.get_data_catalog_encryption_settings(CatalogId=account)["DataCatalogEncryptionSettings"]
    assert at_rest["EncryptionAtRest"]["CatalogEncryptionMode"] == "SSE-KMS"

    # aws_glue_partition_index: create, poll GetPartitionIndexes until ACTIVE, read; destroy polls until gone
    glue.create_partition_index(
        CatalogId=account,
        DatabaseName="lake",
        TableName="orders",
        PartitionIndex={"IndexName": "by_dt", "Keys": ["dt"]},
    )
    indexes = glue.get_partition_indexes(CatalogId=account, DatabaseName="lake", TableName="orders")
    assert [(i["IndexName"], i["IndexStatus"]) for i in indexes["PartitionIndexDescriptorList"]] == [
        ("by_dt", "ACTIVE")
    ]
    # aws_glue_user_defined_function: create, read, update, destroy
    function = {
        "FunctionName": "to_cents",
        "ClassName": "com.acme.Cents",
        "OwnerName": "data",
        "OwnerType": "USER",
    }
    glue.create_user_defined_function(CatalogId=account, DatabaseName="lake", FunctionInput=function)
    assert glue.get_user_defined_function(CatalogId=account, DatabaseName="lake", FunctionName="to_cents")
    glue.update_user_defined_function(
        CatalogId=account, DatabaseName="lake", FunctionName="to_cents",
        FunctionInput={**function, "ClassName": "com.acme.Cents2"},
    )  # fmt: skip

    # aws_glue_registry and aws_glue_schema: create, poll until AVAILABLE, read (the
    # latest version's definition), update (UpdateSchema; RegisterSchemaVersion when the
    # definition changes), destroy polling until not found
    glue.create_registry(RegistryName="lake-streams", Description="d", Tags={"env": "dev"})
    assert glue.get_registry(RegistryId={"RegistryName": "lake-streams"})["Status"] == "AVAILABLE"
    glue.update_registry(RegistryId={"RegistryName": "lake-streams"}, Description="topics")
    definition = {"type": "record", "name": "r", "fields": [{"name": "a", "type": "int"}]}
    arn_of = glue.create_schema(
        RegistryId={"RegistryName": "lake-streams"}, SchemaName="clicks", DataFormat="AVRO",
        Compatibility="BACKWARD", SchemaDefinition=json.dumps(definition),
    )["SchemaArn"]  # fmt: skip
    assert glue.get_schema(SchemaId={"SchemaArn": arn_of})["SchemaStatus"] == "AVAILABLE"
    latest = glue.get_schema_version(
        SchemaId={"SchemaArn": arn_of}, SchemaVersionNumber={"LatestVersion": True}
    )
    assert latest["Status"] == "AVAILABLE"
    glue.update_schema(SchemaId={"SchemaArn": arn_of}, Compatibility="FORWARD")
    changed = {**definition, "fields": [*definition["fields"], {"name": "b", "type": "int", "default": 0}]}
    glue.register_schema_version(SchemaId={"SchemaArn": arn_of}, SchemaDefinition=json.dumps(changed))

    # aws_glue_catalog_table_optimizer (on an Iceberg table): create, read, update, destroy
    glue.create_table(
        CatalogId=account, DatabaseName="lake", TableInput=iceberg_table("clicks", str(tmp_path / "clicks"))
    )
    optimizer = {"roleArn": f"arn:aws:iam::{account}:role/optimizer", "enabled": True,
                 "retentionConfiguration": {"icebergConfiguration": {"snapshotRetentionPeriodInDays": 7}}}  # fmt: skip
    glue.create_table_optimizer(
        CatalogId=account, DatabaseName="lake", TableName="clicks", Type="retention",
        TableOptimizerConfiguration=optimizer,
    )  # fmt: skip
    read = glue.get_table_optimizer(
        CatalogId=account, DatabaseName="lake", TableName="clicks", Type="retention"
    )
    assert read["TableOptimizer"]["configuration"]["enabled"] is True
    glue.update_table_optimizer(
        CatalogId=account, DatabaseName="lake", TableName="clicks", Type="retention",
        TableOptimizerConfiguration={**optimizer, "enabled": False},
    )  # fmt: skip

    # terraform destroy, in dependency order; each delete ignores a missing resource
    glue.delete_table_optimizer(CatalogId=account, DatabaseName="lake", TableName="clicks", Type="retention")
    glue.delete_table(CatalogId=account, DatabaseName="lake", Name="clicks")
    glue.delete_schema(SchemaId={"SchemaArn": arn_of})
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_schema(SchemaId={"SchemaArn": arn_of})
    glue.delete_registry(RegistryId={"RegistryName": "lake-streams"})
    glue.delete_user_defined_function(CatalogId=account, DatabaseName="lake", FunctionName="to_cents")
    glue.delete_partition_index(CatalogId=account, DatabaseName="lake", TableName="orders", IndexName="by_dt")
    assert not glue.get_partition_indexes(DatabaseName="lake", TableName="orders")[
        "PartitionIndexDescriptorList"
    ]
    glue.put_data_catalog_encryption_settings(
        CatalogId=account,
        DataCatalogEncryptionSettings={
            "EncryptionAtRest": {"CatalogEncryptionMode": "DISABLED"},
            "ConnectionPasswordEncryption": {"ReturnConnectionPasswordEncrypted": False},
        },
    )
    glue.delete_resource_policy()
    glue.delete_security_configuration(Name="sse")
    glue.delete_classifier(Name="apache")
    glue.delete_trigger(Name="nightly-at-two")
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_trigger(Name="nightly-at-two")
    glue.delete_job(JobName="nightly")
    glue.delete_crawler(Name="lake-crawler")
    glue.delete_workflow(Name="daily")
    glue.delete_connection(CatalogId=account, ConnectionName="warehouse")
    glue.delete_partition(DatabaseName="lake", TableName="orders", PartitionValues=["2026-11-26"])
    glue.delete_table(CatalogId=account, DatabaseName="lake", Name="orders")
    glue.delete_database(CatalogId=account, Name="lake")
    for gone in (
        lambda: glue.get_job(JobName="nightly"),
        lambda: glue.get_crawler(Name="lake-crawler"),
        lambda: glue.get_workflow(Name="daily"),
        lambda: glue.get_connection(Name="warehouse"),
        lambda: glue.get_database(Name="lake"),
    ):
        with pytest.raises(glue.exceptions.EntityNotFoundException):
            gone()


def test_awswrangler_table_and_partition_functions(wrangler):
    """More of awswrangler's catalog module, each call its own and unchanged."""
    wr, bucket = wrangler
    wr.catalog.create_database("shop")
    wr.catalog.create_parquet_table(
        database="shop",
        table="events",
        path=f"s3://{bucket}/events/",
        columns_types={"id": "bigint", "kind": "string"},
        partitions_types={"dt": "string"},
        description="clicks",
    )
    wr.catalog.create_json_table(
        database="shop", table="raw", path=f"s3://{bucket}/raw/", columns_types={"payload": "string"}
    )
    assert sorted(wr.catalog.tables(database="shop")["Table"].tolist()) == ["events", "raw"]
    assert wr.catalog.table(database="shop", table="events")["Column Name"].tolist() == ["id", "kind", "dt"]
    wr.catalog.add_parquet_partitions(
        database="shop",
        table="events",
        partitions_values={f"s3://{bucket}/events/dt=2026-11-25/": ["2026-11-25"],
                           f"s3://{bucket}/events/dt=2026-11-26/": ["2026-11-26"]},
    )  # fmt: skip
    found = wr.catalog.get_partitions(database="shop", table="events")
    assert sorted(v[0] for v in found.values()) == ["2026-11-25", "2026-11-26"]
    only = wr.catalog.get_partitions(database="shop", table="events", expression="dt = '2026-11-26'")
    assert list(only.values()) == [["2026-11-26"]]
    wr.catalog.delete_partitions(database="shop", table="events", partitions_values=[["2026-11-25"]])
    assert list(wr.catalog.get_partitions(database="shop", table="events").values()) == [["2026-11-26"]]
    wr.catalog.add_column(
        database="shop", table="events", column_name="amount", column_type="double", column_comment="euros"
    )  # without a comment it sends Comment=None, which botocore refuses before sending
    assert wr.catalog.get_table_types(database="shop", table="events")["amount"] == "double"
    wr.catalog.delete_column(database="shop", table="events", column_name="amount")
    assert "amount" not in wr.catalog.get_table_types(database="shop", table="events")
    wr.catalog.overwrite_table_parameters(parameters={"only": "this"}, database="shop", table="raw")
    assert wr.catalog.get_table_parameters(database="shop", table="raw") == {"only": "this"}
    versions = wr.catalog.get_table_versions(database="shop", table="events")
    assert len(versions) >= 2  # the column added, then removed
    assert [d["Name"] for d in wr.catalog.get_databases()] == ["shop"]
    wr.catalog.delete_all_partitions(database="shop", table="events")
    assert wr.catalog.get_partitions(database="shop", table="events") == {}


TERMINAL_SCRIPT = """
import sys
from awsglue.context import GlueContext
from awsglue.job import Job
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext

args = getResolvedOptions(sys.argv, ["JOB_NAME"])
job = Job(GlueContext(SparkContext()))
job.init(args["JOB_NAME"], args)
print("written by a run from a terminal")
print("and a warning", file=sys.stderr)
job.commit()
"""


def test_a_terminal_runs_output_is_kept_with_the_run_and_served_as_logs(
    glue, endpoint, spark, tmp_path, caplog
):
    """`sparkmark run` shows what the script prints and keeps a copy with the run, so
    its logs are read as a scheduled run's are (CloudWatch Logs' groups, the console)."""
    import logging

    from sparkmark.cli.run import run
    from sparkmark.host import RunRequest

    caplog.set_level(logging.INFO, logger="sparkmark")  # as `sparkmark` sets its log (SPARKMARK_LOG_LEVEL)
    script = tmp_path / "terminal.py"
    script.write_text(TERMINAL_SCRIPT)
    code = run(RunRequest(script=str(script), arguments=["--JOB_NAME", "from_terminal"]), keep_output=True)
    assert code == 0
    run_id = glue.get_job_runs(JobName="from_terminal")["JobRuns"][0]["Id"]
    logs = logs_client(endpoint.url)
    output = logs.get_log_events(
        logGroupName="/aws-glue/jobs/output", logStreamName=run_id, startFromHead=True
    )
    printed = [e["message"] for e in output["events"]]
    assert "written by a run from a terminal" in printed
    assert any(line.endswith(f"run {run_id} of job from_terminal: SUCCEEDED") for line in printed)
    errors = logs.filter_log_events(logGroupName="/aws-glue/jobs/error", logStreamNames=[run_id])["events"]
    assert "and a warning" in [e["message"] for e in errors]
    assert any(f"run {run_id} started" in e["message"] for e in errors)  # sparkmark's own log lines
    streams = logs.describe_log_streams(logGroupName="/aws-glue/jobs/output")["logStreams"]
    assert run_id in [s["logStreamName"] for s in streams]


def test_update_table_checks_the_version_id_as_glue_does(glue, tmp_path):
    """UpdateTable's VersionId is an optimistic lock (Iceberg's GlueCatalog commits with
    it): the table's VersionId moves at every change, and an update naming an older one
    is refused with ConcurrentModificationException, leaving the table as it was."""
    glue.create_database(DatabaseInput={"Name": "ice"})
    table = {
        "Name": "events",
        "TableType": "EXTERNAL_TABLE",
        "Parameters": {"table_type": "ICEBERG", "metadata_location": "s3://b/w/events/metadata/00000.json"},
        "StorageDescriptor": {"Location": "s3://b/w/events", "Columns": [{"Name": "id", "Type": "bigint"}]},
    }
    glue.create_table(DatabaseName="ice", TableInput=table)
    first = glue.get_table(DatabaseName="ice", Name="events")["Table"]
    assert first["Parameters"]["table_type"] == "ICEBERG" and "classification" not in first["Parameters"]
    assert first["StorageDescriptor"]["Columns"] == [{"Name": "id", "Type": "bigint"}]
    committed = {
        **table,
        "Parameters": {**table["Parameters"], "metadata_location": "s3://b/w/events/metadata/00001.json"},
    }
    glue.update_table(DatabaseName="ice", TableInput=committed, VersionId=first["VersionId"])
    second = glue.get_table(DatabaseName="ice", Name="events")["Table"]
    assert second["VersionId"] != first["VersionId"]  # no schema change, still a new version
    late = {
        **table,
        "Parameters": {**table["Parameters"], "metadata_location": "s3://b/w/events/metadata/late.json"},
    }
    with pytest.raises(glue.exceptions.ConcurrentModificationException):
        glue.update_table(DatabaseName="ice", TableInput=late, VersionId=first["VersionId"])
    kept = glue.get_table(DatabaseName="ice", Name="events")["Table"]["Parameters"]["metadata_location"]
    assert kept.endswith("00001.json")
