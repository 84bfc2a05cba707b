"""U1r: one run of U1's Glue job (tests/fixtures/paid_orders_job.py) through
``run_glue_script`` on a warm session, as the pytest plugin's ``run_glue_job`` runs it,
against the same work in plain PySpark on the same session, alternating in one process.

Two floors: plain PySpark filtering in SQL (what U1's plain suite does), and plain
PySpark filtering with a Python function, as the Glue script's ``Filter`` does (a
Python worker per task). U1r is the run ÷ the second floor. Also kept: the time of the
run's two Spark steps (the records read and parsed, the write staged), measured inside
the same runs.

    .venv/bin/python bench/u1_runs.py [--quick] [--repeats N]
"""

from __future__ import annotations

import functools
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from harness import arguments, record, timed

JOB = Path(__file__).parents[1] / "tests" / "fixtures" / "paid_orders_job.py"
WARM_UP = 3


def main() -> None:
    opts = arguments(repeats=10)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    with tempfile.TemporaryDirectory(prefix="sparkmark-u1r-") as tmp:
        work = Path(tmp)
        os.environ["SPARKMARK_HOME"] = str(work / "home")
        source = work / "in"
        source.mkdir()
        (source / "a.json").write_text('{"id": 1, "status": "PAID"}\n{"id": -1, "status": "OPEN"}\n')
        (source / "b.json").write_text('{"id": 1001, "status": "PAID"}\n')
        figures = measure(work, str(source), WARM_UP + max(3, opts.repeats // (2 if opts.quick else 1)))
    run, sql, python = (statistics.median(figures[k]) for k in ("run", "plain_sql", "plain_python"))
    steps = {k: round(statistics.median(v), 3) for k, v in figures.items() if k.startswith("step_")}
    ratio = run / python
    print(f"U1r: a run {run:.3f} s; plain PySpark {sql:.3f} s (SQL filter), {python:.3f} s (Python filter)")
    print(f"     run ÷ Python-filter floor {ratio:.2f}; steps {steps}")
    record(
        {
            "U1r": {
                "value": round(ratio, 2),
                "goal": "<= 1.3",
                "met": ratio <= 1.3,
                "run_s": round(run, 3),
                "plain_sql_s": round(sql, 3),
                "plain_python_filter_s": round(python, 3),
                "steps_s": steps,
            },
        },
        {"U1r_repeats": len(figures["run"])},
    )


def measure(work: Path, source: str, rounds: int) -> dict[str, list[float]]:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from sparkmark.glue import choice, writing
    from sparkmark.testing.glue_job import run_glue_script

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    paid = F.udf(lambda status: status == "PAID", T.BooleanType())
    steps: dict[str, float] = defaultdict(float)

    def timing(name, function):
        @functools.wraps(function)
        def timed_step(*args, **kwargs):
            began = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                steps[name] += time.perf_counter() - began

        return timed_step

    choice.parse_records = timing("step_read_and_parse", choice.parse_records)
    writing.write_sink = timing("step_staged_write", writing.write_sink)  # the façade's name for it

    def glue(n: int) -> None:
        done = run_glue_script(
            JOB, f"u1r_{n}", job_bookmark_option="job-bookmark-enable", source_path=source,
            target_path=str(work / f"glue{n}"),
        )  # fmt: skip
        if done.exit_code != 0:
            raise SystemExit(f"the Glue job failed: {done.error}")

    def plain_sql(n: int) -> None:
        frame = spark.read.json(source).select("id", "status").where("status = 'PAID'")
        frame.write.mode("append").parquet(str(work / f"sql{n}"))

    def plain_python(n: int) -> None:
        frame = spark.read.json(source).select("id", "status").where(paid("status"))
        frame.write.mode("append").parquet(str(work / f"python{n}"))

    figures: dict[str, list[float]] = defaultdict(list)
    for n in range(rounds):
        steps.clear()
        for name, action in (("run", glue), ("plain_sql", plain_sql), ("plain_python", plain_python)):
            seconds = timed(functools.partial(action, n))
            if n >= WARM_UP:
                figures[name].append(seconds)
        if n >= WARM_UP:
            for name, seconds in steps.items():
                figures[name].append(seconds)
    spark.stop()
    return figures


if __name__ == "__main__":
    main()
