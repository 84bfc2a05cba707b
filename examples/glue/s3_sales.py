import sys

from awsglue.context import GlueContext
from awsglue.job import Job
from awsglue.transforms import *
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext

args = getResolvedOptions(
    sys.argv, ["JOB_NAME", "orders_path", "customers_path", "products_path", "output_path"]
)
sc = SparkContext()
glueContext = GlueContext(sc)
job = Job(glueContext)
job.init(args["JOB_NAME"], args)

# New orders only (JSON under dt= folders, each order with its dt): bookmarked by
# transformation_ctx. from_options reads no column from the folder names.
Orders_node1 = glueContext.create_dynamic_frame.from_options(
    connection_type="s3",
    format="json",
    connection_options={"paths": [args["orders_path"]], "recurse": True},
    transformation_ctx="Orders_node1",
)

# Dimensions, read in full every run.
Customers_node2 = glueContext.create_dynamic_frame.from_options(
    connection_type="s3",
    format="csv",
    format_options={"withHeader": True, "separator": ","},
    connection_options={"paths": [args["customers_path"]]},
)
Products_node3 = glueContext.create_dynamic_frame.from_options(
    connection_type="s3",
    format="parquet",
    connection_options={"paths": [args["products_path"]]},
)

WithCustomers_node4 = Join.apply(
    frame1=Orders_node1,
    frame2=Customers_node2,
    keys1=["customer"],
    keys2=["customer"],
    transformation_ctx="WithCustomers_node4",
)
Sales_node5 = Join.apply(
    frame1=WithCustomers_node4,
    frame2=Products_node3,
    keys1=["product"],
    keys2=["product"],
    transformation_ctx="Sales_node5",
)

glueContext.write_dynamic_frame.from_options(
    frame=Sales_node5,
    connection_type="s3",
    format="glueparquet",
    connection_options={"path": args["output_path"], "partitionKeys": ["dt"]},
    format_options={"compression": "snappy"},
    transformation_ctx="Sales_node6",
)

job.commit()
