"""File-source scenarios of the benchmark plan.

P1: an incremental run that finds 100 new files among 100,000 in 1,000 Hive
    partitions (read JSON + write Parquet), skipUnchangedPartitions=true: sparkmark ÷
    the floor (plain Spark reading exactly the new files, handed over as explicit
    paths). Goal ≤ 1.1.
P1d: the same with the defaults (every partition listed, every file compared with
    the bookmark). Goal ≤ 1.5.
P2: the same increment through Structured Streaming's file source run as a batch
    (``Trigger.AvailableNow``), its checkpoint already holding the 100,000 files:
    streaming ÷ sparkmark. Goal ≥ 50.
P3: a run with no new data, as a whole process: `sparkmark run --skip-if-no-new-data`
    of a job that reads its source and writes Parquet (imports, the state store, the
    listing; Spark is never started). Goal ≤ 0.5 s. Printed beside it: the same run
    without the flag, a process that only starts Spark, and a plain script doing the
    run's Spark work.

Both sides of each comparison run alternately, several times; medians compared.
The bookmark is seeded by committing the listed files directly (what a first run
would record), so the 100,000 files need not be read by Spark first.

    python bench/files_incremental.py            # 100,000 files
    python bench/files_incremental.py --quick    # 10,000 files
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from harness import arguments, record, timed
from sparkmark import Job
from sparkmark.engine.fileplan import ctx_commit, now_ms, plan_files
from sparkmark.engine.increment import FileSourceOptions
from sparkmark.engine.models import BookmarkOption
from sparkmark.engine.store import StateStore
from sparkmark.runtime.run import settle_metrics
from sparkmark.settings import Settings
from sparkmark.spark import create_session


def make_tree(root: Path, partitions: int, per_partition: int) -> None:
    for p in range(partitions):
        folder = root / f"dt={p:05d}"
        folder.mkdir(parents=True)
        for n in range(per_partition):
            (folder / f"f{n:04d}.json").write_text(f'{{"id": {p * per_partition + n}, "v": "x"}}\n')


def add_new_files(root: Path, partitions: int) -> list[Path]:
    """The increment: 10 new files in each of 10 partitions spread over the tree."""
    new = []
    for p in range(0, partitions, partitions // 10):
        for n in range(10):
            path = root / f"dt={p:05d}" / f"new{n:02d}.json"
            path.write_text(f'{{"id": {10**9 + p * 10 + n}, "v": "new"}}\n')
            new.append(path)
    return new


def increment(spark, store, settings, job_name: str, root: Path, out: Path, new: list[Path], *, skip: bool):
    """The measured run: a paused job (it reads what an enabled one would and moves no
    bookmark, so every repeat reads the same increment), JSON in, Parquet out."""

    def go():
        job = Job.from_args(
            ["b", "--JOB_NAME", job_name, "--job-bookmark-option", "job-bookmark-pause"],
            spark=spark,
            store=store,
            settings=settings,
        )
        df = job.read_files(str(root), format="json", ctx="src", skipUnchangedPartitions=skip)
        df.write.mode("overwrite").parquet(str(out / "sm"))
        job.commit()
        assert job.metrics["sources"]["src"]["files_read"] == len(new)

    return go


def steps_of_a_run(spark, store, settings, job_name: str, root: Path, out: Path) -> dict[str, float]:
    """One skipping run, step by step: its start (the run's record, lease and recovery),
    its read (listing, plan and manifest; the frame is made, not read), Spark's write
    (the floor's work), and its commit (inputs checked, the bookmark's transaction,
    the output published). Seconds each."""
    clock = time.perf_counter
    t0 = clock()
    job = Job.from_args(
        ["b", "--JOB_NAME", job_name, "--job-bookmark-option", "job-bookmark-pause"],
        spark=spark,
        store=store,
        settings=settings,
    )
    t1 = clock()
    df = job.read_files(str(root), format="json", ctx="src", skipUnchangedPartitions=True)
    t2 = clock()
    df.write.mode("overwrite").parquet(str(out / "steps"))
    t3 = clock()
    job.commit()
    t4 = clock()
    return {"start": t1 - t0, "read": t2 - t1, "spark_write": t3 - t2, "commit": t4 - t3}


def floor_run(spark, root: Path, out: Path, new: list[Path]):
    """The floor: plain Spark reading exactly the new files, handed over as paths."""

    def go():
        spark.read.option("basePath", str(root)).json([str(p) for p in new]).write.mode("overwrite").parquet(
            str(out / "floor")
        )

    return go


def seed(store: StateStore, job: str, root: Path) -> None:
    """What a first run would record: every listed file, and every folder's mark."""
    opts = FileSourceOptions(max_band_ms=0)
    plan = plan_files(
        [str(root)], opts, ctx="src", processed={}, known_dirs=None, high_water_ms=None, now_ms=now_ms()
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
    commit = ctx_commit(plan, previous=None, schema_json=None, run_id=run.run_id)
    store.commit(run, [commit], metrics={})


def main() -> None:
    opts = arguments()
    partitions, per = (100, 100) if opts.quick else (1000, 100)
    work = Path(tempfile.mkdtemp(prefix="sparkmark-bench-"))
    os.environ["SPARKMARK_HOME"] = str(work / "home")
    settings = Settings.from_env()
    store = StateStore.from_settings(settings)
    spark = create_session("files-bench", "local[2]", Settings.from_env())
    spark.sparkContext.setLogLevel("ERROR")
    root, out = work / "events", work / "out"
    try:
        make_tree(root, partitions, per)
        seed(store, "bench_files", root)
        schema = "id long, v string, dt string"
        checkpoint = work / "checkpoint"

        def stream_once(cp: Path, target: Path):
            query = (
                spark.readStream.schema(schema)
                .option("basePath", str(root))
                .json(str(root))
                .writeStream.foreachBatch(lambda df, _id: df.write.mode("append").parquet(str(target)))
                .option("checkpointLocation", str(cp))
                .trigger(availableNow=True)
                .start()
            )
            query.awaitTermination()

        stream_once(checkpoint, out / "stream_seed")  # the checkpoint now holds every file
        new = add_new_files(root, partitions)

        def sparkmark_run(skip: bool):
            return increment(spark, store, settings, "bench_files", root, out, new, skip=skip)

        floor = floor_run(spark, root, out, new)

        def streaming():
            trial = work / f"cp_{uuid.uuid4().hex[:6]}"
            shutil.copytree(checkpoint, trial)  # the same pristine checkpoint each time, copied untimed
            return lambda: stream_once(trial, out / "stream")

        floor(), sparkmark_run(True)()  # warm up
        a, b, c, d = [], [], [], []
        for i in range(opts.repeats):
            order = [(a, sparkmark_run(True)), (b, sparkmark_run(False)), (c, floor), (d, streaming())]
            for bucket, action in order if i % 2 == 0 else order[::-1]:
                bucket.append(timed(action))
                settle_metrics()  # a run's last metrics sample, after its commit: untimed, not overlapping the next
        med = {k: statistics.median(v) for k, v in (("skip", a), ("noskip", b), ("floor", c), ("stream", d))}
        stepwise = []
        for _ in range(opts.repeats):
            stepwise.append(steps_of_a_run(spark, store, settings, "bench_files", root, out))
            settle_metrics()
        steps = {k: statistics.median(x[k] for x in stepwise) for k in stepwise[0]}
        p1 = med["skip"] / med["floor"]
        p2 = med["stream"] / med["skip"]

        # P3: whole processes, no new data: the job script under `sparkmark run`, with and
        # without --skip-if-no-new-data, against a process that only starts Spark and runs
        # one tiny Spark job (what the script would spend on Spark start-up).
        script = work / "job.py"
        script.write_text(
            "from sparkmark import Job\njob = Job.from_args()\n"
            f"job.read_files({str(root)!r}, format='json', ctx='src', skipUnchangedPartitions=True)"
            ".write.mode('overwrite').parquet(" + repr(str(out / "p3")) + ")\njob.commit()\n"
        )
        startup = work / "startup.py"
        startup.write_text(
            "from sparkmark.settings import Settings\nfrom sparkmark.spark import create_session\n"
            "create_session('s', 'local[2]', Settings.from_env()).range(1).count()\n"
        )
        # The same Spark work as the job with nothing new, without sparkmark: start Spark
        # and write an empty frame of the source's schema to the same kind of output.
        plain = work / "plain.py"
        plain.write_text(
            "from sparkmark.settings import Settings\nfrom sparkmark.spark import create_session\n"
            "s = create_session('s', 'local[2]', Settings.from_env())\n"
            "s.createDataFrame([], 'id long, v string, dt string').write.mode('overwrite')"
            ".parquet(" + repr(str(out / "p3plain")) + ")\n"
        )
        exe = str(Path(sys.executable).with_name("sparkmark"))
        env = dict(os.environ, SPARKMARK_SPARK_MASTER="local[2]", SPARKMARK_LOG_LEVEL="WARNING")
        job_args = [str(script), "--JOB_NAME", "bench_files", "--job-bookmark-option", "job-bookmark-enable"]
        # first, a real run that processes the new files, so the next runs find nothing new
        subprocess.run([exe, "run", *job_args], check=True, env=env, capture_output=True)
        runs, skips, starts, plains = [], [], [], []
        for i in range(2 if opts.quick else max(3, opts.repeats)):  # each process starts Spark
            group = [
                (runs, [exe, "run", *job_args]),
                (skips, [exe, "run", "--skip-if-no-new-data", *job_args]),
                (starts, [sys.executable, str(startup)]),
                (plains, [sys.executable, str(plain)]),
            ]
            for bucket, cmd in group if i % 2 == 0 else group[::-1]:
                bucket.append(
                    timed(lambda cmd=cmd: subprocess.run(cmd, check=True, env=env, capture_output=True))
                )
        skipped = [r for r in store.list_runs("bench_files") if r.metrics.get("skipped")]
        assert len(skipped) == len(skips), "every --skip-if-no-new-data run must have been skipped"
        run_s, skip_s, start_s, plain_s = (statistics.median(b) for b in (runs, skips, starts, plains))
        overhead = run_s - plain_s  # sparkmark's own cost in a run that starts Spark

        total = partitions * per
        print(f"files tracked: {total:,} in {partitions:,} partitions; new: {len(new)}")
        print(f"{'scenario':<58}{'median s':>10}{'ratio':>8}{'goal':>9}")
        rows = [
            ("P1 sparkmark, skipUnchangedPartitions=true", med["skip"], p1, "<= 1.1"),
            (
                "P1d sparkmark, defaults (every partition listed)",
                med["noskip"],
                med["noskip"] / med["floor"],
                "<= 1.5",
            ),
            ("   floor: Spark on the 100 explicit paths", med["floor"], None, ""),
            ("P2 Structured Streaming AvailableNow ÷ sparkmark", med["stream"], p2, ">= 50"),
            ("P3 sparkmark run --skip-if-no-new-data, nothing new", skip_s, None, "<= 0.5 s"),
            ("   sparkmark run, nothing new (Spark started)", run_s, None, ""),
            ("   Spark start-up and one tiny job (process)", start_s, None, ""),
            ("   plain script: Spark start-up + the same empty write", plain_s, None, ""),
        ]
        for label, seconds, ratio, goal in rows:
            shown = f"{ratio:>8.2f}" if ratio is not None else " " * 8
            print(f"{label:<58}{seconds:>10.3f}{shown}{goal:>9}")
        print(f"sparkmark's own cost in a run that starts Spark (run − plain script): {overhead:.2f} s")
        print("P1 run step by step (medians, s): " + ", ".join(f"{k} {v:.3f}" for k, v in steps.items()))
        p1d = med["noskip"] / med["floor"]
        record(
            {
                "P1": {
                    "value": round(p1, 3),
                    "goal": "<= 1.1",
                    "met": p1 <= 1.1,
                    "sparkmark_s": round(med["skip"], 3),
                    "floor_s": round(med["floor"], 3),
                    "steps_s": {k: round(v, 3) for k, v in steps.items()},
                },
                "P1d": {
                    "value": round(p1d, 3),
                    "goal": "<= 1.5",
                    "met": p1d <= 1.5,
                    "sparkmark_s": round(med["noskip"], 3),
                    "floor_s": round(med["floor"], 3),
                },
                "P2": {
                    "value": round(p2, 3),
                    "goal": ">= 50",
                    "met": p2 >= 50,
                    "streaming_s": round(med["stream"], 3),
                    "sparkmark_s": round(med["skip"], 3),
                },
                "P3": {
                    "value": round(skip_s, 3),
                    "goal": "<= 0.5 s",
                    "met": skip_s <= 0.5,
                    "run_s": round(run_s, 3),
                    "startup_s": round(start_s, 3),
                    "plain_script_s": round(plain_s, 3),
                    "sparkmark_overhead_s": round(overhead, 3),
                },
            },
            {"P1_files": total, "P1_partitions": partitions, "P1_new_files": len(new)},
        )
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
