"""The Glue façade in-process: getResolvedOptions, Job, GlueContext, DynamicFrame, transforms."""

from __future__ import annotations

import json
import logging
import os
import uuid

import pytest
from pyspark.sql import types as T

from sparkmark.engine.store import StateStore
from sparkmark.errors import SourceError, SparkmarkError
from sparkmark.glue import gluetypes, shim
from sparkmark.glue.context import GlueContext
from sparkmark.glue.dynamicframe import DynamicFrame, GlueError
from sparkmark.glue.job import Job
from sparkmark.glue.transforms import (
    ApplyMapping,
    DropFields,
    DropNullFields,
    Filter,
    Join,
    Map,
    Relationalize,
    RenameField,
    ResolveChoice,
    SelectFields,
    SelectFromCollection,
    Spigot,
    SplitFields,
    SplitRows,
    Unbox,
    Union,
    UnnestFrame,
)
from sparkmark.glue.utils import GlueArgumentError, getResolvedOptions
from sparkmark.spark_lines import HAS_VARIANT, VariantType

from .conftest import write_json

# ------------------------------------------------------------------ getResolvedOptions


def test_get_resolved_options_defaults_and_aliases():
    got = getResolvedOptions(
        ["s.py", "--JOB_NAME", "j", "--src", "/d", "--RedshiftTempDir", "/t", "--extra", "x"],
        ["JOB_NAME", "src"],
    )
    assert got["JOB_NAME"] == "j" and got["src"] == "/d"
    assert got["job_bookmark_option"] == "job-bookmark-disable"
    assert got["TempDir"] == got["RedshiftTempDir"] == "/t"
    assert "extra" not in got  # only the asked-for options, as on Glue


def test_get_resolved_options_errors():
    with pytest.raises(GlueArgumentError, match="required: --src"):
        getResolvedOptions(["s.py", "--JOB_NAME", "j"], ["JOB_NAME", "src"])
    with pytest.raises(GlueArgumentError, match="invalid choice"):
        getResolvedOptions(["s.py", "--job-bookmark-option", "on"], [])
    with pytest.raises(RuntimeError, match="Using reserved arguments job-bookmark-option"):
        getResolvedOptions(["s.py"], ["job-bookmark-option"])
    with pytest.raises(RuntimeError, match="Using reserved arguments --JOB_ID"):
        getResolvedOptions(["s.py"], ["JOB_ID"])
    with pytest.raises(RuntimeError, match="Missing option or value for --job-bookmark-to"):
        getResolvedOptions(
            ["s.py", "--job-bookmark-option", "job-bookmark-pause", "--job-bookmark-from", "jr_1"], []
        )
    with pytest.raises(RuntimeError, match="Invalid option"):
        getResolvedOptions(["s.py", "--job-bookmark-from", "a", "--job-bookmark-to", "b"], [])


def test_get_resolved_options_continuation_mapping():
    got = getResolvedOptions(["s.py", "--continuation-option", "continuation-readonly"], [])
    assert got["job_bookmark_option"] == "job-bookmark-pause"
    assert "continuation_option" not in got


def test_shim_resolves_awsglue_names():
    assert shim.install()
    import awsglue.context
    import awsglue.transforms
    from awsglue.dynamicframe import DynamicFrame as AliasFrame

    assert awsglue.context.GlueContext is GlueContext
    assert AliasFrame is DynamicFrame and awsglue.transforms.ApplyMapping is ApplyMapping


# ------------------------------------------------------------------ Job and GlueContext


@pytest.fixture
def glue(spark):
    return GlueContext(spark)


def test_job_bookmarks_by_transformation_ctx(glue, tmp_path):
    data = tmp_path / "in"
    write_json(data / "a.json", [1, 2])
    args = getResolvedOptions(
        ["s.py", "--JOB_NAME", "gj", "--job-bookmark-option", "job-bookmark-enable"], ["JOB_NAME"]
    )

    def one_run():
        ctx = GlueContext(glue.spark_session)
        job = Job(ctx)
        job.init(args["JOB_NAME"], args)
        assert job.isInitialized()
        frame = ctx.create_dynamic_frame.from_options(
            "s3", {"paths": [str(data)]}, format="json", transformation_ctx="src"
        )
        ids = sorted(r["id"] for r in frame.toDF().collect())
        job.commit()
        return ids

    assert one_run() == [1, 2]
    assert one_run() == []
    write_json(data / "b.json", [3])
    assert one_run() == [3]
    state = StateStore.from_settings().latest_version("gj").ctx_states
    assert set(state) == {"src"}


def test_skip_unchanged_partitions_through_the_facade(glue, tmp_path):
    """Glue's file options reach the bookmark engine from connection_options: with
    skipUnchangedPartitions a run lists only the partition folders that changed."""
    data = tmp_path / "in"
    for day in ("d1", "d2", "d3"):
        write_json(data / f"dt={day}" / "a.json", [int(day[1])])
    args = {"JOB_NAME": "gj_skip", "job_bookmark_option": "job-bookmark-enable"}
    options = {"paths": [str(data)], "recurse": True, "skipUnchangedPartitions": "true"}

    def one_run():
        ctx = GlueContext(glue.spark_session)
        job = Job(ctx)
        job.init("gj_skip", args)
        frame = ctx.create_dynamic_frame.from_options("s3", options, format="json", transformation_ctx="src")
        ids = sorted(r["id"] for r in frame.toDF().collect())
        job.commit()
        return ids, StateStore.from_settings().get_run(job.run_id).metrics["sources"]["src"]

    assert one_run()[0] == [1, 2, 3]
    write_json(data / "dt=d2" / "b.json", [22])
    ids, metrics = one_run()
    assert ids == [22]
    assert metrics["partitions_skipped"] == 2
    assert metrics["files_listed"] == 2  # only dt=d2 was listed


def test_a_bad_boolean_glue_option_is_a_clear_error(glue, tmp_path):
    write_json(tmp_path / "in" / "a.csv", [1])
    with pytest.raises(SparkmarkError, match="option withHeader must be true or false, got 'sometimes'"):
        glue.create_dynamic_frame.from_options(
            "s3", {"paths": [str(tmp_path / "in")]}, format="csv", format_options={"withHeader": "sometimes"}
        )


def test_commit_without_init_commits_nothing(glue, tmp_path, caplog):
    write_json(tmp_path / "in" / "a.json", [1])
    job = Job(glue)
    assert not job.isInitialized()
    with caplog.at_level(logging.WARNING):
        frame = glue.create_dynamic_frame.from_options(
            "s3", {"paths": [str(tmp_path / "in")]}, format="json", transformation_ctx="src"
        )
        assert frame.count() == 1
        job.commit()
    assert "before Job.init()" in caplog.text and "not bookmarked" in caplog.text
    assert not StateStore.from_settings().job_exists("gj_none")


def test_from_catalog_of_an_unknown_table_is_a_clear_error(glue):
    with pytest.raises(SparkmarkError, match="no table nowhere.t in the catalog"):
        glue.create_dynamic_frame.from_catalog(database="nowhere", table_name="t")


def test_csv_options_and_glueparquet_write(glue, tmp_path):
    src = tmp_path / "csv"
    src.mkdir()
    (src / "a.csv").write_text("id;name\n1;'a;b'\n")
    frame = glue.create_dynamic_frame.from_options(
        "s3",
        {"paths": [str(src)]},
        format="csv",
        format_options={"withHeader": True, "separator": ";", "quoteChar": "'"},
    )
    # Read from files, a CSV's fields are text, as Glue gives them.
    assert [tuple(r) for r in frame.toDF().collect()] == [("1", "a;b")]
    out = tmp_path / "out"
    glue.write_dynamic_frame.from_options(
        frame,
        "s3",
        {"path": str(out), "partitionKeys": ["id"]},
        format="glueparquet",
        format_options={"compression": "gzip"},
    )
    files = list(out.glob("id=1/*.parquet"))
    assert files and ".gz." in files[0].name


# ------------------------------------------------------------------ choice types

# Choice fields are VARIANT columns, which Spark 3.5 (Glue 5.x) does not have: there a
# field whose records disagree is read as text (docs/glue-versions.md), as the test after
# these checks.
needs_variant = pytest.mark.skipif(not HAS_VARIANT, reason="choice fields need VARIANT (Spark 4, Glue 6.0)")


@pytest.fixture
def choice_frame(glue, tmp_path):
    data = tmp_path / "choice"
    data.mkdir()
    records = [
        {"id": 1, "price": 10, "addr": {"zip": 12345, "city": "A"}},
        {"id": 2, "price": "12.5", "addr": {"zip": "X1", "city": "B"}},
        {"id": 3, "price": None},
    ]
    lines = [json.dumps(r) for r in records] + ["not json"]
    (data / "a.json").write_text("\n".join(lines) + "\n")
    return glue.create_dynamic_frame.from_options("s3", {"paths": [str(data)]}, format="json")


@needs_variant
def test_inconsistent_types_become_choices_on_variant(choice_frame, capsys):
    spark_schema = choice_frame.toDF().schema
    assert isinstance(spark_schema["price"].dataType, VariantType)
    assert isinstance(spark_schema["addr"].dataType["zip"].dataType, VariantType)
    # schema() speaks Glue's types (awsglue.gluetypes), as scripts inspect them.
    schema = choice_frame.schema()
    price = schema.getField("price").dataType
    assert isinstance(price, gluetypes.ChoiceType) and sorted(price.choices) == ["int", "string"]
    zip_code = schema.getField("addr").dataType.getField("zip").dataType
    assert sorted(zip_code.choices) == ["int", "string"]
    assert schema.getField("id").dataType.typeName() == "long"
    assert [f.name for f in schema.fields] == [f.name for f in spark_schema.fields]
    choice_frame.printSchema()
    printed = capsys.readouterr().out
    assert "price: choice\n|    |-- int\n|    |-- string" in printed
    assert choice_frame.errorsCount() == 1  # the line that is not JSON
    bad = choice_frame.errorsAsDynamicFrame().toDF().first()
    assert bad["record"] == "not json"


@pytest.mark.skipif(HAS_VARIANT, reason="Spark 3.5's reading of disagreeing records")
def test_on_spark_3_5_a_field_whose_records_disagree_is_text(choice_frame):
    """Without VARIANT, a field that is a number in one record and text in another is
    read as Spark's JSON reader reads it: a string holding each value's text, where
    Glue 5.0 itself makes a choice; fields whose records agree keep their types."""
    df = choice_frame.toDF()
    assert df.schema["price"].dataType.typeName() == "string"
    assert df.schema["addr"].dataType["zip"].dataType.typeName() == "string"
    assert df.schema["id"].dataType.typeName() == "long"
    assert [f.name for f in df.schema.fields] == ["id", "price", "addr"]  # the file's order
    rows = sorted(df.collect(), key=lambda r: r["id"])
    assert [r["price"] for r in rows] == ["10", "12.5", None]
    assert [r["addr"]["zip"] if r["addr"] else None for r in rows] == ["12345", "X1", None]
    assert choice_frame.errorsCount() == 1  # the line that is not JSON
    cast = ResolveChoice.apply(choice_frame, specs=[("price", "cast:double")]).toDF()
    assert sorted((r["id"], r["price"]) for r in cast.collect()) == [(1, 10.0), (2, 12.5), (3, None)]


@needs_variant
def test_resolve_choice_cast_and_project(choice_frame):
    cast = ResolveChoice.apply(choice_frame, specs=[("price", "cast:double")]).toDF()
    assert sorted((r["id"], r["price"]) for r in cast.collect()) == [(1, 10.0), (2, 12.5), (3, None)]
    projected = choice_frame.resolveChoice(specs=[("price", "project:int")]).toDF()
    assert sorted((r["id"], r["price"]) for r in projected.collect()) == [(1, 10), (2, None), (3, None)]
    nested = choice_frame.resolveChoice(specs=[("addr.zip", "project:string")]).toDF()
    assert sorted((r["id"], r["addr"]["zip"] if r["addr"] else None) for r in nested.collect()) == [
        (1, None),
        (2, "X1"),
        (3, None),
    ]


@needs_variant
def test_resolve_choice_make_struct_and_make_cols(choice_frame):
    cols = choice_frame.resolveChoice(specs=[("price", "make_cols")]).toDF()
    assert {"price_int", "price_string"} <= set(cols.columns) and "price" not in cols.columns
    assert sorted((r["id"], r["price_int"], r["price_string"]) for r in cols.collect()) == [
        (1, 10, None),
        (2, None, "12.5"),
        (3, None, None),
    ]
    struct = choice_frame.resolveChoice(specs=[("price", "make_struct")]).toDF()
    assert struct.schema["price"].dataType.fieldNames() == ["int", "string"]
    every = ResolveChoice.apply(choice_frame, choice="cast:string").toDF()
    assert not any(isinstance(f.dataType, VariantType) for f in every.schema.fields)
    with pytest.raises(SparkmarkError, match="match_catalog needs database"):
        choice_frame.resolveChoice(choice="match_catalog")


# ------------------------------------------------------------------ field transforms


@pytest.fixture
def people(glue, spark):
    df = spark.createDataFrame(
        [(1, "Ann", ("Paris", "75001"), [1, 2], None), (2, "Bob", ("Oslo", None), [], None)],
        "id long, name string, addr struct<city: string, zip: string>, tags array<int>, empty string",
    )
    return DynamicFrame.fromDF(df, glue, "people")


def test_apply_mapping_nested_paths_and_casts(people):
    out = ApplyMapping.apply(
        frame=people,
        mappings=[
            ("id", "long", "person.id", "string"),
            ("addr.city", "string", "person.city", "string"),
            ("name", "string", "name", "string"),
            ("missing", "string", "gone", "int"),
        ],
    ).toDF()
    assert out.columns == ["person", "name", "gone"]
    first = sorted(out.collect(), key=lambda r: r["name"])[0]
    assert first["person"]["id"] == "1" and first["person"]["city"] == "Paris" and first["gone"] is None


def test_select_drop_rename_nested(people):
    assert (
        SelectFields.apply(people, ["id", "addr.city"]).toDF().schema.simpleString()
        == "struct<id:bigint,addr:struct<city:string>>"
    )
    dropped = DropFields.apply(people, ["addr.zip", "tags"]).toDF()
    assert dropped.schema["addr"].dataType.fieldNames() == ["city"] and "tags" not in dropped.columns
    renamed = RenameField.apply(people, "addr.city", "addr.town").toDF()
    assert renamed.schema["addr"].dataType.fieldNames() == ["zip", "town"]
    top = people.rename_field("name", "full_name").toDF()
    assert "full_name" in top.columns and "name" not in top.columns


def test_drop_null_fields_unnest_and_unbox(people, glue, spark):
    assert "empty" not in DropNullFields.apply(people).toDF().columns
    flat = UnnestFrame.apply(people).toDF()
    assert "addr.city" in flat.columns
    raw = DynamicFrame.fromDF(
        spark.createDataFrame([(1, '{"a": 1, "b": {"c": "x"}}')], "id int, js string"), glue, "r"
    )
    unboxed = Unbox.apply(raw, "js", "json").toDF()
    assert unboxed.first()["js"]["b"]["c"] == "x"


def test_filter_and_map_with_error_records(people):
    kept = Filter.apply(frame=people, f=lambda r: r["addr"]["zip"] is not None)
    assert [r["id"] for r in kept.toDF().collect()] == [1]

    def shout(r):
        if r["id"] == 2:
            raise ValueError("no shouting at Bob")
        r["name"] = r["name"].upper()
        return r

    mapped = Map.apply(frame=people, f=shout)
    assert [r["name"] for r in mapped.toDF().collect()] == ["ANN"]
    assert mapped.errorsCount() == 1 and mapped.stageErrorsCount() == 1
    error = mapped.errorsAsDynamicFrame().toDF().first()
    assert "no shouting at Bob" in error["error"] and json.loads(error["record"])["id"] == 2
    with pytest.raises(GlueError):
        mapped.assertErrorThreshold()
    with pytest.raises(GlueError, match="stageThreshold"):
        Map.apply(frame=people, f=lambda r: 1 / 0, stageThreshold=1)  # 2 errors > 1


@needs_variant
def test_filter_keeps_the_input_rows_as_they_were_and_its_errors_as_error_records(glue, spark):
    """A Filter's kept records are the input's rows, with their types (a decimal, a
    timestamp, a nested struct, a choice); a record the function fails on becomes an
    error record holding the record, and counts against stageThreshold."""
    df = spark.sql(
        "SELECT * FROM VALUES "
        "(1, CAST(12.345 AS DECIMAL(10,3)), TIMESTAMP'2026-11-01 10:00:00.123456', named_struct('zip', '9'), "
        "parse_json('1')), "
        "(2, CAST(0.5 AS DECIMAL(10,3)), TIMESTAMP'2026-11-02 00:00:00', named_struct('zip', NULL), "
        "parse_json('\"x\"')), "
        "(3, NULL, NULL, NULL, NULL) AS t(id, amount, at, addr, v)"
    )
    frame = DynamicFrame.fromDF(df, glue, "f")

    def keep(record):
        if record["id"] == 3:
            raise KeyError("amount")
        return record["id"] != 2

    kept = Filter.apply(frame=frame, f=keep)
    assert kept.toDF().schema == df.schema
    shown = ["id", "amount", "at", "addr", "to_json(v) AS v"]  # a VARIANT value compares as its JSON
    assert kept.toDF().selectExpr(*shown).collect() == df.where("id = 1").selectExpr(*shown).collect()
    assert kept.errorsCount() == 1 and kept.stageErrorsCount() == 1
    error = kept.errorsAsDynamicFrame().toDF().first()
    assert error["error"] == "KeyError: 'amount'" and json.loads(error["record"]) == {"id": 3}
    assert error["transformation"] == "Filter"
    with pytest.raises(GlueError, match="stageThreshold"):
        Filter.apply(frame=frame, f=lambda r: 1 / 0, stageThreshold=2)  # 3 errors > 2
    assert Filter.apply(frame=frame, f=keep, stageThreshold=1).toDF().count() == 1  # 1 error, not > 1
    assert Filter.apply(frame=frame, f=lambda r: False).toDF().count() == 0
    assert Filter.apply(frame=frame, f=lambda r: False).errorsCount() == 0  # a plain no is no error


def test_join_split_union_and_spigot(people, glue, spark, tmp_path):
    orders = DynamicFrame.fromDF(
        spark.createDataFrame([(10, 1), (11, 1), (12, 2)], "oid long, pid long"), glue, "o"
    )
    joined = Join.apply(orders, people, "pid", "id").toDF()
    assert sorted((r["oid"], r["name"]) for r in joined.collect()) == [(10, "Ann"), (11, "Ann"), (12, "Bob")]
    split = SplitFields.apply(people, ["id", "name"], "ids", "rest")
    assert sorted(split.keys()) == ["ids", "rest"]
    assert SelectFromCollection.apply(split, "ids").toDF().columns == ["id", "name"]
    rows = SplitRows.apply(people, {"id": {">": 1}}, "big", "small")
    assert [r["id"] for r in rows["big"].toDF().collect()] == [2]
    assert [r["id"] for r in rows["small"].toDF().collect()] == [1]
    other = DynamicFrame.fromDF(spark.createDataFrame([("x",)], "id string"), glue, "other")
    merged = Union.apply(people.select_fields(["id"]), other).toDF()
    # a choice of long and string: VARIANT on Spark 4; on Spark 3.5 the values' text
    joined_type = VariantType if HAS_VARIANT else T.StringType
    assert isinstance(merged.schema["id"].dataType, joined_type) and merged.count() == 3
    Spigot.apply(people, str(tmp_path / "sample"), {"topk": 1})
    sample = [
        json.loads(line) for p in (tmp_path / "sample").glob("part-*") for line in p.read_text().splitlines()
    ]
    assert len(sample) == 1


def test_relationalize_root_and_child_tables(glue, spark):
    df = spark.createDataFrame(
        [(1, ("x", [("a", 1), ("b", 2)])), (2, ("y", []))],
        "id long, info struct<name: string, items: array<struct<k: string, v: int>>>",
    )
    tables = Relationalize.apply(DynamicFrame.fromDF(df, glue, "t"), "/tmp/unused", "root")
    assert sorted(tables.keys()) == ["root", "root_info.items"]
    root = {r["id"]: r for r in tables["root"].toDF().collect()}
    child = tables["root_info.items"].toDF()
    assert set(child.columns) == {"id", "index", "info.items.val.k", "info.items.val.v"}
    rows = sorted((r["id"], r["index"], r["info.items.val.k"]) for r in child.collect())
    key = root[1]["info.items"]
    assert rows == [(key, 0, "a"), (key, 1, "b")]
    assert root[1]["info.name"] == "x"


# ------------------------------------------------------------------ more GlueContext surface


def test_jdbc_from_options_with_bookmark_keys_and_jdbc_writes(glue, tmp_path, monkeypatch):
    import sqlalchemy as sa

    engine = sa.create_engine("postgresql+psycopg://postgres@127.0.0.1:5432/test")
    name = f"gl_{uuid.uuid4().hex[:8]}"
    with engine.begin() as conn:
        conn.exec_driver_sql(f"CREATE TABLE {name} (id int primary key, v text)")
        conn.exec_driver_sql(f"CREATE TABLE {name}_out (id int primary key, v text)")
        conn.exec_driver_sql(f"INSERT INTO {name} VALUES (1, 'a'), (2, 'b')")
    options = {
        "url": "jdbc:postgresql://127.0.0.1:5432/test",
        "user": "postgres",
        "dbtable": name,
        "jobBookmarkKeys": ["id"],
        "jobBookmarkKeysSortOrder": "asc",
        "hashpartitions": "2",
    }
    args = {"JOB_NAME": f"gjdbc_{name}", "job_bookmark_option": "job-bookmark-enable"}
    try:
        ids = []
        for _ in range(2):
            ctx = GlueContext(glue.spark_session)
            job = Job(ctx)
            job.init(args["JOB_NAME"], args)
            frame = ctx.create_dynamic_frame.from_options("postgresql", options, transformation_ctx="db")
            ids.append(sorted(r["id"] for r in frame.toDF().collect()))
            ctx.write_dynamic_frame.from_options(frame, "postgresql", {**options, "dbtable": f"{name}_out"})
            job.commit()
        assert ids == [[1, 2], []]
        config = tmp_path / "sparkmark.toml"
        config.write_text(
            '[connections.pg]\nurl = "jdbc:postgresql://127.0.0.1:5432/test"\nuser = "postgres"\n'
        )
        monkeypatch.setenv("SPARKMARK_CONFIG", str(config))
        # A script started with that setting: its GlueContext resolves the environment.
        later = GlueContext(glue.spark_session)
        extra = DynamicFrame.fromDF(
            later.spark_session.createDataFrame([(3, "c")], "id int, v string"), later, "x"
        )
        later.write_dynamic_frame.from_jdbc_conf(extra, "pg", {"dbtable": f"{name}_out", "database": "test"})
        with engine.connect() as conn:
            assert [r[0] for r in conn.exec_driver_sql(f"SELECT id FROM {name}_out ORDER BY id")] == [1, 2, 3]
        with pytest.raises(SparkmarkError, match="not supported"):
            glue.create_dynamic_frame.from_options("sqlserver", {"url": "jdbc:sqlserver://h", "dbtable": "t"})
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS {name}")
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS {name}_out")


def test_rdd_data_frame_sources_sinks_logger_and_purge(glue, tmp_path, caplog):
    rdd = glue.spark_session.sparkContext.parallelize([(1, "a"), (2, "b")])
    frame = glue.create_dynamic_frame.from_rdd(rdd, "r", schema="id long, s string")
    assert frame.count() == 2 and frame.name == "r"
    data = tmp_path / "in"
    write_json(data / "a.json", [5])
    (data / "array.json").write_text('[{"id": 6}, {"id": 7}]')
    df = glue.create_data_frame.from_options("s3", {"paths": [str(data / "a.json")]}, format="json")
    assert [r["id"] for r in df.collect()] == [5]
    whole = glue.create_dynamic_frame.from_options(
        "s3", {"paths": [str(data / "array.json")]}, format="json", format_options={"jsonPath": "$[*]"}
    )
    assert sorted(r["id"] for r in whole.toDF().collect()) == [6, 7]
    # A path into each document (AWS's JSON format option jsonPath): the records' fields
    # in the file's order; a document without the path gives no record, and a path
    # sparkmark cannot read is refused in one line.
    (data / "nested").mkdir()
    (data / "nested" / "n.json").write_text(
        '{"data": {"rows": [{"zz": 1, "aa": "x"}, {"zz": 2, "aa": "y"}]}}'
    )
    (data / "nested" / "other.json").write_text('{"elsewhere": [{"zz": 9}]}')
    nested = glue.create_dynamic_frame.from_options(
        "s3", {"paths": [str(data / "nested")]}, format="json", format_options={"jsonPath": "$.data.rows[*]"}
    ).toDF()
    assert nested.columns == ["zz", "aa"]
    assert sorted(tuple(r) for r in nested.collect()) == [(1, "x"), (2, "y")]
    with pytest.raises(SourceError, match=r"JsonPath '\$.data.rows\[0\]' is not one sparkmark reads"):
        glue.create_dynamic_frame.from_options(
            "s3",
            {"paths": [str(data / "nested")]},
            format="json",
            format_options={"jsonPath": "$.data.rows[0]"},
        )
    source = glue.getSource("s3", paths=[str(data / "a.json")])
    source.setFormat("json")
    assert source.getFrame().count() == 1
    out = tmp_path / "sink"
    sink = glue.getSink("s3", path=str(out), partitionKeys=[])
    sink.setFormat("json")
    sink.setCatalogInfo(catalogDatabase="db", catalogTableName="t")
    sink.writeFrame(frame)
    assert sum(len(p.read_text().splitlines()) for p in out.glob("part-*")) == 2
    with caplog.at_level(logging.INFO, logger="sparkmark.glue.script"):
        glue.get_logger().warn("hello from the script")
    assert "hello from the script" in caplog.text
    old = write_json(tmp_path / "purge" / "old.json", [1], mtime=1_600_000_000)
    new = write_json(tmp_path / "purge" / "new.json", [2])
    glue.purge_s3_path(str(tmp_path / "purge"), {"retentionPeriod": 1, "excludeStorageClasses": []})
    assert not old.exists() and new.exists()


@pytest.mark.slow
def test_install_shim_pth_works_in_a_fresh_interpreter(tmp_path, monkeypatch):
    import subprocess
    import sys

    monkeypatch.setattr(shim, "pth_path", lambda: tmp_path / shim.PTH_NAME)
    written = shim.write_pth()
    code = (
        "import site, sys; site.addsitedir(sys.argv[1]); import awsglue.context as c; "
        "print(c.GlueContext.__module__)"
    )
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True)
    assert done.stdout.strip() == "sparkmark.glue.context", done.stderr
    off = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        env={**os.environ, "SPARKMARK_AWSGLUE": "off"},
    )
    assert off.returncode != 0 and "awsglue" in off.stderr  # AWS's library is not installed here
    assert shim.remove_pth() and not written.exists()


def test_for_each_batch_on_a_streaming_file_source(glue, tmp_path):
    data, seen = tmp_path / "stream", []
    write_json(data / "a.json", [1, 2])
    stream = glue.spark_session.readStream.schema("id long").json(str(data))
    options = {
        "windowSize": "1 second",
        "checkpointLocation": str(tmp_path / "cp"),
        "trigger": "availableNow",
    }

    def batch(df, batch_id):
        seen.extend(r["id"] for r in df.collect())

    glue.forEachBatch(frame=stream, batch_function=batch, options=options)
    assert sorted(seen) == [1, 2]
    write_json(data / "b.json", [3])
    glue.forEachBatch(
        frame=glue.spark_session.readStream.schema("id long").json(str(data)),
        batch_function=batch,
        options=options,
    )
    assert sorted(seen) == [1, 2, 3]  # the checkpoint remembers what was processed
    with pytest.raises(SparkmarkError, match="checkpointLocation"):
        glue.forEachBatch(frame=stream, batch_function=batch, options={})


def test_a_run_with_nothing_new_goes_through_every_transform_and_commits(glue, tmp_path, spark):
    """Glue's DynamicFrames are schema-less per record: a path no record has is not an
    error. A bookmarked source with nothing new gives a frame with no fields, and a
    scheduled run of the usual script (ResolveChoice, ApplyMapping, RenameField,
    SelectFields, DropFields, Filter, Join, write) succeeds, writes nothing and commits."""
    data, out = tmp_path / "orders", tmp_path / "out"
    write_json(data / "a.json", [1], amount=5, customer="c1")
    customers = DynamicFrame.fromDF(
        spark.createDataFrame([("c1", "Ann")], "cid string, name string"), glue, "c"
    )
    name = f"nothing_new_{uuid.uuid4().hex[:6]}"

    def run() -> tuple[Job, list]:
        job = Job(glue)
        job.init(name, {"JOB_NAME": name, "job_bookmark_option": "job-bookmark-enable"})
        orders = glue.create_dynamic_frame.from_options(
            "s3", {"paths": [str(data)]}, format="json", transformation_ctx="orders"
        )
        frame = ResolveChoice.apply(frame=orders, specs=[("amount", "cast:double")])
        frame = ApplyMapping.apply(
            frame=frame,
            mappings=[
                ("id", "long", "id", "long"),
                ("amount", "double", "amount", "double"),
                ("customer", "string", "customer", "string"),
            ],
        )
        frame = RenameField.apply(frame=frame, old_name="amount", new_name="total")
        frame = SelectFields.apply(frame=frame, paths=["id", "total", "customer"])
        frame = DropFields.apply(frame=frame, paths=["not_there"])
        frame = Filter.apply(frame=frame, f=lambda r: r["total"] is not None and r["total"] > 0)
        joined = Join.apply(frame1=frame, frame2=customers, keys1=["customer"], keys2=["cid"])
        rows = sorted((r["id"], r["name"]) for r in joined.toDF().collect())
        glue.write_dynamic_frame.from_options(
            frame=joined,
            connection_type="s3",
            connection_options={"path": str(out)},
            format="parquet",
            transformation_ctx="sink",
        )
        job.commit()
        return job, rows

    _, rows = run()
    assert rows == [(1, "Ann")]
    written = sorted(p.name for p in out.glob("*.parquet"))
    assert written
    second, rows = run()  # nothing new
    assert rows == []
    state = StateStore.from_settings()
    assert state.get_run(second.run_id).state.value == "SUCCEEDED"
    assert sorted(p.name for p in out.glob("*.parquet")) == written  # no file, not even an empty one

    # Without a bookmark too: a path missing from a frame that has other fields.
    partial = DynamicFrame.fromDF(spark.createDataFrame([(1,)], "id long"), glue, "p")
    assert ResolveChoice.apply(frame=partial, specs=[("price", "cast:double")]).toDF().columns == ["id"]
    assert RenameField.apply(frame=partial, old_name="price", new_name="cost").toDF().columns == ["id"]
    nothing = Join.apply(frame1=partial, frame2=customers, keys1=["customer"], keys2=["cid"])
    assert nothing.count() == 0 and {"id", "cid", "name"} <= set(nothing.toDF().columns)


def test_a_value_that_does_not_cast_becomes_null(glue, spark):
    """Glue's ResolveChoice cast: and ApplyMapping's type change give null for a value
    that does not convert, whatever Spark's ANSI setting (on by default in Spark 4; off
    by default in Spark 3.5, so turned on here)."""
    if not HAS_VARIANT:
        assert spark.conf.get("spark.sql.ansi.enabled") == "false"
        spark.conf.set("spark.sql.ansi.enabled", "true")
    try:
        _casts_give_null(glue, spark)
    finally:
        if not HAS_VARIANT:
            spark.conf.set("spark.sql.ansi.enabled", "false")


def _casts_give_null(glue, spark):
    assert spark.conf.get("spark.sql.ansi.enabled") == "true"
    frame = DynamicFrame.fromDF(spark.createDataFrame([("5",), ("x1",), (None,)], "v string"), glue, "f")
    cast = ResolveChoice.apply(frame=frame, specs=[("v", "cast:int")]).toDF()
    assert [r["v"] for r in cast.collect()] == [5, None, None]
    mapped = ApplyMapping.apply(frame=frame, mappings=[("v", "string", "n", "long")]).toDF()
    assert [r["n"] for r in mapped.collect()] == [5, None, None]
    dates = DynamicFrame.fromDF(spark.createDataFrame([("2026-11-01",), ("soon",)], "d string"), glue, "d")
    mapped = ApplyMapping.apply(frame=dates, mappings=[("d", "string", "d", "date")]).toDF()
    assert [str(r["d"]) for r in mapped.collect()] == ["2026-11-01", "None"]


def test_gluetypes_as_scripts_use_them():
    """`from awsglue.gluetypes import *`: Glue's type names (typeName() is the class name
    without "Type", lower case; IntegerType's is "int"), fields, and JSON values."""
    assert shim.install()
    from awsglue.gluetypes import (  # type: ignore[import-not-found]
        ArrayType,
        ChoiceType,
        DecimalType,
        DoubleType,
        Field,
        IntegerType,
        StringType,
        StructType,
    )

    s = StructType(
        [
            Field("id", IntegerType()),
            Field("tags", ArrayType(StringType())),
            Field("price", ChoiceType([DoubleType(), StringType()])),
            Field("amount", DecimalType(12, 3)),
        ]
    )
    assert [f.dataType.typeName() for f in s.fields] == ["int", "array", "choice", "decimal"]
    assert s.hasField("id") and not s.hasField("nope")
    assert s.getField("tags").dataType.elementType.typeName() == "string"
    assert sorted(s.getField("price").dataType.choices) == ["double", "string"]
    assert s.jsonValue()["fields"][3]["container"] == {
        "dataType": "decimal",
        "properties": {},
        "precision": 12,
        "scale": 3,
    }
    with pytest.raises(ValueError):
        ChoiceType([StringType(), StringType()])  # one entry per type


def test_json_numbers_are_bigint_and_double_as_glue_types_them(glue, tmp_path):
    """A fractional JSON number is a double in a DynamicFrame (Glue's JSON reader), not a
    decimal whose precision depends on the sample; whole numbers are bigint."""
    data = tmp_path / "nums"
    write_json(data / "a.json", [1], price=12.5, nested={"rate": 0.125})
    write_json(data / "b.json", [2], price=3, nested={"rate": 2})
    frame = glue.create_dynamic_frame.from_options("s3", {"paths": [str(data)]}, format="json")
    df = frame.toDF()
    assert df.schema["id"].dataType.simpleString() == "bigint"
    assert df.schema["price"].dataType.simpleString() == "double"
    assert df.schema["nested"].dataType["rate"].dataType.simpleString() == "double"
    assert sorted((r["id"], r["price"]) for r in df.collect()) == [(1, 12.5), (2, 3.0)]
    assert frame.schema().getField("price").dataType.typeName() == "double"


def test_flat_glue_context_methods_read_and_write_as_the_dotted_ones(glue, tmp_path, spark):
    """Glue scripts call both spellings: create_dynamic_frame_from_options is
    create_dynamic_frame.from_options, and so on, with Glue's keyword names."""
    from sparkmark.glue.dynamicframe import DynamicFrameCollection

    data, out, out2 = tmp_path / "in", tmp_path / "out", tmp_path / "out2"
    write_json(data / "a.json", [1, 2])
    frame = glue.create_dynamic_frame_from_options(
        connection_type="s3", connection_options={"paths": [str(data)]}, format="json"
    )
    assert sorted(r["id"] for r in frame.toDF().collect()) == [1, 2]
    df = glue.create_data_frame_from_options(
        connection_type="s3", connection_options={"paths": [str(data)]}, format="json"
    )
    assert sorted(r["id"] for r in df.collect()) == [1, 2]
    glue.write_dynamic_frame_from_options(
        frame=frame, connection_type="s3", connection_options={"path": str(out)}, format="parquet"
    )
    assert sorted(spark.read.parquet(str(out)).toPandas()["id"]) == [1, 2]
    other = DynamicFrame.fromDF(spark.createDataFrame([(3,)], "id long"), glue, "other")
    glue.write_from_options(
        frame_or_dfc=DynamicFrameCollection({"a": frame, "b": other}, glue),
        connection_type="s3",
        connection_options={"path": str(out2)},
        format="json",
    )
    assert sorted(r["id"] for r in spark.read.json(str(out2)).collect()) == [1, 2, 3]
    rdd_frame = glue.create_dynamic_frame_from_rdd(
        spark.sparkContext.parallelize([(7,)]), "r", schema="id long"
    )
    assert [r["id"] for r in rdd_frame.toDF().collect()] == [7]


def test_custom_jdbc_reads_a_table_without_keys_and_finds_columns_as_postgresql_folds_them(glue):
    """AWS's custom-connector sample reads a table without a primary key, unbookmarked (no
    Job.init), with ``partitionColumn`` written ``RecordId__c`` for a column PostgreSQL
    folded to ``recordid__c``: Glue reads every row. A bookmarked read still needs keys."""
    import psycopg

    from .conftest import PG_DSN

    table = f"sfdc_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (RecordId__c bigint, Name text)")
        conn.execute(f"INSERT INTO {table} VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, NULL)")
    options = {
        "className": "org.postgresql.Driver",
        "url": "jdbc:postgresql://127.0.0.1:5432/test",
        "user": "postgres",
        "dbTable": table,
    }
    try:
        whole = glue.create_dynamic_frame.from_options("custom.jdbc", options).toDF()
        assert sorted(r["recordid__c"] for r in whole.collect()) == [1, 2, 3, 4]
        split = glue.create_dynamic_frame.from_options(
            "custom.jdbc", {**options, "partitionColumn": "RecordId__c", "numPartitions": "3"}
        ).toDF()
        assert sorted(r["recordid__c"] for r in split.collect()) == [1, 2, 3, 4]
        keyed = glue.create_dynamic_frame.from_options(
            "postgresql", {**options, "dbtable": table, "jobBookmarkKeys": ["RECORDID__C"]}
        ).toDF()
        assert keyed.count() == 4
        with pytest.raises(SparkmarkError, match="key column.s. Nope not in table"):
            glue.create_dynamic_frame.from_options(
                "postgresql", {**options, "dbtable": table, "jobBookmarkKeys": ["Nope"]}
            )
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f"DROP TABLE IF EXISTS {table}")


def test_jdbc_from_options_with_a_named_connection_and_custom_jdbc(glue, tmp_path, monkeypatch, caplog):
    """Glue's JDBC options: connectionName + useConnectionProperties take the URL and
    credentials from a named connection; custom.jdbc takes className, dbTable or query,
    filterPredicate and partitionColumn/numPartitions; redshift notes that COPY/UNLOAD
    is not used. Against the real PostgreSQL server."""
    import psycopg

    from .conftest import PG_DSN

    table = f"glue_conn_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (id bigint primary key, region text)")
        conn.execute(f"INSERT INTO {table} VALUES (1, 'eu'), (2, 'us'), (3, 'eu'), (4, 'us')")
    config = tmp_path / "sparkmark.toml"
    config.write_text(
        '[connections.shop]\nurl = "jdbc:postgresql://127.0.0.1:5432/test"\nuser = "postgres"\n'
    )
    monkeypatch.setenv("SPARKMARK_CONFIG", str(config))
    ctx = GlueContext(glue.spark_session)
    try:
        named = ctx.create_dynamic_frame.from_options(
            "postgresql",
            {"connectionName": "shop", "useConnectionProperties": "true", "dbtable": table},
        )
        assert sorted(r["id"] for r in named.toDF().collect()) == [1, 2, 3, 4]
        custom = ctx.create_dynamic_frame.from_options(
            "custom.jdbc",
            {
                "className": "org.postgresql.Driver",
                "connectionName": "shop",
                "dbTable": table,
                "filterPredicate": "region = 'eu'",
                "partitionColumn": "id",
                "numPartitions": "2",
            },
        )
        assert sorted(r["id"] for r in custom.toDF().collect()) == [1, 3]
        mapped = ctx.create_dynamic_frame.from_options(
            "custom.jdbc",
            {"connectionName": "shop", "dbTable": table, "dataTypeMapping": {"BIGINT": "STRING"}},
        ).toDF()
        assert mapped.schema["id"].dataType.simpleString() == "string"  # Glue's example: a JDBC type → STRING
        assert sorted(r["id"] for r in mapped.collect()) == ["1", "2", "3", "4"]
        with pytest.raises(SparkmarkError, match="dataTypeMapping: 'TEXTISH' is not a Glue type"):
            ctx.create_dynamic_frame.from_options(
                "custom.jdbc",
                {"connectionName": "shop", "dbTable": table, "dataTypeMapping": {"INTEGER": "TEXTISH"}},
            )
        query = ctx.create_dynamic_frame.from_options(
            "marketplace.jdbc",
            {
                "connectionName": "shop",
                "query": f"SELECT id FROM {table} WHERE id > 2",
                "jobBookmarkKeys": ["id"],
            },
        )
        assert sorted(r["id"] for r in query.toDF().collect()) == [3, 4]
        with caplog.at_level(logging.INFO, logger="sparkmark.glue"):
            redshift = ctx.create_dynamic_frame.from_options(
                "redshift", {"connectionName": "shop", "dbtable": table}
            )
        assert (
            redshift.count() == 4 and "UNLOAD/COPY path through redshift_tmp_dir is not used" in caplog.text
        )
        with pytest.raises(SparkmarkError, match="no JDBC driver"):
            ctx.create_dynamic_frame.from_options(
                "custom.jdbc",
                {"className": "com.example.NoSuchDriver", "connectionName": "shop", "dbTable": table},
            )
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f"DROP TABLE IF EXISTS {table}")


def test_ingestion_time_columns_and_purge_table(glue, spark, tmp_path):
    """add_ingestion_time_columns: Glue's ingest_year … ingest_minute down to the
    granularity; purge_table: purge_s3_path over the partitions a predicate selects."""
    from datetime import UTC, datetime

    frame = DynamicFrame.fromDF(spark.createDataFrame([(1,)], "id long"), glue, "f")
    before = datetime.now(UTC)
    hourly = glue.add_ingestion_time_columns(frame, "hour").toDF()
    assert hourly.columns == ["id", "ingest_year", "ingest_month", "ingest_day", "ingest_hour"]
    row = hourly.first()
    stamp = datetime(
        int(row["ingest_year"]),
        int(row["ingest_month"]),
        int(row["ingest_day"]),
        int(row["ingest_hour"]),
        tzinfo=UTC,
    )
    assert before.replace(minute=0, second=0, microsecond=0) <= stamp <= datetime.now(UTC)
    assert len(row["ingest_month"]) == 2  # zero-padded, as partition folder names
    assert glue.add_ingestion_time_columns(frame.toDF(), "minute").columns[-1] == "ingest_minute"
    with pytest.raises(SparkmarkError, match="day, hour or minute"):
        glue.add_ingestion_time_columns(frame, "week")

    from .test_catalog import crawl, definition, sales_tree

    db = f"pt_{uuid.uuid4().hex[:6]}"
    sales = tmp_path / "sales"
    sales_tree(sales)
    crawl(spark, definition(db, sales))
    glue.purge_table(db, "sales", {"retentionPeriod": 0, "partitionPredicate": "dt = '2026-01-01'"})
    assert not list((sales / "dt=2026-01-01").glob("*.csv"))
    assert list((sales / "dt=2026-01-02").glob("*.csv"))  # not selected: kept


def test_collection_transforms_as_glue_defines_them(people, glue, spark):
    """awsglue.transforms' MapToCollection, FlatMap, Repartition, Coalesce and
    ErrorsAsDynamicFrame; a DynamicFrameCollection made from a list of frames is keyed by
    their names, and selecting a name it lacks gives an empty frame of that name (AWS's
    awsglue/dynamicframe.py and transforms/collection_transforms.py)."""
    from sparkmark.glue.dynamicframe import DynamicFrameCollection
    from sparkmark.glue.transforms import (
        Coalesce,
        ErrorsAsDynamicFrame,
        FlatMap,
        MapToCollection,
        Repartition,
        get_transform,
    )

    split = SplitFields.apply(people, ["id"], "ids", "rest")
    seen = []

    def keep_ids(frame, ctx):
        seen.append(ctx)
        return SelectFields.apply(frame, ["id"]) if "id" in frame.toDF().columns else frame

    mapped = MapToCollection.apply(split, keep_ids, transformation_ctx="m")
    assert sorted(seen) == ["m:ids", "m:rest"] and sorted(mapped.keys()) == ["ids", "rest"]
    with pytest.raises(TypeError, match="must return a DynamicFrame"):
        MapToCollection.apply(split, lambda frame, ctx: frame.toDF())

    # FlatMap hands each frame to the transform as the argument it names; collections
    # the transform returns are merged into one.
    flat = FlatMap.apply(
        DynamicFrameCollection({"p": people}, glue), SplitRows, "frame", comparison_dict={"id": {">": 1}}
    )
    assert sorted(flat.keys()) == ["frame1", "frame2"]
    assert [r["id"] for r in flat["frame1"].toDF().collect()] == [2]
    kept = FlatMap.apply(split, SelectFields, "frame", paths=["name"])  # a frame is kept under its name
    assert sorted(kept.keys()) == sorted(f.name for f in kept.values())

    listed = DynamicFrameCollection([people], glue)
    assert list(listed.keys()) == [people.name]
    empty = listed.select("absent")
    assert empty.name == "absent" and empty.count() == 0
    with pytest.raises(TypeError):
        DynamicFrameCollection("people", glue)

    assert Repartition.apply(people, 3).getNumPartitions() == 3
    assert Coalesce.apply(Repartition.apply(people, 3), 1).getNumPartitions() == 1
    assert ErrorsAsDynamicFrame.apply(people).count() == 0
    assert get_transform("flatmap") is not None and get_transform("nope") is None


def test_ml_transforms_that_need_aws_models_are_refused_in_one_line(people):
    from sparkmark.errors import TransformError
    from sparkmark.glue.ml.transforms import EntityDetector, FindMatches

    with pytest.raises(TransformError, match="FindMatches applies a matching model trained in AWS Glue"):
        FindMatches.apply(people, transformId="tfm-123")
    with pytest.raises(TransformError, match="EntityDetector"):
        EntityDetector().detect(people, ["EMAIL"], "DetectedEntities")


def test_text_writes_are_compressed_as_the_s3_connection_option_says(people, glue, spark, tmp_path):
    """Glue's S3 connection option ``compression`` (gzip, bzip2 …) compresses JSON and CSV
    output (AWS Glue's "Amazon S3 connection option reference"; the CSV format page says
    compression is configured there, not in format_options)."""
    people = SelectFields.apply(people, ["id", "name"])
    for fmt, codec, suffix in (("json", "gzip", ".json.gz"), ("csv", "bzip2", ".csv.bz2")):
        out = tmp_path / f"out_{fmt}"
        glue.write_dynamic_frame.from_options(people, "s3", {"path": str(out), "compression": codec}, fmt)
        written = [p.name for p in out.iterdir() if p.name.startswith("part-")]
        assert written and all(name.endswith(suffix) for name in written), written
    back = spark.read.json(str(tmp_path / "out_json"))
    assert sorted(r["id"] for r in back.collect()) == [1, 2]
    with pytest.raises(SparkmarkError, match="compression 'zip' for json is not one of"):
        glue.write_dynamic_frame.from_options(
            people, "s3", {"path": str(tmp_path / "x"), "compression": "zip"}, "json"
        )


def test_avro_output_as_studio_generates_it(people, glue, spark, tmp_path):
    out = tmp_path / "avro"
    glue.write_dynamic_frame.from_options(
        people, "s3", {"path": str(out)}, "avro", format_options={"compression": "deflate"}
    )
    back = spark.read.format("avro").load(str(out))
    assert sorted(r["id"] for r in back.collect()) == [1, 2]


def test_a_headerless_csv_has_glues_column_names(glue, tmp_path):
    """Without withHeader, Glue's CSV reader names the columns col0, col1 … (as the
    crawler does), not Spark's _c0, _c1 …"""
    data = tmp_path / "plain"
    data.mkdir()
    (data / "a.csv").write_text("1,Ann\n2,Bob\n", encoding="utf-8")
    frame = glue.create_dynamic_frame.from_options("s3", {"paths": [str(data)]}, "csv")
    assert frame.toDF().columns == ["col0", "col1"]
    df = glue.create_data_frame.from_options("s3", {"paths": [str(data)]}, "csv")
    assert df.columns == ["col0", "col1"]
    named = glue.create_dynamic_frame.from_options(
        "s3", {"paths": [str(data)]}, "csv", format_options={"withHeader": True}
    )
    assert named.toDF().columns == ["1", "Ann"]


def test_a_csv_read_from_files_is_text_and_keeps_empty_fields_as_glue_writes_them(glue, tmp_path):
    """AWS's CSV format page reads a CSV with ``from_options(format="csv",
    withHeader)``; with no catalog to type it, a DynamicFrame's fields are text and an
    empty field is an empty string, so the JSON Glue writes from it has ``"HP":"45"``
    and ``"Type 2":""``, never a number or a missing key. A quoted empty field is the
    same; an empty file adds no record."""
    data = tmp_path / "pokemon"
    data.mkdir()
    (data / "a.csv").write_text(
        '#,Name,Type 2,HP\n1,Bulbasaur,Poison,45\n4,Charmander,,39\n7,"Squirtle","",44\n'
    )
    (data / "b.csv").write_text("")
    frame = glue.create_dynamic_frame.from_options(
        "s3", {"paths": [str(data)]}, "csv", format_options={"withHeader": True}
    )
    assert frame.count() == 3
    out = tmp_path / "out"
    glue.write_dynamic_frame.from_options(frame, "s3", {"path": str(out)}, format="json")
    lines = sorted(line for f in out.glob("*.json") for line in f.read_text().splitlines())
    assert [json.loads(line) for line in lines] == [
        {"#": "1", "Name": "Bulbasaur", "Type 2": "Poison", "HP": "45"},
        {"#": "4", "Name": "Charmander", "Type 2": "", "HP": "39"},
        {"#": "7", "Name": "Squirtle", "Type 2": "", "HP": "44"},
    ]
    assert all(line.startswith('{"#":') for line in lines)  # the file's column order


def test_from_options_reads_no_column_from_key_value_folders(glue, tmp_path):
    """AWS's page on managing partitions: partition columns come from the Data Catalog,
    so a reader who wants them in the DynamicFrame uses ``from_catalog`` instead of
    ``from_options``. A ``from_options`` read of ``region=ca/`` and ``region=us/``
    gives the files' own columns only (CSV, JSON and Parquet alike); a
    ``push_down_predicate`` still picks the folders' rows; a folder with no file in it
    gives nothing."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = tmp_path / "by_region"
    for region, rows in (("ca", "1,Ann\n"), ("us", "2,Bob\n3,Cy\n")):
        (data / "csv" / f"region={region}").mkdir(parents=True)
        (data / "csv" / f"region={region}" / "a.csv").write_text("id,name\n" + rows)
        write_json(data / "json" / f"region={region}" / "a.json", [int(rows[0])])
        (data / "parquet" / f"region={region}").mkdir(parents=True)
        pq.write_table(pa.table({"id": [int(rows[0])]}), data / "parquet" / f"region={region}" / "p.parquet")
    (data / "csv" / "region=mx").mkdir()
    frame = glue.create_dynamic_frame.from_options(
        "s3", {"paths": [str(data / "csv")], "recurse": True}, "csv", format_options={"withHeader": True}
    )
    assert frame.toDF().columns == ["id", "name"]
    assert sorted(r["id"] for r in frame.toDF().collect()) == ["1", "2", "3"]
    for fmt in ("json", "parquet"):
        read = glue.create_dynamic_frame.from_options(
            "s3", {"paths": [str(data / fmt)], "recurse": True}, fmt
        )
        assert "region" not in read.toDF().columns and read.count() == 2, fmt
    df = glue.create_data_frame.from_options(
        "s3", {"paths": [str(data / "parquet")], "recurse": True}, "parquet"
    )
    assert df.columns == ["id"]
    picked = glue.create_dynamic_frame.from_options(
        "s3",
        {"paths": [str(data / "csv")], "recurse": True},
        "csv",
        format_options={"withHeader": True},
        push_down_predicate="region = 'us'",
    )
    assert picked.toDF().columns == ["id", "name"]
    assert sorted(r["name"] for r in picked.toDF().collect()) == ["Bob", "Cy"]


def test_a_json_frames_fields_keep_the_files_order(glue, tmp_path, capsys):
    """A DynamicFrame read from JSON keeps the order of the records' fields (AWS's JSON
    tutorials show it in ``printSchema``): the first record's, then a field that only a
    later record has, where it first appears; never sorted by name. An empty folder
    gives an empty frame."""
    data = tmp_path / "people"
    data.mkdir()
    (data / "a.json").write_text(
        '{"zone": "eu", "name": "Ann", "age": 31}\n{"zone": "us", "name": "Bob", "age": 40, "city": "x"}\n'
    )
    (data / "b.json").write_text('{"name": "Cy", "zone": "eu", "born": 1990, "age": 2}\n')
    frame = glue.create_dynamic_frame.from_options("s3", {"paths": [str(data)]}, "json")
    assert frame.toDF().columns == ["zone", "name", "age", "city", "born"]
    frame.printSchema()
    printed = capsys.readouterr().out
    assert printed.index("|-- zone") < printed.index("|-- name") < printed.index("|-- age")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert glue.create_dynamic_frame.from_options("s3", {"paths": [str(empty)]}, "json").count() == 0


@needs_variant
def test_an_unresolved_choice_is_written_to_json_as_its_value_and_to_csv_as_text(glue, tmp_path):
    """A field that is a number in one record and text in another is a choice; written
    to JSON without resolving it, each record keeps its own value (``1``, ``"one"``), as
    Glue writes it, not the JSON text of it (``"1"``). CSV has no types: JSON text."""
    data = tmp_path / "mixed"
    data.mkdir()
    (data / "a.json").write_text('{"id": 1, "code": 7}\n{"id": 2, "code": "seven"}\n{"id": 3}\n')
    frame = glue.create_dynamic_frame.from_options("s3", {"paths": [str(data)]}, "json")
    out = tmp_path / "out"
    glue.write_dynamic_frame.from_options(frame, "s3", {"path": str(out)}, format="json")
    records = sorted(
        (json.loads(line) for f in out.glob("*.json") for line in f.read_text().splitlines()),
        key=lambda r: r["id"],
    )
    assert records == [{"id": 1, "code": 7}, {"id": 2, "code": "seven"}, {"id": 3}]
    as_csv = tmp_path / "csv"
    glue.write_dynamic_frame.from_options(
        frame, "s3", {"path": str(as_csv)}, format="csv", format_options={"writeHeader": True}
    )
    lines = sorted(line for f in as_csv.glob("*.csv") for line in f.read_text().splitlines()[1:])
    assert lines[:2] == ["1,7", r'2,"\"seven\""']


def test_a_join_key_whose_case_differs_from_the_field_finds_it(glue, spark, caplog):
    """Spark resolves a column name case-insensitively when one field matches; a key no
    field has joins no record (Glue's records need not share fields), and says so in a
    warning naming the fields, never silently."""
    devices = DynamicFrame.fromDF(
        spark.createDataFrame([(1, "d1"), (2, "d2")], "serialNumber long, model string"), glue, "d"
    )
    readings = DynamicFrame.fromDF(
        spark.createDataFrame([(1, 7.5), (1, 8.0), (3, 1.0)], "serialnumber long, value double"), glue, "r"
    )
    joined = Join.apply(readings, devices, "serialnumber", "serialnumber").toDF()
    assert sorted((r["serialnumber"], r["model"], r["value"]) for r in joined.collect()) == [
        (1, "d1", 7.5),
        (1, "d1", 8.0),
    ]
    with caplog.at_level(logging.WARNING, logger="sparkmark.glue"):
        nothing = Join.apply(readings, devices, "serial", "serialNumber")
    assert nothing.count() == 0
    assert "join key 'serial' is not a field of frame r (fields: serialnumber, value)" in caplog.text
    both = DynamicFrame.fromDF(spark.createDataFrame([(1, 2)], "Key long, KEY long"), glue, "b")
    with pytest.raises(SparkmarkError, match="matches fields Key, KEY, which differ only in case"):
        Join.apply(both, devices, "key", "serialNumber")


def test_studio_visual_transforms_as_generated_scripts_call_them(glue, spark, tmp_path):
    """Glue Studio's built-in transforms, imported as Studio writes them (``import
    gs_flatten`` …) and called as DynamicFrame methods with Studio's parameters, with the
    results AWS's "Using the … transform" pages describe."""
    import datetime
    import importlib

    shim.install()
    for module in ("gs_flatten", "gs_explode", "gs_uuid", "gs_concat", "gs_split",
                   "gs_array_to_cols", "gs_to_timestamp", "gs_format_timestamp", "gs_derived"):  # fmt: skip
        importlib.import_module(module)
    rows = spark.createDataFrame(
        [
            (
                1,
                ("Ann", ("Oslo", "0150")),
                ["sports", "winter"],
                "a-b c",
                1_700_000_000,
                "2026-01-02T03:04:05Z",
                2.5,
            )
        ],
        "id int, person struct<name:string, addr:struct<city:string, zip:string>>, category array<string>, "
        "tags string, epoch long, iso string, price double",
    )
    frame = DynamicFrame.fromDF(rows, glue, "in")
    flat = frame.gs_flatten(maxLevels=1, separator="_").toDF()
    assert "person_name" in flat.columns and "person_addr" in flat.columns
    assert frame.gs_flatten().toDF().first()["person.addr.city"] == "Oslo"

    empty = DynamicFrame.fromDF(
        spark.createDataFrame([(1, ["x", "y"]), (2, [])], "id int, category array<string>"), glue, "e"
    )
    exploded = empty.gs_explode(colName="category", newCol="category").toDF()
    assert sorted((r["id"], r["category"]) for r in exploded.collect()) == [(1, "x"), (1, "y")]
    outer = empty.gs_explode(colName="category", newCol="cat", outer=True).toDF()
    assert sorted((r["id"], r["cat"]) for r in outer.collect()) == [(1, "x"), (1, "y"), (2, None)]

    done = (
        frame.gs_uuid(colName="uid")
        .gs_concat(colName="label", colList=["id", "tags"], spacer="|")
        .gs_split(colName="tags", pattern="[- ]", newColName="tag_parts")
        .gs_array_to_cols(colName="tag_parts", colList="t1, t2, t3")
        .gs_to_timestamp(colName="epoch", colType="autodetect", newColName="at")
        .gs_to_timestamp(colName="iso", colType="iso")
        .gs_format_timestamp(colName="at", dateFormat="%Y/%m/%d", newColName="day")
        .gs_derived(colName="doubled", expr="price * 2")
        .toDF()
        .first()
    )
    assert len(done["uid"]) == 36 and done["label"] == "1|a-b c"
    assert (done["t1"], done["t2"], done["t3"]) == ("a", "b", "c")
    assert done["at"] == datetime.datetime(2023, 11, 14, 22, 13, 20)  # the session's zone is UTC
    assert done["iso"] == datetime.datetime(2026, 1, 2, 3, 4, 5)
    assert done["day"] == "2023/11/14" and done["doubled"] == 5.0
    with pytest.raises(SparkmarkError, match="column 'nope' is not in the frame"):
        frame.gs_explode(colName="nope")
