"""Crawlers and the catalog on the real (embedded) Hive metastore, with real files."""

from __future__ import annotations

import json
import shutil
import uuid

import pytest

from sparkmark import Job, spark_lines
from sparkmark.catalog.hive import HiveCatalog
from sparkmark.catalog.store import CatalogStore, diff
from sparkmark.connections import Connections
from sparkmark.crawler.crawl import run_crawl
from sparkmark.crawler.definition import load_definition
from sparkmark.crawler.store import CrawlerStore
from sparkmark.engine.store import StateStore
from sparkmark.glue.context import GlueContext
from sparkmark.glue.dynamicframe import DynamicFrame
from sparkmark.glue.job import Job as GlueJob
from sparkmark.settings import Settings

from .conftest import write_json

# Choices are VARIANT columns (Spark 4, Glue 6.0); Spark 3.5 keeps such a column as text
# (docs/glue-versions.md). Crawling XML reads it with Spark's own XML source (Spark 4).
needs_variant = pytest.mark.skipif(not spark_lines.HAS_VARIANT, reason="choices need VARIANT (Spark 4)")
needs_xml = pytest.mark.skipif(not spark_lines.XML_SOURCE, reason="Spark's XML source is Spark 4's")


@pytest.fixture
def db():
    return f"db_{uuid.uuid4().hex[:8]}"


def crawl(spark, definition: dict):
    settings = Settings.from_env()
    state = StateStore.from_settings(settings)
    catalog_store, crawlers = CatalogStore(state), CrawlerStore(state)
    parsed = load_definition(definition)
    crawlers.save(parsed)
    record = run_crawl(
        spark,
        state,
        HiveCatalog(spark, catalog_store),
        crawlers,
        parsed,
        connections=Connections.from_settings(settings),
    )
    return record, catalog_store


def definition(db, *paths, **extra):
    targets = [{"Path": str(p), "Exclusions": extra.pop("exclusions", [])} for p in paths]
    return {"Name": f"c_{db}", "DatabaseName": db, "Targets": {"S3Targets": targets}, **extra}


def sales_tree(root):
    (root / "dt=2026-01-01").mkdir(parents=True)
    (root / "dt=2026-01-01" / "a.csv").write_text("id,amount,region\n1,10.5,eu\n2,3.0,us\n")
    (root / "dt=2026-01-02").mkdir()
    (root / "dt=2026-01-02" / "b.csv").write_text("id,amount,region\n3,1.5,eu\n")


def test_crawl_partitioned_csv_and_json_then_only_new_partitions(spark, tmp_path, db):
    sales, events = tmp_path / "sales", tmp_path / "events"
    sales_tree(sales)
    write_json(events / "2026" / "01" / "x.json", [1, 2], kind="click")
    record, store = crawl(spark, definition(db, sales, events))
    assert record.state == "SUCCEEDED"
    assert sorted(record.summary["tables_created"]) == [f"{db}.events", f"{db}.sales"]
    table = store.table(db, "sales")
    assert table.classification == "csv" and [c.name for c in table.partition_keys] == ["dt"]
    assert [(c.name, c.type) for c in table.columns] == [
        ("id", "bigint"),  # Glue's crawler types whole numbers bigint
        ("amount", "double"),
        ("region", "string"),
    ]
    events_table = store.table(db, "events")
    assert [c.name for c in events_table.partition_keys] == ["partition_0", "partition_1"]
    assert spark.sql(f"SELECT count(*) FROM {db}.sales").first()[0] == 3  # Spark SQL sees the table
    assert spark.sql(f"SELECT sum(id) FROM {db}.events WHERE partition_0 = '2026'").first()[0] == 3

    (sales / "dt=2026-01-03").mkdir()
    (sales / "dt=2026-01-03" / "c.csv").write_text("id,amount,region\n4,2.0,us\n")
    again, store = crawl(spark, definition(db, sales, events))
    assert again.summary["partitions_added"] == 1 and again.summary["tables_created"] == []
    assert [p.values for p in store.partitions(db, "sales")] == [
        ("2026-01-01",),
        ("2026-01-02",),
        ("2026-01-03",),
    ]


@pytest.mark.parametrize("behavior", ["UPDATE_IN_DATABASE", "LOG"])
def test_schema_change_under_each_update_behavior(spark, tmp_path, db, behavior):
    sales = tmp_path / "sales"
    sales_tree(sales)
    policy = {"SchemaChangePolicy": {"UpdateBehavior": behavior, "DeleteBehavior": "LOG"}}
    crawl(spark, definition(db, sales, **policy))
    for f in sales.glob("*/*.csv"):  # a new column in every file
        f.write_text(
            f.read_text()
            .replace("region\n", "region,channel\n")
            .replace("eu\n", "eu,web\n")
            .replace("us\n", "us,shop\n")
        )
    record, store = crawl(spark, definition(db, sales, **policy))
    columns = [c.name for c in store.table(db, "sales").columns]
    versions = store.versions(db, "sales")
    if behavior == "UPDATE_IN_DATABASE":
        assert record.summary["tables_updated"] == [f"{db}.sales"]
        assert columns[-1] == "channel" and len(versions) == 2
        assert diff(versions[0], versions[1]) == ["+ channel string"]
        assert spark.sql(f"SELECT channel FROM {db}.sales WHERE id = 3").first()[0] == "web"
        assert len(store.partitions(db, "sales")) == 2  # partitions kept across the change
    else:
        assert record.summary["schema_changes_logged"] == [f"{db}.sales"]
        assert "channel" not in columns and len(versions) == 1


@pytest.mark.parametrize("behavior", ["LOG", "DELETE_FROM_DATABASE", "DEPRECATE_IN_DATABASE"])
def test_deleted_folders_under_each_delete_behavior(spark, tmp_path, db, behavior):
    lake = tmp_path / "lake"
    sales_tree(lake / "sales")
    write_json(lake / "events" / "e.json", [1])
    policy = {
        "SchemaChangePolicy": {"UpdateBehavior": "UPDATE_IN_DATABASE", "DeleteBehavior": behavior},
        "Configuration": {"Grouping": {"TableLevelConfiguration": 2}},
    }
    crawl(spark, definition(db, lake, **policy))
    shutil.rmtree(lake / "events")
    shutil.rmtree(lake / "sales" / "dt=2026-01-02")
    record, store = crawl(spark, definition(db, lake, **policy))
    names = [t.name for t in store.tables(db)]
    parts = [p.values for p in store.partitions(db, "sales")]
    if behavior == "DELETE_FROM_DATABASE":
        assert names == ["sales"] and record.summary["tables_deleted"] == [f"{db}.events"]
        assert parts == [("2026-01-01",)]
    elif behavior == "DEPRECATE_IN_DATABASE":
        assert names == ["events", "sales"]
        assert "DEPRECATED_BY_CRAWLER" in store.table(db, "events").parameters
        assert record.summary["tables_deprecated"] == [f"{db}.events"]
    else:
        assert names == ["events", "sales"] and len(parts) == 2
        assert f"{db}.events" in record.summary["deletions_logged"]


def test_exclusions_and_table_level(spark, tmp_path, db):
    lake = tmp_path / "lake"
    write_json(lake / "orders" / "a.json", [1])
    write_json(lake / "orders" / "tmp" / "junk.json", [9])
    write_json(lake / "users" / "u.json", [2], name="x")
    record, store = crawl(
        spark,
        definition(
            db, lake, exclusions=["orders/tmp/**"], Configuration={"Grouping": {"TableLevelConfiguration": 2}}
        ),
    )
    assert [t.name for t in store.tables(db)] == ["orders", "users"]
    assert store.table(db, "orders").partition_keys == ()  # the excluded folder did not make a partition
    assert record.summary["files_listed"] == 2


def test_crawl_new_folders_only(spark, tmp_path, db):
    sales = tmp_path / "sales"
    sales_tree(sales)
    policy = {"RecrawlPolicy": {"RecrawlBehavior": "CRAWL_NEW_FOLDERS_ONLY"}}
    first, store = crawl(spark, definition(db, sales, **policy))
    assert first.summary["tables_created"] == [f"{db}.sales"]
    (sales / "dt=2026-01-03").mkdir()
    (sales / "dt=2026-01-03" / "c.csv").write_text("id,amount,region,extra\n4,2.0,us,z\n")
    second, store = crawl(spark, definition(db, sales, **policy))
    assert second.summary["folders_skipped"] == 2 and second.summary["files_listed"] == 1
    assert second.summary["partitions_added"] == 1
    assert second.summary["schema_changes_logged"] == [f"{db}.sales"]  # LOG is forced
    assert "extra" not in [c.name for c in store.table(db, "sales").columns]


def test_corrupt_and_empty_files_are_recorded_and_the_crawl_goes_on(spark, tmp_path, db):
    data = tmp_path / "pq"
    spark.range(3).write.parquet(str(data / "dt=1"))
    (data / "dt=2").mkdir()
    (data / "dt=2" / "broken.parquet").write_bytes(b"PAR1 this is not really parquet")
    (data / "dt=2" / "empty.parquet").write_bytes(b"")
    record, store = crawl(spark, definition(db, data))
    assert record.state == "SUCCEEDED"
    errors = {e["path"].rsplit("/", 1)[-1]: e["error"] for e in record.errors}
    assert "empty" in errors["empty.parquet"] and "cannot be read" in errors["broken.parquet"]
    assert [c.name for c in store.table(db, "pq").columns] == ["id"]


def test_from_catalog_prunes_partitions_and_bookmarks(spark, tmp_path, db):
    sales = tmp_path / "sales"
    sales_tree(sales)
    crawl(spark, definition(db, sales))
    args = {"JOB_NAME": f"cat_{db}", "job_bookmark_option": "job-bookmark-enable"}

    def run(predicate):
        ctx = GlueContext(spark)
        job = GlueJob(ctx)
        job.init(args["JOB_NAME"], args)
        frame = ctx.create_dynamic_frame.from_catalog(
            database=db, table_name="sales", push_down_predicate=predicate, transformation_ctx="src"
        )
        rows = sorted((r["id"], r["dt"]) for r in frame.toDF().collect())
        job.commit()
        metrics = StateStore.from_settings().get_run(job.run_id).metrics["sources"]["src"]
        return rows, metrics

    rows, metrics = run("dt = '2026-01-02'")
    assert rows == [(3, "2026-01-02")]
    assert metrics["files_listed"] == 1 and metrics["partitions_listed"] == 1  # only that folder listed
    rows, _ = run("dt >= '2026-01-01'")
    assert rows == [(1, "2026-01-01"), (2, "2026-01-01")]  # dt=2026-01-02 was already read
    rows, _ = run("")
    assert rows == []


def test_native_read_table(spark, tmp_path, db):
    sales = tmp_path / "sales"
    sales_tree(sales)
    crawl(spark, definition(db, sales))
    job = Job(f"nat_{db}", bookmark_option="job-bookmark-enable", spark=spark)
    df = job.read_table(f"{db}.sales", predicate="dt < '2026-01-02'", ctx="sales")
    assert sorted(r["id"] for r in df.collect()) == [1, 2]
    job.commit()


def test_write_with_enable_update_catalog(spark, tmp_path, db):
    glue = GlueContext(spark)
    out = tmp_path / "out"
    frame = glue.create_dynamic_frame.from_rdd(
        spark.sparkContext.parallelize([(1, "a", "x"), (2, "b", "y")]),
        "w",
        schema="id long, v string, part string",
    )
    sink = glue.getSink(
        connection_type="s3",
        path=str(out),
        enableUpdateCatalog=True,
        updateBehavior="UPDATE_IN_DATABASE",
        partitionKeys=["part"],
    )
    sink.setFormat("glueparquet")
    sink.setCatalogInfo(catalogDatabase=db, catalogTableName="written")
    sink.writeFrame(frame)
    store = CatalogStore(StateStore.from_settings())
    assert [p.values for p in store.partitions(db, "written")] == [("x",), ("y",)]
    assert spark.sql(f"SELECT count(*) FROM {db}.written WHERE part = 'y'").first()[0] == 1
    more = glue.create_dynamic_frame.from_rdd(
        spark.sparkContext.parallelize([(3, "c", "z")]), "m", schema="id long, v string, part string"
    )
    glue.write_dynamic_frame.from_catalog(
        frame=more, database=db, table_name="written", additional_options={"enableUpdateCatalog": True}
    )
    assert [p.values for p in store.partitions(db, "written")] == [("x",), ("y",), ("z",)]


def test_a_table_a_sink_creates_records_timestamp_as_the_crawler_does(spark, tmp_path, db):
    """A table that a sink's catalog update creates types a zone-less timestamp
    ``timestamp``, as the crawler types the same files (Glue and Athena have no
    ``timestamp_ntz``), and reads back through the catalog."""
    import datetime

    glue = GlueContext(spark)
    stamped = spark.createDataFrame(
        [(1, datetime.datetime(2026, 1, 2, 3, 4, 5))], "id long, at timestamp_ntz"
    )
    sink = glue.getSink(connection_type="s3", path=str(tmp_path / "out"), enableUpdateCatalog=True)
    sink.setFormat("glueparquet")
    sink.setCatalogInfo(catalogDatabase=db, catalogTableName="stamped")
    sink.writeFrame(DynamicFrame.fromDF(stamped, glue, "stamped"))
    table = CatalogStore(StateStore.from_settings()).table(db, "stamped")
    assert [(c.name, c.type) for c in table.columns] == [("id", "bigint"), ("at", "timestamp")]
    back = glue.create_dynamic_frame.from_catalog(database=db, table_name="stamped").toDF().first()
    assert back["id"] == 1 and back["at"] is not None


def test_catalog_and_crawler_commands(spark, tmp_path, db):
    from typer.testing import CliRunner

    from sparkmark.cli.app import app

    cli = CliRunner()
    sales = tmp_path / "sales"
    sales_tree(sales)
    spec = tmp_path / "crawler.toml"
    spec.write_text(
        f'[crawler]\nName = "cli_{db}"\nDatabaseName = "{db}"\n'
        f'[crawler.Targets]\nS3Targets = [{{ Path = "{sales}" }}]\n'
    )
    assert cli.invoke(app, ["crawler", "create", "--file", str(spec)]).exit_code == 0
    ran = cli.invoke(app, ["crawler", "run", f"cli_{db}", "--json"])
    assert ran.exit_code == 0, ran.output
    assert json.loads(ran.output)["state"] == "SUCCEEDED"
    got = json.loads(cli.invoke(app, ["crawler", "get", f"cli_{db}", "--json"]).output)
    assert got["State"] == "READY" and got["LastCrawl"]["summary"]["partitions_added"] == 2
    assert f"cli_{db}" in json.loads(cli.invoke(app, ["crawler", "list", "--json"]).output)
    assert db in json.loads(cli.invoke(app, ["catalog", "databases", "--json"]).output)
    tables = json.loads(cli.invoke(app, ["catalog", "tables", db, "--json"]).output)
    assert [t["name"] for t in tables] == ["sales"]
    parts = json.loads(cli.invoke(app, ["catalog", "partitions", f"{db}.sales", "--json"]).output)
    assert [p["values"] for p in parts] == [["2026-01-01"], ["2026-01-02"]]
    versions = json.loads(cli.invoke(app, ["catalog", "versions", f"{db}.sales", "--json"]).output)
    assert [v["version"] for v in versions] == [1]
    missing = cli.invoke(app, ["catalog", "table", f"{db}.nope"])
    assert missing.exit_code == 1 and "no table" in missing.output
    unknown = cli.invoke(app, ["crawler", "run", "ghost"])
    assert unknown.exit_code == 1 and "unknown crawler" in unknown.output


@needs_variant
def test_resolve_choice_match_catalog(spark, tmp_path, db):
    prices = tmp_path / "prices"
    write_json(prices / "a.json", [1], price=10.5)
    crawl(spark, definition(db, prices))
    (tmp_path / "mixed").mkdir()
    (tmp_path / "mixed" / "m.json").write_text('{"id": 1, "price": "7.25"}\n{"id": 2, "price": 3}\n')
    glue = GlueContext(spark)
    frame = glue.create_dynamic_frame.from_options("s3", {"paths": [str(tmp_path / "mixed")]}, format="json")
    resolved = frame.resolveChoice(choice="match_catalog", database=db, table_name="prices").toDF()
    assert resolved.schema["price"].dataType.simpleString() == "double"
    assert sorted(r["price"] for r in resolved.collect()) == [3.0, 7.25]


def test_jdbc_target_crawl_and_catalog_read(spark, tmp_path, db, monkeypatch):
    import sqlalchemy as sa

    engine = sa.create_engine("postgresql+psycopg://postgres@127.0.0.1:5432/test")
    schema = f"s_{db}"
    with engine.begin() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
        conn.exec_driver_sql(
            f"CREATE TABLE {schema}.orders (id bigint primary key, amount numeric(10,2), at timestamp)"
        )
        conn.exec_driver_sql(f"CREATE TABLE {schema}.skipme (id int)")
        conn.exec_driver_sql(f"INSERT INTO {schema}.orders VALUES (1, 2.50, now()), (2, 3.75, now())")
    config = tmp_path / "sparkmark.toml"
    config.write_text(
        '[connections.shop]\nurl = "jdbc:postgresql://127.0.0.1:5432/test"\nuser = "postgres"\n'
    )
    monkeypatch.setenv("SPARKMARK_CONFIG", str(config))
    try:
        spec = {
            "Name": f"j_{db}",
            "DatabaseName": db,
            "Targets": {
                "JdbcTargets": [
                    {"ConnectionName": "shop", "Path": f"test/{schema}/%", "Exclusions": [f"{schema}.skip*"]}
                ]
            },
        }
        record, store = crawl(spark, spec)
        # Glue names a crawled JDBC table <database>_<schema>_<table>.
        assert record.summary["tables_created"] == [f"{db}.test_{schema}_orders"]
        table = store.table(db, f"test_{schema}_orders")
        assert [(c.name, c.type) for c in table.columns] == [
            ("id", "bigint"),
            ("amount", "decimal(10,2)"),
            ("at", "timestamp"),
        ]
        assert table.classification == "postgresql" and "password" not in json.dumps(table.parameters)
        job = Job(f"jt_{db}", bookmark_option="job-bookmark-enable", spark=spark)
        assert sorted(r["id"] for r in job.read_table(f"{db}.test_{schema}_orders", ctx="o").collect()) == [
            1,
            2,
        ]
        job.commit()
        with engine.begin() as conn:
            conn.exec_driver_sql(f"INSERT INTO {schema}.orders VALUES (3, 1.00, now())")
        glue = GlueContext(spark)
        gjob = GlueJob(glue)
        gjob.init(f"jt_{db}", {"job_bookmark_option": "job-bookmark-enable"})
        frame = glue.create_dynamic_frame.from_catalog(
            database=db, table_name=f"test_{schema}_orders", transformation_ctx="o"
        )
        assert [r["id"] for r in frame.toDF().collect()] == [3]
        gjob.commit()
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")


@pytest.mark.slow
def test_postgresql_backed_metastore(tmp_path, db):
    """A separate process whose metastore lives in PostgreSQL: a crawl registers tables
    there, and a job in another process reads them through Spark SQL."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import psycopg

    from .conftest import PG_DSN

    meta = f"sm_meta_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_DSN.replace("/test", "/postgres"), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{meta}"')
    try:
        sales = tmp_path / "sales"
        sales_tree(sales)
        spec = tmp_path / "crawler.toml"
        spec.write_text(
            f'[crawler]\nName = "pgmeta"\nDatabaseName = "{db}"\n'
            f'[crawler.Targets]\nS3Targets = [{{ Path = "{sales}" }}]\n'
        )
        script = tmp_path / "count.py"
        script.write_text(
            "from sparkmark import Job\njob = Job.from_args()\n"
            f"print('COUNT', job.spark.sql('SELECT count(*) FROM {db}.sales').first()[0])\n"
            "job.commit()\n"
        )
        env = dict(
            os.environ,
            SPARKMARK_HOME=str(tmp_path / "home"),
            SPARKMARK_SPARK_MASTER="local[1]",
            SPARKMARK_METASTORE_URL=f"jdbc:postgresql://127.0.0.1:5432/{meta}",
            SPARKMARK_METASTORE_USER="postgres",
        )
        env.pop("PYSPARK_SUBMIT_ARGS", None)
        exe = str(Path(sys.executable).with_name("sparkmark"))
        for args in (["crawler", "create", "--file", str(spec)], ["crawler", "run", "pgmeta"]):
            done = subprocess.run([exe, *args], capture_output=True, text=True, env=env, timeout=300)
            assert done.returncode == 0, done.stderr[-2000:]
        counted = subprocess.run(
            [exe, "run", str(script), "--JOB_NAME", "pgmeta_count"],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert "COUNT 3" in counted.stdout, counted.stderr[-2000:]
        with psycopg.connect(PG_DSN.replace("/test", f"/{meta}")) as conn:
            names = sorted(r[0] for r in conn.execute('SELECT "TBL_NAME" FROM "TBLS"'))
        assert names == ["sales"]
    finally:
        with psycopg.connect(PG_DSN.replace("/test", "/postgres"), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{meta}" WITH (FORCE)')


def test_avro_tables_live_in_the_state_store_catalog(spark, tmp_path, db):
    import fastavro

    schema = fastavro.parse_schema(
        {"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}]}
    )
    folder = tmp_path / "av" / "dt=1"
    folder.mkdir(parents=True)
    with open(folder / "a.avro", "wb") as out:
        fastavro.writer(out, schema, [{"id": 1}, {"id": 2}])
    record, store = crawl(spark, definition(db, tmp_path / "av"))
    assert record.summary["tables_created"] == [f"{db}.av"]
    assert store.table(db, "av").classification == "avro"
    assert not spark.catalog.tableExists(f"{db}.av")  # no spark-avro: not in the metastore
    job = Job(f"av_{db}", spark=spark)
    assert sorted((r["id"], r["dt"]) for r in job.read_table(f"{db}.av").collect()) == [(1, "1"), (2, "1")]
    job.commit()


def test_crawled_csv_schemas_follow_glues_classifier(spark, tmp_path, db):
    """One table per fixture file (tests/fixtures/csv_dialects): Glue's delimiters,
    header detection, col0… names, lower-cased names, bigint and double."""
    from pathlib import Path

    fixtures = Path(__file__).parent / "fixtures" / "csv_dialects"
    names = [
        "comma_header",
        "pipe_noheader",
        "tab_header",
        "semicolon_header",
        "ctrla_noheader",
        "strings_only",
        "quoted",
    ]
    targets = []
    for name in names:
        folder = tmp_path / name
        folder.mkdir()
        shutil.copy(fixtures / f"{name}.csv", folder / "data.csv")
        targets.append(folder)
    record, store = crawl(spark, definition(db, *targets))
    assert sorted(record.summary["tables_created"]) == sorted(f"{db}.{n}" for n in names), record.errors

    def columns(table: str) -> list[tuple[str, str]]:
        return [(c.name, c.type) for c in store.table(db, table).columns]

    assert columns("comma_header") == [("id", "bigint"), ("name", "string"), ("amount", "double")]
    assert columns("pipe_noheader") == [("col0", "bigint"), ("col1", "string"), ("col2", "double")]
    assert columns("tab_header") == [("id", "bigint"), ("name", "string"), ("amount", "double")]
    # "10,5" is not a number where the delimiter is ';': the column stays a string
    assert columns("semicolon_header") == [("id", "bigint"), ("name", "string"), ("amount", "string")]
    assert columns("ctrla_noheader") == [("col0", "bigint"), ("col1", "string"), ("col2", "double")]
    assert columns("strings_only") == [("col0", "string"), ("col1", "string")]  # no header
    assert columns("quoted") == [("id", "bigint"), ("full name", "string"), ("note", "string")]
    # The tables read back as crawled: the quoted delimiter stays inside its field.
    rows = spark.sql(f"SELECT * FROM {db}.quoted ORDER BY id").collect()
    assert [tuple(r) for r in rows] == [(1, "Smith, Ann", 'said "hi"'), (2, "Lee, Bob", "ok")]
    rows = spark.sql(f"SELECT col0, col2 FROM {db}.ctrla_noheader ORDER BY col0").collect()
    assert [tuple(r) for r in rows] == [(1, 10.5), (2, 3.0)]


def test_a_hyphenated_glue_database_through_crawl_catalog_and_write(spark, tmp_path):
    """Glue allows hyphens in catalog names (and keeps them lower-case); Hive's metastore
    does not. The Glue name is used everywhere a user names it; Spark SQL sees '_'."""
    glue_db = f"Sales-{uuid.uuid4().hex[:6]}"
    sales, out = tmp_path / "sales", tmp_path / "out"
    sales_tree(sales)
    record, store = crawl(
        spark, {"Name": "hyphens", "DatabaseName": glue_db, "Targets": {"S3Targets": [{"Path": str(sales)}]}}
    )
    lower = glue_db.lower()
    assert record.summary["tables_created"] == [f"{lower}.sales"], record.errors
    assert store.table(lower, "sales").partition_keys[0].name == "dt"
    hive_db = lower.replace("-", "_")
    assert spark.sql(f"SELECT sum(id) FROM {hive_db}.sales").first()[0] == 6

    ctx = GlueContext(spark)
    job = GlueJob(ctx)
    job.init(f"hy_{uuid.uuid4().hex[:6]}", {"job_bookmark_option": "job-bookmark-enable"})
    frame = ctx.create_dynamic_frame.from_catalog(
        database=glue_db, table_name="SALES", push_down_predicate="dt = '2026-01-02'", transformation_ctx="s"
    )
    assert [r["id"] for r in frame.toDF().collect()] == [3]
    (out / "dt=2026-01-05").mkdir(parents=True)
    copy = {"Name": "hyphens2", "DatabaseName": glue_db, "Targets": {"S3Targets": [{"Path": str(out)}]}}
    (out / "dt=2026-01-05" / "x.csv").write_text("id,amount,region\n9,1.0,eu\n")
    crawl(spark, copy)
    ctx.write_dynamic_frame.from_catalog(
        frame=frame, database=glue_db, table_name="out", transformation_ctx="w"
    )
    job.commit()
    assert spark.sql(f"SELECT count(*) FROM {hive_db}.out").first()[0] >= 1
    written = [p for p in out.rglob("*.csv") if p.name != "x.csv"]
    assert written  # the frame was appended in the table's format


def test_a_custom_csv_classifier_from_the_config_file(spark, tmp_path, db):
    """[classifiers.NAME.CsvClassifier] with Glue's fields; the crawler's Classifiers
    list names it, and it decides the delimiter, quote, header policy and names."""
    from sparkmark.crawler.classifiers import load_classifiers
    from sparkmark.errors import ConfigError

    config = tmp_path / "sparkmark.toml"
    config.write_text(
        "[classifiers.semis.CsvClassifier]\n"
        'Delimiter = ";"\nQuoteSymbol = "\'"\nContainsHeader = "ABSENT"\nHeader = ["Id", "Who", "Note"]\n'
    )
    data = tmp_path / "people"
    data.mkdir()
    # Strings only and a comma inside: the built-in rules would find no header and split on ','.
    (data / "p.txt.csv").write_text("1;'Smith, Ann';a,b\n2;'Lee; Bob';c\n")
    declared = load_classifiers(config)
    settings = Settings.from_env()
    state = StateStore.from_settings(settings)
    crawlers = CrawlerStore(state)
    parsed = load_definition(
        {
            "Name": f"k_{db}",
            "DatabaseName": db,
            "Classifiers": ["semis"],
            "Targets": {"S3Targets": [{"Path": str(data)}]},
        }
    )
    crawlers.save(parsed)
    catalog_store = CatalogStore(state)
    record = run_crawl(
        spark, state, HiveCatalog(spark, catalog_store), crawlers, parsed,
        connections=Connections.from_settings(settings), classifiers=declared,
    )  # fmt: skip
    assert record.summary["tables_created"] == [f"{db}.people"], record.errors
    assert [(c.name, c.type) for c in catalog_store.table(db, "people").columns] == [
        ("id", "bigint"),
        ("who", "string"),
        ("note", "string"),
    ]
    rows = spark.sql(f"SELECT id, who, note FROM {db}.people ORDER BY id").collect()
    assert [tuple(r) for r in rows] == [(1, "Smith, Ann", "a,b"), (2, "Lee; Bob", "c")]

    unknown = load_definition(
        {
            "Name": "u",
            "DatabaseName": db,
            "Classifiers": ["nope"],
            "Targets": {"S3Targets": [{"Path": str(data)}]},
        }
    )
    with pytest.raises(ConfigError, match="classifier 'nope', which is not declared"):
        run_crawl(spark, state, HiveCatalog(spark, catalog_store), crawlers, unknown,
                  connections=Connections.from_settings(settings), classifiers=declared)  # fmt: skip
    config.write_text('[classifiers.bad.CsvClassifier]\nDelimiter = ";;"\n')
    with pytest.raises(ConfigError, match="classifier 'bad'.*one character"):
        load_classifiers(config)


@needs_xml
def test_grok_json_and_xml_classifiers_decide_what_a_crawl_infers(spark, tmp_path, db):
    """AWS's custom classifiers (docs: "Writing custom classifiers"): tried in the crawler's
    order before the built-in ones; a grok classifier makes a table of its pattern's fields
    (string unless ``%{PATTERN:name:type}``) with its own classification and Glue's
    GrokSerDe; a JSON classifier's JsonPath picks the records inside each document; an
    XML classifier's RowTag is the record element. A file a classifier does not recognise
    falls to the built-in classifiers. The tables read back through from_catalog."""
    from sparkmark.crawler.classifiers import load_classifiers

    config = tmp_path / "sparkmark.toml"
    config.write_text(
        "[classifiers.access.GrokClassifier]\n"
        'Classification = "access_log"\n'
        'GrokPattern = "%{IPV4:client} %{WORD:method} %{STATUS:status:int} %{NUMBER:took:double}"\n'
        'CustomPatterns = "STATUS [1-5][0-9]{2}"\n'
        "[classifiers.wrapped.JsonClassifier]\n"
        'JsonPath = "$.payload.items[*]"\n'
        "[classifiers.books.XMLClassifier]\n"
        'Classification = "xml"\n'
        'RowTag = "book"\n'
    )
    declared = load_classifiers(config)
    logs, wrapped, books, plain = (tmp_path / n for n in ("logs", "wrapped", "books", "plain"))
    for folder in (logs, wrapped, books, plain):
        folder.mkdir()
    (logs / "day1.log").write_text("10.0.0.1 GET 200 0.25\n10.0.0.2 POST 503 1.5\n")
    (logs / "day2.log").write_text("10.0.0.3 GET 404 0.01\nnot a request line\n")  # one line unmatched
    (wrapped / "w.json").write_text(
        json.dumps(
            {"meta": {"n": 2}, "payload": {"items": [{"zeta": 1, "alpha": "a"}, {"zeta": 2, "alpha": "b"}]}}
        )
    )
    (books / "b.xml").write_text(
        "<shelf><book><title>Dune</title><year>1965</year></book>"
        "<book><title>Emma</title><year>1815</year></book></shelf>"
    )
    (plain / "p.json").write_text('{"k": 1}\n{"k": 2}\n')  # JSON lines: the path finds nothing
    settings = Settings.from_env()
    state = StateStore.from_settings(settings)
    crawlers, store = CrawlerStore(state), CatalogStore(state)
    parsed = load_definition(
        {
            "Name": f"k_{db}",
            "DatabaseName": db,
            "Classifiers": ["access", "wrapped", "books"],
            "Targets": {"S3Targets": [{"Path": str(p)} for p in (logs, wrapped, books, plain)]},
        }
    )
    crawlers.save(parsed)
    record = run_crawl(
        spark, state, HiveCatalog(spark, store), crawlers, parsed,
        connections=Connections.from_settings(settings), classifiers=declared,
    )  # fmt: skip
    assert sorted(record.summary["tables_created"]) == [
        f"{db}.{n}" for n in ("books", "logs", "plain", "wrapped")
    ]
    log_table = store.table(db, "logs")
    assert log_table.classification == "access_log"
    assert [(c.name, c.type) for c in log_table.columns] == [
        ("client", "string"), ("method", "string"), ("status", "int"), ("took", "double"),
    ]  # fmt: skip
    assert log_table.parameters["input.format"].startswith("%{IPV4:client}")
    wrapped_table = store.table(db, "wrapped")
    assert wrapped_table.parameters["jsonPath"] == "$.payload.items[*]"
    assert [c.name for c in wrapped_table.columns] == ["zeta", "alpha"]  # the records' order
    assert [(c.name, c.type) for c in store.table(db, "books").columns] == [
        ("title", "string"),
        ("year", "bigint"),
    ]
    assert [c.name for c in store.table(db, "plain").columns] == ["k"]  # the built-in JSON classifier

    ctx = GlueContext(spark)
    rows = ctx.create_dynamic_frame.from_catalog(database=db, table_name="logs").toDF().collect()
    assert sorted((r.client, r.method, r.status, r.took) for r in rows if r.client) == [
        ("10.0.0.1", "GET", 200, 0.25), ("10.0.0.2", "POST", 503, 1.5), ("10.0.0.3", "GET", 404, 0.01),
    ]  # fmt: skip
    assert sum(1 for r in rows if r.client is None and r.status is None) == 1  # GrokSerDe's row of nulls
    items = ctx.create_dynamic_frame.from_catalog(database=db, table_name="wrapped").toDF()
    assert items.columns == ["zeta", "alpha"]
    assert sorted(tuple(r) for r in items.collect()) == [(1, "a"), (2, "b")]
    titles = ctx.create_dynamic_frame.from_catalog(database=db, table_name="books").toDF()
    assert sorted(r.title for r in titles.collect()) == ["Dune", "Emma"]


def test_classifier_definitions_are_checked_in_one_line(tmp_path):
    from sparkmark.crawler.classifiers import load_classifiers
    from sparkmark.errors import ConfigError

    config = tmp_path / "sparkmark.toml"
    cases = {
        '[classifiers.g.GrokClassifier]\nClassification = "x"\nGrokPattern = "%{NOPE:a}"\n': "NOPE.*not a known",
        '[classifiers.g.GrokClassifier]\nClassification = "x"\nGrokPattern = "%{WORD:a:date}"\n': "type 'date'",
        '[classifiers.j.JsonClassifier]\nJsonPath = "$.a[0]"\n': "not one sparkmark reads",
        '[classifiers.x.XMLClassifier]\nClassification = "xml"\nRowTag = "<row>"\n': "RowTag",
        "[classifiers.two.CsvClassifier]\n[classifiers.two.JsonClassifier]\nJsonPath = '$'\n": "exactly one",
    }
    for text, message in cases.items():
        config.write_text(text)
        with pytest.raises(ConfigError, match=message):
            load_classifiers(config)


def test_crawled_types_as_glues_crawler_gives_them(spark, tmp_path, db):
    """Glue's built-in CSV classifier types no value as a date (its mappings read such
    columns as strings); a Parquet timestamp without a time zone is a ``timestamp`` (Glue
    and Athena have no ``timestamp_ntz``); a folder's hyphen is a ``_`` in its table's name
    (AWS's CDK workflow sample crawls ``covid-data/`` and reads the table ``covid_data``)."""
    import datetime

    lake = tmp_path / "lake"
    (lake / "daily-orders").mkdir(parents=True)
    (lake / "daily-orders" / "a.csv").write_text(
        "id,day,placed_at\n1,2026-01-02,2026-01-02 10:00:00\n2,2026-01-03,2026-01-03 11:30:00\n"
    )
    stamped = spark.createDataFrame([(1, datetime.datetime(2026, 1, 2, 3, 4, 5))], "id int, ts timestamp_ntz")
    stamped.write.parquet(str(lake / "events"))
    (lake / "plain").mkdir()
    (lake / "plain" / "a.csv").write_text("1,ann,2026-01-02\n2,bob,2026-01-03\n")
    record, store = crawl(spark, definition(db, lake / "daily-orders", lake / "events", lake / "plain"))
    assert record.state == "SUCCEEDED", record
    assert sorted(t.name for t in store.tables(db)) == ["daily_orders", "events", "plain"]
    orders = store.table(db, "daily_orders")
    # A CSV with a header: Glue's crawler sets skip.header.line.count, which Athena reads.
    assert orders.parameters["skip.header.line.count"] == "1"
    assert "skip.header.line.count" not in store.table(db, "plain").parameters
    assert [(c.name, c.type) for c in orders.columns] == [
        ("id", "bigint"),
        ("day", "string"),
        ("placed_at", "string"),
    ]
    events = store.table(db, "events")
    assert {c.name: c.type for c in events.columns}["ts"] == "timestamp"
    # Both read back through the catalog, with the catalog's types.
    glue = GlueContext(spark)
    read = glue.create_dynamic_frame.from_catalog(database=db, table_name="daily_orders").toDF()
    assert sorted(r["day"] for r in read.collect()) == ["2026-01-02", "2026-01-03"]
    ts = glue.create_dynamic_frame.from_catalog(database=db, table_name="events").toDF().first()["ts"]
    assert ts is not None


def test_update_in_database_merges_the_schema_as_glue_does(spark, tmp_path, db):
    """A catalog update from a job (enableUpdateCatalog, UPDATE_IN_DATABASE) merges the
    frame's schema into the table's: the table's columns keep their names whatever the
    frame's case, a column that is all null in this batch keeps its type, and new
    columns are added."""
    glue = GlueContext(spark)
    out = tmp_path / "out"
    options = {
        "path": str(out),
        "enableUpdateCatalog": True,
        "updateBehavior": "UPDATE_IN_DATABASE",
        "catalogDatabase": db,
        "catalogTableName": "merged",
    }
    first = spark.createDataFrame([(1, 10)], "orderid long, quantity long")
    glue.write_dynamic_frame.from_options(DynamicFrame.fromDF(first, glue, "f"), "s3", options, "glueparquet")
    store = CatalogStore(StateStore.from_settings())
    assert [(c.name, c.type) for c in store.table(db, "merged").columns] == [
        ("orderid", "bigint"),
        ("quantity", "bigint"),
    ]

    later = spark.createDataFrame([(2, None, "gift")], "orderId long, quantity void, giftNote string")
    glue.write_dynamic_frame.from_options(DynamicFrame.fromDF(later, glue, "l"), "s3", options, "glueparquet")
    assert [(c.name, c.type) for c in store.table(db, "merged").columns] == [
        ("orderid", "bigint"),
        ("quantity", "bigint"),
        ("giftnote", "string"),
    ]


def test_files_with_different_schemas_are_a_table_each(spark, tmp_path, db):
    """AWS's crawler tutorial crawls a folder of persons.json, memberships.json … and gets
    a table per file (persons_json, memberships_json): Glue's crawler groups files into
    one table only when their schemas are similar. TableGroupingPolicy
    CombineCompatibleSchemas keeps one table; files that share most fields stay one."""
    folder = tmp_path / "legislators"
    write_json(folder / "persons.json", [1, 2], name="Ann", gender="f", birth_date="1950")
    write_json(folder / "memberships.json", [7], person_id=1, organization_id="o1", role="member")
    record, store = crawl(spark, definition(db, folder))
    assert record.state == "SUCCEEDED", record
    tables = sorted(t.name for t in store.tables(db))
    assert tables == ["memberships_json", "persons_json"]
    persons = store.table(db, "persons_json")
    assert {c.name for c in persons.columns} == {"id", "name", "gender", "birth_date"}
    glue = GlueContext(spark)
    read = glue.create_dynamic_frame.from_catalog(database=db, table_name="persons_json").toDF()
    assert sorted(r["id"] for r in read.collect()) == [1, 2]

    combined_db = f"{db}_c"
    grouping = json.dumps({"Version": 1.0, "Grouping": {"TableGroupingPolicy": "CombineCompatibleSchemas"}})
    record, store = crawl(spark, definition(combined_db, folder, Configuration=grouping))
    assert [t.name for t in store.tables(combined_db)] == ["legislators"]

    alike = tmp_path / "orders"
    write_json(alike / "a.json", [1], amount=1, region="eu", day="d1")
    write_json(alike / "b.json", [2], amount=2, region="us", day="d2", coupon="x")  # 5 of 6 fields shared
    record, store = crawl(spark, definition(f"{db}_o", alike))
    assert [t.name for t in store.tables(f"{db}_o")] == ["orders"]


@needs_variant
def test_a_csv_column_of_numbers_and_text_is_a_choice_of_the_catalogs_type(spark, tmp_path, db, capsys):
    """AWS's resolveChoice sample (aws-glue-samples examples/resolve_choice.md): the
    crawler types the medicare CSV's `provider id` bigint from the file's first part;
    text further down makes it, read into a DynamicFrame from the catalog, a choice of
    long and string. `cast:long` and `project:long` make the text null, `make_cols` gives
    `provider id_long` and `provider id_string`, `make_struct` a struct of both. Read
    from the files without the catalog, every field is text, as Glue reads a CSV."""
    folder = tmp_path / "medicare"
    folder.mkdir()
    good = "".join(f"{10001 + i},Hospital {i},36301,$32963.07\n" for i in range(1000))
    (folder / "m.csv").write_text(
        "provider id,provider name,provider zip code,average covered charges\n"
        + good
        + "ABC,Bad row,36301,$1.00\nXYZ,Bad row too,,$2.00\n"
    )
    record, store = crawl(spark, definition(db, folder))
    assert record.state == "SUCCEEDED", record
    types = {c.name: c.type for c in store.table(db, "medicare").columns}
    assert types["provider id"] == "bigint" and types["provider zip code"] == "bigint"
    glue = GlueContext(spark)
    medicare = glue.create_dynamic_frame.from_catalog(database=db, table_name="medicare")
    medicare.printSchema()
    printed = capsys.readouterr().out
    assert "|-- provider id: choice\n|    |-- long\n|    |-- string" in printed
    assert "|-- provider zip code: long" in printed and "|-- average covered charges: string" in printed

    def values(frame, column):
        return [r[column] for r in frame.toDF().collect()]

    cast = values(medicare.resolveChoice(specs=[("provider id", "cast:long")]), "provider id")
    assert cast.count(None) == 2 and sorted(v for v in cast if v is not None)[:2] == [10001, 10002]
    project = values(medicare.resolveChoice(specs=[("provider id", "project:long")]), "provider id")
    assert project.count(None) == 2 and len(project) == 1002
    cols = medicare.resolveChoice(specs=[("provider id", "make_cols")]).toDF()
    assert "provider id_long" in cols.columns and "provider id_string" in cols.columns
    assert sorted(r["provider id_string"] for r in cols.collect() if r["provider id_string"]) == [
        "ABC",
        "XYZ",
    ]
    struct = medicare.resolveChoice(specs=[("provider id", "make_struct")]).toDF()
    assert struct.schema["provider id"].dataType.fieldNames() == ["long", "string"]
    # The empty zip code of a typed column is missing.
    zips = {r["provider name"]: r["provider zip code"] for r in medicare.toDF().collect()}
    assert zips["Bad row too"] is None and zips["Bad row"] == 36301

    # From the files, without the catalog: text, the empty field kept as "".
    from_files = glue.create_dynamic_frame.from_options(
        "s3", {"paths": [str(folder)]}, "csv", format_options={"withHeader": True}
    ).toDF()
    assert set(dict(from_files.dtypes).values()) == {"string"}
    rows = {r["provider id"]: r for r in from_files.collect()}
    assert rows["10001"]["provider zip code"] == "36301" and rows["XYZ"]["provider zip code"] == ""
    as_df = glue.create_data_frame.from_options(
        "s3", {"paths": [str(folder)]}, "csv", format_options={"withHeader": True}
    )
    assert dict(as_df.dtypes)["provider id"] == "string"


@needs_variant
def test_the_crawler_types_a_csv_from_each_files_first_part(spark, tmp_path, db):
    """Glue's crawler reads a CSV's first 1,000 records or first megabyte to type it
    (AWS's resolveChoice sample: the crawler types `provider id` bigint from the file's
    first part; text far down the file is seen by the DynamicFrame read, as a choice)."""
    folder = tmp_path / "payments"
    folder.mkdir()
    rows = "".join(f"{10000 + i},hospital {i}\n" for i in range(1500))
    (folder / "p.csv").write_text("provider id,provider name\n" + rows + "ABC,bad row\n")
    record, store = crawl(spark, definition(db, folder))
    assert record.state == "SUCCEEDED", record
    columns = {c.name: c.type for c in store.table(db, "payments").columns}
    assert columns == {"provider id": "bigint", "provider name": "string"}
    frame = GlueContext(spark).create_dynamic_frame.from_catalog(database=db, table_name="payments")
    strings = frame.resolveChoice(specs=[("provider id", "project:string")]).toDF()
    assert [r["provider id"] for r in strings.collect() if r["provider id"]] == ["ABC"]


@pytest.mark.parametrize("amount", [4, "four"], ids=["read-without-spark", "read-by-spark"])
def test_a_crawled_json_tables_columns_keep_the_records_order(spark, tmp_path, db, amount):
    """A Glue table crawled from JSON lists its columns as the records give them (AWS's
    JSON tutorials show `printSchema` in the file's order), not sorted by name; a field
    only later records have comes after the first record's. Files that disagree on a
    field's type are typed by Spark, whose reader sorts: the order is the records' all
    the same."""
    folder = tmp_path / "events"
    folder.mkdir()
    (folder / "a.json").write_text(json.dumps({"zone": "eu", "amount": 3, "meta": {"k": 1}, "birth": "1950"}))
    (folder / "b.json").write_text(
        json.dumps({"zone": "us", "amount": amount, "meta": {"k": 2}, "birth": "1951", "added": True})
    )
    record, store = crawl(spark, definition(db, folder))
    assert record.state == "SUCCEEDED", record
    columns = store.table(db, "events").columns
    assert [c.name for c in columns] == ["zone", "amount", "meta", "birth", "added"]
    assert {c.name: c.type for c in columns}["amount"] == ("bigint" if amount == 4 else "string")
