"""Orders read by table name from the Glue Data Catalog, counted per status."""

import sys

import boto3
from awsglue.context import GlueContext
from awsglue.job import Job
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext

args = getResolvedOptions(sys.argv, ["JOB_NAME", "database", "table", "target_path"])
glueContext = GlueContext(SparkContext())
job = Job(glueContext)
job.init(args["JOB_NAME"], args)

table = boto3.client("glue").get_table(DatabaseName=args["database"], Name=args["table"])["Table"]
glueContext.get_logger().info(f"orders from {table['StorageDescriptor']['Location']}")

orders = glueContext.create_dynamic_frame.from_catalog(
    database=args["database"], table_name=args["table"], transformation_ctx="orders_table"
)
counts = orders.toDF().groupBy("status").count()
counts.write.mode("overwrite").json(args["target_path"])
job.commit()
