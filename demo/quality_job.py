"""Demo workflow step 3: check the new daily totals with DQDL, keep the rows that pass,
and set aside those that fail (with the rules they failed) for review.

Run by the demo_nightly workflow (demo/sparkmark.toml) after the transform succeeded.
"""

from pyspark.sql import functions as F

from sparkmark import Job
from sparkmark.quality import FAIL_COLUMN
from sparkmark.workflow import properties

RULES = """Rules = [
    RowCount > 0,
    IsComplete "customer",
    ColumnValues "amount" > 0,
    ColumnValues "amount" <= 1000
]"""

job = Job.from_args()
totals = job.read_files(job.args["input"], format="parquet", ctx="daily_totals")
result = job.evaluate_quality(totals, RULES, name="daily_totals_checks")
for outcome in result.outcomes:
    print(f"quality: {outcome.outcome:6} {outcome.rule}")
good, bad = result.split()
job.write_files(good, job.args["checked"], ctx="checked")
job.write_files(
    bad.withColumn(FAIL_COLUMN, F.to_json(F.col(FAIL_COLUMN))),
    job.args["review"],
    format="json",
    ctx="review",
)
properties.put(job.args, {"quality_passed": str(result.passed).lower()})
job.commit()
