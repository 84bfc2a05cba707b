import sys

from awsglue.context import GlueContext
from awsglue.job import Job
from awsglue.transforms import *
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext

args = getResolvedOptions(sys.argv, ["JOB_NAME", "orders_path", "customers_path", "output_path"])
sc = SparkContext()
glueContext = GlueContext(sc)
spark = glueContext.spark_session
job = Job(glueContext)
job.init(args["JOB_NAME"], args)

# Script generated for node Orders
Orders_node1 = glueContext.create_dynamic_frame.from_options(
    format_options={"multiline": False},
    connection_type="s3",
    format="json",
    connection_options={"paths": [args["orders_path"]], "recurse": True},
    transformation_ctx="Orders_node1",
)

# Script generated for node Customers (a dimension: no transformation_ctx, so it is
# read in full every run instead of only its new files)
Customers_node2 = glueContext.create_dynamic_frame.from_options(
    format_options={"quoteChar": '"', "withHeader": True, "separator": ","},
    connection_type="s3",
    format="csv",
    connection_options={"paths": [args["customers_path"]], "recurse": True},
)

# Script generated for node Resolve Choice
ResolveChoice_node3 = ResolveChoice.apply(
    frame=Orders_node1,
    specs=[("amount", "cast:double"), ("qty", "cast:int")],
    transformation_ctx="ResolveChoice_node3",
)

# Script generated for node Change Schema
ChangeSchema_node4 = ApplyMapping.apply(
    frame=ResolveChoice_node3,
    mappings=[
        ("order_id", "long", "order_id", "long"),
        ("customer_id", "string", "customer_id", "string"),
        ("amount", "double", "amount", "double"),
        ("qty", "int", "quantity", "int"),
        ("dt", "string", "dt", "string"),
    ],
    transformation_ctx="ChangeSchema_node4",
)

# Script generated for node Filter
Filter_node5 = Filter.apply(
    frame=ChangeSchema_node4,
    f=lambda row: row["amount"] is not None and row["amount"] > 0,
    transformation_ctx="Filter_node5",
)

# Script generated for node Join
Join_node6 = Join.apply(
    frame1=Filter_node5,
    frame2=Customers_node2,
    keys1=["customer_id"],
    keys2=["id"],
    transformation_ctx="Join_node6",
)

# Script generated for node Amazon S3
AmazonS3_node7 = glueContext.write_dynamic_frame.from_options(
    frame=Join_node6,
    connection_type="s3",
    format="glueparquet",
    connection_options={"path": args["output_path"], "partitionKeys": ["dt"]},
    format_options={"compression": "snappy"},
    transformation_ctx="AmazonS3_node7",
)

job.commit()
