"""Demo workflow step 2: total the new orders of catalog table demo.orders per day and
customer, and publish the totals with the bookmark commit.

Run by the demo_nightly workflow (demo/sparkmark.toml) after the crawler succeeded.
"""

from pyspark.sql import functions as F

from sparkmark import Job
from sparkmark.workflow import properties

job = Job.from_args()
orders = job.read_table("demo.orders", ctx="orders_table")
count = orders.count()
print(f"transform: {count} new orders")
if count:
    totals = orders.groupBy("dt", "customer").agg(
        F.count("*").alias("orders"), F.round(F.sum("amount"), 2).alias("amount")
    )
    job.write_files(totals, job.args["output"], partition_by=["dt"], ctx="daily_totals")
properties.put(job.args, {"orders_read": str(count)})
job.commit()
