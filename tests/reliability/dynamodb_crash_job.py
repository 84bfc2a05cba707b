"""The job the DynamoDB crash test kills, a Glue script run with `sparkmark run`: new
JSON files in (bookmarked), a DynamoDB table out with a transformation_ctx (exactly-once).
With ``--show yes`` it prints the table's items after its commit, for the test to check.

    sparkmark run dynamodb_crash_job.py --JOB_NAME j --job-bookmark-option job-bookmark-enable \
        --input IN --table NAME --show no
"""

import json
import sys

import boto3
from awsglue.context import GlueContext
from awsglue.job import Job
from awsglue.utils import getResolvedOptions
from boto3.dynamodb.types import TypeDeserializer
from pyspark.context import SparkContext

args = getResolvedOptions(sys.argv, ["JOB_NAME", "input", "table", "show"])
glueContext = GlueContext(SparkContext.getOrCreate())
job = Job(glueContext)
job.init(args["JOB_NAME"], args)
new = glueContext.create_dynamic_frame.from_options(
    connection_type="s3",
    connection_options={"paths": [args["input"]]},
    format="json",
    transformation_ctx="src",
)
glueContext.write_dynamic_frame.from_options(
    frame=new.select_fields(["id", "version"]),
    connection_type="dynamodb",
    connection_options={"dynamodb.output.tableName": args["table"], "dynamodb.output.numParallelTasks": "3"},
    transformation_ctx="out",
)
job.commit()
if args["show"] == "yes":
    d = TypeDeserializer().deserialize
    pages = boto3.client("dynamodb").get_paginator("scan").paginate(TableName=args["table"])
    items = [{k: int(d(v)) for k, v in i.items()} for page in pages for i in page["Items"]]
    print("ITEMS", json.dumps(items))
