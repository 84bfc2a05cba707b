"""U1: 50 tests of small Glue jobs, written with sparkmark's pytest plugin, on 2 cores:
the whole pytest run, warm Spark included, against the goal of issue 53: at most 30 s,
and at most 1.3 times the same tests in plain PySpark.

The project is generated in a temporary folder: one Glue job (``awsglue`` imports,
``getResolvedOptions``, a bookmarked JSON source, ApplyMapping, Filter, a Parquet sink,
``job.commit()``) and 50 tests, each writing two small files and running the job once
with ``run_glue_job``, then asserting the files read and the rows written; every tenth
test adds a file and runs again, asserting that only the new file is read.

Baseline, in the same process: the same 50 tests written with plain PySpark (a session
fixture, read, filter, write; no Glue names, no bookmark), the floor any such suite pays.
U1 is the plugin suite's wall time; U1_ratio is plugin ÷ plain.

    .venv/bin/python bench/u1_plugin.py [--quick] [--repeats N]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from harness import arguments, record, timed

TESTS = 50

# The same job tests/test_spark_jobs.py counts the Spark jobs of.
JOB = (Path(__file__).parents[1] / "tests" / "fixtures" / "paid_orders_job.py").read_text()

PLUGIN_TEST = """
def test_job_{n}(run_glue_job, spark, tmp_path):
    source, target = tmp_path / "in", tmp_path / "out"
    write(source / "a.json", [{{"id": {n}, "status": "PAID"}}, {{"id": -1, "status": "OPEN"}}])
    write(source / "b.json", [{{"id": {n} + 1000, "status": "PAID"}}])
    args = dict(JOB_NAME="job_{n}", job_bookmark_option="job-bookmark-enable",
                source_path=str(source), target_path=str(target))
    run = run_glue_job(JOB, **args).assert_succeeded()
    assert len(run.files_read("orders")) == 2
    assert spark.read.parquet(str(target)).count() == 2
    if {n} % 10 == 0:
        write(source / "c.json", [{{"id": 7, "status": "PAID"}}])
        again = run_glue_job(JOB, **args).assert_succeeded()
        assert [f.rsplit("/", 1)[-1] for f in again.files_read()] == ["c.json"]
"""

PLAIN_TEST = """
def test_job_{n}(spark, tmp_path):
    source, target = tmp_path / "in", tmp_path / "out"
    write(source / "a.json", [{{"id": {n}, "status": "PAID"}}, {{"id": -1, "status": "OPEN"}}])
    write(source / "b.json", [{{"id": {n} + 1000, "status": "PAID"}}])
    df = spark.read.json(str(source)).select("id", "status").where("status = 'PAID'")
    df.write.mode("append").parquet(str(target))
    assert spark.read.parquet(str(target)).count() == 2
    if {n} % 10 == 0:
        write(source / "c.json", [{{"id": 7, "status": "PAID"}}])
        spark.read.json(str(source / "c.json")).where("status = 'PAID'").write.mode("append").parquet(str(target))
"""

HEADER = """
import json
from pathlib import Path

JOB = Path(__file__).parent / "job.py"


def write(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\\n".join(json.dumps(r) for r in rows) + "\\n")
"""

PLAIN_CONFTEST = """
import pytest
from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark():
    session = (
        SparkSession.builder.master("local[2]").config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false").getOrCreate()
    )
    yield session
    session.stop()
"""


def project(folder: Path, test: str, conftest: str | None, count: int) -> Path:
    folder.mkdir(parents=True)
    (folder / "job.py").write_text(JOB)
    body = HEADER + "".join(test.format(n=n) for n in range(count))
    (folder / "test_jobs.py").write_text(body)
    if conftest is not None:
        (folder / "conftest.py").write_text(conftest)
    return folder


def suite(folder: Path, disable_plugin: bool) -> None:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(folder)]
    if disable_plugin:
        command[4:4] = ["-p", "no:sparkmark"]
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the suite in {folder} failed:\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}")


def main() -> None:
    opts = arguments(repeats=2)
    count = TESTS  # U1 is defined at 50 tests; --quick takes fewer repeats, not fewer tests
    plugin_times, plain_times = [], []
    with tempfile.TemporaryDirectory(prefix="sparkmark-u1-") as tmp:
        for i in range(max(1, opts.repeats - (1 if opts.quick else 0))):
            plugin = project(Path(tmp) / f"plugin{i}", PLUGIN_TEST, None, count)
            plain = project(Path(tmp) / f"plain{i}", PLAIN_TEST, PLAIN_CONFTEST, count)
            plain_times.append(timed(lambda plain=plain: suite(plain, disable_plugin=True)))
            plugin_times.append(timed(lambda plugin=plugin: suite(plugin, disable_plugin=False)))
    u1, floor = statistics.median(plugin_times), statistics.median(plain_times)
    print(f"U1: {count} plugin tests in {u1:.1f} s (runs {plugin_times}); plain PySpark {floor:.1f} s")
    record(
        {
            "U1": {
                "value": round(u1, 1),
                "goal": "<= 30 s and <= 1.3 x plain PySpark",
                "met": u1 <= 30.0 and u1 / floor <= 1.3,
                "unit": "s",
                "plain_pyspark_s": round(floor, 1),
                "ratio_to_plain": round(u1 / floor, 2),
            },
        },
        {"U1_tests": count},
    )


if __name__ == "__main__":
    main()
