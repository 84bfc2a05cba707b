"""Demo job: read new order files, total them per customer and day, append Parquet.

    sparkmark run demo/orders_job.py --JOB_NAME demo_orders \
        --job-bookmark-option job-bookmark-enable --input demo-data/orders --output demo-data/out

The totals are written exactly once: they appear in the output folder when the run
commits its bookmark, with the run id in the file names.
"""

from pyspark.sql import functions as F

from sparkmark import Job

job = Job.from_args()
orders = job.read_files(job.args["input"], format="json", ctx="orders_src")
print(f"this run reads {orders.count()} orders")
if orders.count():
    totals = orders.groupBy("dt", "customer").agg(
        F.count("*").alias("orders"), F.round(F.sum("amount"), 2).alias("amount")
    )
    job.write_files(totals, job.args["output"], partition_by=["dt"], ctx="totals")
job.commit()
