"""The job the crash tests kill: new JSON files in, Parquet files and a database table out.

    python crash_job.py --JOB_NAME j --job-bookmark-option job-bookmark-enable \
        --input IN --output OUT --table T --db JDBC_URL
"""

from pyspark.sql import functions as F

from sparkmark import Job

job = Job.from_args()
rows = job.read_files(job.args["input"], format="json", ctx="src")
rows = rows.withColumn("doubled", F.col("id") * 2)
job.write_files(rows, job.args["output"], partition_by=["part"], ctx="files")
job.write_jdbc(rows.select("id", "part", "doubled"), url=job.args["db"], table=job.args["table"], ctx="db")
job.commit()
