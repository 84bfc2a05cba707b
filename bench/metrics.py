"""What observability costs (issue 39's figures).

M1, a run's metrics: small runs (start, read three CSV files with Spark, count, commit)
with Glue's metrics sampled from Spark's REST API and stored, against the same runs
without, alternated in one process and one Spark (its UI on, as `sparkmark run` has
it). The ratio is with / without.

M2, a Prometheus scrape: the exposition of a store holding JOBS jobs with RUNS runs
each (their latest runs' Glue metrics and their run records), against the floor of
the format itself: prometheus_client writing the same families and samples, already
in memory.

    python bench/metrics.py              # M1: 20 runs each way; M2: 200 jobs × 50 runs
    python bench/metrics.py --quick      # M1: 6 runs each way; M2: 50 jobs × 20 runs
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from prometheus_client import CollectorRegistry, generate_latest

from harness import arguments, record
from sparkmark.app import App
from sparkmark.app.prometheus import Collector, exposition
from sparkmark.connections import Connections
from sparkmark.engine.metric_store import MetricStore, dims_of
from sparkmark.engine.models import BookmarkOption
from sparkmark.engine.store import StateStore
from sparkmark.runtime import glue_metrics as gm
from sparkmark.runtime.run import JobRun
from sparkmark.runtime.run_metrics import MetricsSetup
from sparkmark.settings import Settings


def one_run(spark, store: StateStore, folder: Path, setup: MetricsSetup | None, temp: str) -> float:
    began = time.perf_counter()
    run = JobRun(
        "bench_metrics",
        store=store,
        option=BookmarkOption.DISABLE,
        args={"JOB_NAME": "bench_metrics"},
        temp_dir=temp,
        lease_seconds=60,
        connections=Connections(Path(temp) / "none.toml", {}),
        metrics_setup=setup,
    )
    spark.read.option("header", True).csv(str(folder)).count()
    run.commit()
    return time.perf_counter() - began


def run_cost(runs: int) -> dict:
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]").config("spark.ui.showConsoleProgress", "false").getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "in"
        folder.mkdir()
        for n in range(3):
            (folder / f"part{n}.csv").write_text("id,amount\n" + "".join(f"{n}{i},{i}\n" for i in range(100)))
        store = StateStore(f"sqlite:///{tmp}/state.db")
        settings = Settings.from_env({"SPARKMARK_HOME": tmp})
        setup = MetricsSetup.from_settings(settings)
        one_run(spark, store, folder, setup, tmp)  # warm: Spark's first jobs and the UI's first requests
        one_run(spark, store, folder, None, tmp)
        with_metrics, without = [], []
        for _ in range(runs):
            with_metrics.append(one_run(spark, store, folder, setup, tmp))
            without.append(one_run(spark, store, folder, None, tmp))
        recorded = store.list_runs("bench_metrics")[0].metrics.get("glue", {})
        store.close()
    spark.stop()
    assert "glue.driver.aggregate.recordsRead" in recorded, "the runs reported no Spark metrics"
    on, off = statistics.median(with_metrics), statistics.median(without)
    return {
        "runs": runs,
        "with_metrics_s": round(on, 4),
        "without_s": round(off, 4),
        "ratio": round(on / off, 3),
    }


def scrape_cost(jobs: int, runs: int, repeats: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings.from_env({"SPARKMARK_HOME": tmp})
        store = StateStore.from_settings(settings)
        metrics = MetricStore(store)
        values = {m.name: 1.0 for m in gm.METRICS if "<" not in m.name}
        now = datetime.now(UTC)
        for j in range(jobs):
            job = f"job_{j:04d}"
            for _r in range(runs):
                record_ = store.start_run(
                    job_name=job, run_id="jr_" + uuid.uuid4().hex, attempt=0, option=BookmarkOption.ENABLE,
                    arguments={}, owner="bench", lease_seconds=600,
                )  # fmt: skip
                store.commit(record_, [], metrics={"glue": values, "sources": {"s": {"files_read": 1}}})
            metrics.set_latest(
                gm.NAMESPACE,
                {k: (v, None) for k, v in values.items()},
                dims_of({"JobName": job, "JobRunId": record_.run_id}),
                now - timedelta(seconds=j),
                group=job,
            )
        app = App(settings, store)
        exposition(app)  # warm
        families = list(Collector(app).collect())  # the same series, read once

        class InMemory:
            def collect(self):
                return families

        floor_registry = CollectorRegistry(auto_describe=False)
        floor_registry.register(InMemory())  # type: ignore[arg-type]
        scrapes, floors = [], []
        size = 0
        for _ in range(repeats):
            began = time.perf_counter()
            body, _ = exposition(app)
            scrapes.append(time.perf_counter() - began)
            size = len(body)
            began = time.perf_counter()
            generate_latest(floor_registry)
            floors.append(time.perf_counter() - began)
        store.close()
    on, floor = statistics.median(scrapes), statistics.median(floors)
    return {
        "jobs": jobs,
        "runs_per_job": runs,
        "scrape_ms": round(on * 1000, 1),
        "format_floor_ms": round(floor * 1000, 1),
        "exposition_bytes": size,
        "ratio": round(on / floor, 2),
    }


def main() -> None:
    opts = arguments(repeats=7)
    m1 = run_cost(6 if opts.quick else 20)
    m2 = scrape_cost(*((50, 20) if opts.quick else (200, 50)), opts.repeats)
    print(f"M1 a run's metrics: {m1}")
    print(f"M2 a Prometheus scrape: {m2}")
    for figure in (m1, m2):
        figure.update(value=figure["ratio"], goal="none: measured for issue 39", met=None)
    record({"M1_quick" if opts.quick else "M1": m1, "M2_quick" if opts.quick else "M2": m2}, {})


if __name__ == "__main__":
    main()
