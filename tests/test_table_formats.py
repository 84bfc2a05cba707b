"""Open table formats as Glue enables them: a job parameter ``--datalake-formats``
puts the format's jars on Spark's class path, and the ``--conf`` lines AWS's "Using
the Iceberg / Delta Lake framework in AWS Glue" pages give (the SQL extensions and the
catalog) configure the session. The script runs unchanged under `sparkmark run`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparkmark.errors import ConfigError
from sparkmark.table_formats import glue_conf, parse_formats

SPARKMARK = Path(sys.executable).with_name("sparkmark")

ICEBERG_SCRIPT = """
import sys
from awsglue.context import GlueContext
from awsglue.job import Job
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext

args = getResolvedOptions(sys.argv, ["JOB_NAME", "day"])
glueContext = GlueContext(SparkContext.getOrCreate())
spark = glueContext.spark_session
job = Job(glueContext)
job.init(args["JOB_NAME"], args)
spark.sql("CREATE TABLE IF NOT EXISTS glue_catalog.db.orders (id bigint, day string) USING iceberg")
spark.sql(f"INSERT INTO glue_catalog.db.orders VALUES (1, '{args['day']}'), (2, '{args['day']}')")
spark.sql("MERGE INTO glue_catalog.db.orders t USING (SELECT 2 AS id, 'merged' AS day) s "
          "ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.day = s.day")
rows = spark.sql("SELECT id, day FROM glue_catalog.db.orders ORDER BY id, day").collect()
snapshots = spark.sql("SELECT count(*) FROM glue_catalog.db.orders.snapshots").first()[0]
print("ROWS", [(r.id, r.day) for r in rows], "SNAPSHOTS", snapshots)
job.commit()
"""

DELTA_SCRIPT = """
import sys
from awsglue.context import GlueContext
from awsglue.job import Job
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext

args = getResolvedOptions(sys.argv, ["JOB_NAME", "path"])
glueContext = GlueContext(SparkContext.getOrCreate())
spark = glueContext.spark_session
job = Job(glueContext)
job.init(args["JOB_NAME"], args)
frame = spark.createDataFrame([(1, "a"), (2, "b")], "id bigint, name string")
frame.write.format("delta").mode("append").save(args["path"])
spark.sql(f"DELETE FROM delta.`{args['path']}` WHERE id = 1")
rows = spark.read.format("delta").load(args["path"]).collect()
versions = spark.sql(f"DESCRIBE HISTORY delta.`{args['path']}`").count()
print("ROWS", sorted((r.id, r.name) for r in rows), "VERSIONS", versions)
job.commit()
"""


def run(script: Path, args: list[str], home: Path, **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "AWS_"))}
    env.update(SPARKMARK_HOME=str(home), SPARKMARK_SPARK_MASTER="local[2]", **extra)
    return subprocess.run(
        [str(SPARKMARK), "run", str(script), *args], capture_output=True, text=True, env=env, timeout=600
    )


def printed(proc: subprocess.CompletedProcess, tag: str) -> str:
    line = next((line for line in proc.stdout.splitlines() if line.startswith(tag)), None)
    assert line, proc.stdout[-2000:] + proc.stderr[-4000:]
    return line


@pytest.mark.slow
def test_an_iceberg_job_with_glues_documented_conf_lines(tmp_path):
    """AWS's Iceberg page: --datalake-formats iceberg and --conf for the extensions and a
    catalog named glue_catalog (here a Hadoop catalog on a local warehouse; the Glue
    catalog itself comes with the endpoint's Iceberg support)."""
    script = tmp_path / "iceberg_job.py"
    script.write_text(ICEBERG_SCRIPT)
    warehouse = tmp_path / "warehouse"
    conf = (
        "spark.sql.extensions=org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
        " --conf spark.sql.catalog.glue_catalog=org.apache.iceberg.spark.SparkCatalog"
        " --conf spark.sql.catalog.glue_catalog.type=hadoop"
        f" --conf spark.sql.catalog.glue_catalog.warehouse={warehouse}"
    )
    args = ["--JOB_NAME", "iceberg_job", "--day", "d1", "--datalake-formats", "iceberg", "--conf", conf]
    done = run(script, args, tmp_path / "home")
    assert done.returncode == 0, done.stderr[-4000:]
    assert printed(done, "ROWS") == "ROWS [(1, 'd1'), (2, 'merged')] SNAPSHOTS 2"
    assert list(warehouse.glob("db/orders/metadata/*.metadata.json"))


@pytest.mark.slow
def test_a_delta_job_with_glues_documented_conf_lines(tmp_path):
    """AWS's Delta Lake page: --datalake-formats delta and --conf for Delta's extension
    and catalog; writes, a DELETE and the table's history."""
    script = tmp_path / "delta_job.py"
    script.write_text(DELTA_SCRIPT)
    table = tmp_path / "delta" / "customers"
    conf = (
        "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension"
        " --conf spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog"
    )
    args = ["--JOB_NAME", "delta_job", "--path", str(table), "--datalake-formats", "delta", "--conf", conf]
    done = run(script, args, tmp_path / "home")
    assert done.returncode == 0, done.stderr[-4000:]
    assert printed(done, "ROWS") == "ROWS [(2, 'b')] VERSIONS 2"
    assert (table / "_delta_log" / "00000000000000000001.json").exists()


@pytest.mark.slow
def test_a_job_without_the_format_gets_a_line_naming_what_is_missing(tmp_path):
    """Without --datalake-formats, Spark has no Iceberg: the run fails in one line."""
    script = tmp_path / "no_format.py"
    script.write_text(ICEBERG_SCRIPT)
    conf = "spark.sql.catalog.glue_catalog=org.apache.iceberg.spark.SparkCatalog"
    done = run(script, ["--JOB_NAME", "no_format", "--day", "d1", "--conf", conf], tmp_path / "home")
    assert done.returncode != 0
    assert "error:" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("iceberg", ("iceberg",)),
        ("Delta, iceberg,delta", ("delta", "iceberg")),
        ("", ()),
        (None, ()),
    ],
)
def test_datalake_formats_are_parsed_as_glue_takes_them(text, expected):
    assert parse_formats(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [("hudi", "no Apache Hudi bundle for Spark 4.1"), ("iceberg,parquet", "names 'parquet'")],
)
def test_a_format_sparkmark_cannot_give_is_one_line(text, message):
    with pytest.raises(ConfigError, match=message):
        parse_formats(text)


def test_glues_conf_parameter_holds_several_settings():
    """Glue takes one --conf parameter whose value chains the others with --conf."""
    assert glue_conf("spark.a=1 --conf spark.b=x=y --conf  spark.c = 3 ") == {
        "spark.a": "1",
        "spark.b": "x=y",
        "spark.c": "3",
    }
    assert glue_conf("") == {} and glue_conf(None) == {}
    with pytest.raises(ConfigError, match="not key=value"):
        glue_conf("spark.a=1 --conf nonsense")
    assert json.dumps(glue_conf("k=v"))  # plain strings, as SPARKMARK_SPARK_CONF carries them


def glue_catalog_on_s3(s3_server, bucket: str) -> tuple[str, dict[str, str]]:
    """A bucket on moto's server, AWS's Iceberg ``--conf`` lines for a GlueCatalog with
    its warehouse there, and the AWS variables a job is run with."""
    import boto3

    boto3.client(
        "s3", endpoint_url=s3_server.endpoint_url, region_name="us-east-1",
        aws_access_key_id="test", aws_secret_access_key="test",
    ).create_bucket(Bucket=bucket)  # fmt: skip
    conf = (
        "spark.sql.extensions=org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
        " --conf spark.sql.catalog.glue_catalog=org.apache.iceberg.spark.SparkCatalog"
        f" --conf spark.sql.catalog.glue_catalog.warehouse=s3://{bucket}/warehouse/"
        " --conf spark.sql.catalog.glue_catalog.catalog-impl=org.apache.iceberg.aws.glue.GlueCatalog"
        " --conf spark.sql.catalog.glue_catalog.io-impl=org.apache.iceberg.aws.s3.S3FileIO"
    )
    aws = {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL_S3": s3_server.endpoint_url,
    }
    return conf, aws


GLUE_CATALOG_SCRIPT = """
import sys
import boto3
from awsglue.context import GlueContext
from awsglue.job import Job
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext

args = getResolvedOptions(sys.argv, ["JOB_NAME", "batch"])
glueContext = GlueContext(SparkContext.getOrCreate())
spark = glueContext.spark_session
job = Job(glueContext)
job.init(args["JOB_NAME"], args)
spark.sql("CREATE NAMESPACE IF NOT EXISTS glue_catalog.lake")
spark.sql("CREATE TABLE IF NOT EXISTS glue_catalog.lake.events (id bigint, batch string) USING iceberg")
spark.sql(f"INSERT INTO glue_catalog.lake.events VALUES (1, '{args['batch']}'), (2, '{args['batch']}')")
rows = spark.sql("SELECT batch, count(*) AS n FROM glue_catalog.lake.events GROUP BY batch ORDER BY batch").collect()
table = boto3.client("glue").get_table(DatabaseName="lake", Name="events")["Table"]
print("ROWS", [(r.batch, r.n) for r in rows])
print("GLUE", table["Parameters"]["table_type"], table["Parameters"]["metadata_location"].startswith("s3://"))
job.commit()
"""


@pytest.mark.slow
def test_icebergs_glue_catalog_talks_to_sparkmarks_glue_api_on_s3(tmp_path, s3_server):
    """AWS's Iceberg page, unchanged: the glue_catalog is Iceberg's own GlueCatalog (a
    Glue client inside the JVM, nobody here wrote) with an s3:// warehouse and S3FileIO.
    Under `sparkmark run` it talks to sparkmark's Glue API, and the S3 of AWS's
    variables (moto's server); a second run finds the table the first one made."""
    script = tmp_path / "glue_catalog_job.py"
    script.write_text(GLUE_CATALOG_SCRIPT)
    conf, aws = glue_catalog_on_s3(s3_server, "lake-warehouse")
    home = tmp_path / "home"
    for batch, expected in (("b1", "[('b1', 2)]"), ("b2", "[('b1', 2), ('b2', 2)]")):
        args = [
            "--JOB_NAME",
            "iceberg_glue",
            "--batch",
            batch,
            "--datalake-formats",
            "iceberg",
            "--conf",
            conf,
        ]
        done = run(script, args, home, **aws)
        assert done.returncode == 0, done.stderr[-6000:]
        assert printed(done, "ROWS") == f"ROWS {expected}"
        assert printed(done, "GLUE") == "GLUE ICEBERG True"


def test_the_catalogs_over_the_glue_catalog_are_the_ones_whose_impl_is_glue_catalog():
    from sparkmark.table_formats import GLUE_CATALOG, glue_catalogs

    confs = {
        "spark.sql.catalog.glue_catalog": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.glue_catalog.catalog-impl": GLUE_CATALOG,
        "spark.sql.catalog.local.catalog-impl": "org.apache.iceberg.hadoop.HadoopCatalog",
        "spark.sql.catalog.another.catalog-impl": GLUE_CATALOG,
    }
    assert glue_catalogs(confs.items()) == ["another", "glue_catalog"]
    assert glue_catalogs([]) == []
