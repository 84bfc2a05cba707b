"""What the connectors cost a session's start (scenario S1; C1 is now the crawl of bench/small_work.py).

Starts Spark in fresh processes, alternating a session with no connectors
(SPARKMARK_CONNECTORS=none, the baseline) and one with every connector `make jars`
resolved (S3A with the 600 MB AWS SDK, Kafka, Avro, JDBC drivers) on the driver's
class path, and compares the medians of the time to a first finished Spark job.

    python bench/session_start.py              # 5 of each
    python bench/session_start.py --repeats 3
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from harness import arguments, record

PROBE = """
import time
began = time.perf_counter()
from sparkmark.settings import Settings
from sparkmark.spark import create_session
spark = create_session("bench-start", "local[2]", Settings.from_env())
spark.range(1000).selectExpr("sum(id)").collect()
print(time.perf_counter() - began)
"""


def start_once(connectors: str, home: str) -> float:
    env = {
        **os.environ,
        "SPARKMARK_CONNECTORS": connectors,
        "SPARKMARK_CATALOG": "none",
        "SPARKMARK_HOME": home,
    }
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    args = arguments(repeats=5)
    times: dict[str, list[float]] = {"none": [], "auto": []}
    with tempfile.TemporaryDirectory() as home:
        start_once("none", home)  # warm the page cache for both
        start_once("auto", home)
        for i in range(args.repeats):
            for choice in ("none", "auto") if i % 2 == 0 else ("auto", "none"):
                times[choice].append(start_once(choice, home))
    base, full = statistics.median(times["none"]), statistics.median(times["auto"])
    ratio = full / base
    print(
        f"S1 session start to a first job: every connector {full:.2f} s, none {base:.2f} s, "
        f"ratio {ratio:.3f} (medians of {args.repeats})"
    )
    record(
        {
            "S1": {
                "value": round(ratio, 3),
                "goal": 1.1,
                "met": ratio <= 1.1,
                "seconds": {"connectors": round(full, 2), "none": round(base, 2)},
            }
        },
        {"S1_repeats": args.repeats},
    )


if __name__ == "__main__":
    main()
