"""K2: a Python shell job's run, from StartJobRun to SUCCEEDED, through ``sparkmark api``
(a process with its scheduler) as a boto3 user sees it.

K2: the median seconds from StartJobRun returning to GetJobRun saying SUCCEEDED, for a
    script that resolves its arguments and prints them (goal < 1 s, with no JVM). The
    baseline, measured in the same process and interleaved with it, is the same script
    run as a plain ``python`` process: ``ratio`` is what the endpoint, the scheduler and
    the run's records add to it. The same script as a glueetl job is measured beside it
    (``spark_job_s``): what the run would cost on the Spark path.

    python bench/python_shell.py            # 10 repeats
    python bench/python_shell.py --quick    # 3 repeats
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from harness import arguments, record, timed
from sparkmark.access import local_token

SCRIPT = """\
import sys
from awsglue.utils import getResolvedOptions
args = getResolvedOptions(sys.argv, ["JOB_NAME", "day"])
print("job", args["JOB_NAME"], "day", args["day"])
"""


def java_processes() -> set[int]:
    """The JVMs running on this machine now."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes().split(b"\0")[0]
            except OSError:
                continue
            if command.endswith(b"/java") or command == b"java":
                found.add(int(entry.name))
    return found


def main() -> None:
    import boto3
    from botocore.config import Config

    opts = arguments(repeats=10)
    repeats = 3 if opts.quick else opts.repeats
    work = Path(tempfile.mkdtemp(prefix="sparkmark-bench-shell-"))
    home, config = work / "home", work / "sparkmark.toml"
    config.write_text("")
    script = work / "job.py"
    script.write_text(SCRIPT)
    env = {
        **os.environ,
        "SPARKMARK_HOME": str(home),
        "SPARKMARK_CONFIG": str(config),
        "PYTHONUNBUFFERED": "1",
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "sparkmark", "api", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().rsplit(" ", 1)[-1].strip()
        glue = boto3.client(
            "glue", endpoint_url=url, region_name="us-east-1", aws_access_key_id="bench",
            aws_secret_access_key=local_token(home), config=Config(retries={"max_attempts": 1}),
        )  # fmt: skip
        for name, command in (("shell", "pythonshell"), ("spark", "glueetl")):
            glue.create_job(
                Name=name, Role="r", Command={"Name": command, "ScriptLocation": str(script)},
                DefaultArguments={"--day": "monday"},
            )  # fmt: skip

        def run(job: str) -> None:
            run_id = glue.start_job_run(JobName=job)["JobRunId"]
            while True:
                state = glue.get_job_run(JobName=job, RunId=run_id)["JobRun"]["JobRunState"]
                if state == "SUCCEEDED":
                    return
                if state in ("FAILED", "ERROR", "TIMEOUT", "STOPPED"):
                    raise SystemExit(f"the {job} run ended {state}")
                time.sleep(0.01)

        def plain() -> None:
            subprocess.run(
                [sys.executable, str(script), "--JOB_NAME", "shell", "--day", "monday"],
                check=True, capture_output=True, env=env,
            )  # fmt: skip

        run("shell")  # the first run makes the state store's tables
        jvms_before = java_processes()
        shell, baseline = [], []
        for _ in range(repeats):
            shell.append(timed(lambda: run("shell")))
            baseline.append(timed(plain))
        jvms_started = java_processes() - jvms_before
        spark = [timed(lambda: run("spark")) for _ in range(min(repeats, 3))]
    finally:
        server.terminate()
        server.wait(timeout=60)
    k2 = statistics.median(shell)
    base = statistics.median(baseline)
    results = {
        "K2": {
            "value": round(k2, 3), "goal": "< 1 s, no JVM", "met": k2 < 1 and not jvms_started,
            "ratio": round(k2 / base, 2), "plain_python_s": round(base, 3),
            "spark_job_s": round(statistics.median(spark), 3), "jvms_started": len(jvms_started),
            "repeats": repeats,
        },
    }  # fmt: skip
    print(f"K2 Python shell run, StartJobRun to SUCCEEDED: {k2:.3f} s median of {repeats} (goal < 1 s)")
    print(f"   the same script as a plain python process: {base:.3f} s (ratio {k2 / base:.2f})")
    print(f"   the same script as a glueetl job: {statistics.median(spark):.3f} s")
    print(f"   JVMs started during the shell runs: {len(jvms_started)}")
    record(results, {"K2_repeats": repeats})


if __name__ == "__main__":
    main()
