"""A hand-written Glue job: new JSON orders, typed and cleaned, joined to a CSV
customer list, appended as Parquet partitioned by day."""

import sys

from awsglue.context import GlueContext
from awsglue.dynamicframe import DynamicFrame
from awsglue.job import Job
from awsglue.transforms import ApplyMapping, Filter, Join, ResolveChoice
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext
from pyspark.sql import functions as F

args = getResolvedOptions(sys.argv, ["JOB_NAME", "source", "dims", "target"])
sc = SparkContext.getOrCreate()
glue_context = GlueContext(sc)
logger = glue_context.get_logger()
job = Job(glue_context)
job.init(args["JOB_NAME"], args)

orders = glue_context.create_dynamic_frame.from_options(
    "s3", {"paths": [args["source"]], "recurse": True}, format="json", transformation_ctx="orders"
)
logger.info(f"new orders this run: {orders.count()}")

orders = ResolveChoice.apply(orders, specs=[("amount", "cast:double"), ("qty", "project:int")])
orders = ApplyMapping.apply(
    frame=orders,
    mappings=[
        ("order_id", "long", "order_id", "long"),
        ("customer_id", "string", "customer_id", "string"),
        ("amount", "double", "amount", "double"),
        ("qty", "int", "quantity", "int"),
        ("dt", "string", "dt", "string"),
    ],
)
orders = Filter.apply(frame=orders, f=lambda r: r["amount"] is not None and r["amount"] > 0)

customers = glue_context.create_dynamic_frame.from_options(
    "s3", {"paths": [args["dims"]]}, format="csv", format_options={"withHeader": True}
)
joined = Join.apply(orders, customers, "customer_id", "id").drop_fields(["id"])

df = joined.toDF().withColumn("amount_cents", (F.col("amount") * 100).cast("long"))
glue_context.write_dynamic_frame.from_options(
    frame=DynamicFrame.fromDF(df, glue_context, "out"),
    connection_type="s3",
    connection_options={"path": args["target"], "partitionKeys": ["dt"]},
    format="parquet",
)
job.commit()
