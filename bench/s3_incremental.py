"""The object-storage scenario of the benchmark plan.

P8: an incremental run that finds 100 new objects among 10,000 in 100 Hive partitions
    on the local S3 API server (read JSON from S3, write Parquet to S3): sparkmark ÷ the
    floor (plain Spark reading exactly the 100 new keys, handed over as explicit s3a://
    paths, and writing the same Parquet). Goal ≤ 1.3. Also recorded: the LIST requests
    one run's listing makes, counted in the server's own request log, against the fewest
    the layout allows (one flat listing, 1,000 keys a page); the listing's share
    of sparkmark's run, and the same run writing through the exactly-once sink (staged,
    then published by server-side copy) with the publish step's share.

Both sides run alternately, several times; medians compared. The bookmark is seeded by
committing the listed objects directly (what a first run would record). Runs use
job-bookmark-pause, so every repetition finds the same 100 new objects.

    python bench/s3_incremental.py             # 10,000 objects
    python bench/s3_incremental.py --quick     # 1,000 objects
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import boto3

from harness import arguments, record, timed
from sparkmark import Job
from sparkmark.devservices.s3 import start_s3
from sparkmark.engine.increment import FileSourceOptions, plan_increment
from sparkmark.engine.listing import FileLister
from sparkmark.engine.models import BookmarkOption, CtxCommit, FileEntry
from sparkmark.engine.store import StateStore
from sparkmark.runtime.run import settle_metrics
from sparkmark.settings import Settings
from sparkmark.spark import create_session

BUCKET = "bench"
PARTITIONS = 100
PAGE = 1000  # keys in one ListObjectsV2 answer at most


def list_requests(log: Path) -> int:
    """The bucket-listing GETs the S3 server has logged so far (ListObjects and
    ListObjectsV2 are GETs of the bucket with a query; an object GET has a key)."""
    count = 0
    for line in log.read_text(errors="replace").splitlines():
        if f'"GET /{BUCKET}?' in line or f'"GET /{BUCKET}/?' in line:
            count += 1
    return count


def populate(client, per_partition: int) -> None:
    def put(p: int) -> None:
        for n in range(per_partition):
            body = f'{{"id": {p * per_partition + n}, "v": "x"}}\n'.encode()
            client.put_object(Bucket=BUCKET, Key=f"events/dt={p:04d}/f{n:04d}.json", Body=body)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put, range(PARTITIONS)))


def seed(store: StateStore, job: str, root: str) -> None:
    listing = FileLister().list([root])
    inc = plan_increment(
        listing, {}, options=FileSourceOptions(max_band_ms=0), now_ms=int(time.time() * 1000)
    )
    run = store.start_run(
        job_name=job,
        run_id="jr_" + uuid.uuid4().hex * 2,
        attempt=0,
        option=BookmarkOption.ENABLE,
        arguments={},
        owner="bench",
        lease_seconds=600,
    )
    opts = FileSourceOptions()
    state = {"type": "files", "paths": [root], "listing_fingerprint": opts.listing_fingerprint([root])}
    entries = [FileEntry(f.url, f.mtime_ms, f.size, f.etag) for f in inc.selected]
    store.commit(run, [CtxCommit("src", state, entries, dict(inc.dir_marks))], metrics={})


def main() -> None:
    opts = arguments()
    per = 10 if opts.quick else 100
    work = Path(tempfile.mkdtemp(prefix="sparkmark-bench-s3-"))
    server = start_s3(work)
    os.environ.update(
        SPARKMARK_HOME=str(work / "home"),
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench-secret",
        AWS_REGION="us-east-1",
        AWS_ENDPOINT_URL_S3=server.endpoint_url,
    )
    try:
        settings = Settings.from_env()
        client = boto3.client(
            "s3",
            endpoint_url=server.endpoint_url,
            aws_access_key_id="bench",
            aws_secret_access_key="bench-secret",
            region_name="us-east-1",
        )
        client.create_bucket(Bucket=BUCKET)
        began = time.perf_counter()
        populate(client, per)
        print(f"{PARTITIONS * per} objects written in {time.perf_counter() - began:.0f} s", flush=True)
        store = StateStore.from_settings(settings)
        spark = create_session("s3-bench", "local[2]", settings)
        spark.sparkContext.setLogLevel("ERROR")
        root = f"s3://{BUCKET}/events"
        seed(store, "bench_s3", root)
        new = []
        for p in range(0, PARTITIONS, 10):
            for n in range(10):
                key = f"events/dt={p:04d}/new{n:02d}.json"
                client.put_object(Bucket=BUCKET, Key=key, Body=f'{{"id": {10**9 + p * 10 + n}}}\n'.encode())
                new.append(key)
        listing_seconds: list[float] = []
        publish_seconds: list[float] = []

        def sparkmark_run(sink: bool):
            def go():
                job = Job.from_args(
                    ["b", "--JOB_NAME", "bench_s3", "--job-bookmark-option", "job-bookmark-pause"],
                    spark=spark,
                    store=store,
                    settings=settings,
                )
                df = job.read_files(root, format="json", ctx="src")
                if sink:
                    job.write_files(df, f"s3://{BUCKET}/out/sink", mode="overwrite", ctx="out")
                    began = time.perf_counter()
                    job.commit()
                    publish_seconds.append(time.perf_counter() - began)
                else:
                    df.write.mode("overwrite").parquet(f"s3a://{BUCKET}/out/sm")
                    job.commit()
                metrics = job.metrics["sources"]["src"]
                assert metrics["files_read"] == len(new), metrics
                if not sink:
                    listing_seconds.append(metrics["listing_seconds"])

            return go

        def floor():
            df = spark.read.option("basePath", f"s3a://{BUCKET}/events").json(
                [f"s3a://{BUCKET}/{k}" for k in new]
            )
            df.write.mode("overwrite").parquet(f"s3a://{BUCKET}/out/floor")

        floor(), sparkmark_run(False)()  # warm up
        log = work / "moto.log"
        before = list_requests(log)
        plan_only = FileLister().list([root])  # the listing alone, as a run makes it
        listing_lists = list_requests(log) - before
        before = list_requests(log)
        sparkmark_run(False)()
        run_lists = list_requests(log) - before
        fewest = -(-len(plan_only.files) // PAGE)
        listing_seconds.clear()
        a, b, c = [], [], []
        for i in range(opts.repeats):
            order = [(a, sparkmark_run(False)), (b, floor), (c, sparkmark_run(True))]
            for bucket, action in order if i % 2 == 0 else order[::-1]:
                bucket.append(timed(action))
                settle_metrics()  # a run's last metrics sample, after its commit: not overlapping the next
        med = {k: statistics.median(v) for k, v in (("sparkmark", a), ("floor", b), ("sink", c))}
        listing = statistics.median(listing_seconds)
        publish = statistics.median(publish_seconds)
        p8 = med["sparkmark"] / med["floor"]
        print(
            f"P8 sparkmark {med['sparkmark']:.2f}s / floor {med['floor']:.2f}s = {p8:.3f} (goal <= 1.3); "
            f"listing {listing:.2f}s = {listing / med['sparkmark']:.0%} of the run; "
            f"with the exactly-once sink {med['sink']:.2f}s, its commit and publish {publish:.2f}s; "
            f"LIST requests: the listing {listing_lists}, the whole run {run_lists}, fewest {fewest}"
        )
        record(
            {
                "P8": {
                    "value": round(p8, 3),
                    "goal": "<= 1.3",
                    "met": p8 <= 1.3,
                    "seconds": {k: round(v, 3) for k, v in med.items()},
                    "listing_seconds": round(listing, 3),
                    "listing_share": round(listing / med["sparkmark"], 3),
                    "sink_commit_publish_seconds": round(publish, 3),
                    "list_requests_listing": listing_lists,
                    "list_requests_run": run_lists,
                    "list_requests_fewest": fewest,
                }
            },
            {"P8_objects": PARTITIONS * per, "P8_new": len(new), "P8_repeats": opts.repeats},
        )
        spark.stop()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
