"""A2: a query through Athena's API against the same query in Spark SQL.

A2: ``SELECT count(*)`` with a partition filter over a Parquet table partitioned by
    year and month (made with Athena's own DDL: CREATE EXTERNAL TABLE, MSCK REPAIR),
    as a client sees it through the API (StartQueryExecution, GetQueryExecution until
    it ends, GetQueryResults), median over runs; divided by the same query's
    ``spark.sql(…).collect()`` in the Athena engine's own warm session (the baseline,
    timed inside that Spark, so it costs no API). Goal <= 1.5.

`sparkmark api` is a process on a SQLite state store; the table and the results are on
local disk, so the figure is the API's and the engine's, not an object store's.

    python bench/athena.py            # 24 partitions, 40 runs
    python bench/athena.py --quick    # 6 partitions, 10 runs
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from harness import api_endpoint, arguments, record

QUERY = "SELECT count(*) FROM sales WHERE year = '2024' AND month = '03'"


def wait(athena, query_id: str) -> dict:
    while True:
        found = athena.get_query_execution(QueryExecutionId=query_id)["QueryExecution"]
        if found["Status"]["State"] in ("SUCCEEDED", "FAILED", "CANCELLED"):
            assert found["Status"]["State"] == "SUCCEEDED", found["Status"]
            return found
        time.sleep(0.01)


def main() -> None:
    opts = arguments()
    years, runs = ((2024,), 10) if opts.quick else ((2023, 2024), 40)
    months = range(1, 7) if opts.quick else range(1, 13)
    import pyarrow as pa
    import pyarrow.parquet as pq

    work = Path(tempfile.mkdtemp(prefix="sparkmark-bench-athena-"))
    (work / "pool.toml").write_text('[pool]\nsize = 1\nmemory = "1g"\nprestart = true\n')
    lake = work / "lake" / "sales"
    n = 0
    for year in years:
        for month in months:
            folder = lake / f"year={year}" / f"month={month:02d}"
            folder.mkdir(parents=True)
            ids = list(range(n, n + 1000))
            n += 1000
            pq.write_table(pa.table({"id": ids, "amount": [i * 0.5 for i in ids]}), folder / "part-0.parquet")
    home = work / "home"
    env = {**os.environ, "SPARKMARK_HOME": str(home), "SPARKMARK_CONFIG": str(work / "pool.toml")}
    out = f"file://{work}/results/"
    with api_endpoint(env, home, "athena") as (url, athena):

        def run(sql: str, database: str | None = "bench") -> dict:
            context = {"QueryExecutionContext": {"Database": database}} if database else {}
            started = athena.start_query_execution(
                QueryString=sql, ResultConfiguration={"OutputLocation": out}, **context
            )
            return wait(athena, started["QueryExecutionId"])

        run("CREATE DATABASE bench", None)
        run(
            "CREATE EXTERNAL TABLE sales (id bigint, amount double) PARTITIONED BY (year string, month string) "
            f"STORED AS PARQUET LOCATION 'file://{lake}/'"
        )
        run("MSCK REPAIR TABLE sales")
        first = run(QUERY)
        answer = athena.get_query_results(QueryExecutionId=first["QueryExecutionId"])
        assert answer["ResultSet"]["Rows"][1]["Data"][0]["VarCharValue"] == "1000", answer
        through_api = []
        for _ in range(runs):
            t0 = time.perf_counter()
            done = run(QUERY)
            athena.get_query_results(QueryExecutionId=done["QueryExecutionId"])
            through_api.append((time.perf_counter() - t0) * 1000)
        # the baseline: the same query in the engine's warm session, timed inside its Spark
        import boto3

        from sparkmark.access import local_token

        glue = boto3.client(
            "glue", endpoint_url=url, region_name="us-east-1", aws_access_key_id="bench",
            aws_secret_access_key=local_token(home),
        )  # fmt: skip
        code = (
            "import time, json, statistics\nspark.catalog.setCurrentDatabase('bench')\nms = []\n"
            f"for _ in range({runs}):\n    t0 = time.perf_counter()\n"
            f"    spark.sql({QUERY!r}).collect()\n    ms.append((time.perf_counter() - t0) * 1000)\n"
            "print('BASELINE ' + json.dumps(statistics.median(ms)))"
        )
        number = glue.run_statement(SessionId="sparkmark-athena", Code=code)["Id"]
        while (s := glue.get_statement(SessionId="sparkmark-athena", Id=number)["Statement"])[
            "State"
        ] not in (
            "AVAILABLE",
            "ERROR",
            "CANCELLED",
        ):
            time.sleep(0.05)
        text = s["Output"]["Data"]["TextPlain"]
        spark_ms = json.loads(text.split("BASELINE ", 1)[1].split()[0])
    api_ms = statistics.median(through_api)
    ratio = api_ms / spark_ms
    suffix = "_quick" if opts.quick else ""  # a quick run never replaces the full-size figures
    results = {
        "A2" + suffix: {
            "value": round(ratio, 2), "goal": "<= 1.5", "met": ratio <= 1.5,
            "athena_ms": round(api_ms, 1), "spark_sql_ms": round(spark_ms, 1),
            "partitions": len(years) * len(months), "runs": runs,
            "scanned_bytes": first["Statistics"]["DataScannedInBytes"],
        },
    }  # fmt: skip
    print(
        f"A2 partition-filtered count(*): {api_ms:.0f} ms through Athena's API, {spark_ms:.0f} ms in Spark SQL "
        f"(median of {runs}); ratio {ratio:.2f}"
    )
    record(results, {})


if __name__ == "__main__":
    main()
