"""Jobs on s3:// paths against a real S3 API server (moto's server mode on 127.0.0.1),
reached over HTTP through s3fs and Spark's S3A, as AWS would be."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import boto3
import pyarrow.parquet as pq
import pytest
import s3fs

from sparkmark.engine import storage
from sparkmark.engine.listing import FileLister
from sparkmark.engine.models import OutputState
from sparkmark.engine.publish import CONTROL, KEY_IN_NAME
from sparkmark.errors import ConfigError, SinkError, SourceError
from sparkmark.settings import Settings
from sparkmark.spark import submit_args

from .conftest import ids

SECRET = "sm-secret-" + uuid.uuid4().hex  # must never appear in anything sparkmark writes
KEY_ID = "AKIASPARKMARKTEST"
EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "glue"
SPARKMARK = Path(sys.executable).with_name("sparkmark")


@pytest.fixture
def s3env(s3_server, spark, monkeypatch):
    """AWS's standard variables pointing at the local server, a fresh bucket, and the
    test session given those settings as an entry point (the CLI, Job) gives them."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", s3_server.endpoint_url)
    monkeypatch.delenv("SPARKMARK_S3_LOCAL_ROOT", raising=False)
    bucket = f"b-{uuid.uuid4().hex[:12]}"
    client = boto3.client(
        "s3",
        endpoint_url=s3_server.endpoint_url,
        aws_access_key_id=KEY_ID,
        aws_secret_access_key=SECRET,
        region_name="us-east-1",
    )
    client.create_bucket(Bucket=bucket)
    storage.prepare_spark(spark, Settings.from_env())
    yield bucket, client
    storage.configure(Settings.from_env({}))


def put_json(client, bucket: str, key: str, ids_: list[int], **extra) -> dict:
    body = "".join(json.dumps({"id": i, **extra}) + "\n" for i in ids_).encode()
    return client.put_object(Bucket=bucket, Key=key, Body=body)


def keys(client, bucket: str, prefix: str) -> list[str]:
    found = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        found += [o["Key"] for o in page.get("Contents", [])]
    return sorted(found)


def visible(client, bucket: str, prefix: str) -> list[str]:
    """The data objects a plain reader of the prefix sees (hidden `_`/`.` names left out)."""
    return [
        k
        for k in keys(client, bucket, prefix)
        if not any(part.startswith(("_", ".")) for part in k[len(prefix) :].split("/"))
    ]


def parquet_ids(client, bucket: str, prefix: str) -> list[int]:
    fs = s3fs.S3FileSystem(
        key=KEY_ID, secret=SECRET, client_kwargs={"endpoint_url": client.meta.endpoint_url}
    )
    found = []
    for key in visible(client, bucket, prefix):
        if key.endswith(".parquet"):
            with fs.open(f"{bucket}/{key}", "rb") as fh:
                found += pq.read_table(fh).column("id").to_pylist()
    return sorted(found)


def test_file_bookmarks_on_s3(runner, s3env):
    bucket, client = s3env
    src = f"s3://{bucket}/events"
    put_json(client, bucket, "events/dt=2026-11-01/a.json", [1, 2])
    put_json(client, bucket, "events/dt=2026-11-02/b.json", [3])
    # A multipart upload begun before the first run and completed after it: on S3 its
    # LastModified is when it began, older than what the first run read.
    upload = client.create_multipart_upload(Bucket=bucket, Key="events/dt=2026-11-01/late.json")

    rows, first = runner.run(src)
    assert rows == [1, 2, 3]
    run = runner.store.get_run(first.run_id)
    assert run.metrics["sources"]["src"]["files_new"] == 2
    lineage = runner.store.latest_version(runner.name).lineage
    committed = runner.store.processed_files(runner.name, "src", lineage)
    head = client.head_object(Bucket=bucket, Key="events/dt=2026-11-01/a.json")
    entry = committed[f"s3://{bucket}/events/dt=2026-11-01/a.json"]
    assert entry.etag == head["ETag"].strip('"') and entry.size == head["ContentLength"]

    assert runner.run(src)[0] == []  # nothing new

    part = client.upload_part(
        Bucket=bucket,
        Key="events/dt=2026-11-01/late.json",
        UploadId=upload["UploadId"],
        PartNumber=1,
        Body=b'{"id": 10}\n',
    )
    client.complete_multipart_upload(
        Bucket=bucket,
        Key="events/dt=2026-11-01/late.json",
        UploadId=upload["UploadId"],
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]},
    )
    put_json(client, bucket, "events/dt=2026-11-02/b.json", [30, 31])  # modified: new content
    put_json(client, bucket, "events/dt=2026-11-03/c.json", [4])  # new partition
    assert runner.run(src, "job-bookmark-pause")[0] == [4, 10, 30, 31]  # pause reads, keeps
    rows, third = runner.run(src)
    assert rows == [4, 10, 30, 31]
    metrics = runner.store.get_run(third.run_id).metrics["sources"]["src"]
    assert (metrics["files_new"], metrics["files_modified"]) == (2, 1)
    assert runner.run(src)[0] == []

    runner.store.rewind(runner.name, first.run_id)  # back to just after the first run
    assert runner.run(src)[0] == [4, 10, 30, 31]


def test_an_object_rewritten_with_the_same_size_and_second_is_seen_by_its_etag(runner, s3env):
    """S3's LastModified has whole seconds: a rewrite within the same second with the same
    size differs only by its ETag."""
    bucket, client = s3env
    src = f"s3://{bucket}/same"
    put_json(client, bucket, "same/a.json", [1])
    assert runner.run(src)[0] == [1]
    for _ in range(20):  # until a rewrite lands in the same second as the one read
        before = client.head_object(Bucket=bucket, Key="same/a.json")["LastModified"]
        put_json(client, bucket, "same/a.json", [2])
        after = client.head_object(Bucket=bucket, Key="same/a.json")
        if after["LastModified"] == before:
            break
        assert runner.run(src)[0] == [2]  # a new second: seen by its LastModified alone
        put_json(client, bucket, "same/a.json", [1])
        assert runner.run(src)[0] == [1]
    else:
        pytest.fail("no rewrite landed within one second of the previous write")
    assert runner.run(src)[0] == [2]


def test_exactly_once_output_on_s3(runner, s3env, spark):
    bucket, client = s3env
    src, out = f"s3://{bucket}/in", f"s3://{bucket}/out"
    put_json(client, bucket, "in/a.json", [1, 2], day="d1")
    put_json(client, bucket, "in/b.json", [3], day="d2")
    job = runner.start()
    job.write_files(job.read_files(src, ctx="src"), out, partition_by=["day"], ctx="out")
    assert visible(client, bucket, "out/") == []  # nothing visible before the commit
    [record] = runner.store.outputs(runner.name)
    assert f"out/{CONTROL}/runs/{record.key}.pending" in keys(client, bucket, "out/")
    job.commit()
    names = visible(client, bucket, "out/")
    assert names and all(KEY_IN_NAME.search(n).group(0) == record.key for n in names)
    assert {n.split("/")[1] for n in names} == {"day=d1", "day=d2"}
    assert parquet_ids(client, bucket, "out/") == [1, 2, 3]
    assert runner.store.get_output(record.run_id, record.seq).state is OutputState.PUBLISHED
    assert not [k for k in keys(client, bucket, "out/") if "/staging/" in k or k.endswith(".pending")]
    assert "out/_SUCCESS" in keys(client, bucket, "out/")
    # Spark reads the published folder through S3A as any reader would.
    assert ids(spark.read.parquet(f"s3a://{bucket}/out")) == [1, 2, 3]

    # A failed run leaves nothing; the next one publishes the new rows once.
    put_json(client, bucket, "in/c.json", [4], day="d1")
    failed = runner.start()
    failed.write_files(failed.read_files(src, ctx="src"), out, partition_by=["day"], ctx="out")
    failed.fail(RuntimeError("the transform broke"))
    assert parquet_ids(client, bucket, "out/") == [1, 2, 3]
    assert not [k for k in keys(client, bucket, "out/") if "/staging/" in k]
    job = runner.start()
    job.write_files(job.read_files(src, ctx="src"), out, partition_by=["day"], ctx="out")
    job.commit()
    assert parquet_ids(client, bucket, "out/") == [1, 2, 3, 4]

    # overwrite replaces the folder's files at publish time only.
    job = runner.start("job-bookmark-disable")
    job.write_files(job.read_files(src, ctx="src2"), out, mode="overwrite", ctx="out")
    assert parquet_ids(client, bucket, "out/") == [1, 2, 3, 4]
    job.commit()
    assert parquet_ids(client, bucket, "out/") == [1, 2, 3, 4]
    assert {KEY_IN_NAME.search(n).group(0) for n in visible(client, bucket, "out/")} == {job.run_id + "-1"}


def test_listing_thousands_of_objects_flat_or_level_by_level(s3env):
    """2,402 keys: more than two pages of S3's 1,000, in 40 partitions (moto answers
    about 200 PUTs a second, so the pages, not the size, are what is tested)."""
    bucket, client = s3env

    def put(p: int) -> None:
        for n in range(60):
            client.put_object(Bucket=bucket, Key=f"big/dt={p:03d}/f{n:03d}.json", Body=b"{}\n")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put, range(40)))
    client.put_object(Bucket=bucket, Key="big/_SUCCESS", Body=b"")  # hidden: never listed as data
    client.put_object(Bucket=bucket, Key="big/notes/readme.json", Body=b"{}\n")  # not a partition
    # Past its flat limit, a prefix is walked: the root, then each partition with a delimiter.
    listing = FileLister(flat_limit=1_000).list([f"s3://{bucket}/big"])
    assert len(listing.files) == 2_400
    assert listing.dirs_listed == 41 and listing.flat_pages == 0
    assert len({f.dir for f in listing.files}) == 40
    assert all(f.etag and f.size == 3 and f.url.startswith(f"s3://{bucket}/big/dt=") for f in listing.files)
    one = FileLister().list([f"s3://{bucket}/big/dt=017"])  # a pruned partition alone
    assert len(one.files) == 60 and one.flat_pages == 1
    # Within it, one flat listing of 2,402 keys (3 pages of at most 1,000) finds the same
    # files with the same sizes, times and tags, and the same folders and hidden entries.
    flat = FileLister().list([f"s3://{bucket}/big"])
    assert flat.flat_pages == 3
    assert sorted(flat.files) == sorted(listing.files)
    assert (flat.hidden, flat.excluded, flat.leaf_dirs) == (
        listing.hidden,
        listing.excluded,
        listing.leaf_dirs,
    )
    assert flat.hidden == 1
    deep = FileLister(recurse=True).list([f"s3://{bucket}/big"])
    assert len(deep.files) == 2_401 and deep.flat_pages == 3
    assert sorted(deep.files) == sorted(
        FileLister(recurse=True, flat_limit=0).list([f"s3://{bucket}/big"]).files
    )


def test_exclusions_and_bounds_on_s3(runner, s3env):
    bucket, client = s3env
    src = f"s3://{bucket}/data"
    for n in range(5):
        put_json(client, bucket, f"data/f{n}.json", [n])
    put_json(client, bucket, "data/skip.tmp.json", [99])
    rows, _ = runner.run(src, exclusions='["**.tmp.json"]', boundedFiles="3")
    assert len(rows) == 3 and 99 not in rows
    rest, _ = runner.run(src, exclusions='["**.tmp.json"]', boundedFiles="3")
    assert sorted(rows + rest) == [0, 1, 2, 3, 4]


def test_credentials_reach_no_output(runner, s3env, sparkmark_home, capfd, caplog):
    bucket, client = s3env
    put_json(client, bucket, "in/a.json", [1, "x"][:1])
    temp = f"s3://{bucket}/temp"
    runner.temp_dir = temp
    job = runner.start()
    job.write_files(job.read_files(f"s3://{bucket}/in", ctx="src"), f"s3://{bucket}/out", ctx="out")
    job.commit()
    # The run's record, its outputs and every row of the state store.
    store_text = json.dumps(
        [runner.store.get_run(job.run_id).__dict__, [o.__dict__ for o in runner.store.outputs(runner.name)]],
        default=str,
    )
    import sqlite3

    db = sqlite3.connect(str(runner.store.url).removeprefix("sqlite:///"))
    for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'"):
        store_text += json.dumps(db.execute(f"SELECT * FROM {table}").fetchall(), default=str)
    db.close()
    # Everything written to the bucket (manifests in TempDir, publish records).
    objects = "".join(
        client.get_object(Bucket=bucket, Key=k)["Body"].read().decode("utf-8", "replace")
        for k in keys(client, bucket, "")
        if not k.endswith(".parquet")
    )
    # `sparkmark runs show`, and what spark-submit would be given on its command line.
    shown = subprocess.run(
        [str(SPARKMARK), "runs", "show", job.run_id],
        capture_output=True,
        text=True,
        env={
            "PATH": "/usr/bin:/bin",
            "SPARKMARK_HOME": str(sparkmark_home),
            "SPARKMARK_STATE_URL": str(runner.store.url),
            "AWS_SECRET_ACCESS_KEY": SECRET,
        },
    )
    assert shown.returncode == 0, shown.stderr
    assert job.run_id in shown.stdout
    command_line = submit_args(Settings.from_env())
    printed = capfd.readouterr()
    for text in (
        store_text,
        objects,
        shown.stdout,
        shown.stderr,
        command_line,
        caplog.text,
        printed.out,
        printed.err,
    ):
        assert SECRET not in text
    assert SECRET not in repr(Settings.from_env()) and KEY_ID not in repr(Settings.from_env())


def test_without_s3a_a_job_fails_with_one_line(s3env, tmp_path):
    """A session with no S3A filesystem on its classpath (SPARKMARK_CONNECTORS=none)."""
    bucket, client = s3env
    put_json(client, bucket, "in/a.json", [1])
    script = tmp_path / "job.py"
    script.write_text(
        "from sparkmark import Job\n"
        "job = Job.from_args()\n"
        f"job.read_files('s3://{bucket}/in', ctx='src').count()\n"
        "job.commit()\n"
    )
    done = subprocess.run(
        [str(SPARKMARK), "run", str(script), "--JOB_NAME", "no_s3a"],
        capture_output=True,
        text=True,
        env={
            **__import__("os").environ,
            "SPARKMARK_HOME": str(tmp_path / "home"),
            "SPARKMARK_CONNECTORS": "none",
            "SPARKMARK_CATALOG": "none",
            "SPARKMARK_SPARK_MASTER": "local[1]",
        },
        timeout=300,
    )
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, done.stderr[-2000:]
    assert "hadoop-aws" in lines[0] and "make jars" in lines[0]
    assert "Traceback" not in done.stderr


def run_script(script: str, args: list[str], home: Path, **env: str) -> subprocess.CompletedProcess:
    import os

    full = dict(os.environ, SPARKMARK_HOME=str(home), SPARKMARK_SPARK_MASTER="local[2]", **env)
    full.pop("PYSPARK_SUBMIT_ARGS", None)
    return subprocess.run(
        [str(SPARKMARK), "run", str(EXAMPLES / script), *args],
        capture_output=True,
        text=True,
        env=full,
        timeout=600,
    )


def seed_sales(client, bucket: str) -> None:
    """Orders as JSON, customers as CSV and products as Parquet, as a Glue job finds them."""
    import io

    import pyarrow as pa

    # Each order carries its day: Glue's from_options reads no column from dt= folders.
    put_json(
        client,
        bucket,
        "raw/orders/dt=2026-11-01/a.json",
        [1],
        customer="c1",
        product="p1",
        qty=2,
        dt="2026-11-01",
    )
    client.put_object(Bucket=bucket, Key="raw/customers/c.csv", Body=b"customer,name\nc1,Ann\nc2,Bob\n")
    sink = io.BytesIO()
    pq.write_table(pa.table({"product": ["p1", "p2"], "price": [2.5, 4.0]}), sink)
    client.put_object(Bucket=bucket, Key="raw/products/p.parquet", Body=sink.getvalue())


def sales_args(prefix: str) -> list[str]:
    return [
        "--JOB_NAME",
        "s3_sales",
        "--job-bookmark-option",
        "job-bookmark-enable",
        "--orders_path",
        f"{prefix}/raw/orders/",
        "--customers_path",
        f"{prefix}/raw/customers/",
        "--products_path",
        f"{prefix}/raw/products/",
        "--output_path",
        f"{prefix}/curated/sales/",
    ]


def test_glue_script_on_s3_twice(s3env, tmp_path):
    bucket, client = s3env
    seed_sales(client, bucket)
    first = run_script("s3_sales.py", sales_args(f"s3://{bucket}"), tmp_path / "home")
    assert first.returncode == 0, first.stderr[-3000:]
    assert parquet_ids(client, bucket, "curated/sales/") == [1]
    put_json(
        client,
        bucket,
        "raw/orders/dt=2026-11-02/b.json",
        [2, 3],
        customer="c2",
        product="p2",
        qty=1,
        dt="2026-11-02",
    )
    second = run_script("s3_sales.py", sales_args(f"s3://{bucket}"), tmp_path / "home")
    assert second.returncode == 0, second.stderr[-3000:]
    assert parquet_ids(client, bucket, "curated/sales/") == [1, 2, 3]  # nothing twice
    assert SECRET not in first.stderr + first.stdout + second.stderr + second.stdout


@pytest.mark.slow
def test_glue_script_with_s3_paths_on_a_local_folder(tmp_path, monkeypatch):
    """SPARKMARK_S3_LOCAL_ROOT: the same script and s3:// arguments, no S3 at all."""
    import pyarrow as pa

    root = tmp_path / "buckets"
    raw = root / "my-bucket" / "raw"
    (raw / "orders" / "dt=2026-11-01").mkdir(parents=True)
    (raw / "orders" / "dt=2026-11-01" / "a.json").write_text(
        '{"id": 1, "customer": "c1", "product": "p1", "qty": 2, "dt": "2026-11-01"}\n'
    )
    (raw / "customers").mkdir()
    (raw / "customers" / "c.csv").write_text("customer,name\nc1,Ann\n")
    (raw / "products").mkdir()
    pq.write_table(pa.table({"product": ["p1"], "price": [2.5]}), raw / "products" / "p.parquet")
    env = {"SPARKMARK_S3_LOCAL_ROOT": str(root), "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9"}
    done = run_script("s3_sales.py", sales_args("s3://my-bucket"), tmp_path / "home", **env)
    assert done.returncode == 0, done.stderr[-3000:]
    written = list((root / "my-bucket" / "curated" / "sales").rglob("*.parquet"))
    assert written and sorted(pq.read_table(written[0]).column("id").to_pylist()) == [1]
    (raw / "orders" / "dt=2026-11-02").mkdir()
    (raw / "orders" / "dt=2026-11-02" / "b.json").write_text(
        '{"id": 2, "customer": "c1", "product": "p1", "qty": 1, "dt": "2026-11-02"}\n'
    )
    again = run_script("s3_sales.py", sales_args("s3://my-bucket"), tmp_path / "home", **env)
    assert again.returncode == 0, again.stderr[-3000:]
    found = []
    for path in (root / "my-bucket" / "curated" / "sales").rglob("*.parquet"):
        found += pq.read_table(path).column("id").to_pylist()
    assert sorted(found) == [1, 2]  # the second run read only the new object
    shown = subprocess.run(
        [str(SPARKMARK), "bookmark", "files", "s3_sales", "Orders_node1"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "SPARKMARK_HOME": str(tmp_path / "home"), **env},
    )
    assert "s3://my-bucket/raw/orders/dt=2026-11-01/a.json" in shown.stdout, shown.stdout + shown.stderr


def test_crawler_and_catalog_on_s3(spark, s3env):
    from .test_catalog import crawl

    bucket, client = s3env
    db = f"db_{uuid.uuid4().hex[:8]}"
    client.put_object(Bucket=bucket, Key="sales/dt=2026-01-01/a.csv", Body=b"id,amount\n1,10.5\n2,3.0\n")
    client.put_object(Bucket=bucket, Key="sales/dt=2026-01-02/b.csv", Body=b"id,amount\n3,1.5\n")
    target = {"Path": f"s3://{bucket}/sales/", "Exclusions": []}
    record, store = crawl(spark, {"Name": f"c_{db}", "DatabaseName": db, "Targets": {"S3Targets": [target]}})
    assert record.state == "SUCCEEDED", record.summary
    assert record.summary["tables_created"] == [f"{db}.sales"], str(record.errors)
    table = store.table(db, "sales")
    assert table.location == f"s3://{bucket}/sales"
    assert [c.name for c in table.partition_keys] == ["dt"]
    assert sorted(p.location for p in store.partitions(db, "sales")) == [
        f"s3://{bucket}/sales/dt=2026-01-01",
        f"s3://{bucket}/sales/dt=2026-01-02",
    ]
    assert spark.sql(f"SELECT sum(id) FROM {db}.sales").first()[0] == 6  # Spark reads s3:// via S3A

    from sparkmark.engine.store import StateStore
    from sparkmark.glue.context import GlueContext
    from sparkmark.glue.job import Job as GlueJob

    ctx = GlueContext(spark)
    job = GlueJob(ctx)
    job.init(f"cat_{db}", {"JOB_NAME": f"cat_{db}", "job_bookmark_option": "job-bookmark-enable"})
    frame = ctx.create_dynamic_frame.from_catalog(
        database=db, table_name="sales", push_down_predicate="dt = '2026-01-02'", transformation_ctx="src"
    )
    assert sorted(r["id"] for r in frame.toDF().collect()) == [3]
    job.commit()
    metrics = StateStore.from_settings().get_run(job.run_id).metrics["sources"]["src"]
    assert metrics["partitions_listed"] == 1 and metrics["files_listed"] == 1  # one prefix listed

    client.put_object(Bucket=bucket, Key="sales/dt=2026-01-03/c.csv", Body=b"id,amount\n4,2.0\n")
    again, store = crawl(spark, {"Name": f"c_{db}", "DatabaseName": db, "Targets": {"S3Targets": [target]}})
    assert again.summary["partitions_added"] == 1


def test_purge_s3_path_and_temp_dir_on_s3(spark, s3env, runner):
    from sparkmark.glue.context import GlueContext

    bucket, client = s3env
    put_json(client, bucket, "old/a.json", [1])
    put_json(client, bucket, "old/sub/b.json", [2])
    ctx = GlueContext(spark)
    ctx.purge_s3_path(f"s3://{bucket}/old/", {"retentionPeriod": 1})
    assert keys(client, bucket, "old/") == ["old/a.json", "old/sub/b.json"]  # younger than an hour
    ctx.purge_s3_path(f"s3://{bucket}/old/", {"retentionPeriod": 0})
    assert keys(client, bucket, "old/") == []

    # TempDir on S3: the run's manifest and its quarantined records are written there.
    client.put_object(Bucket=bucket, Key="in/a.json", Body=b'{"id": 1}\n{"id": oops\n{"id": 2}\n')
    runner.temp_dir = f"s3://{bucket}/tmp"
    job = runner.start()
    assert ids(job.read_files(f"s3://{bucket}/in", ctx="src")) == [1, 2]
    job.commit()
    written = keys(client, bucket, "tmp/")
    manifest = f"tmp/partitionlisting/{runner.name}/{job.run_id}/src.input-files.json"
    assert manifest in written
    listed = json.loads(client.get_object(Bucket=bucket, Key=manifest)["Body"].read())
    assert listed == [{"path": f"s3://{bucket}/in", "files": [f"s3://{bucket}/in/a.json"]}]
    quarantined = [
        k for k in written if k.startswith(f"tmp/quarantine/{runner.name}/") and k.endswith(".json")
    ]
    records = [
        json.loads(line)
        for k in quarantined
        for line in client.get_object(Bucket=bucket, Key=k)["Body"].read().decode().splitlines()
    ]
    assert [r["record"] for r in records] == ['{"id": oops']


S3_SCRIPT = """
import sys
import boto3
from awsglue.utils import getResolvedOptions

args = getResolvedOptions(sys.argv, ["JOB_NAME", "bucket"])
s3 = boto3.client("s3")
keys = [o["Key"] for o in s3.list_objects_v2(Bucket=args["bucket"], Prefix="in/")["Contents"]]
s3.put_object(Bucket=args["bucket"], Key="out/seen.txt", Body=",".join(keys).encode())
s3.delete_object(Bucket=args["bucket"], Key="in/old.json")
boto3.client("glue").create_database(DatabaseInput={"Name": "from_script"})
"""


def test_a_script_on_s3_runs_and_its_boto3_calls_reach_the_configured_endpoints(s3env, tmp_path):
    """Glue's ScriptLocation is an s3:// URL: `sparkmark run` reads the script from there.
    The script's own boto3 calls go where AWS's variables point S3 (the S3 API server
    here) and Glue (sparkmark's endpoint, started for the run)."""
    bucket, client = s3env
    client.put_object(Bucket=bucket, Key="scripts/job.py", Body=S3_SCRIPT.encode())
    put_json(client, bucket, "in/old.json", [1])
    put_json(client, bucket, "in/new.json", [2])
    home = tmp_path / "home"
    done = subprocess.run(
        [
            str(SPARKMARK),
            "run",
            f"s3://{bucket}/scripts/job.py",
            "--JOB_NAME",
            "s3_script",
            "--bucket",
            bucket,
        ],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "SPARKMARK_HOME": str(home)},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = client.get_object(Bucket=bucket, Key="out/seen.txt")["Body"].read().decode()
    assert seen == "in/new.json,in/old.json"
    assert [o["Key"] for o in client.list_objects_v2(Bucket=bucket, Prefix="in/")["Contents"]] == [
        "in/new.json"
    ]
    from sparkmark.catalog.store import CatalogStore
    from sparkmark.engine.store import StateStore

    store = StateStore(f"sqlite:///{home / 'state.db'}")
    assert CatalogStore(store).database("from_script").name == "from_script"


def test_an_output_bucket_deleted_after_staging_commits_nothing(runner, s3env, spark):
    """The probe's case on S3: the output bucket was deleted after the run staged its
    write. The run now commits nothing and says so; the next run writes the rows once."""
    bucket, client = s3env
    out_bucket = f"o-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=out_bucket)
    src, out = f"s3://{bucket}/in", f"s3://{out_bucket}/out"
    put_json(client, bucket, "in/a.json", [1, 2])
    job = runner.start()
    job.write_files(job.read_files(src, ctx="src"), out, ctx="out")
    before = runner.store.latest_version(runner.name)
    for key in keys(client, out_bucket, ""):
        client.delete_object(Bucket=out_bucket, Key=key)
    client.delete_bucket(Bucket=out_bucket)
    with pytest.raises(SinkError, match="gone before its commit.*Nothing was committed"):
        job.commit()
    assert runner.store.latest_version(runner.name) == before
    client.create_bucket(Bucket=out_bucket)
    job = runner.start()
    job.write_files(job.read_files(src, ctx="src"), out, ctx="out")
    job.commit()
    assert parquet_ids(client, out_bucket, "out/") == [1, 2]


def test_an_object_replaced_between_listing_and_reading_is_never_recorded_as_read(runner, s3env):
    """The probe on S3: an object replaced by one of the same size within the same second
    was read as its new version and recorded as the old one (its ETag), so the next run
    read the new version again: rows twice, and the old version's never. Now the run
    commits nothing and the next run reads the new version once."""
    bucket, client = s3env
    src = f"s3://{bucket}/replaced"
    put_json(client, bucket, "replaced/a.json", [1, 2])
    job = runner.start()
    df = job.read_files(src, ctx="src")
    put_json(client, bucket, "replaced/a.json", [3, 4])  # same size, another ETag
    assert ids(df) == [3, 4]
    with pytest.raises(SourceError, match="replaced or rewritten after they were listed"):
        job.commit()
    assert runner.store.latest_version(runner.name) is None
    assert runner.run(src)[0] == [3, 4]
    assert runner.run(src)[0] == []


def test_a_dotted_bucket_name_s3a_cannot_take_is_one_line():
    """java.net.URI reads no host from ``logs.2024`` (its last label begins with a digit)
    and S3A takes the bucket from the host: refused before Spark is asked, naming it."""
    with pytest.raises(ConfigError, match="S3 bucket 'logs.2024' .*begins with a digit"):
        storage.require_s3a(None, "s3://logs.2024/in/a.json")  # type: ignore[arg-type]
    storage.require_s3a(None, "/local/logs.2024/a.json")  # type: ignore[arg-type]  # not S3: nothing to say


def test_a_bucket_with_dots_is_read_and_written_as_glue_does(s3env, spark, runner, s3_server):
    """Glue reads and writes buckets whose names have dots (a public script reads
    s3://glue.staging.aws/...). Addressed as a host name, as S3A addresses buckets on
    AWS, such a bucket breaks the AWS SDK's request (a NullPointerException inside a
    task); sparkmark addresses that bucket by path. The test's S3A addresses buckets
    as host names, as it does on AWS (moto answers both ways), and a bookmarked read,
    an exactly-once write and a Glue from_options read of the dotted bucket work;
    a second run reads nothing again."""
    from sparkmark.glue.context import GlueContext

    _bucket, client = s3env
    dotted = f"glue.{uuid.uuid4().hex[:8]}.staging"
    client.create_bucket(Bucket=dotted)
    put_json(client, dotted, "in/a.json", [1, 2])
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    hadoop.set("fs.s3a.path.style.access", "false")
    try:
        job = runner.start()
        df = job.read_files(f"s3://{dotted}/in", ctx="src")
        assert ids(df) == [1, 2]
        job.write_files(df, f"s3://{dotted}/out", format="json", ctx="out")
        job.commit()
        written = [k for k in keys(client, dotted, "out/") if k.endswith(".json")]
        assert written, keys(client, dotted, "")
        assert runner.run(f"s3://{dotted}/in")[0] == []
        frame = GlueContext(spark).create_dynamic_frame.from_options(
            "s3", {"paths": [f"s3://{dotted}/out/"]}, format="json"
        )
        assert sorted(r["id"] for r in frame.toDF().collect()) == [1, 2]
    finally:
        hadoop.set("fs.s3a.path.style.access", "true")
