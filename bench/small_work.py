"""C1 and W1: small work, and what Spark's start-up costs it.

C1: `sparkmark crawler run` of the demo's crawler over 20 small JSON files (5 days of 4
    files), as a whole process, end to end. Goal ≤ 5 s.
W1: the demo workflow end to end (`sparkmark workflow run demo_nightly`: the crawl, then
    the transform job, then the quality job; the command warms a Spark process while the
    crawl runs and both jobs run on it) ÷ the Spark work of its two jobs: the same two
    scripts (less the line that sets the workflow's run properties), on the same data,
    run in this process on a Spark session that is already up. Goal ≤ 2.
W1w: the same workflow started through a running `sparkmark api` whose pool is warm
    (StartWorkflowRun, then GetWorkflowRun until it is COMPLETED) ÷ the same Spark work.

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


def through_server(root: Path, env: dict[str, str]) -> float:
    """The demo workflow started on a `sparkmark api` whose pool is warm: seconds from
    StartWorkflowRun to a COMPLETED run."""
    import re
    import time

    import boto3

    config = root / "demo" / "sparkmark.toml"
    config.write_text(config.read_text() + "\n[pool]\nsize = 1\nprestart = true\n")
    # INFO: the pool says in its log when its Spark is up
    env = dict(
        env, SPARKMARK_CONFIG=str(config), SPARKMARK_API_TOKEN="bench-token", SPARKMARK_LOG_LEVEL="INFO"
    )
    proc = subprocess.Popen(
        [SM, "api", "--port", "0"],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = None
        while url is None:
            line = proc.stdout.readline()
            if not line:
                raise SystemExit("sparkmark api ended before it printed its URL")
            found = re.search(r"http://127\.0\.0\.1:\d+", line)
            url = found.group(0) if found else None
        sm(root, env, "crawler", "create", "--file", "demo/sparkmark.toml")
        pool_logs = root / "home" / "logs" / "pool"
        deadline = time.monotonic() + 300
        while not any("warm Spark up" in p.read_text() for p in pool_logs.glob("*.log")):
            if time.monotonic() > deadline:
                raise SystemExit("the pool's Spark did not come up")
            time.sleep(0.2)
        glue = boto3.client(
            "glue",
            endpoint_url=url,
            region_name="us-east-1",
            aws_access_key_id="b",
            aws_secret_access_key="bench-token",
        )
        began = time.perf_counter()
        run_id = glue.start_workflow_run(Name="demo_nightly")["RunId"]
        while True:
            run = glue.get_workflow_run(Name="demo_nightly", RunId=run_id)["Run"]
            if run["Status"] in ("COMPLETED", "STOPPED", "ERROR"):
                break
            time.sleep(0.1)
        took = time.perf_counter() - began
        stats = run.get("Statistics", {})
        if run["Status"] != "COMPLETED" or stats.get("FailedActions") or stats.get("StoppedActions"):
            raise SystemExit(f"the served workflow run ended {run['Status']}: {stats}")
        return took
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def main() -> None:
    opts = arguments(repeats=3)
    work = Path(tempfile.mkdtemp(prefix="sparkmark-bench-small-"))
    crawls, workflows, served, spark_work = [], [], [], []
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
            root = work / f"served{i}"
            env = fresh(root)
            served.append(through_server(root, env))
            print(
                f"repeat {i + 1}: crawl {crawls[-1]:.2f} s, workflow {workflows[-1]:.2f} s, "
                f"through a warm server {served[-1]:.2f} s",
                flush=True,
            )

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
        wfs = statistics.median(served)
        w1w = wfs / work_s
        print(f"{'scenario':<62}{'median s':>10}{'value':>8}{'goal':>8}")
        print(
            f"{'C1 sparkmark crawler run, 20 small JSON files (process)':<62}{c1:>10.2f}{c1:>8.2f}{'<= 5':>8}"
        )
        print(f"{'W1 demo workflow, crawl + 2 jobs (processes)':<62}{wf:>10.2f}{w1:>8.2f}{'<= 2':>8}")
        print(
            f"{'W1w the same, started on a running sparkmark api (warm pool)':<62}{wfs:>10.2f}{w1w:>8.2f}{'<= 1.5':>8}"
        )
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
                "W1w": {
                    "value": round(w1w, 2),
                    "goal": "<= 1.5",
                    "met": w1w <= 1.5,
                    "workflow_s": round(wfs, 2),
                    "jobs_spark_work_s": round(work_s, 2),
                },
            },
            {"C1_files": 20, "W1_files": 20},
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
