"""The job the table crash tests kill, a Glue script run with `sparkmark run`: new JSON
files in, an Iceberg table (through the Glue catalog) or a Delta table out, both with a
transformation_ctx (exactly-once). With ``--show yes`` it prints the table's ids after
its commit, for the test to count.

    sparkmark run table_crash_job.py --JOB_NAME j --job-bookmark-option job-bookmark-enable \
        --input IN --format iceberg|delta --table PATH --show no --datalake-formats … --conf …
"""

import json
import sys

from awsglue.context import GlueContext
from awsglue.job import Job
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext

args = getResolvedOptions(sys.argv, ["JOB_NAME", "input", "format", "table", "show"])
glueContext = GlueContext(SparkContext.getOrCreate())
spark = glueContext.spark_session
job = Job(glueContext)
job.init(args["JOB_NAME"], args)
if args["format"] == "iceberg":
    spark.sql("CREATE NAMESPACE IF NOT EXISTS glue_catalog.crash")
    spark.sql("CREATE TABLE IF NOT EXISTS glue_catalog.crash.events (id bigint, note string) USING iceberg")
new = glueContext.create_dynamic_frame.from_options(
    connection_type="s3",
    connection_options={"paths": [args["input"]]},
    format="json",
    transformation_ctx="src",
)
rows = new.toDF().select("id", "note")
if args["format"] == "iceberg":
    glueContext.write_data_frame.from_catalog(
        frame=rows, database="crash", table_name="events", transformation_ctx="table"
    )
else:
    glueContext.write_dynamic_frame.from_options(
        frame=new.select_fields(["id", "note"]),
        connection_type="s3",
        format="delta",
        connection_options={"path": args["table"]},
        transformation_ctx="table",
    )
job.commit()
if args["show"] == "yes":
    if args["format"] == "iceberg":
        table = spark.table("glue_catalog.crash.events")
    else:
        table = spark.read.format("delta").load(args["table"].replace("s3://", "s3a://"))
    print("IDS", json.dumps(sorted(r.id for r in table.select("id").collect())))
