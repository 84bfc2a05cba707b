"""V1, V2: Glue versions. What running a job on the Glue 5.0 runtime costs against running it
on sparkmark's own Spark (Glue 6.0), and what the upgrade check of a corpus costs.

V1: ``sparkmark run --glue-version 5.0`` of a small Glue job (its own bookmark, 2,000
    rows read from JSON, written as Parquet) ÷ ``sparkmark run`` of the same job on
    sparkmark's own Spark; the median of each, interleaved in this process (goal ≤ 1.2:
    the runtime adds no cost of its own beyond its Spark's).
V2: ``sparkmark upgrade-check`` of the 16 scripts in tests/fixtures/upgrade (13 that
    differ, 3 that do not), both versions side by side ÷ one ``sparkmark run`` of the
    V1 job (goal ≤ 8: the check of 16 jobs under two Sparks costs no more than 8 single
    runs).

Needs the Glue 5.0 runtime (``make runtimes``; SPARKMARK_RUNTIMES_DIR is set to the
repository's ``.runtimes`` unless given).

    python bench/glue_versions.py            # 5 repeats
    python bench/glue_versions.py --quick    # 2 repeats
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from harness import arguments, record, timed

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = """\
import sys
from awsglue.context import GlueContext
from awsglue.job import Job
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext

args = getResolvedOptions(sys.argv, ["JOB_NAME", "input", "output"])
glue = GlueContext(SparkContext.getOrCreate())
job = Job(glue)
job.init(args["JOB_NAME"], args)
frame = glue.create_dynamic_frame.from_options("s3", {"paths": [args["input"]]}, format="json")
glue.write_dynamic_frame.from_options(frame, "s3", {"path": args["output"]}, format="parquet")
job.commit()
"""


def main() -> None:
    opts = arguments(repeats=5)
    repeats = 2 if opts.quick else opts.repeats
    work = Path(tempfile.mkdtemp(prefix="sparkmark-bench-versions-"))
    data = work / "in"
    data.mkdir()
    (data / "rows.json").write_text("".join(json.dumps({"id": i, "v": f"r{i}"}) + "\n" for i in range(2000)))
    script = work / "job.py"
    script.write_text(SCRIPT)
    env = {
        **os.environ,
        "SPARKMARK_HOME": str(work / "home"),
        "SPARKMARK_CONFIG": str(work / "none.toml"),
        "SPARKMARK_RUNTIMES_DIR": os.environ.get("SPARKMARK_RUNTIMES_DIR", str(ROOT / ".runtimes")),
    }
    counter = iter(range(10_000))

    def run(*version: str) -> None:
        n = next(counter)
        subprocess.run(
            [sys.executable, "-m", "sparkmark", "run", *version, str(script), "--JOB_NAME", f"g{n}"]
            + ["--input", str(data), "--output", str(work / f"out{n}")],
            check=True, capture_output=True, env=env,
        )  # fmt: skip

    def check() -> None:
        corpus = ROOT / "tests" / "fixtures" / "upgrade"
        scripts = sorted(map(str, (corpus / "changes").glob("*.py"))) + sorted(
            map(str, (corpus / "clean").glob("*.py"))
        )
        done = subprocess.run(
            [sys.executable, "-m", "sparkmark", "upgrade-check", "--key", "id", *scripts]
            + ["--output", str(work / "checked"), "--input", str(corpus / "mixed.json")],
            check=False, capture_output=True, text=True, env=env,
        )  # fmt: skip
        if done.returncode != 1:  # 1: the corpus differs, as it must
            raise SystemExit(f"the upgrade check ended {done.returncode}: {done.stderr[-2000:]}")

    run()  # the first run makes the state store and the class archive
    run("--glue-version", "5.0")
    old, own = [], []
    for _ in range(repeats):
        old.append(timed(lambda: run("--glue-version", "5.0")))
        own.append(timed(run))
    checks = [timed(check) for _ in range(max(1, repeats // 2))]
    v1 = statistics.median(old) / statistics.median(own)
    v2 = statistics.median(checks) / statistics.median(own)
    results = {
        "V1": {
            "value": round(v1, 2), "goal": "<= 1.2", "met": v1 <= 1.2,
            "glue_5_0_s": round(statistics.median(old), 3), "glue_6_0_s": round(statistics.median(own), 3),
            "repeats": repeats,
        },
        "V2": {
            "value": round(v2, 2), "goal": "<= 8", "met": v2 <= 8,
            "check_s": round(statistics.median(checks), 3), "one_run_s": round(statistics.median(own), 3),
            "jobs": 16, "repeats": len(checks),
        },
    }  # fmt: skip
    print(
        f"V1 a job on Glue 5.0's runtime ÷ on sparkmark's own Spark: {v1:.2f} "
        f"({statistics.median(old):.2f} s ÷ {statistics.median(own):.2f} s, median of {repeats})"
    )
    print(
        f"V2 the upgrade check of 16 jobs ÷ one run: {v2:.2f} "
        f"({statistics.median(checks):.2f} s ÷ {statistics.median(own):.2f} s)"
    )
    record(results, {"V1_repeats": repeats})


if __name__ == "__main__":
    main()
