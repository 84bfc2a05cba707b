"""Athena's API on `sparkmark api`, driven by the clients Athena's users run: the AWS CLI,
awswrangler, PyAthena (its cursor and its pandas cursor) and boto3, each against a
`sparkmark api` process with moto's S3 server holding the lake and the results.

The tables are crawled from files on S3 (Parquet by year and month, JSON by day, CSV by
region, an unpartitioned CSV and Parquet table). The queries come from AWS's Athena
documentation and Trino's function reference, with the rows they document, or rows
worked out by hand from the files where they document none.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import boto3
import pytest

from .test_iceberg_rest import BUCKET, moto_s3, write_crawled_lake
from .test_server_safety import SPARKMARK

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
PYATHENA_PYTHON = REPO / ".venv-clients" / "athena" / "bin" / "python"
AWS = Path(sys.executable).parent / "aws"
RESULTS = "athena-results"
TOKEN = "athena-test-token"


class AthenaApi:
    """``sparkmark api`` in its own process, its pool's one warm Spark started at once."""

    def __init__(self, root: Path, s3_url: str):
        root.mkdir(parents=True, exist_ok=True)
        self.home = root / "home"
        config = root / "sparkmark.toml"
        config.write_text('[pool]\nsize = 1\nmemory = "1g"\nprestart = true\n')
        self.s3_url = s3_url
        self.env = {
            **os.environ,
            "SPARKMARK_HOME": str(self.home),
            "SPARKMARK_CONFIG": str(config),
            "SPARKMARK_API_TOKEN": TOKEN,
            "AWS_ENDPOINT_URL_S3": s3_url,
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_DEFAULT_REGION": "us-east-1",
        }
        self.log = root / "api.log"
        self.process = subprocess.Popen(
            [*SPARKMARK, "api", "--port", "0", "--no-scheduler"],
            stdout=subprocess.PIPE,
            stderr=self.log.open("w"),
            text=True,
            env=self.env,
        )
        assert self.process.stdout is not None
        found = re.search(r"http://127\.0\.0\.1:\d+", self.process.stdout.readline())
        assert found, self.log.read_text()
        self.url = found.group(0)

    def client(self, service: str = "athena"):
        return boto3.client(
            service,
            endpoint_url=self.url,
            region_name="us-east-1",
            aws_access_key_id="analyst",
            aws_secret_access_key=TOKEN,
        )

    def client_env(self) -> dict[str, str]:
        """A client process's environment: Athena, Glue and STS at the endpoint, S3 at moto."""
        return {
            **{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SPARKMARK_"))},
            "AWS_ENDPOINT_URL_ATHENA": self.url,
            "AWS_ENDPOINT_URL_GLUE": self.url,
            "AWS_ENDPOINT_URL_STS": self.url,
            "AWS_ENDPOINT_URL_S3": self.s3_url,
            "AWS_ACCESS_KEY_ID": "analyst",
            "AWS_SECRET_ACCESS_KEY": TOKEN,
            "AWS_DEFAULT_REGION": "us-east-1",
        }

    def stop(self) -> str:
        self.process.terminate()
        self.process.communicate(timeout=60)
        return self.log.read_text()


@pytest.fixture(scope="module")
def api(tmp_path_factory, s3_server):
    s3 = moto_s3(s3_server.endpoint_url)
    s3.create_bucket(Bucket=BUCKET)
    s3.create_bucket(Bucket=RESULTS)
    root = tmp_path_factory.mktemp("athena")
    running = AthenaApi(root, s3_server.endpoint_url)
    write_crawled_lake(running)  # type: ignore[arg-type]
    crawler = root / "crawler.toml"
    crawler.write_text(
        '[crawler]\nName = "c_crawled"\nDatabaseName = "crawled"\n'
        "[crawler.Targets]\nS3Targets = ["
        + ", ".join(
            f'{{ Path = "s3://lake/crawled/{t}/" }}'
            for t in ("sales", "events", "stores", "visits", "prices")
        )
        + "]\n"
    )
    env = {**running.env, "SPARKMARK_SPARK_MASTER": "local[2]"}
    for argv in (["crawler", "create", "--file", str(crawler)], ["crawler", "run", "c_crawled"]):
        done = subprocess.run([*SPARKMARK, *argv], env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    yield running
    log = running.stop()
    assert "Traceback" not in log, log[-4000:]


def execute(api: AthenaApi, sql: str, database: str | None = "crawled", **extra) -> dict:
    """Start ``sql`` and wait for it to end; its QueryExecution."""
    athena = api.client()
    params: dict = {"QueryString": sql, "ResultConfiguration": {"OutputLocation": f"s3://{RESULTS}/q/"}}
    if database:
        params["QueryExecutionContext"] = {"Database": database}
    params.update(extra)
    query_id = athena.start_query_execution(**params)["QueryExecutionId"]
    return wait(athena, query_id)


def wait(athena, query_id: str, seconds: float = 300) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = athena.get_query_execution(QueryExecutionId=query_id)["QueryExecution"]
        if found["Status"]["State"] in ("SUCCEEDED", "FAILED", "CANCELLED"):
            return found
        time.sleep(0.05)
    raise AssertionError(f"query {query_id} did not end in {seconds} s")


def rows(api: AthenaApi, sql: str, database: str | None = "crawled") -> list[list[str | None]]:
    """The query's rows as GetQueryResults gives them (text, None for null), header left out."""
    found = execute(api, sql, database)
    assert found["Status"]["State"] == "SUCCEEDED", found["Status"].get("StateChangeReason")
    athena = api.client()
    out: list[list[str | None]] = []
    for page in athena.get_paginator("get_query_results").paginate(
        QueryExecutionId=found["QueryExecutionId"]
    ):
        out += [[d.get("VarCharValue") for d in r["Data"]] for r in page["ResultSet"]["Rows"]]
    return out[1:]


# Queries from AWS's Athena documentation and Trino's function reference, with the rows they
# show; over the crawled tables, with the rows worked out from the files the lake holds.
DOCUMENTED = [
    ("SELECT date_parse('2020-02-05 10:11:12', '%Y-%m-%d %H:%i:%s')", [["2020-02-05 10:11:12.000"]]),
    ("SELECT date_format(date_parse('2024-03-05', '%Y-%m-%d'), '%d/%m/%Y')", [["05/03/2024"]]),
    ("SELECT date_add('day', 30, DATE '2024-01-15')", [["2024-02-14"]]),
    ("SELECT date_diff('day', DATE '2024-01-01', DATE '2024-03-01')", [["60"]]),
    ("SELECT date_trunc('month', TIMESTAMP '2024-03-15 10:00:00')", [["2024-03-01 00:00:00.000"]]),
    (
        "WITH dataset AS (SELECT 'engineering' AS department, ARRAY['Sharon', 'John', 'Bob', 'Sally'] AS users) "
        "SELECT department, name FROM dataset CROSS JOIN UNNEST(users) AS t(name)",
        [["engineering", n] for n in ("Sharon", "John", "Bob", "Sally")],
    ),
    ("SELECT ARRAY[1, 2] || ARRAY[3, 4] AS items", [["[1, 2, 3, 4]"]]),
    (
        "WITH dataset AS (SELECT ARRAY['hello', 'amazon', 'athena'] AS words) "
        "SELECT array_join(words, ' ') AS welcome_msg FROM dataset",
        [["hello amazon athena"]],
    ),
    ("SELECT array_distinct(ARRAY[1, 2, 2, 3, 3, 4, 5])", [["[1, 2, 3, 4, 5]"]]),
    ("SELECT cardinality(ARRAY[1, 2, 3, 4])", [["4"]]),
    ("SELECT transform(ARRAY[1, 2, 3], x -> x * 2)", [["[2, 4, 6]"]]),
    ("SELECT filter(ARRAY[1, -2, 3], x -> x > 0)", [["[1, 3]"]]),
    ("SELECT element_at(MAP(ARRAY['a', 'b'], ARRAY[1, 2]), 'b')", [["2"]]),
    ("SELECT CAST(ROW(1, 'x') AS ROW(a integer, b varchar))", [["{a=1, b=x}"]]),
    ("SELECT regexp_extract('1a 2b 14m', '\\d+')", [["1"]]),
    ("SELECT regexp_extract('1a 2b 14m', '(\\d+)([a-z]+)', 2)", [["a"]]),
    ("SELECT split_part('a,b,c', ',', 2)", [["b"]]),
    ("SELECT json_extract_scalar('{\"a\": {\"b\": 3}}', '$.a.b')", [["3"]]),
    ("SELECT try_cast('x' AS integer)", [[None]]),
    ("SELECT approx_percentile(x, 0.5) FROM UNNEST(sequence(1, 9)) AS t(x)", [["5"]]),
    ("SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS t(id, name) ORDER BY id", [["1", "a"], ["2", "b"]]),
    # over the crawled tables
    ("SELECT count(*) FROM sales WHERE year = '2024'", [["8"]]),
    (
        "SELECT year, month, sum(amount) FROM sales WHERE year = '2024' AND month = '02' GROUP BY 1, 2",
        [["2024", "02", "95.0"]],
    ),
    ("SELECT approx_distinct(store_id) FROM visits", [["3"]]),
    (
        "SELECT s.city, sum(v.visits) FROM visits v JOIN stores s ON v.store_id = s.store_id "
        "GROUP BY s.city ORDER BY 1",
        [["Lyon", "17"], ["Porto", "5"], ["Turku", "4"]],
    ),
    (
        "SELECT store_id, visits, row_number() OVER (PARTITION BY store_id ORDER BY visits DESC) AS rn "
        "FROM visits ORDER BY store_id, rn",
        [["1", "10", "1"], ["1", "7", "2"], ["2", "5", "1"], ["3", "4", "1"]],
    ),
    (
        "SELECT day, count_if(kind = 'buy') AS buys, count(*) AS n FROM events GROUP BY day ORDER BY day",
        [["2024-01-01", "1", "2"], ["2024-01-02", "1", "3"]],
    ),
    (
        "SELECT id, lag(amount) OVER (ORDER BY id) FROM sales WHERE year = '2023' ORDER BY id",
        [["0", None], ["1", "0.0"], ["2", "2.5"], ["3", "5.0"]],
    ),
    ("SELECT sku FROM prices WHERE price > 10 ORDER BY sku", [["b2"]]),
]


def test_documented_queries_return_the_rows_athena_documents(api):
    """Each query's rows, as Athena's GetQueryResults gives them (all text, null as a
    missing value), against what the documentation shows or the files hold."""
    wrong = {}
    for sql, expected in DOCUMENTED:
        got = rows(api, sql)
        if got != expected:
            wrong[sql] = got
    assert not wrong, json.dumps(wrong, indent=1)
    assert len(DOCUMENTED) >= 20


def test_a_partition_filter_scans_less_than_the_whole_table(api):
    """DataScannedInBytes counts the files a query reads: a filter on a partition column
    reads only its partitions' files."""
    whole = execute(api, "SELECT count(*) FROM sales")["Statistics"]["DataScannedInBytes"]
    pruned = execute(api, "SELECT count(*) FROM sales WHERE year = '2023'")["Statistics"][
        "DataScannedInBytes"
    ]
    assert 0 < pruned < whole
    assert pruned * 3 == pytest.approx(whole, rel=0.2)  # one of three equal partitions


def test_the_aws_cli_starts_a_query_and_pages_its_results_written_as_athena_writes_them(api):
    env = api.client_env()

    def aws(*args: str) -> dict:
        done = subprocess.run(
            [str(AWS), "athena", *args], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout) if done.stdout.strip() else {}

    started = aws(
        "start-query-execution",
        "--query-string",
        "SELECT store_id, city FROM stores ORDER BY store_id",
        "--query-execution-context",
        "Database=crawled",
        "--result-configuration",
        f"OutputLocation=s3://{RESULTS}/cli/",
    )
    query_id = started["QueryExecutionId"]
    deadline = time.monotonic() + 300
    while (state := aws("get-query-execution", "--query-execution-id", query_id)["QueryExecution"])["Status"][
        "State"
    ] not in ("SUCCEEDED", "FAILED", "CANCELLED"):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert state["Status"]["State"] == "SUCCEEDED", state
    assert state["StatementType"] == "DML"
    assert state["ResultConfiguration"]["OutputLocation"] == f"s3://{RESULTS}/cli/{query_id}.csv"
    assert state["Statistics"]["DataScannedInBytes"] > 0

    first = aws("get-query-results", "--query-execution-id", query_id, "--max-items", "2")
    columns = first["ResultSet"]["ResultSetMetadata"]["ColumnInfo"]
    assert [(c["Name"], c["Type"]) for c in columns] == [("store_id", "bigint"), ("city", "varchar")]
    assert [[d["VarCharValue"] for d in r["Data"]] for r in first["ResultSet"]["Rows"]] == [
        ["store_id", "city"],
        ["1", "Lyon"],
    ]
    rest = aws("get-query-results", "--query-execution-id", query_id, "--starting-token", first["NextToken"])
    assert [[d["VarCharValue"] for d in r["Data"]] for r in rest["ResultSet"]["Rows"]] == [
        ["2", "Porto"],
        ["3", "Turku"],
    ]

    s3 = moto_s3(api.s3_url)
    body = s3.get_object(Bucket=RESULTS, Key=f"cli/{query_id}.csv")["Body"].read().decode()
    assert body == '"store_id","city"\n"1","Lyon"\n"2","Porto"\n"3","Turku"\n'
    assert s3.head_object(Bucket=RESULTS, Key=f"cli/{query_id}.csv.metadata")["ContentLength"] > 0


def test_a_null_and_an_empty_string_are_told_apart_in_the_csv_and_the_results(api):
    found = execute(api, "SELECT CAST(NULL AS varchar) AS a, '' AS b, 'say \"hi\"' AS c")
    s3 = moto_s3(api.s3_url)
    key = found["ResultConfiguration"]["OutputLocation"].removeprefix(f"s3://{RESULTS}/")
    assert s3.get_object(Bucket=RESULTS, Key=key)["Body"].read().decode() == '"a","b","c"\n,"","say ""hi"""\n'
    page = api.client().get_query_results(QueryExecutionId=found["QueryExecutionId"])
    assert page["ResultSet"]["Rows"][1]["Data"] == [{}, {"VarCharValue": ""}, {"VarCharValue": 'say "hi"'}]


def test_sql_that_cannot_run_fails_in_one_line_naming_the_construct(api):
    cases = {
        "SELECT to_iso8601(DATE '2024-01-01')": "FUNCTION_NOT_FOUND: function to_iso8601",
        "SELECT FROM WHERE": "SYNTAX_ERROR: line 1:",
        "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE": "NOT_SUPPORTED: MERGE",
        "SELECT array_agg(x ORDER BY x DESC) FROM UNNEST(ARRAY[1, 2]) AS t(x)": "NOT_SUPPORTED: array_agg",
        "SELECT * FROM no_such_table": "TABLE_NOT_FOUND: Table 'crawled.no_such_table' does not exist",
        "SELECT 1; SELECT 2": "NOT_SUPPORTED: a query holds one statement",
    }
    for sql, reason in cases.items():
        found = execute(api, sql)
        status = found["Status"]
        assert status["State"] == "FAILED", sql
        assert status["StateChangeReason"].startswith(reason), (sql, status["StateChangeReason"])
        assert "\n" not in status["StateChangeReason"]
        assert status["AthenaError"]["ErrorCategory"] == 2  # the user's
    missing = execute(api, "SELECT 1", database="no_such_db")
    assert missing["Status"]["StateChangeReason"] == "SCHEMA_NOT_FOUND: Schema 'no_such_db' does not exist"
    athena = api.client()
    with pytest.raises(athena.exceptions.InvalidRequestException, match="Query did not finish successfully"):
        athena.get_query_results(QueryExecutionId=missing["QueryExecutionId"])
    with pytest.raises(athena.exceptions.InvalidRequestException, match="was not found"):
        athena.get_query_execution(QueryExecutionId="00000000-0000-0000-0000-000000000000")


def test_stopping_a_running_query_cancels_its_spark_job_and_the_next_query_runs(api):
    athena = api.client()
    slow = (
        "SELECT count(*) FROM UNNEST(sequence(1, 30000)) AS a(x) CROSS JOIN UNNEST(sequence(1, 30000)) AS b(y) "
        "WHERE (a.x * 7 + b.y * 13) % 1000003 = 5"
    )
    query_id = athena.start_query_execution(
        QueryString=slow, ResultConfiguration={"OutputLocation": f"s3://{RESULTS}/slow/"}
    )["QueryExecutionId"]
    deadline = time.monotonic() + 300
    while (
        athena.get_query_execution(QueryExecutionId=query_id)["QueryExecution"]["Status"]["State"]
        != "RUNNING"
    ):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    athena.stop_query_execution(QueryExecutionId=query_id)
    assert wait(athena, query_id)["Status"]["State"] == "CANCELLED"
    # the session's statement that ran it ended cancelled: its Spark jobs were cancelled
    glue = api.client("glue")
    deadline = time.monotonic() + 120
    while (last := glue.list_statements(SessionId="sparkmark-athena")["Statements"][-1])[
        "State"
    ] != "CANCELLED":
        assert last["State"] in ("RUNNING", "WAITING", "CANCELLING"), last
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert rows(api, "SELECT 41 + 1") == [["42"]]


def test_ddl_makes_and_changes_glue_tables_as_athena_does(api):
    glue = api.client("glue")
    created = execute(
        api,
        "CREATE EXTERNAL TABLE stores_ddl (store_id bigint, city string) "
        "ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' "
        "LOCATION 's3://lake/crawled/stores/' TBLPROPERTIES ('skip.header.line.count'='1')",
    )
    assert created["Status"]["State"] == "SUCCEEDED", created["Status"]
    assert created["StatementType"] == "DDL"
    table = glue.get_table(DatabaseName="crawled", Name="stores_ddl")["Table"]
    assert table["StorageDescriptor"]["Location"].rstrip("/") == "s3://lake/crawled/stores"
    assert rows(api, "SELECT city FROM stores_ddl ORDER BY store_id") == [["Lyon"], ["Porto"], ["Turku"]]

    partitioned = execute(
        api,
        "CREATE EXTERNAL TABLE visits_ddl (store_id bigint, visits bigint) PARTITIONED BY (region string) "
        "ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' LOCATION 's3://lake/crawled/visits/' "
        "TBLPROPERTIES ('skip.header.line.count'='1')",
    )
    assert partitioned["Status"]["State"] == "SUCCEEDED", partitioned["Status"]
    assert rows(api, "SELECT count(*) FROM visits_ddl") == [["0"]]  # no partitions yet
    assert execute(api, "MSCK REPAIR TABLE visits_ddl")["Status"]["State"] == "SUCCEEDED"
    values = sorted(
        p["Values"] for p in glue.get_partitions(DatabaseName="crawled", TableName="visits_ddl")["Partitions"]
    )
    assert values == [["eu"], ["us"]]
    assert rows(api, "SELECT region, sum(visits) FROM visits_ddl GROUP BY region ORDER BY region") == [
        ["eu", "22"],
        ["us", "4"],
    ]
    assert (
        execute(api, "ALTER TABLE visits_ddl DROP PARTITION (region = 'us')")["Status"]["State"]
        == "SUCCEEDED"
    )
    added = execute(
        api,
        "ALTER TABLE visits_ddl ADD PARTITION (region = 'us') LOCATION 's3://lake/crawled/visits/region=us/'",
    )
    assert added["Status"]["State"] == "SUCCEEDED", added["Status"]
    assert rows(api, "SELECT count(*) FROM visits_ddl WHERE region = 'us'") == [["1"]]
    assert ["visits_ddl"] in rows(api, "SHOW TABLES")  # SHOW has no header row to leave out
    assert execute(api, "DROP TABLE stores_ddl")["Status"]["State"] == "SUCCEEDED"
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_table(DatabaseName="crawled", Name="stores_ddl")
    assert moto_s3(api.s3_url).get_object(Bucket=BUCKET, Key="crawled/stores/stores.csv")  # the data stays


def test_ctas_and_insert_into_write_parquet_tables_with_manifests(api):
    glue = api.client("glue")
    s3 = moto_s3(api.s3_url)
    ctas = execute(
        api,
        "CREATE TABLE city_visits WITH (format = 'PARQUET', external_location = 's3://lake/ctas/city_visits/', "
        "partitioned_by = ARRAY['region']) AS "
        "SELECT s.city, v.visits, v.region FROM visits v JOIN stores s ON v.store_id = s.store_id",
    )
    assert ctas["Status"]["State"] == "SUCCEEDED", ctas["Status"]
    manifest = ctas["Statistics"]["DataManifestLocation"]
    listed = (
        s3.get_object(Bucket=RESULTS, Key=manifest.removeprefix(f"s3://{RESULTS}/"))["Body"].read().decode()
    )
    files = listed.split()
    assert files and all(
        f.startswith("s3://lake/ctas/city_visits/region=") and f.endswith(".parquet") for f in files
    )
    assert api.client().get_query_results(QueryExecutionId=ctas["QueryExecutionId"])["UpdateCount"] == 4
    table = glue.get_table(DatabaseName="crawled", Name="city_visits")["Table"]
    assert [k["Name"] for k in table["PartitionKeys"]] == ["region"]
    assert (
        "parquet" in table["StorageDescriptor"]["InputFormat"].lower()
        or table["Parameters"].get("classification") == "parquet"
    )
    assert rows(api, "SELECT region, sum(visits) FROM city_visits GROUP BY region ORDER BY region") == [
        ["eu", "22"],
        ["us", "4"],
    ]
    again = execute(api, "CREATE TABLE city_visits AS SELECT 1 AS x")
    assert again["Status"]["StateChangeReason"].startswith("TABLE_ALREADY_EXISTS")

    inserted = execute(api, "INSERT INTO city_visits SELECT 'Oslo', 9, 'no'")
    assert inserted["Status"]["State"] == "SUCCEEDED", inserted["Status"]
    assert api.client().get_query_results(QueryExecutionId=inserted["QueryExecutionId"])["UpdateCount"] == 1
    new_files = (
        s3.get_object(
            Bucket=RESULTS,
            Key=inserted["Statistics"]["DataManifestLocation"].removeprefix(f"s3://{RESULTS}/"),
        )["Body"]
        .read()
        .decode()
        .split()
    )
    assert len(new_files) == 1 and "/region=no/" in new_files[0]
    assert rows(api, "SELECT city, visits FROM city_visits WHERE region = 'no'") == [["Oslo", "9"]]

    default = execute(api, "CREATE TABLE one_row AS SELECT 1 AS x")
    assert default["Status"]["State"] == "SUCCEEDED", default["Status"]
    location = glue.get_table(DatabaseName="crawled", Name="one_row")["Table"]["StorageDescriptor"][
        "Location"
    ]
    assert location.rstrip("/") == f"s3://{RESULTS}/q/tables/{default['QueryExecutionId']}"


def test_workgroups_named_queries_prepared_statements_and_parameters(api):
    athena = api.client()
    with pytest.raises(athena.exceptions.InvalidRequestException, match="No output location provided"):
        athena.start_query_execution(QueryString="SELECT 1")
    athena.create_work_group(
        Name="analysts",
        Configuration={"ResultConfiguration": {"OutputLocation": f"s3://{RESULTS}/analysts/"}},
        Description="the team's",
    )
    group = athena.get_work_group(WorkGroup="analysts")["WorkGroup"]
    assert group["Configuration"]["ResultConfiguration"]["OutputLocation"] == f"s3://{RESULTS}/analysts/"
    assert {g["Name"] for g in athena.list_work_groups()["WorkGroups"]} >= {"primary", "analysts"}

    query_id = athena.start_query_execution(
        QueryString="SELECT city FROM stores WHERE store_id = ?",
        QueryExecutionContext={"Database": "crawled"},
        WorkGroup="analysts",
        ExecutionParameters=["2"],
    )["QueryExecutionId"]
    done = wait(athena, query_id)
    assert done["ResultConfiguration"]["OutputLocation"].startswith(f"s3://{RESULTS}/analysts/")
    assert done["WorkGroup"] == "analysts"
    assert athena.get_query_results(QueryExecutionId=query_id)["ResultSet"]["Rows"][1]["Data"] == [
        {"VarCharValue": "Porto"}
    ]
    assert query_id in athena.list_query_executions(WorkGroup="analysts")["QueryExecutionIds"]
    batch = athena.batch_get_query_execution(
        QueryExecutionIds=[query_id, "00000000-0000-0000-0000-000000000000"]
    )
    assert [q["QueryExecutionId"] for q in batch["QueryExecutions"]] == [query_id]
    assert len(batch["UnprocessedQueryExecutionIds"]) == 1

    athena.create_prepared_statement(
        StatementName="city_of",
        WorkGroup="analysts",
        QueryStatement="SELECT city FROM stores WHERE store_id = ?",
    )
    executed = athena.start_query_execution(
        QueryString="EXECUTE city_of USING 3",
        QueryExecutionContext={"Database": "crawled"},
        WorkGroup="analysts",
    )["QueryExecutionId"]
    assert wait(athena, executed)["Status"]["State"] == "SUCCEEDED"
    assert athena.get_query_results(QueryExecutionId=executed)["ResultSet"]["Rows"][1]["Data"] == [
        {"VarCharValue": "Turku"}
    ]
    assert [
        s["StatementName"]
        for s in athena.list_prepared_statements(WorkGroup="analysts")["PreparedStatements"]
    ] == ["city_of"]

    named = athena.create_named_query(
        Name="cities", Database="crawled", QueryString="SELECT city FROM stores", WorkGroup="analysts"
    )["NamedQueryId"]
    got = athena.get_named_query(NamedQueryId=named)["NamedQuery"]
    assert (got["Name"], got["Database"], got["QueryString"]) == (
        "cities",
        "crawled",
        "SELECT city FROM stores",
    )
    assert athena.list_named_queries(WorkGroup="analysts")["NamedQueryIds"] == [named]
    athena.delete_named_query(NamedQueryId=named)
    with pytest.raises(athena.exceptions.InvalidRequestException):
        athena.get_named_query(NamedQueryId=named)
    with pytest.raises(athena.exceptions.InvalidRequestException, match="not empty"):
        athena.delete_work_group(WorkGroup="analysts")
    athena.delete_work_group(WorkGroup="analysts", RecursiveDeleteOption=True)
    with pytest.raises(athena.exceptions.InvalidRequestException):
        athena.get_work_group(WorkGroup="analysts")

    catalogs = athena.list_data_catalogs()["DataCatalogsSummary"]
    assert catalogs == [{"CatalogName": "AwsDataCatalog", "Type": "GLUE"}]
    tables = athena.list_table_metadata(CatalogName="AwsDataCatalog", DatabaseName="crawled")[
        "TableMetadataList"
    ]
    assert {"sales", "events", "stores", "visits", "prices"} <= {t["Name"] for t in tables}


def test_unsigned_and_wrongly_signed_athena_calls_are_refused(api):
    import requests

    body = json.dumps({"QueryString": "SELECT 1"})
    headers = {
        "X-Amz-Target": "AmazonAthena.StartQueryExecution",
        "Content-Type": "application/x-amz-json-1.1",
    }
    refused = requests.post(api.url + "/", data=body, headers=headers, timeout=30)
    assert refused.status_code in (401, 403)
    wrong = boto3.client(
        "athena",
        endpoint_url=api.url,
        region_name="us-east-1",
        aws_access_key_id="a",
        aws_secret_access_key="nope",
    )
    with pytest.raises(Exception, match="(?i)signature|denied|forbidden"):
        wrong.list_work_groups()


AWSWRANGLER = """
import awswrangler as wr, json
wr.config.athena_endpoint_url = __import__("os").environ["AWS_ENDPOINT_URL_ATHENA"]
out = "s3://athena-results/wrangler/"
ctas = wr.athena.read_sql_query("SELECT city, store_id FROM stores ORDER BY store_id", database="crawled",
                                s3_output=out)
plain = wr.athena.read_sql_query("SELECT year, count(*) AS n FROM sales GROUP BY year ORDER BY year",
                                 database="crawled", ctas_approach=False, s3_output=out)
started = wr.athena.start_query_execution("SELECT 1 AS one", database="crawled", s3_output=out, wait=True)
print("RESULT " + json.dumps({
    "ctas": ctas.to_dict("records"), "ctas_types": [str(t) for t in ctas.dtypes],
    "plain": plain.to_dict("records"), "state": started["Status"]["State"],
}))
"""


def test_awswrangler_reads_with_and_without_its_ctas_approach(api):
    done = subprocess.run(
        [sys.executable, "-c", AWSWRANGLER], env=api.client_env(), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-4000:]
    found = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))[7:])
    assert found["ctas"] == [
        {"city": "Lyon", "store_id": 1},
        {"city": "Porto", "store_id": 2},
        {"city": "Turku", "store_id": 3},
    ]
    assert found["ctas_types"] == ["string", "Int64"]
    assert found["plain"] == [{"year": "2023", "n": 4}, {"year": "2024", "n": 8}]
    assert found["state"] == "SUCCEEDED"
    # awswrangler drops its temporary CTAS table when it has read it
    names = [t["Name"] for t in api.client("glue").get_tables(DatabaseName="crawled")["TableList"]]
    assert not [n for n in names if n.startswith("temp_table_")]


PYATHENA_SCRIPT = """
import json, os
from pyathena import connect
from pyathena.pandas.cursor import PandasCursor
conn = connect(s3_staging_dir="s3://athena-results/pyathena/", region_name="us-east-1", schema_name="crawled")
cursor = conn.cursor()
cursor.execute("SELECT store_id, city FROM stores WHERE store_id >= %(low)s ORDER BY store_id", {"low": 2})
fetched = cursor.fetchall()
description = [(d[0], d[1]) for d in cursor.description]
frame = conn.cursor(PandasCursor).execute(
    "SELECT day, kind, n FROM events ORDER BY day, n").as_pandas()
print("RESULT " + json.dumps({
    "rows": [list(r) for r in fetched], "description": description,
    "frame": frame.astype(str).values.tolist(), "dtypes": [str(t) for t in frame.dtypes],
    "scanned": cursor.data_scanned_in_bytes,
}))
"""


def test_pyathena_cursor_and_pandas_cursor_read_the_catalog(api):
    if not PYATHENA_PYTHON.exists():
        pytest.fail(f"{PYATHENA_PYTHON} is missing: run `make clients`")
    done = subprocess.run(
        [str(PYATHENA_PYTHON), "-c", PYATHENA_SCRIPT],
        env=api.client_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    found = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))[7:])
    assert found["rows"] == [[2, "Porto"], [3, "Turku"]]  # typed by the column info
    assert found["description"] == [["store_id", "bigint"], ["city", "varchar"]]
    assert found["frame"] == [
        ["2024-01-01", "view", "0"],
        ["2024-01-01", "buy", "1"],
        ["2024-01-02", "view", "0"],
        ["2024-01-02", "view", "1"],
        ["2024-01-02", "buy", "2"],
    ]
    assert found["dtypes"][2] == "Int64"
    assert found["scanned"] > 0


DBT = REPO / ".venv-clients" / "dbt-athena" / "bin" / "dbt"
DBT_PROJECT = Path(__file__).parent / "fixtures" / "dbt_athena"


def test_dbt_athena_seeds_builds_a_table_a_view_and_an_increment_twice_and_tests_them(api, tmp_path):
    """A dbt-athena project (tests/fixtures/dbt_athena) as its users run it: `dbt seed`,
    `dbt run` twice, `dbt test`. dbt-athena makes the schema, loads the seed through S3 and
    CREATE EXTERNAL TABLE, builds the table with CTAS, swaps it through the Glue API on the
    second run, appends to the incremental model, and makes the view."""
    import shutil

    if not DBT.exists():
        pytest.fail(f"{DBT} is missing: run `make clients`")
    project = tmp_path / "shop"
    shutil.copytree(DBT_PROJECT, project)
    (tmp_path / "profiles.yml").write_text(
        "sparkmark:\n  target: dev\n  outputs:\n    dev:\n      type: athena\n"
        f"      s3_staging_dir: s3://{RESULTS}/dbt/\n      s3_data_dir: s3://{BUCKET}/dbt/\n"
        "      region_name: us-east-1\n      database: awsdatacatalog\n      schema: shop\n"
        "      threads: 1\n      num_retries: 0\n"
    )
    env = {**api.client_env(), "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}

    def dbt(*args: str) -> dict[str, str]:
        done = subprocess.run(
            [str(DBT), *args, "--profiles-dir", str(tmp_path), "--no-use-colors"],
            cwd=project,
            capture_output=True,
            text=True,
            env=env,
            timeout=900,
        )
        assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
        results = json.loads((project / "target" / "run_results.json").read_text())
        return {r["unique_id"].split(".")[-1]: r["status"] for r in results["results"]}

    assert dbt("seed") == {"raw_orders": "success"}
    models = {"orders": "success", "shipped_orders": "success", "customer_totals": "success"}
    assert dbt("run") == models
    assert dbt("run") == models
    tested = dbt("test")
    assert len(tested) == 8 and set(tested.values()) == {"pass"}

    glue = api.client("glue")
    tables = {t["Name"]: t for t in glue.get_tables(DatabaseName="shop")["TableList"]}
    assert set(tables) == {"raw_orders", "orders", "shipped_orders", "customer_totals"}
    assert tables["shipped_orders"]["TableType"] == "VIRTUAL_VIEW"
    assert rows(api, "SELECT customer, total FROM customer_totals ORDER BY customer", database="shop") == [
        ["ada", "15.5"],
        ["ben", "23.0"],
        ["cy", "20.0"],
    ]  # the second run appended none: every customer was there
    assert rows(api, "SELECT order_id FROM shipped_orders ORDER BY order_id", database="shop") == [
        ["1"],
        ["2"],
        ["5"],
    ]


REST_CLIENT = """
import json, time, boto3, botocore
athena = boto3.client("athena")
assert athena.meta.service_model.protocol == "rest-json", athena.meta.service_model.protocol
query_id = athena.start_query_execution(
    QueryString="SELECT city FROM stores WHERE store_id = 1",
    QueryExecutionContext={"Database": "crawled"},
    ResultConfiguration={"OutputLocation": "s3://athena-results/rest/"},
)["QueryExecutionId"]
while athena.get_query_execution(QueryExecutionId=query_id)["QueryExecution"]["Status"]["State"] in (
        "QUEUED", "RUNNING"):
    time.sleep(0.05)
page = athena.get_query_results(QueryExecutionId=query_id, MaxResults=1)
try:
    athena.get_query_execution(QueryExecutionId="00000000-0000-0000-0000-000000000000")
    missing = None
except athena.exceptions.InvalidRequestException as exc:
    missing = exc.response["Error"]["Code"]
groups = [g["Name"] for g in athena.list_work_groups(MaxResults=5)["WorkGroups"]]
print("RESULT " + json.dumps({"rows": [[d.get("VarCharValue") for d in r["Data"]] for r in page["ResultSet"]["Rows"]],
                              "next": "NextToken" in page, "missing": missing, "groups": groups}))
"""


def test_the_rest_protocol_of_newer_sdks_is_served_as_the_json_one(api):
    """botocore 1.44's model of Athena speaks REST-JSON (GET /query-executions/{id} …):
    dbt-athena's virtualenv has it, and its boto3 calls the same operations over it."""
    import requests

    python = DBT.parent / "python"
    done = subprocess.run(
        [str(python), "-c", REST_CLIENT], env=api.client_env(), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-4000:]
    found = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))[7:])
    assert found == {
        "rows": [["city"]],
        "next": True,
        "missing": "InvalidRequestException",
        "groups": ["primary"],
    }
    unsigned = requests.get(api.url + "/workgroups", timeout=30)
    assert unsigned.status_code in (401, 403)


def test_the_console_runs_a_query_beside_the_catalogs_tables_and_keeps_its_history(api, browser, monkeypatch):
    """The console's query page: the catalog's tables beside the editor, a query run from
    it and its rows, a refused one with its reason, and the history of every door's
    queries (the API's included)."""
    from sparkmark.console.server import start
    from sparkmark.settings import Settings

    from .conftest import goto, watched_tab

    for key in ("SPARKMARK_HOME", "SPARKMARK_CONFIG", "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID",
                "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION"):  # fmt: skip
        monkeypatch.setenv(key, api.env[key])
    console = start(Settings.from_env(), "127.0.0.1", 0, None, scheduler=False)
    try:
        with watched_tab(browser, 1400, 900) as page:
            goto(page, console, "/query")
            tables = page.locator("#catalog-tables").inner_text()
            assert "crawled" in tables and "stores" in tables and "visits" in tables
            assert page.locator("#history tr[data-query]").count() > 0  # the API's queries
            page.locator("select[name=database]").select_option("crawled")
            page.locator("textarea[name=sql]").fill("SELECT store_id, city FROM stores ORDER BY store_id")
            page.locator("#query-form button[type=submit]").click()
            page.wait_for_url(re.compile(r".*/query/[0-9a-f-]{36}$"))
            page.wait_for_selector("#results", timeout=300_000)
            cells = [r.split("\t") for r in page.locator("#results tbody").inner_text().strip().splitlines()]
            assert cells == [["1", "Lyon"], ["2", "Porto"], ["3", "Turku"]]
            assert [h.strip() for h in page.locator("#results thead").inner_text().split("\t")] == [
                "store_id",
                "city",
            ]

            goto(page, console, "/query")
            page.locator("select[name=database]").select_option("crawled")
            page.locator("textarea[name=sql]").fill("SELECT to_iso8601(DATE '2024-01-01')")
            page.locator("#query-form button[type=submit]").click()
            page.wait_for_selector("#reason", timeout=60_000)
            assert page.locator("#reason").inner_text().startswith("FUNCTION_NOT_FOUND: function to_iso8601")
            goto(page, console, "/query")
            assert "to_iso8601" in page.locator("#history").inner_text()
    finally:
        console.stop()


def test_an_iceberg_table_is_queried_joined_and_changed_as_athena_changes_it(api):
    """An Iceberg table PyIceberg writes over the Iceberg REST endpoint, read by Athena's
    SQL beside a crawled Hive table, then changed with UPDATE, DELETE and MERGE and
    compacted with OPTIMIZE, each a new snapshot PyIceberg reads back."""
    import pyarrow as pa
    from pyiceberg.catalog import load_catalog

    catalog = load_catalog(
        "rest",
        **{
            "type": "rest", "uri": f"{api.url}/iceberg", "warehouse": "000000000000",
            "rest.sigv4-enabled": "true", "rest.signing-name": "glue", "rest.signing-region": "us-east-1",
            "client.access-key-id": "analyst", "client.secret-access-key": TOKEN, "client.region": "us-east-1",
            "s3.endpoint": api.s3_url, "s3.path-style-access": "true",
        },
    )  # fmt: skip
    catalog.create_namespace("ice", {"location": f"s3://{BUCKET}/ice"})
    schema = pa.schema([("id", pa.int64()), ("status", pa.string()), ("amount", pa.float64())])
    table = catalog.create_table("ice.orders", schema=schema)
    table.append(
        pa.table(
            {"id": [1, 2, 3], "status": ["placed", "placed", "cancelled"], "amount": [10.0, 5.5, 3.0]}, schema
        )
    )
    assert rows(
        api, "SELECT status, sum(amount) FROM orders GROUP BY status ORDER BY status", database="ice"
    ) == [
        ["cancelled", "3.0"],
        ["placed", "15.5"],
    ]
    assert rows(
        api, "SELECT o.id, s.city FROM ice.orders o JOIN crawled.stores s ON o.id = s.store_id ORDER BY o.id"
    ) == [["1", "Lyon"], ["2", "Porto"], ["3", "Turku"]]

    for sql in (
        "UPDATE orders SET status = 'shipped' WHERE id = 2",
        "DELETE FROM orders WHERE status = 'cancelled'",
        "MERGE INTO orders t USING (VALUES (1, 'returned', 10.0), (4, 'placed', 4.0)) AS s(id, status, amount) "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET status = s.status "
        "WHEN NOT MATCHED THEN INSERT (id, status, amount) VALUES (s.id, s.status, s.amount)",
    ):
        done = execute(api, sql, database="ice")
        assert done["Status"]["State"] == "SUCCEEDED", (sql, done["Status"])
    expected = [["1", "returned", "10.0"], ["2", "shipped", "5.5"], ["4", "placed", "4.0"]]
    assert rows(api, "SELECT id, status, amount FROM orders ORDER BY id", database="ice") == expected
    read = catalog.load_table("ice.orders").scan().to_arrow().sort_by("id").to_pylist()
    assert [[str(r["id"]), r["status"], str(r["amount"])] for r in read] == expected
    assert len(catalog.load_table("ice.orders").history()) == 4  # the append and three changes

    for i in (5, 6):  # two more small files
        catalog.load_table("ice.orders").append(
            pa.table({"id": [i], "status": ["placed"], "amount": [1.0]}, schema)
        )
    before = len(list(catalog.load_table("ice.orders").scan().plan_files()))
    done = execute(api, "OPTIMIZE orders REWRITE DATA USING BIN_PACK", database="ice")
    assert done["Status"]["State"] == "SUCCEEDED", done["Status"]
    compacted = catalog.load_table("ice.orders")
    assert before > 1 and len(list(compacted.scan().plan_files())) == 1
    assert compacted.current_snapshot().summary.operation.value == "replace"
    assert len(rows(api, "SELECT id FROM orders", database="ice")) == 5

    refused = execute(api, "UPDATE stores SET city = 'Nice' WHERE store_id = 1")
    assert refused["Status"]["StateChangeReason"].startswith(
        "NOT_SUPPORTED: UPDATE on crawled.stores: Athena changes rows of Iceberg tables only"
    )


def test_a_table_of_a_hyphenated_database_stays_in_the_engines_metastore_from_query_to_query(api):
    """Glue allows ``shop-eu``; the session's metastore spells it ``shop_eu``. A table of
    such a database is kept there from one statement to the next, never taken for one the
    catalog dropped."""
    glue = api.client("glue")
    glue.create_database(DatabaseInput={"Name": "shop-eu"})
    glue.create_table(
        DatabaseName="shop-eu",
        TableInput={
            "Name": "prices",
            "TableType": "EXTERNAL_TABLE",
            "Parameters": {"classification": "parquet"},
            "StorageDescriptor": {
                "Location": f"s3://{BUCKET}/crawled/prices/",
                "Columns": [{"Name": "sku", "Type": "string"}, {"Name": "price", "Type": "double"}],
            },
        },
    )
    for _ in range(3):
        assert rows(api, "SELECT sku FROM shop_eu.prices ORDER BY sku") == [["a1"], ["b2"]]


def test_a_correctly_signed_call_from_a_foreign_origin_or_host_is_refused_before_any_query_starts(api):
    """The guard every route of the endpoint sits behind refuses a web page's request (its
    Origin) and a rebinding name (its Host) even when signed: no query is started."""
    import requests
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    def send(path: str, body: bytes = b"", **headers: str):
        method = "POST" if body else "GET"
        request = AWSRequest(method=method, url=api.url + path, data=body, headers=headers)
        SigV4Auth(Credentials("analyst", TOKEN), "athena", "us-east-1").add_auth(request)
        return requests.request(method, api.url + path, data=body, headers=dict(request.headers), timeout=30)

    assert send("/workgroups").status_code == 200  # the same call, signed, from nowhere foreign
    before = api.client().list_query_executions().get("QueryExecutionIds", [])
    start = json.dumps(
        {"QueryString": "SELECT 1", "ResultConfiguration": {"OutputLocation": f"s3://{RESULTS}/foreign/"}}
    ).encode()
    port = api.url.rsplit(":", 1)[1]
    for headers in ({"Origin": "http://evil.example"}, {"Host": f"evil.example:{port}"}):
        refused = send("/query-executions", start, **{"Content-Type": "application/json", **headers})
        assert refused.status_code in (400, 403), (headers, refused.status_code, refused.text)
    assert api.client().list_query_executions().get("QueryExecutionIds", []) == before
