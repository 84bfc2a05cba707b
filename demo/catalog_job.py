"""Demo job: read catalog table demo.orders, pruned to the days the predicate keeps.

sparkmark run demo/catalog_job.py --JOB_NAME demo_catalog --predicate "dt >= '2026-11-03'"
"""

from sparkmark import Job

job = Job.from_args()
orders = job.read_table("demo.orders", predicate=job.args.get("predicate"), ctx="orders_table")
days = sorted(r["dt"] for r in orders.select("dt").distinct().collect())
print(f"read {orders.count()} orders of the days {days} through the catalog")
job.commit()
