"""Glue's Iceberg REST endpoint with clients nobody here wrote, each run as a process the
way its users run it, against `sparkmark api` (over TLS, which DuckDB's SigV4 needs) and
moto's S3 server: PyIceberg's REST catalog (SigV4, signing name ``glue``) and its Glue
catalog (``glue.endpoint``), DuckDB's Iceberg extension, Daft, and a Glue job whose
Spark uses Iceberg's REST catalog with AWS's documented settings. The table each writes
is one Glue table every other reads, and commits from two writers lose nothing."""

from __future__ import annotations

import json
import os
import re
import socket
import ssl
import subprocess
import sys
import textwrap
from pathlib import Path
from urllib.parse import urlsplit

import boto3
import pytest
import requests
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from sparkmark.access import local_token

from .test_server_safety import SPARKMARK, self_signed
from .test_table_formats import printed

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
DUCKDB = REPO / ".venv-clients" / "duckdb" / "bin" / "python"
DAFT = REPO / ".venv-clients" / "daft" / "bin" / "python"
BUCKET = "lake"


def moto_s3(url: str):
    """A boto3 S3 client of moto's server (which takes any key)."""
    return boto3.client(
        "s3",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )


class RestApi:
    """``sparkmark api`` over TLS in its own process, on one home."""

    def __init__(self, root: Path, s3_url: str, extra: dict[str, str] | None = None):
        root.mkdir(parents=True, exist_ok=True)
        self.cert, key = self_signed(root)
        self.home = root / "home"
        config = root / "sparkmark.toml"
        config.write_text("")
        self.s3_url = s3_url
        self.env = {
            **os.environ,
            "SPARKMARK_HOME": str(self.home),
            "SPARKMARK_CONFIG": str(config),
            "AWS_ENDPOINT_URL_S3": s3_url,
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_DEFAULT_REGION": "us-east-1",
            **(extra or {}),
        }
        self.log = root / "api.log"
        self.process = subprocess.Popen(
            [
                *SPARKMARK,
                "api",
                "--port",
                "0",
                "--no-scheduler",
                "--certfile",
                str(self.cert),
                "--keyfile",
                str(key),
            ],
            stdout=subprocess.PIPE,
            stderr=self.log.open("w"),  # a file: a pipe nobody reads would stop the server once full
            text=True,
            env=self.env,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        found = re.search(r"https://127\.0\.0\.1:(\d+)", line)
        assert found, line + self.log.read_text()
        self.url = f"https://localhost:{found.group(1)}"  # the name the certificate holds
        self.token = local_token(self.home)

    def glue(self):
        return boto3.client(
            "glue",
            endpoint_url=self.url,
            region_name="us-east-1",
            aws_access_key_id="test",
            aws_secret_access_key=self.token,
            verify=str(self.cert),
        )

    def client_env(self) -> dict[str, str]:
        """What a client process is given: where the catalog and S3 are, and how to sign."""
        return {
            **{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SPARKMARK_"))},
            "GLUE_URL": self.url,
            "GLUE_TOKEN": self.token,
            "GLUE_CERT": str(self.cert),
            "S3_URL": self.s3_url,
            # The test's certificate is self-signed: each client is told to trust it, as a
            # user of a TLS endpoint with a private CA does.
            "AWS_CA_BUNDLE": str(self.cert),
            "REQUESTS_CA_BUNDLE": str(self.cert),
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL_S3": self.s3_url,
        }

    def stop(self) -> str:
        self.process.terminate()
        self.process.communicate(timeout=60)
        return self.log.read_text()


@pytest.fixture(scope="module")
def api(tmp_path_factory, s3_server):
    moto_s3(s3_server.endpoint_url).create_bucket(Bucket=BUCKET)
    running = RestApi(tmp_path_factory.mktemp("iceberg-rest"), s3_server.endpoint_url)
    yield running
    err = running.stop()
    assert running.token not in err and "Traceback" not in err, err[-3000:]


@pytest.fixture(scope="module")
def trino(api, tmp_path_factory):
    """Trino with its Hive and Iceberg connectors on the endpoint's Glue API (Trino's Glue
    metastore), trusting the endpoint's certificate."""
    from .trino_server import Trino

    server = Trino(tmp_path_factory.mktemp("trino"), api.url, api.token, api.s3_url, cert=api.cert)
    yield server
    server.stop()
    log = server.log.read_text(errors="replace")
    assert api.token not in log


# The start of every PyIceberg client: its REST catalog on Glue's endpoint as AWS's
# pages configure it (warehouse = the account id, SigV4 with the signing name glue), and
# its Glue catalog on the Glue API, both reading and writing files on moto's S3.
PYICEBERG = """
import os, sys, json
import pyarrow as pa
from pyiceberg.catalog import load_catalog
from pyiceberg.exceptions import CommitFailedException

S3 = {"s3.endpoint": os.environ["S3_URL"], "s3.access-key-id": "test", "s3.secret-access-key": "test",
      "s3.region": "us-east-1"}

def rest():
    return load_catalog("glue_rest", **{
        "type": "rest", "uri": os.environ["GLUE_URL"] + "/iceberg", "warehouse": "000000000000",
        "rest.sigv4-enabled": "true", "rest.signing-name": "glue", "rest.signing-region": "us-east-1",
        "client.access-key-id": "analyst", "client.secret-access-key": os.environ["GLUE_TOKEN"],
        "client.region": "us-east-1", "ssl": {"cabundle": os.environ["GLUE_CERT"]}, **S3})

def glue():
    return load_catalog("glue", **{
        "type": "glue", "glue.endpoint": os.environ["GLUE_URL"], "glue.region": "us-east-1",
        "glue.access-key-id": "analyst", "glue.secret-access-key": os.environ["GLUE_TOKEN"], **S3})

def rows(table):
    found = [list(r.values()) for r in table.scan().to_arrow().to_pylist()]
    return sorted(found, key=lambda r: [(x is None, x) for x in r])
"""


def pyiceberg(api: RestApi, body: str, *args: str, wait: bool = True):
    script = PYICEBERG + textwrap.dedent(body)
    command = [sys.executable, "-c", script, *args]
    if not wait:
        return subprocess.Popen(
            command, env=api.client_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    done = subprocess.run(command, env=api.client_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-5000:]
    return done


def result(done, tag: str = "RESULT"):
    return json.loads(printed(done, tag).removeprefix(tag + " "))


def test_pyiceberg_over_rest_creates_appends_reads_evolves_renames_and_drops(api):
    done = pyiceberg(
        api,
        """
        from pyiceberg.types import StringType
        cat = rest()
        cat.create_namespace("shop", {"location": "s3://lake/shop"})
        t = cat.create_table("shop.orders", schema=pa.schema([("id", pa.int64()), ("amount", pa.float64())]))
        t.append(pa.table({"id": [1, 2], "amount": [1.5, 2.5]}))
        t.append(pa.table({"id": [3], "amount": [3.5]}))
        with t.update_schema() as update:
            update.add_column("note", StringType())
        t = cat.load_table("shop.orders")
        t.append(pa.table({"id": pa.array([4], pa.int64()), "amount": [4.5], "note": ["late"]}))
        t = cat.load_table("shop.orders")
        print("RESULT", json.dumps({
            "rows": rows(t), "snapshots": len(t.metadata.snapshots),
            "columns": [f.name for f in t.schema().fields],
            "namespaces": cat.list_namespaces(), "tables": cat.list_tables("shop"),
            "location": t.metadata.location,
        }))
        """,
    )
    got = result(done)
    assert got["rows"] == [[1, 1.5, None], [2, 2.5, None], [3, 3.5, None], [4, 4.5, "late"]]
    assert got["snapshots"] == 3 and got["columns"] == ["id", "amount", "note"]
    assert got["namespaces"] == [["shop"]] and got["tables"] == [["shop", "orders"]]
    assert got["location"] == "s3://lake/shop/orders"
    # It is a Glue table, as Iceberg's GlueCatalog would have written it.
    table = api.glue().get_table(DatabaseName="shop", Name="orders")["Table"]
    assert table["Parameters"]["table_type"] == "ICEBERG"
    assert table["Parameters"]["metadata_location"].startswith("s3://lake/shop/orders/metadata/00004-")
    assert [c["Name"] for c in table["StorageDescriptor"]["Columns"]] == ["id", "amount", "note"]
    s3 = moto_s3(api.s3_url)
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="shop/orders/")["Contents"]]
    assert sum(k.endswith(".parquet") for k in keys) == 3

    done = pyiceberg(
        api,
        """
        cat = rest()
        cat.rename_table("shop.orders", "shop.orders_2025")
        before = cat.list_tables("shop")
        cat.drop_table("shop.orders_2025")
        print("RESULT", json.dumps({"renamed": before, "after": cat.list_tables("shop"),
                                    "exists": cat.table_exists("shop.orders_2025")}))
        """,
    )
    assert result(done) == {"renamed": [["shop", "orders_2025"]], "after": [], "exists": False}
    with pytest.raises(api.glue().exceptions.EntityNotFoundException):
        api.glue().get_table(DatabaseName="shop", Name="orders_2025")


def test_a_table_of_pyicebergs_glue_catalog_is_the_rest_endpoints_and_back(api):
    """PyIceberg's GlueCatalog (the Glue API, its VersionId lock) and its REST catalog
    write one table in turn; each sees the other's snapshots."""
    done = pyiceberg(
        api,
        """
        g, r = glue(), rest()
        g.create_namespace("mixed", {"location": "s3://lake/mixed"})
        g.create_table("mixed.events", schema=pa.schema([("id", pa.int64())])).append(pa.table({"id": [1]}))
        r.load_table("mixed.events").append(pa.table({"id": [2]}))
        g.load_table("mixed.events").append(pa.table({"id": [3]}))
        got = {"rest": rows(r.load_table("mixed.events")), "glue": rows(g.load_table("mixed.events")),
               "rest_tables": r.list_tables("mixed"), "glue_tables": g.list_tables("mixed")}
        g.drop_table("mixed.events")
        got["after_drop"] = r.list_tables("mixed")
        print("RESULT", json.dumps(got))
        """,
    )
    got = result(done)
    assert got["rest"] == got["glue"] == [[1], [2], [3]]
    assert got["rest_tables"] == got["glue_tables"] == [["mixed", "events"]]
    assert got["after_drop"] == []


WRITER = """
name, count = sys.argv[1], int(sys.argv[2])
cat = rest()
conflicts = 0
for i in range(count):
    while True:
        t = cat.load_table("race.counter")
        try:
            t.append(pa.table({"writer": [name], "n": pa.array([i], pa.int64())}))
            break
        except CommitFailedException:
            conflicts += 1
print("RESULT", json.dumps({"conflicts": conflicts}))
"""


def race(api: RestApi, per_writer: int) -> dict:
    pyiceberg(
        api,
        """
        cat = rest()
        cat.create_namespace("race", {"location": "s3://lake/race"})
        cat.create_table("race.counter", schema=pa.schema([("writer", pa.string()), ("n", pa.int64())]))
        """,
    )
    writers = [pyiceberg(api, WRITER, name, str(per_writer), wait=False) for name in ("a", "b")]
    conflicts = 0
    for proc in writers:
        out, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, err[-4000:]
        conflicts += json.loads(out.strip().splitlines()[-1].removeprefix("RESULT "))["conflicts"]
    done = pyiceberg(
        api,
        """
        t = rest().load_table("race.counter")
        print("RESULT", json.dumps({"rows": rows(t), "snapshots": len(t.metadata.snapshots)}))
        """,
    )
    return {**result(done), "conflicts": conflicts}


def test_two_pyiceberg_writers_committing_fifty_times_each_lose_no_commit(api):
    got = race(api, 50)
    assert got["rows"] == sorted([w, i] for w in "ab" for i in range(50))
    assert got["snapshots"] == 100
    print("conflicts retried:", got["conflicts"])


@pytest.mark.postgres
def test_two_writers_on_a_postgresql_state_store_lose_no_commit(tmp_path, s3_server, pg_schemas):
    from .conftest import pg_url

    running = RestApi(tmp_path / "pg", s3_server.endpoint_url, {"SPARKMARK_STATE_URL": pg_url(pg_schemas())})
    try:
        moto_s3(s3_server.endpoint_url).create_bucket(Bucket=BUCKET)
    except Exception as exc:  # the module's bucket, made by another test
        assert "BucketAlreadyOwnedByYou" in str(exc)
    try:
        got = race(running, 25)
        assert got["rows"] == sorted([w, i] for w in "ab" for i in range(25))
        assert got["snapshots"] == 50
    finally:
        running.stop()


def signed(
    api: RestApi, method: str, path: str, body: bytes = b"", secret: str | None = None, **headers: str
):
    request = AWSRequest(method=method, url=api.url + path, data=body, headers=headers)
    SigV4Auth(Credentials("analyst", secret or api.token), "glue", "us-east-1").add_auth(request)
    return requests.request(
        method, api.url + path, data=body, headers=dict(request.headers), verify=str(api.cert), timeout=30
    )


def test_rest_calls_are_refused_as_the_glue_apis_are(api):
    """No signature, a wrong one, a foreign Host or Origin, a body past the limit: each
    refused before anything is read or done, in the REST catalog's error model where the
    request reached it."""
    config = "/iceberg/v1/config?warehouse=000000000000"
    assert signed(api, "GET", config).json()["overrides"] == {"prefix": "catalogs/000000000000"}
    bare = requests.get(api.url + config, verify=str(api.cert), timeout=30)
    assert bare.status_code == 403 and bare.json()["error"]["type"] == "NotAuthorizedException"
    wrong = signed(api, "GET", config, secret="not-the-token")
    assert wrong.status_code == 403 and "does not match" in wrong.json()["error"]["message"]
    # The REST catalog's own scheme: the token as a bearer token, and nothing else.
    bearer = requests.get(
        api.url + config, headers={"Authorization": f"Bearer {api.token}"}, verify=str(api.cert), timeout=30
    )
    assert bearer.status_code == 200
    guessed = requests.get(
        api.url + config, headers={"Authorization": "Bearer not-the-token"}, verify=str(api.cert), timeout=30
    )
    assert guessed.status_code == 403 and guessed.json()["error"]["type"] == "NotAuthorizedException"
    foreign = signed(api, "GET", config, Host="evil.example")
    assert foreign.status_code == 403
    page = signed(api, "GET", config, Origin="https://evil.example")
    assert page.status_code == 403
    # A body declared past the limit is answered 413 from its head, before any of it is read.
    context = ssl.create_default_context(cafile=str(api.cert))
    where = urlsplit(api.url)
    with (
        socket.create_connection((where.hostname, where.port), timeout=30) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as conn,
    ):
        conn.sendall(
            f"POST /iceberg/v1/catalogs/000000000000/namespaces HTTP/1.1\r\nHost: {where.netloc}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {64 * 1024 * 1024}\r\n\r\n".encode()
        )
        assert conn.recv(100).startswith(b"HTTP/1.1 413")
    missing = signed(api, "GET", "/iceberg/v1/catalogs/000000000000/namespaces/nothing/tables/t")
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "NoSuchTableException"
    listing = signed(api, "GET", "/iceberg/v1/catalogs/000000000000/namespaces/nothing/tables")
    assert listing.status_code == 404 and listing.json()["error"]["type"] == "NoSuchNamespaceException"


DUCKDB_SCRIPT = """
import json, os, pathlib, sys
import duckdb, duckdb_ext
ext = pathlib.Path(duckdb_ext.__path__[0]) / "extensions"
con = duckdb.connect(config={"extension_directory": str(ext), "autoinstall_known_extensions": False})
con.execute("LOAD httpfs; LOAD avro; LOAD iceberg")
s3 = os.environ["S3_URL"].split("//", 1)[1]
# One S3 secret: it signs the catalog's requests (the endpoint's token as its secret key)
# and reads the table's files on moto's S3, which takes any key.
con.execute(f"CREATE SECRET glue (TYPE s3, KEY_ID 'analyst', SECRET '{os.environ['GLUE_TOKEN']}', "
            f"REGION 'us-east-1', ENDPOINT '{s3}', URL_STYLE 'path', USE_SSL false)")
host = os.environ["GLUE_URL"].split("//", 1)[1]
con.execute(f"ATTACH '000000000000' AS glue_lake (TYPE iceberg, ENDPOINT '{host}/iceberg', "
            "AUTHORIZATION_TYPE 'sigv4', SECRET glue)")
"""


def duckdb(api: RestApi, body: str):
    if not DUCKDB.exists():
        pytest.fail("DuckDB's client is not installed: run `make clients`")
    done = subprocess.run(
        [str(DUCKDB), "-c", DUCKDB_SCRIPT + textwrap.dedent(body)],
        env=api.client_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    return done


def test_duckdb_attaches_the_warehouse_lists_reads_and_inserts(api):
    pyiceberg(
        api,
        """
        cat = rest()
        cat.create_namespace("duck", {"location": "s3://lake/duck"})
        t = cat.create_table("duck.cities", schema=pa.schema([("id", pa.int64()), ("city", pa.string())]))
        t.append(pa.table({"id": [1, 2], "city": ["Lyon", "Porto"]}))
        cat.create_table("duck.scratch", schema=pa.schema([("id", pa.int64())]))
        """,
    )
    done = duckdb(
        api,
        """
        listed = con.execute("SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = 'glue_lake' AND schema_name = 'duck' ORDER BY table_name").fetchall()
        before = con.execute("SELECT id, city FROM glue_lake.duck.cities ORDER BY id").fetchall()
        con.execute("INSERT INTO glue_lake.duck.cities VALUES (3, 'Turku')")
        try:  # DuckDB creates a table in a staged creation, which Glue's endpoint refuses
            con.execute("CREATE TABLE glue_lake.duck.made (id BIGINT, name VARCHAR)")
            made = "made"
        except duckdb.Error as exc:
            made = str(exc)
        con.execute("DROP TABLE glue_lake.duck.scratch")
        print("RESULT", json.dumps({"listed": listed, "before": before, "made": made}))
        """,
    )
    got = result(done)
    assert got["listed"] == [["duck", "cities"], ["duck", "scratch"]]
    assert got["before"] == [[1, "Lyon"], [2, "Porto"]]
    assert "stage-create" in got["made"]  # refused in one line, as Glue refuses it
    done = pyiceberg(
        api,
        'print("RESULT", json.dumps({"rows": rows(rest().load_table("duck.cities")), "tables": rest().list_tables("duck")}))',
    )
    assert result(done) == {"rows": [[1, "Lyon"], [2, "Porto"], [3, "Turku"]], "tables": [["duck", "cities"]]}


DAFT_SCRIPT = """
import json, os
import boto3, daft
from daft.catalog import Catalog
from pyiceberg.catalog import load_catalog

glue = boto3.client("glue", endpoint_url=os.environ["GLUE_URL"], region_name="us-east-1",
                    aws_access_key_id="analyst", aws_secret_access_key=os.environ["GLUE_TOKEN"])
by_glue = Catalog.from_glue("daft_glue", client=glue)
rest = load_catalog("glue_rest", **{
    "type": "rest", "uri": os.environ["GLUE_URL"] + "/iceberg", "warehouse": "000000000000",
    "rest.sigv4-enabled": "true", "rest.signing-name": "glue", "rest.signing-region": "us-east-1",
    "client.access-key-id": "analyst", "client.secret-access-key": os.environ["GLUE_TOKEN"],
    "client.region": "us-east-1", "ssl": {"cabundle": os.environ["GLUE_CERT"]},
    "s3.endpoint": os.environ["S3_URL"], "s3.access-key-id": "test", "s3.secret-access-key": "test",
    "s3.region": "us-east-1"})
by_rest = Catalog.from_iceberg(rest)
"""


def test_daft_reads_a_table_through_the_glue_api_and_the_rest_endpoint(api):
    """Daft over REST reads and appends to an Iceberg table; Daft's Glue catalog
    (``Catalog.from_glue`` with a boto3 client on the endpoint) lists the database and
    reads its Parquet table. Daft 0.7.26 builds the Iceberg tables of its Glue catalog
    with no S3 settings (``gc.properties = {}``), so on an S3 that is not AWS's their
    files are reached only through REST (docs/iceberg-rest.md)."""
    if not DAFT.exists():
        pytest.fail("Daft's client is not installed: run `make clients`")
    pyiceberg(
        api,
        """
        cat = rest()
        cat.create_namespace("daft", {"location": "s3://lake/daft"})
        t = cat.create_table("daft.sales", schema=pa.schema([("id", pa.int64()), ("qty", pa.int64())]))
        t.append(pa.table({"id": [1, 2, 3], "qty": [5, 7, 9]}))
        """,
    )
    body = """
    through_rest = by_rest.get_table("daft.sales").read().sort("id").to_pydict()
    by_rest.get_table("daft.sales").append(daft.from_pydict({"id": [4], "qty": [11]}))
    made = by_rest.create_table("daft.made", daft.from_pydict({"k": ["x", "y"]}).schema())
    made.append(daft.from_pydict({"k": ["x", "y"]}))
    made_rows = by_rest.get_table("daft.made").read().sort("k").to_pydict()
    by_rest.drop_table("daft.made")
    print("RESULT", json.dumps({"rest": through_rest,
                                "after": by_rest.get_table("daft.sales").read().sort("id").to_pydict(),
                                "made": made_rows,
                                "tables": [str(t) for t in by_rest.list_tables("daft")],
                                "glue_tables": [str(t) for t in by_glue.list_tables("daft")]}))
    print("GLUE", json.dumps(by_glue.get_table("daft.stores").read().sort("id").to_pydict()))
    """
    # A Glue table of Parquet files beside it (as a crawler makes them), for Daft's Glue catalog.
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyarrow import fs

    s3 = fs.S3FileSystem(
        endpoint_override=api.s3_url, access_key="test", secret_key="test", region="us-east-1", scheme="http"
    )
    pq.write_table(
        pa.table({"id": [1, 2], "store": ["north", "south"]}),
        "lake/daft/stores/part-0.parquet",
        filesystem=s3,
    )
    api.glue().create_table(
        DatabaseName="daft",
        TableInput={
            "Name": "stores",
            "Parameters": {"classification": "parquet"},
            "StorageDescriptor": {
                "Columns": [{"Name": "id", "Type": "bigint"}, {"Name": "store", "Type": "string"}],
                "Location": "s3://lake/daft/stores/",
            },
        },
    )
    done = subprocess.run(
        [str(DAFT), "-c", DAFT_SCRIPT + textwrap.dedent(body)],
        # Daft's Glue catalog reads with the default S3 settings: AWS's variable for where S3 is.
        env={**api.client_env(), "AWS_ENDPOINT_URL": api.s3_url},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    got = result(done)
    assert got["rest"] == {"id": [1, 2, 3], "qty": [5, 7, 9]}
    assert got["after"] == {"id": [1, 2, 3, 4], "qty": [5, 7, 9, 11]}  # Daft's append, a REST commit
    assert got["made"] == {"k": ["x", "y"]}  # a table Daft made, wrote, read and dropped
    assert got["tables"] == ["daft.sales"]  # the Iceberg tables only, as Glue's endpoint lists them
    assert sorted(got["glue_tables"]) == ["daft.sales", "daft.stores"]
    assert result(done, "GLUE") == {"id": [1, 2], "store": ["north", "south"]}


REST_JOB = """
import sys
from awsglue.context import GlueContext
from awsglue.job import Job
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext

args = getResolvedOptions(sys.argv, ["JOB_NAME"])
glueContext = GlueContext(SparkContext.getOrCreate())
spark = glueContext.spark_session
job = Job(glueContext)
job.init(args["JOB_NAME"], args)
new = glueContext.create_data_frame.from_catalog(database="every", table_name="orders", transformation_ctx="orders")
print("READ", sorted((r.id, r.amount) for r in new.collect()))
rows = spark.sql("SELECT id, amount FROM glue_rest.every.orders ORDER BY id").collect()
print("SQL", [[r.id, r.amount] for r in rows])
# A write through the REST catalog: a table made and appended to by Spark's signed commits.
spark.sql("CREATE TABLE IF NOT EXISTS glue_rest.every.audit (job string, seen bigint) USING iceberg")
spark.sql(f"INSERT INTO glue_rest.every.audit VALUES ('{args['JOB_NAME']}', {len(rows)})")
job.commit()
"""

# AWS's page "Connecting to the Data Catalog using AWS Glue Iceberg REST endpoint", as a
# Glue job's --conf: the REST catalog at Glue's own URL, signed for glue.
REST_CONF = (
    "spark.sql.extensions=org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
    " --conf spark.sql.catalog.glue_rest=org.apache.iceberg.spark.SparkCatalog"
    " --conf spark.sql.catalog.glue_rest.type=rest"
    " --conf spark.sql.catalog.glue_rest.uri=https://glue.us-east-1.amazonaws.com/iceberg"
    " --conf spark.sql.catalog.glue_rest.warehouse=000000000000"
    " --conf spark.sql.catalog.glue_rest.rest.sigv4-enabled=true"
    " --conf spark.sql.catalog.glue_rest.rest.signing-name=glue"
)


def test_one_table_written_by_pyiceberg_is_read_by_a_bookmarked_glue_job_duckdb_and_trino_alike(
    api, trino, tmp_path
):
    """PyIceberg writes over REST; a Glue job whose Spark reads through Iceberg's REST
    catalog (AWS's settings, pointed at sparkmark by `sparkmark run`) reads with a
    bookmark, so its second run sees only the snapshot added since; the same SQL in
    Spark, DuckDB and Trino (its Iceberg connector on the Glue API) gives the same rows."""
    from .test_table_formats import run

    pyiceberg(
        api,
        """
        cat = rest()
        cat.create_namespace("every", {"location": "s3://lake/every"})
        t = cat.create_table("every.orders", schema=pa.schema([("id", pa.int64()), ("amount", pa.float64())]))
        t.append(pa.table({"id": [1, 2], "amount": [10.0, 20.5]}))
        """,
    )
    script = tmp_path / "rest_job.py"
    script.write_text(REST_JOB)
    args = ["--JOB_NAME", "rest_orders", "--job-bookmark-option", "job-bookmark-enable",
            "--datalake-formats", "iceberg", "--conf", REST_CONF]  # fmt: skip
    aws = {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL_S3": api.s3_url,
    }
    first = run(script, args, api.home, **aws)
    assert first.returncode == 0, first.stderr[-6000:]
    assert printed(first, "READ") == "READ [(1, 10.0), (2, 20.5)]"
    pyiceberg(api, 'rest().load_table("every.orders").append(pa.table({"id": [3], "amount": [7.25]}))')
    second = run(script, args, api.home, **aws)
    assert second.returncode == 0, second.stderr[-6000:]
    assert printed(second, "READ") == "READ [(3, 7.25)]"  # only the new snapshot
    spark_rows = json.loads(printed(second, "SQL").removeprefix("SQL "))
    done = duckdb(
        api,
        """
        rows = con.execute("SELECT id, amount FROM glue_lake.every.orders ORDER BY id").fetchall()
        print("RESULT", json.dumps(rows))
        """,
    )
    audit = pyiceberg(api, 'print("RESULT", json.dumps(rows(rest().load_table("every.audit"))))')
    assert result(audit) == [["rest_orders", 2], ["rest_orders", 3]]  # Spark's two REST commits
    in_trino = trino.query("SELECT id, amount FROM iceberg.every.orders ORDER BY id")
    assert result(done) == spark_rows == in_trino == [[1, 10.0], [2, 20.5], [3, 7.25]]


def test_trino_writes_an_iceberg_table_of_the_glue_catalog_that_pyiceberg_reads(api, trino):
    trino.query("CREATE SCHEMA iceberg.tri WITH (location = 's3://lake/tri')")
    trino.query("CREATE TABLE iceberg.tri.parts (id bigint, name varchar)")
    trino.query("INSERT INTO iceberg.tri.parts VALUES (1, 'bolt'), (2, 'nut')")
    done = pyiceberg(api, 'print("RESULT", json.dumps(rows(rest().load_table("tri.parts"))))')
    assert result(done) == [[1, "bolt"], [2, "nut"]]
    pyiceberg(api, 'rest().load_table("tri.parts").append(pa.table({"id": [3], "name": ["gear"]}))')
    assert trino.query("SELECT id, name FROM iceberg.tri.parts ORDER BY id") == [
        [1, "bolt"],
        [2, "nut"],
        [3, "gear"],
    ]
    assert trino.query("SHOW TABLES FROM iceberg.tri") == [["parts"]]
    trino.query("DROP TABLE iceberg.tri.parts")
    done = pyiceberg(api, 'print("RESULT", json.dumps(rest().list_tables("tri")))')
    assert result(done) == []


CRAWLED_SQL = {
    "sales by month": "SELECT year, month, count(*), sum(amount) FROM {db}.sales GROUP BY year, month ORDER BY year, month",
    "one partition": "SELECT id, amount FROM {db}.sales WHERE year = '2024' AND month = '02' ORDER BY id",
    "events of a day": "SELECT kind, count(*) FROM {db}.events WHERE day = '2024-01-02' GROUP BY kind ORDER BY kind",
    "stores": "SELECT store_id, city FROM {db}.stores ORDER BY store_id",
    "visits per region": "SELECT region, sum(visits) FROM {db}.visits GROUP BY region ORDER BY region",
    "a join": (
        "SELECT s.city, sum(v.visits) FROM {db}.visits v JOIN {db}.stores s ON v.store_id = s.store_id "
        "WHERE v.region = 'eu' GROUP BY s.city ORDER BY s.city"
    ),
    "prices": "SELECT sku, price FROM {db}.prices ORDER BY sku",
}

CRAWLED_JOB = """
import json, sys
from awsglue.context import GlueContext
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext

args = getResolvedOptions(sys.argv, ["JOB_NAME", "queries"])
spark = GlueContext(SparkContext.getOrCreate()).spark_session
answers = {name: [list(r) for r in spark.sql(sql).collect()] for name, sql in json.loads(args["queries"]).items()}
print("ANSWERS", json.dumps(answers, default=float))
"""


def write_crawled_lake(api: RestApi) -> None:
    """Five folders of files as a team's lake holds them: Parquet partitioned by year and
    month, JSON by day, CSV by region, and an unpartitioned CSV and Parquet table."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    s3 = moto_s3(api.s3_url)

    def put(key: str, body: bytes) -> None:
        s3.put_object(Bucket=BUCKET, Key=f"crawled/{key}", Body=body)

    def parquet(table: pa.Table) -> bytes:
        out = io.BytesIO()
        pq.write_table(table, out)
        return out.getvalue()

    n = 0
    for year, month in (("2023", "12"), ("2024", "01"), ("2024", "02")):
        ids = list(range(n, n + 4))
        n += 4
        put(f"sales/year={year}/month={month}/part-0.parquet",
            parquet(pa.table({"id": pa.array(ids, pa.int64()), "amount": [i * 2.5 for i in ids]})))  # fmt: skip
    for day, kinds in (("2024-01-01", ["view", "buy"]), ("2024-01-02", ["view", "view", "buy"])):
        put(
            f"events/day={day}/events.json",
            "".join(json.dumps({"kind": k, "n": i}) + "\n" for i, k in enumerate(kinds)).encode(),
        )
    put("stores/stores.csv", b"store_id,city\n1,Lyon\n2,Porto\n3,Turku\n")
    for region, rows_ in (("eu", "1,10\n2,5\n1,7\n"), ("us", "3,4\n")):
        put(f"visits/region={region}/visits.csv", b"store_id,visits\n" + rows_.encode())
    put("prices/prices.parquet", parquet(pa.table({"sku": ["a1", "b2"], "price": [9.5, 12.0]})))


def test_trino_queries_five_crawled_tables_with_partition_pruning_as_spark_does(api, trino, tmp_path):
    """A crawler catalogs five folders on S3; Trino's Hive connector on the Glue API
    reads them as Spark SQL does, query for query. A partition filter prunes: with one
    partition's file made unreadable, a query of the others still answers, and one that
    needs it fails."""
    from .test_table_formats import run

    write_crawled_lake(api)
    crawler = tmp_path / "crawler.toml"
    crawler.write_text(
        '[crawler]\nName = "c_crawled"\nDatabaseName = "crawled"\n'
        "[crawler.Targets]\nS3Targets = ["
        + ", ".join(
            f'{{ Path = "s3://lake/crawled/{t}/" }}'
            for t in ("sales", "events", "stores", "visits", "prices")
        )
        + "]\n"
    )
    env = {**api.env, "SPARKMARK_SPARK_MASTER": "local[2]"}
    for argv in (["crawler", "create", "--file", str(crawler)], ["crawler", "run", "c_crawled"]):
        done = subprocess.run([*SPARKMARK, *argv], env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    tables = sorted(t["Name"] for t in api.glue().get_tables(DatabaseName="crawled")["TableList"])
    assert tables == ["events", "prices", "sales", "stores", "visits"]

    in_trino = {name: trino.query(sql.format(db="hive.crawled")) for name, sql in CRAWLED_SQL.items()}
    script = tmp_path / "crawled_job.py"
    script.write_text(CRAWLED_JOB)
    queries = json.dumps({name: sql.format(db="crawled") for name, sql in CRAWLED_SQL.items()})
    aws = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1",
           "AWS_ENDPOINT_URL_S3": api.s3_url}  # fmt: skip
    job = run(script, ["--JOB_NAME", "crawled_sql", "--queries", queries], api.home, **aws)
    assert job.returncode == 0, job.stderr[-6000:]
    in_spark = json.loads(printed(job, "ANSWERS").removeprefix("ANSWERS "))
    assert in_trino == in_spark
    assert in_trino["sales by month"] == [
        ["2023", "12", 4, 15.0],
        ["2024", "01", 4, 55.0],
        ["2024", "02", 4, 95.0],
    ]
    assert in_trino["a join"] == [["Lyon", 17], ["Porto", 5]]

    s3 = moto_s3(api.s3_url)
    s3.put_object(
        Bucket=BUCKET, Key="crawled/sales/year=2023/month=12/part-0.parquet", Body=b"not parquet at all"
    )
    assert trino.query("SELECT count(*) FROM hive.crawled.sales WHERE year = '2024'") == [[8]]
    with pytest.raises(Exception, match="(?i)parquet|corrupt|not a valid|magic"):
        trino.query("SELECT count(*) FROM hive.crawled.sales")
