"""DynamoDB tables read through Glue's DynamoDB connection options, against moto's
DynamoDB server (server mode, a process, reached over HTTP): the shapes of public Glue
scripts (``dynamodb.input.tableName`` with ``dynamodb.splits``, the flat method, a
catalog table), DynamoDB's types as Glue's DynamicFrame holds them, and bad options
refused in one line."""

from __future__ import annotations

import json
import uuid
from decimal import Decimal

import boto3
import pytest
from pyspark.sql.types import ArrayType, BinaryType, DoubleType, LongType, StringType, StructType

from sparkmark.errors import SourceError
from sparkmark.sources import dynamodb

pytestmark = pytest.mark.slow

CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


@pytest.fixture
def aws(s3_server, monkeypatch):
    """boto3 in this process (and so the read's driver) pointed at moto's server, as a
    Glue job's boto3 would be at AWS: by its environment, not by the script."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", s3_server.endpoint_url)
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", s3_server.endpoint_url)
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB_STREAMS", s3_server.endpoint_url)
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", s3_server.endpoint_url)
    monkeypatch.delenv("SPARKMARK_S3_LOCAL_ROOT", raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", CREDENTIALS["aws_access_key_id"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", CREDENTIALS["aws_secret_access_key"])
    return boto3.client(
        "dynamodb", endpoint_url=s3_server.endpoint_url, region_name="us-east-1", **CREDENTIALS
    )


def make_table(client, items: list[dict], *, on_demand: bool = True) -> str:
    name = f"orders_{uuid.uuid4().hex[:8]}"
    billing = (
        {"BillingMode": "PAY_PER_REQUEST"}
        if on_demand
        else {"ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5}}
    )
    client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        **billing,
    )
    table = boto3.resource(
        "dynamodb", endpoint_url=client.meta.endpoint_url, region_name="us-east-1", **CREDENTIALS
    ).Table(name)
    with table.batch_writer() as batch:
        for item in items:
            batch.put_item(Item=item)
    return name


@pytest.fixture
def glue(spark):
    from awsglue.context import GlueContext

    return GlueContext(spark)


def test_a_table_copy_reads_every_item_once_in_parallel_segments(aws, glue):
    """The public scripts' read: ``dynamodb.input.tableName``, ``dynamodb.splits`` and
    ``dynamodb.throughput.read.percent`` as strings."""
    name = make_table(aws, [{"id": f"o{i:04d}", "amount": i, "who": f"c{i % 7}"} for i in range(1500)])
    frame = glue.create_dynamic_frame.from_options(
        connection_type="dynamodb",
        connection_options={
            "dynamodb.input.tableName": name,
            "dynamodb.throughput.read.percent": "1.0",
            "dynamodb.splits": "8",
        },
    )
    df = frame.toDF()
    assert df.rdd.getNumPartitions() == 8  # one task a segment
    rows = df.collect()
    assert len(rows) == 1500 and len({r["id"] for r in rows}) == 1500  # none twice, none lost
    assert sum(r["amount"] for r in rows) == sum(range(1500))


def test_dynamodb_types_as_a_dynamicframe_holds_them(aws, glue):
    name = make_table(
        aws,
        [
            {
                "id": "a",
                "count": 3,
                "price": Decimal("2.5"),
                "tags": {"x", "y"},
                "sizes": {1, 2},
                "parts": ["p", Decimal("1")],
                "address": {"city": "Oslo", "zip": 150},
                "blob": b"\x00\x01",
                "ok": True,
                "gone": None,
            },
            {"id": "b", "count": 4, "price": Decimal("3"), "label": "late"},
        ],
    )
    frame = glue.create_dynamic_frame_from_options("dynamodb", {"dynamodb.input.tableName": name})
    df = frame.toDF()
    types = {f.name: f.dataType for f in df.schema.fields}
    assert isinstance(types["count"], LongType)
    assert isinstance(types["price"], DoubleType)  # 2.5 and 3: a fractional number is a double
    assert types["tags"] == ArrayType(StringType(), True)  # a string set
    assert types["sizes"] == ArrayType(LongType(), True)  # a number set
    assert isinstance(types["address"], StructType)  # a map
    assert isinstance(types["blob"], BinaryType)
    assert types["parts"].typeName() in ("array",)  # a list
    assert "label" in types  # a field only a later item has
    rows = {r["id"]: r for r in df.collect()}
    a = rows["a"]
    assert sorted(a["tags"]) == ["x", "y"] and sorted(a["sizes"]) == [1, 2]
    assert a["address"]["city"] == "Oslo" and a["address"]["zip"] == 150
    assert bytes(a["blob"]) == b"\x00\x01" and a["ok"] is True
    assert rows["b"]["price"] == 3.0 and rows["b"]["label"] == "late" and rows["b"]["blob"] is None


def test_an_empty_table_reads_as_no_records(aws, glue):
    name = make_table(aws, [])
    frame = glue.create_dynamic_frame.from_options(
        connection_type="dynamodb",
        connection_options={"dynamodb.input.tableName": name, "dynamodb.splits": "2"},
    )
    assert frame.count() == 0


def test_a_table_named_by_its_arn_and_a_provisioned_table_are_read(aws, glue):
    name = make_table(aws, [{"id": "x", "n": 1}], on_demand=False)
    arn = f"arn:aws:dynamodb:us-east-1:123456789012:table/{name}"
    frame = glue.create_dynamic_frame.from_options(
        connection_type="dynamodb", connection_options={"dynamodb.input.tableName": arn}
    )
    assert [(r["id"], r["n"]) for r in frame.toDF().collect()] == [("x", 1)]


def test_a_catalog_table_of_classification_dynamodb_is_read_by_from_catalog(aws, glue):
    from sparkmark.catalog.models import Column, Database, Table

    name = make_table(aws, [{"id": "k1", "n": 5}, {"id": "k2", "n": 6}])
    store = glue.catalog_store()
    store.put_database(Database("ddb"))
    arn = f"arn:aws:dynamodb:us-east-1:123456789012:table/{name}"
    store.put_table(
        Table("ddb", name, arn, "dynamodb", (Column("id", "string"), Column("n", "bigint")), (), {})
    )
    frame = glue.create_dynamic_frame.from_catalog(database="ddb", table_name=name)
    assert sorted((r["id"], r["n"]) for r in frame.toDF().collect()) == [("k1", 5), ("k2", 6)]


def test_a_role_to_assume_goes_through_stss_api(aws, glue, monkeypatch):
    """The role is assumed through STS's API over HTTP: with STS unreachable the read
    stops in one line naming the role; with moto's STS it reads."""
    name = make_table(aws, [{"id": "r", "n": 1}])
    options = {
        "dynamodb.input.tableName": name,
        "dynamodb.sts.roleArn": "arn:aws:iam::123456789012:role/reader",
    }
    assert (
        glue.create_dynamic_frame.from_options(connection_type="dynamodb", connection_options=options).count()
        == 1
    )
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:9")  # nothing listens there
    with pytest.raises(SourceError, match="'arn:aws:iam::123456789012:role/reader' could not be assumed"):
        glue.create_dynamic_frame.from_options(connection_type="dynamodb", connection_options=options)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "needs connection option 'dynamodb.input.tableName'"),
        ({"dynamodb.input.tableName": "t", "dynamodb.splits": "0"}, "dynamodb.splits must be a whole number"),
        (
            {"dynamodb.input.tableName": "t", "dynamodb.splits": "1000001"},
            "dynamodb.splits must be at most 1,000,000",
        ),
        ({"dynamodb.input.tableName": "t", "dynamodb.splits": "many"}, "not 'many'"),
        (
            {"dynamodb.input.tableName": "t", "dynamodb.throughput.read.percent": "2"},
            "from 0.1 to 1.5, not '2'",
        ),
        ({"dynamodb.input.tableName": "arn:aws:s3:::bucket"}, "is not a DynamoDB table ARN"),
        ({"dynamodb.input.tableName": "t", "dynamodb.filter": "x"}, "'dynamodb.filter' is not supported"),
    ],
)
def test_bad_options_are_refused_in_one_line(options, message):
    with pytest.raises(SourceError, match=message):
        dynamodb.from_glue_options(options, ctx=None)


def test_a_missing_table_is_one_line_naming_it(aws, glue):
    with pytest.raises(
        SourceError, match="DynamoDB table 'no_such_table' cannot be reached: ResourceNotFound"
    ):
        glue.create_dynamic_frame.from_options(
            connection_type="dynamodb", connection_options={"dynamodb.input.tableName": "no_such_table"}
        )


def make_target(client, *, range_key: bool = False) -> str:
    name = f"copy_{uuid.uuid4().hex[:8]}"
    keys = [{"AttributeName": "id", "KeyType": "HASH"}]
    attributes = [{"AttributeName": "id", "AttributeType": "S"}]
    if range_key:
        keys.append({"AttributeName": "at", "KeyType": "RANGE"})
        attributes.append({"AttributeName": "at", "AttributeType": "N"})
    client.create_table(
        TableName=name, KeySchema=keys, AttributeDefinitions=attributes, BillingMode="PAY_PER_REQUEST"
    )
    return name


def all_items(client, name: str) -> list[dict]:
    from boto3.dynamodb.types import TypeDeserializer

    d = TypeDeserializer().deserialize
    pages = client.get_paginator("scan").paginate(TableName=name)
    return [{k: d(v) for k, v in item.items()} for page in pages for item in page["Items"]]


def test_a_table_to_table_copy_writes_every_item_with_its_types_when_the_job_commits(aws, spark):
    """The public copy script: read with ``dynamodb.input.tableName`` and ``splits``, write
    with ``dynamodb.output.tableName`` and ``dynamodb.throughput.write.percent``. With a
    transformation_ctx in a run, the items are put when the job commits, not before."""
    from awsglue.context import GlueContext
    from awsglue.job import Job

    source = make_table(
        aws,
        [
            {"id": f"o{i:03d}", "amount": Decimal(i), "price": Decimal("2.5"), "tags": {"a", "b"},
             "blob": b"\x00\x01", "nested": {"n": Decimal(1), "l": ["x", Decimal(2)]}, "ok": True}
            for i in range(120)
        ],
    )  # fmt: skip
    target = make_target(aws)
    glue = GlueContext(spark)
    job = Job(glue)
    job.init("ddb_copy", {"JOB_NAME": "ddb_copy", "job_bookmark_option": "job-bookmark-disable"})
    frame = glue.create_dynamic_frame.from_options(
        connection_type="dynamodb",
        connection_options={"dynamodb.input.tableName": source, "dynamodb.splits": "4"},
    )
    glue.write_dynamic_frame_from_options(
        frame=frame,
        connection_type="dynamodb",
        connection_options={"dynamodb.output.tableName": target, "dynamodb.throughput.write.percent": "1.0"},
        transformation_ctx="copy_out",
    )
    assert all_items(aws, target) == []  # staged: nothing is visible before the commit
    job.commit()
    copied = sorted(all_items(aws, target), key=lambda i: i["id"])
    assert len(copied) == 120
    assert copied[7] == {
        "id": "o007",
        "amount": Decimal(7),
        "price": Decimal("2.5"),
        "tags": ["a", "b"],
        "blob": b"\x00\x01",
        "nested": {"n": Decimal(1), "l": ["x", Decimal(2)]},
        "ok": True,
    }  # fmt: skip  (a set is read as a list, Glue's array, and so written back as a list)


def test_a_write_without_a_run_is_put_at_once_and_the_last_record_of_a_key_wins(aws, spark):
    from awsglue.context import GlueContext

    target = make_target(aws, range_key=True)
    rows = [("a", 1, "first"), ("b", 1, None), ("a", 1, "second"), ("a", 2, "other")]
    df = spark.createDataFrame(rows, "id string, at long, note string").coalesce(1)
    GlueContext(spark).write_data_frame.from_options(
        frame=df,
        connection_type="dynamodb",
        connection_options={"dynamodb.output.tableName": target, "dynamodb.output.numParallelTasks": "3"},
    )
    items = sorted(all_items(aws, target), key=lambda i: (i["id"], i["at"]))
    assert items == [
        {"id": "a", "at": 1, "note": "second"},
        {"id": "a", "at": 2, "note": "other"},
        {"id": "b", "at": 1},  # a null is not written
    ]


def test_a_write_names_what_it_cannot_do_in_one_line(aws, spark):
    from awsglue.context import GlueContext

    from sparkmark.errors import SinkError

    glue = GlueContext(spark)
    target = make_target(aws)
    df = spark.createDataFrame([("x",)], "other string")
    cases = [
        ({}, "needs connection option 'dynamodb.output.tableName'"),
        ({"dynamodb.output.tableName": target, "dynamodb.throughput.write.percent": "3"}, "0.1 to 1.5"),
        ({"dynamodb.output.tableName": target, "dynamodb.output.retry": "0"}, "dynamodb.output.retry"),
        ({"dynamodb.output.tableName": target, "dynamodb.output.bogus": "1"}, "'dynamodb.output.bogus'"),
        ({"dynamodb.output.tableName": "no_such_table"}, "'no_such_table' cannot be reached"),
        (
            {"dynamodb.output.tableName": "arn:aws:s3:::b"},
            "dynamodb.output.tableName 'arn:aws:s3:::b' is not a",
        ),
        ({"dynamodb.output.tableName": target}, f"no field 'id', a key of DynamoDB table {target!r}"),
    ]
    numeric = spark.createDataFrame([(1,)], "id long")
    unset = spark.createDataFrame([("a",), (None,)], "id string")
    for frame, message in ((numeric, "field 'id' is bigint, but key 'id' .* is a string"),
                           (unset, "a record has no value for a key of DynamoDB table")):  # fmt: skip
        with pytest.raises(SinkError, match=message):
            glue.write_data_frame.from_options(
                frame=frame,
                connection_type="dynamodb",
                connection_options={"dynamodb.output.tableName": target},
            )
    for options, message in cases:
        with pytest.raises(SinkError, match=message) as raised:
            glue.write_data_frame.from_options(
                frame=df, connection_type="dynamodb", connection_options=options
            )
        assert "\n" not in str(raised.value)
    assert all_items(aws, target) == []


def test_throttled_puts_are_retried_until_every_item_is_in(aws):
    """moto never throttles, so a client in front of it refuses every other call: each
    refused batch is sent again and no item is lost; with no progress at all the write
    fails in one line after ``dynamodb.output.retry`` tries."""
    from botocore.exceptions import ClientError

    from sparkmark.errors import SinkError
    from sparkmark.sinks.dynamodb import put_batch
    from sparkmark.sources.dynamodb_access import Pace

    target = make_target(aws)

    class Throttling:
        def __init__(self, every: int):
            self.calls, self.every = 0, every

        def batch_write_item(self, **kwargs):
            self.calls += 1
            if self.calls % self.every:
                error = {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"}}
                raise ClientError(error, "BatchWriteItem")
            return aws.batch_write_item(**kwargs)

    items = [{"id": {"S": f"k{i}"}, "v": {"N": str(i)}} for i in range(25)]
    client = Throttling(every=3)
    put_batch(client, target, items, retries=5, pace=Pace(1000.0))
    assert client.calls == 3 and len(all_items(aws, target)) == 25
    with pytest.raises(SinkError, match=r"took none of 25 items in 2 retries \(dynamodb.output.retry\)"):
        put_batch(Throttling(every=10**6), target, items, retries=2, pace=Pace(1000.0))


def streamed_table(client, items: list[dict]) -> str:
    """A table whose stream holds new images: what the bookmark reads changes from."""
    name = make_table(client, [])
    client.update_table(
        TableName=name, StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    )
    put(client, name, items)
    return name


def put(client, name: str, items: list[dict]) -> None:
    from boto3.dynamodb.types import TypeSerializer

    s = TypeSerializer().serialize
    for item in items:
        client.put_item(TableName=name, Item={k: s(v) for k, v in item.items()})


def bookmarked_read(glue, job_name: str, table: str, **more: str) -> tuple[list[dict], dict]:
    """One bookmarked run reading ``table``: the rows it read and the state it committed."""
    from awsglue.job import Job

    from sparkmark.engine.store import StateStore

    job = Job(glue)
    job.init(job_name, {"JOB_NAME": job_name, "job_bookmark_option": "job-bookmark-enable", **more})
    frame = glue.create_dynamic_frame.from_options(
        connection_type="dynamodb",
        connection_options={"dynamodb.input.tableName": table, "dynamodb.splits": "2"},
        transformation_ctx="orders",
    )
    rows = sorted((r.asDict() for r in frame.toDF().collect()), key=lambda r: r["id"])
    job.commit()
    version = StateStore.from_settings().latest_version(job_name)
    return rows, version.ctx_states.get("orders", {})


def test_a_bookmarked_table_reads_only_what_changed_since_the_last_run(aws, glue):
    """Beyond Glue: new items, then changed items (a delete counted), then nothing new."""
    from sparkmark.engine.store import StateStore

    table = streamed_table(aws, [{"id": f"o{i}", "v": i} for i in range(5)])
    rows, state = bookmarked_read(glue, "ddb_bookmark", table)
    assert [r["id"] for r in rows] == ["o0", "o1", "o2", "o3", "o4"]
    assert state["last_run"] == {
        "run_id": state["last_run"]["run_id"],
        "items": 5,
        "deleted": 0,
        "whole": True,
    }

    put(aws, table, [{"id": "o5", "v": 5}, {"id": "o6", "v": 6}])  # new
    rows, state = bookmarked_read(glue, "ddb_bookmark", table)
    assert rows == [{"id": "o5", "v": 5}, {"id": "o6", "v": 6}]

    put(
        aws, table, [{"id": "o1", "v": 10}, {"id": "o1", "v": 11}, {"id": "o7", "v": 7}]
    )  # changed twice, new
    aws.delete_item(TableName=table, Key={"id": {"S": "o2"}})
    rows, state = bookmarked_read(glue, "ddb_bookmark", table)
    assert rows == [{"id": "o1", "v": 11}, {"id": "o7", "v": 7}]  # each key's last image
    assert (state["last_run"]["items"], state["last_run"]["deleted"], state["last_run"]["whole"]) == (
        2,
        1,
        False,
    )

    rows, state = bookmarked_read(glue, "ddb_bookmark", table)  # nothing new
    assert rows == [] and state["last_run"]["items"] == 0

    StateStore.from_settings().reset("ddb_bookmark")  # a reset bookmark reads the table whole again
    rows, _ = bookmarked_read(glue, "ddb_bookmark", table)
    assert [r["id"] for r in rows] == ["o0", "o1", "o3", "o4", "o5", "o6", "o7"]


def test_a_bookmark_rewound_to_an_earlier_run_reads_again_what_came_after_it(aws, glue):
    from sparkmark.engine.store import StateStore

    table = streamed_table(aws, [{"id": "a", "v": 1}])
    _, first = bookmarked_read(glue, "ddb_rewind", table)
    put(aws, table, [{"id": "b", "v": 2}])
    rows, _ = bookmarked_read(glue, "ddb_rewind", table)
    assert [r["id"] for r in rows] == ["b"]
    store = StateStore.from_settings()
    store.rewind("ddb_rewind", first["last_run"]["run_id"])
    rows, _ = bookmarked_read(glue, "ddb_rewind", table)
    assert [r["id"] for r in rows] == ["b"]


def test_a_paused_run_with_a_range_reads_what_those_runs_read(aws, glue):
    """Glue's job-bookmark-pause with --job-bookmark-from/--job-bookmark-to: exactly the
    changes the runs after "from" up to "to" read, and nothing committed."""
    table = streamed_table(aws, [{"id": "a", "v": 1}])
    runs = []
    for new in ("b", "c"):
        _, state = bookmarked_read(glue, "ddb_range", table)
        runs.append(state["last_run"]["run_id"])
        put(aws, table, [{"id": new, "v": 2}])
    _, state = bookmarked_read(glue, "ddb_range", table)  # reads c
    runs.append(state["last_run"]["run_id"])
    rows, _ = bookmarked_read(
        glue, "ddb_range", table, job_bookmark_option="job-bookmark-pause",
        job_bookmark_from=runs[0], job_bookmark_to=runs[1],
    )  # fmt: skip
    assert [r["id"] for r in rows] == ["b"]


def test_a_table_without_a_stream_is_read_whole_every_run_as_glue_reads_it(aws, glue):
    table = make_table(aws, [{"id": "a", "v": 1}])
    for expected in (["a"], ["a", "b"]):
        rows, state = bookmarked_read(glue, "ddb_nostream", table)
        assert [r["id"] for r in rows] == expected
        assert state["stream"] is None and state["last_run"]["whole"] is True
        put(aws, table, [{"id": "b", "v": 2}])


def test_a_crawled_dynamodb_table_has_glues_schema_and_is_read_by_from_catalog(aws, glue, tmp_path):
    """The third public script: a crawler with ``DynamoDBTargets`` makes a table of
    classification dynamodb (its location the table's ARN, its keys in the parameters),
    and ``from_catalog`` on it reads the DynamoDB table."""
    from sparkmark.catalog.hive import HiveCatalog
    from sparkmark.catalog.store import CatalogStore
    from sparkmark.connections import Connections
    from sparkmark.crawler.crawl import run_crawl
    from sparkmark.crawler.definition import load_definition
    from sparkmark.crawler.store import CrawlerStore
    from sparkmark.engine.store import StateStore
    from sparkmark.settings import Settings

    name = make_table(
        aws,
        [
            {"id": "a", "n": 1, "price": Decimal("1.5"), "tags": {"x"}, "meta": {"k": "v"}, "ok": True},
            {"id": "b", "n": 2, "price": 3, "late": "only here"},
        ],
    )
    settings = Settings.from_env()
    state = StateStore.from_settings(settings)
    store, crawlers = CatalogStore(state), CrawlerStore(state)
    definition = load_definition(
        {"Name": "ddb_crawler", "DatabaseName": "shop", "TablePrefix": "ddb_",
         "Targets": {"DynamoDBTargets": [{"Path": name, "scanAll": True, "scanRate": 1.0},
                                         {"Path": "no_such_table"}]}}
    )  # fmt: skip
    crawlers.save(definition)
    record = run_crawl(
        lambda: pytest.fail("a DynamoDB crawl starts no Spark"),
        state,
        HiveCatalog(None, store),
        crawlers,
        definition,
        connections=Connections.from_settings(settings),
    )
    assert record.summary["tables_created"] == [f"shop.ddb_{name}"]
    assert [e["path"] for e in record.errors] == ["dynamodb:no_such_table"]  # reported, not passed over
    table = store.table("shop", f"ddb_{name}")
    assert table.classification == "dynamodb"
    assert table.location == f"arn:aws:dynamodb:us-east-1:123456789012:table/{name}"
    assert (table.parameters["hashKey"], table.parameters["rangeKey"]) == ("id", "")
    assert table.parameters["recordCount"] == "2"
    columns = {c.name: c.type for c in table.columns}
    assert columns == {
        "id": "string", "n": "bigint", "price": "double", "tags": "array<string>",
        "meta": "struct<k:string>", "ok": "boolean", "late": "string",
    }  # fmt: skip
    frame = glue.create_dynamic_frame.from_catalog(database="shop", table_name=f"ddb_{name}")
    assert sorted(r["id"] for r in frame.toDF().collect()) == ["a", "b"]


# The item of Glue's "Simplifying usage of DynamoDB export JSON" example, in DynamoDB's wire form.
DOC_ITEM = {
    "id": {"S": "k1"},
    "parentMap": {"M": {"childMap": {"M": {
        "appName": {"S": "app"}, "packageName": {"S": "pkg"}, "updatedAt": {"N": "1700000000"}}}}},
    "strings": {"SS": ["a", "b"]},
    "numbers": {"NS": ["1", "2.5"]},
    "binaries": {"BS": [b"\x00"]},
    "isDDBJson": {"BOOL": True},
    "nullValue": {"NULL": True},
}  # fmt: skip


def s3_client(aws):
    return boto3.client("s3", endpoint_url=aws.meta.endpoint_url, region_name="us-east-1", **CREDENTIALS)


def exported_table(aws, items: list[dict]) -> tuple[str, str]:
    """A table with point-in-time recovery (an export needs it), and a bucket for exports."""
    name = make_table(aws, [])
    for item in items:
        aws.put_item(TableName=name, Item=item)
    aws.update_continuous_backups(
        TableName=name, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True}
    )
    bucket = f"exports-{uuid.uuid4().hex[:8]}"
    s3_client(aws).create_bucket(Bucket=bucket)
    arn = aws.describe_table(TableName=name)["Table"]["TableArn"]
    return arn, bucket


def schema_of(df) -> list[tuple[str, str]]:
    return [(f.name, f.dataType.simpleString()) for f in df.schema.fields]


def test_the_export_connector_gives_glues_documented_schemas(aws, spark):
    """``dynamodb.export`` ``ddb`` exports through moto's ExportTableToPointInTime and
    reads it; raw, ``unnestDDBJson`` and ``simplifyDDBJson`` give the schemas AWS's
    documentation shows (numbers stay text, sets are arrays, a NULL is null)."""
    from awsglue.context import GlueContext

    glue = GlueContext(spark)
    arn, bucket = exported_table(aws, [DOC_ITEM])

    def read(**extra):
        options = {"dynamodb.export": "ddb", "dynamodb.tableArn": arn, "dynamodb.s3.bucket": bucket,
                   "dynamodb.s3.prefix": "exports", **extra}  # fmt: skip
        return glue.create_dynamic_frame.from_options(
            connection_type="dynamodb", connection_options=options
        ).toDF()

    raw = read()
    assert raw.columns == ["Item"]
    item = raw.schema["Item"].dataType
    assert item.fieldNames() == list(DOC_ITEM)  # the item's order, as the file has it
    assert item["numbers"].dataType.simpleString() == "struct<NS:array<string>>"

    simple = read(**{"dynamodb.simplifyDDBJson": "true"})
    assert schema_of(simple) == [
        ("id", "string"),
        ("parentMap", "struct<childMap:struct<appName:string,packageName:string,updatedAt:string>>"),
        ("strings", "array<string>"),
        ("numbers", "array<string>"),
        ("binaries", "array<string>"),
        ("isDDBJson", "boolean"),
        ("nullValue", "void"),
    ]
    row = simple.collect()[0]
    assert (row["parentMap"]["childMap"]["updatedAt"], row["numbers"], row["nullValue"]) == (
        "1700000000", ["1", "2.5"], None,
    )  # fmt: skip

    unnested = read(**{"dynamodb.unnestDDBJson": True})
    assert dict(schema_of(unnested))["id"] == "string"
    # one level only: a map keeps its fields' descriptors
    assert dict(schema_of(unnested))["parentMap"].startswith("struct<childMap:struct<M:struct<")

    with pytest.raises(SourceError, match="cannot both be true"):
        read(**{"dynamodb.simplifyDDBJson": "true", "dynamodb.unnestDDBJson": "true"})


def test_unnest_keeps_an_array_of_structs_as_the_documented_example_shows(aws, spark):
    from awsglue.context import GlueContext

    arn, bucket = exported_table(aws, [{"id": {"S": "k"}, "ColA": {"S": "a"}, "ColB": {"S": "b"}, "ColC": {"N": "3"},
                                        "ColD": {"L": [{"S": "x"}]}}])  # fmt: skip
    frame = GlueContext(spark).create_dynamic_frame.from_options(
        connection_type="dynamodb",
        connection_options={
            "dynamodb.export": "ddb",
            "dynamodb.tableArn": arn,
            "dynamodb.s3.bucket": bucket,
            "dynamodb.s3.prefix": "p",
        },
    )
    assert schema_of(frame.unnest_ddb_json().toDF()) == [
        ("id", "string"), ("ColA", "string"), ("ColB", "string"), ("ColC", "string"), ("ColD", "array<struct<S:string>>"),
    ]  # fmt: skip
    assert schema_of(frame.simplify_ddb_json().toDF())[4] == ("ColD", "array<string>")


def test_a_past_export_in_aws_layout_is_read_from_its_manifests(aws, spark):
    """``dynamodb.export`` ``s3``: an export as DynamoDB documents its layout (written
    here by hand: moto writes data files only), found through manifest-summary.json and
    manifest-files.json; the newest export of the table under the prefix is read."""
    import gzip
    import json

    from awsglue.context import GlueContext

    arn, bucket = exported_table(aws, [])
    s3 = s3_client(aws)
    for export_id, when, value in (("01700000000000-aaaaaaaa", "2026-11-01T00:00:00Z", "old"),
                                   ("01700000099999-bbbbbbbb", "2026-11-02T00:00:00Z", "new")):  # fmt: skip
        root = f"backups/AWSDynamoDB/{export_id}"
        lines = [{"Item": {"id": {"S": f"{value}{i}"}, "n": {"N": str(i)}}} for i in range(3)]
        body = gzip.compress("".join(json.dumps(x) + "\n" for x in lines).encode())
        s3.put_object(Bucket=bucket, Key=f"{root}/data/part0.json.gz", Body=body)
        files = {
            "itemCount": 3,
            "md5Checksum": "x",
            "etag": "y",
            "dataFileS3Key": f"{root}/data/part0.json.gz",
        }
        s3.put_object(Bucket=bucket, Key=f"{root}/manifest-files.json", Body=json.dumps(files) + "\n")
        summary = {"version": "2020-06-30", "exportArn": f"{arn}/export/{export_id}", "tableArn": arn,
                   "exportTime": when, "s3Bucket": bucket, "s3Prefix": "backups", "itemCount": 3,
                   "outputFormat": "DYNAMODB_JSON", "manifestFilesS3Key": f"{root}/manifest-files.json"}  # fmt: skip
        s3.put_object(Bucket=bucket, Key=f"{root}/manifest-summary.json", Body=json.dumps(summary))
    frame = GlueContext(spark).create_dynamic_frame.from_options(
        connection_type="dynamodb",
        connection_options={
            "dynamodb.export": "s3",
            "dynamodb.tableArn": arn,
            "dynamodb.s3.bucket": bucket,
            "dynamodb.s3.prefix": "backups",
            "dynamodb.simplifyDDBJson": "true",
        },
    )
    assert sorted((r["id"], r["n"]) for r in frame.toDF().collect()) == [
        ("new0", "0"),
        ("new1", "1"),
        ("new2", "2"),
    ]


def test_an_export_that_cannot_be_made_or_found_says_why_in_one_line(aws, spark):
    from awsglue.context import GlueContext

    glue = GlueContext(spark)
    name = make_table(aws, [{"id": "a"}])  # no point-in-time recovery
    arn = aws.describe_table(TableName=name)["Table"]["TableArn"]
    bucket = f"exports-{uuid.uuid4().hex[:8]}"
    s3_client(aws).create_bucket(Bucket=bucket)
    cases = [
        ({"dynamodb.export": "ddb"}, "cannot be exported: PointInTimeRecoveryUnavailable"),
        ({"dynamodb.export": "s3"}, f"no DynamoDB export of table {name!r}"),
        ({"dynamodb.export": "now"}, "must be 'ddb'"),
    ]
    for extra, message in cases:
        options = {"dynamodb.tableArn": arn, "dynamodb.s3.bucket": bucket, "dynamodb.s3.prefix": "x", **extra}
        with pytest.raises(SourceError, match=message) as raised:
            glue.create_dynamic_frame.from_options(connection_type="dynamodb", connection_options=options)
        assert "\n" not in str(raised.value)


def test_studios_dynamodb_source_nodes_generate_and_run(aws, spark, tmp_path):
    """Studio's two DynamoDB source nodes, generated into a script and run by ``sparkmark
    studio run``: a crawled table read through the catalog (Scan), and a table by its ARN
    through the export connector with unnesting, as Studio sets it up."""
    from typer.testing import CliRunner

    from sparkmark.catalog.models import Column, Database, Table
    from sparkmark.catalog.store import CatalogStore
    from sparkmark.cli.app import app
    from sparkmark.engine.store import StateStore
    from sparkmark.studio.codegen import generate
    from sparkmark.studio.graph import parse_document

    arn, bucket = exported_table(aws, [{"id": {"S": f"s{i}"}, "n": {"N": str(i)}} for i in range(4)])
    name = arn.rsplit("/", 1)[1]
    store = CatalogStore(StateStore.from_settings())
    store.put_database(Database("shop"))
    store.put_table(
        Table("shop", name, arn, "dynamodb", (Column("id", "string"), Column("n", "bigint")), (), {})
    )
    cases = {
        "catalog": {"DynamoDBCatalogSource": {"Name": "Orders", "Database": "shop", "Table": name}},
        "export": {"DynamoDBELTConnectorSource": {"Name": "Orders", "ConnectionOptions": {
            "DynamodbExport": "ddb", "DynamodbUnnestDDBJson": True, "DynamodbTableArn": arn,
            "DynamodbS3Bucket": bucket, "DynamodbS3Prefix": "studio"}}},
    }  # fmt: skip
    for case, source in cases.items():
        out = tmp_path / case
        nodes = {
            "n1": source,
            "n2": {"SelectFields": {"Name": "Ids", "Inputs": ["n1"], "Paths": [["id"], ["n"]]}},
            "n3": {"S3GlueParquetTarget": {"Name": "Out", "Inputs": ["n2"], "Path": str(out)}},
        }
        document = {"Job": {"Name": f"ddb_{case}", "CodeGenConfigurationNodes": nodes}}
        job_file = tmp_path / f"{case}.json"
        job_file.write_text(json.dumps(document))
        script = generate(parse_document(document)[0])
        expected = {"catalog": ["create_dynamic_frame.from_catalog", 'transformation_ctx="Orders_n1"'],
                    "export": ['connection_type="dynamodb"', '"dynamodb.export": "ddb"',
                               '"dynamodb.unnestDDBJson": True']}[case]  # fmt: skip
        assert all(part in script for part in expected), script
        done = CliRunner().invoke(app, ["studio", "run", str(job_file)])
        assert done.exit_code == 0, done.output[-3000:]
        rows = sorted((r["id"], str(r["n"])) for r in spark.read.parquet(str(out)).collect())
        assert rows == [(f"s{i}", str(i)) for i in range(4)]  # a Scan's numbers, an export's text
