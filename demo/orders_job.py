"""Demo job: read new order files, total them per customer and day, append Parquet.

    sparkmark run demo/orders_job.py --JOB_NAME demo_orders \
        --job-bookmark-option job-bookmark-enable --input demo-data/orders --output demo-data/out
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
    totals.write.mode("append").partitionBy("dt").parquet(job.args["output"])
job.commit()
