"""Daily paid orders: the new order files since the last run, paid ones only, as Parquet."""

import sys

from awsglue.context import GlueContext
from awsglue.job import Job
from awsglue.transforms import ApplyMapping, Filter
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext

args = getResolvedOptions(sys.argv, ["JOB_NAME", "source_path", "target_path"])
sc = SparkContext()
glueContext = GlueContext(sc)
job = Job(glueContext)
job.init(args["JOB_NAME"], args)

orders = glueContext.create_dynamic_frame.from_options(
    connection_type="s3",
    connection_options={"paths": [args["source_path"]], "recurse": True},
    format="json",
    transformation_ctx="orders_source",
)
mapped = ApplyMapping.apply(
    frame=orders,
    mappings=[
        ("order_id", "string", "order_id", "string"),
        ("amount", "double", "amount", "double"),
        ("status", "string", "status", "string"),
    ],
    transformation_ctx="mapped",
)
paid = Filter.apply(frame=mapped, f=lambda row: row["status"] == "PAID", transformation_ctx="paid")
glueContext.write_dynamic_frame.from_options(
    frame=paid,
    connection_type="s3",
    connection_options={"path": args["target_path"]},
    format="parquet",
    transformation_ctx="paid_sink",
)
job.commit()
