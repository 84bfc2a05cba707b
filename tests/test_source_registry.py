"""A source kind is its module and its registry entry: the Glue façade and the native
API read any kind the registry makes from connection options, bookmarks included,
without a line of either changing. The kind here lives outside sparkmark's package."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sparkmark import Job
from sparkmark.errors import ArgumentError, SourceError
from sparkmark.sources import registry

KIND_HOME = Path(__file__).parent / "fixtures" / "source_kind"

COUNTING = registry.SourceKind(
    "counting",
    ("counting",),
    False,
    lambda m: f"{m.get('numbers_read', 0)} numbers",
    factory="counting_kind.numbers:make",  # a dotted name: a module outside sparkmark's sources
)


@pytest.fixture
def counting(monkeypatch):
    monkeypatch.syspath_prepend(str(KIND_HOME))
    monkeypatch.setattr(registry, "KINDS", dict(registry.KINDS))
    registry.register(COUNTING)
    yield COUNTING
    for name in ("counting_kind", "counting_kind.numbers"):
        sys.modules.pop(name, None)


def test_the_facade_reads_a_registered_kind_and_bookmarks_it(spark, counting, tmp_path):
    from awsglue.context import GlueContext
    from awsglue.job import Job as GlueJob

    glue = GlueContext(spark)
    for upto, expected in ((3, [1, 2, 3]), (5, [4, 5])):
        job = GlueJob(glue)
        job.init("counting_job", {"JOB_NAME": "counting_job", "job_bookmark_option": "job-bookmark-enable"})
        frame = glue.create_dynamic_frame.from_options(
            connection_type="counting", connection_options={"upto": upto}, transformation_ctx="numbers"
        )
        assert sorted(r["n"] for r in frame.toDF().collect()) == expected
        job.commit()


def test_a_catalog_table_of_a_registered_kind_is_read_through_it(spark, counting):
    from awsglue.context import GlueContext

    from sparkmark.catalog.models import Column, Database, Table

    glue = GlueContext(spark)
    store = glue.catalog_store()
    store.put_database(Database("kinds"))
    store.put_table(
        Table(
            "kinds", "numbers", "counting://numbers", "counting", (Column("n", "bigint"),), (), {"upto": "2"}
        )
    )
    frame = glue.create_dynamic_frame.from_catalog(database="kinds", table_name="numbers")
    assert sorted(r["n"] for r in frame.toDF().collect()) == [1, 2]
    # the read's own options come over the table's parameters
    frame = glue.create_dynamic_frame.from_catalog(
        database="kinds", table_name="numbers", additional_options={"upto": 3}
    )
    assert frame.count() == 3


def test_the_native_api_reads_a_registered_kind_and_bookmarks_it(spark, counting):
    for upto, expected in ((4, [1, 2, 3, 4]), (4, []), (6, [5, 6])):
        with Job("counting_native", bookmark_option="job-bookmark-enable", spark=spark) as job:
            df = job.read("counting", ctx="numbers", upto=upto)
            assert sorted(r["n"] for r in df.collect()) == expected
    with (
        Job("counting_native", spark=spark) as job,
        pytest.raises(ArgumentError, match="read_files or read_jdbc"),
    ):
        job.read("postgresql", url="jdbc:postgresql://h/d")


def test_a_connection_type_served_twice_is_refused(counting):
    with pytest.raises(SourceError, match="'kafka' is already served"):
        registry.register(registry.SourceKind("other", ("kafka",), False, str, factory="x:y"))


def test_the_registry_finds_each_kind_by_its_connection_type():
    assert registry.by_connection_type("KAFKA") is registry.KAFKA
    assert registry.by_connection_type("s3") is registry.FILES
    assert registry.by_connection_type("dynamodb") is registry.DYNAMODB
    assert registry.by_connection_type("documentdb") is None
    assert registry.made_from_options("s3") is None  # files are read with their formats
    assert registry.stream_accepts("kafka", "topicName")
    assert not registry.stream_accepts("kafka", "streamName")
    with pytest.raises(SourceError, match="streaming connection_type 's3' is not supported"):
        registry.stream_source("s3", {}, ctx=None)
