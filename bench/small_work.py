"""C1 and W1: small work, and what Spark's start-up costs it.

C1: `sparkmark crawler run` of the demo's crawler over 20 small JSON files (5 days of 4
    files), as a whole process, end to end. Goal ≤ 5 s.
W1: the demo workflow end to end (`sparkmark workflow run demo_nightly`: the crawl, then
    the transform job, then the quality job, each its own process) ÷ the Spark work of its
    two jobs: the same two scripts (less the line that sets the workflow's run
    properties), on the same data, run in this process on a Spark session that is
    already up. Goal ≤ 2.

Every repeat starts from nothing (a new folder, state store and data), so each measures
a first run of the day's data.

    python bench/small_work.py            # 3 repeats
"""

from __future__ import annotations

import os
import runpy
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from harness import arguments, record, timed

DEMO = Path(__file__).resolve().parent.parent / "demo"
PY = sys.executable
SM = str(Path(sys.executable).with_name("sparkmark"))


def fresh(root: Path) -> dict[str, str]:
    """A new folder with the demo's scripts and 20 files of orders; its environment."""
    root.mkdir(parents=True)
    shutil.copytree(DEMO, root / "demo")
    env = dict(
        os.environ,
        SPARKMARK_HOME=str(root / "home"),
        SPARKMARK_SPARK_MASTER="local[2]",
        SPARKMARK_LOG_LEVEL="WARNING",
    )
    env.pop("SPARKMARK_CONFIG", None)
    subprocess.run(
        [PY, "demo/generate.py", "demo-data/orders", "--days", "5", "--files-per-day", "4"],
        cwd=root,
        env=env,
        check=True,
        capture_output=True,
    )
    assert len(list((root / "demo-data" / "orders").glob("dt=*/*.json"))) == 20
    return env


def sm(root: Path, env: dict[str, str], *argv: str) -> None:
    done = subprocess.run([SM, *argv], cwd=root, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, (argv, done.stdout[-2000:], done.stderr[-2000:])


def main() -> None:
    opts = arguments(repeats=3)
    work = Path(tempfile.mkdtemp(prefix="sparkmark-bench-small-"))
    crawls, workflows, spark_work = [], [], []
    try:
        for i in range(opts.repeats):
            root = work / f"crawl{i}"
            env = fresh(root)
            sm(root, env, "crawler", "create", "--file", "demo/sparkmark.toml")
            crawls.append(timed(lambda root=root, env=env: sm(root, env, "crawler", "run", "demo_lake")))

            root = work / f"workflow{i}"
            env = fresh(root)
            workflows.append(
                timed(
                    lambda root=root, env=env: sm(
                        root,
                        env,
                        "workflow",
                        "run",
                        "demo_nightly",
                        "--config",
                        "demo/sparkmark.toml",
                        "--strict",
                    )
                )
            )
            print(f"repeat {i + 1}: crawl {crawls[-1]:.2f} s, workflow {workflows[-1]:.2f} s", flush=True)

        # The jobs' Spark work: the same scripts in this process, on a session already up.
        from sparkmark.settings import Settings
        from sparkmark.spark import create_session

        spark = None
        for i in range(opts.repeats + 1):  # the first, in a cold JVM, is not counted
            root = work / f"spark{i}"
            env = fresh(root)
            sm(root, env, "crawler", "create", "--file", "demo/sparkmark.toml")
            sm(root, env, "crawler", "run", "demo_lake")
            saved = (dict(os.environ), os.getcwd(), list(sys.argv))
            os.environ.update(env)
            os.chdir(root)
            try:
                if spark is None:
                    spark = create_session("w1-spark-work", "local[2]", Settings.from_env())
                    spark.sparkContext.setLogLevel("ERROR")
                    spark.conf.set("spark.sql.shuffle.partitions", "4")  # as the demo's jobs set it
                steps = [
                    ("transform_job.py", ["--JOB_NAME", "demo_transform", "--output", "demo-data/daily"]),
                    (
                        "quality_job.py",
                        ["--JOB_NAME", "demo_quality", "--input", "demo-data/daily"]
                        + ["--checked", "demo-data/checked", "--review", "demo-data/review"],
                    ),
                ]
                took = 0.0
                for script, args in steps:
                    # Outside a workflow run there are no run properties to set: that line goes.
                    source = root / "demo" / script
                    body = [
                        ln for ln in source.read_text().splitlines() if not ln.startswith("properties.put(")
                    ]
                    source.write_text("\n".join(body) + "\n")
                    sys.argv = [script, *args, "--job-bookmark-option", "job-bookmark-enable"]
                    took += timed(lambda source=source: runpy.run_path(str(source), run_name="__main__"))
            finally:
                os.environ.clear()
                os.environ.update(saved[0])
                os.chdir(saved[1])
                sys.argv = saved[2]
            if i:
                spark_work.append(took)
        if spark is not None:
            spark.stop()
        c1 = statistics.median(crawls)
        wf, work_s = statistics.median(workflows), statistics.median(spark_work)
        w1 = wf / work_s
        print(f"{'scenario':<62}{'median s':>10}{'value':>8}{'goal':>8}")
        print(
            f"{'C1 sparkmark crawler run, 20 small JSON files (process)':<62}{c1:>10.2f}{c1:>8.2f}{'<= 5':>8}"
        )
        print(f"{'W1 demo workflow, crawl + 2 jobs (processes)':<62}{wf:>10.2f}{w1:>8.2f}{'<= 2':>8}")
        print(f"{'   its two jobs Spark work, on a session already up':<62}{work_s:>10.2f}")
        record(
            {
                "C1": {
                    "value": round(c1, 2),
                    "goal": "<= 5 s",
                    "met": c1 <= 5,
                    "crawl_s": [round(x, 2) for x in crawls],
                },
                "W1": {
                    "value": round(w1, 2),
                    "goal": "<= 2",
                    "met": w1 <= 2,
                    "workflow_s": round(wf, 2),
                    "jobs_spark_work_s": round(work_s, 2),
                },
            },
            {"C1_files": 20, "W1_files": 20},
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
