"""What reading a run's log through the log API costs, and what it costs everyone else
(scenarios G1 and G2).

A run with a 100 MB stdout log (1,000,000 lines) beside one with a 1 KB log, served by
`sparkmark api` as a process; boto3's CloudWatch Logs client, as Airflow's log
following uses it.

- G1: GetLogEvents(limit=1) on the 100 MB log ÷ the same call on the 1 KB log, medians.
  Goal ≤ 2: a call costs what it returns, not the size of the log.
- G2: /health's median latency while 4 threads call GetLogEvents(limit=1) and
  FilterLogEvents (a term that matches nothing, so each call scans its budget) on the
  big log in a loop ÷ /health's median with nothing else running. The goal is issue
  50's: the loaded median under 100 ms (the ratio shows the readers' share of the
  server's one interpreter).

    python bench/logs.py                 # 20 calls of each
    python bench/logs.py --repeats 5
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).parent))

from harness import api_endpoint, arguments, record, timed
from sparkmark.engine.models import BookmarkOption, RunState
from sparkmark.engine.run_logs import log_path
from sparkmark.engine.store import StateStore
from sparkmark.settings import Settings


def make_run(store: StateStore, home: Path, job: str, lines: int) -> str:
    run = store.start_run(
        job_name=job,
        run_id="jr_" + uuid.uuid4().hex + uuid.uuid4().hex,
        attempt=0,
        option=BookmarkOption.DISABLE,
        arguments={},
        owner="bench",
        lease_seconds=60,
    )
    store.finish_run(run.run_id, RunState.SUCCEEDED)
    path = log_path(home, "JOB", job, run.run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = b"x" * 99 + b"\n"
    with open(path, "wb") as f:
        for _ in range(lines // 10_000):
            f.write(line * 10_000)
        f.write(line * (lines % 10_000))
    return run.run_id


def main() -> None:
    args = arguments(repeats=20)
    lines = 100_000 if args.quick else 1_000_000
    with tempfile.TemporaryDirectory() as root:
        home = Path(root) / "home"
        config = Path(root) / "sparkmark.toml"
        config.write_text("")
        env = {**os.environ, "SPARKMARK_HOME": str(home), "SPARKMARK_CONFIG": str(config)}
        settings = Settings.from_env(env)
        store = StateStore.from_settings(settings)
        big = make_run(store, home, "chatty", lines)
        small = make_run(store, home, "quiet", 10)
        with api_endpoint(env, home, "logs") as (url, logs):
            group = "/aws-glue/jobs/output"

            def last_line(run_id: str) -> None:
                answer = logs.get_log_events(logGroupName=group, logStreamName=run_id, limit=1)
                assert len(answer["events"]) == 1

            last_line(big)  # the first call pays the client's and the server's warm-up
            last_line(small)
            big_times, small_times = [], []
            for _ in range(args.repeats):
                big_times.append(timed(lambda: last_line(big)))
                small_times.append(timed(lambda: last_line(small)))
            g1 = statistics.median(big_times) / statistics.median(small_times)

            def health() -> float:
                return timed(lambda: requests.get(url + "/health", timeout=30).raise_for_status())

            idle = statistics.median(health() for _ in range(args.repeats))
            stop = threading.Event()

            def reader(n: int) -> None:
                while not stop.is_set():
                    if n % 2:
                        logs.filter_log_events(
                            logGroupName=group, logStreamNames=[big], filterPattern="nomatch"
                        )
                    else:
                        last_line(big)

            readers = [threading.Thread(target=reader, args=(n,), daemon=True) for n in range(4)]
            for r in readers:
                r.start()
            time.sleep(0.5)
            loaded = statistics.median(health() for _ in range(args.repeats))
            stop.set()
            for r in readers:
                r.join(timeout=60)
    g2 = loaded / idle
    size_mb = lines * 100 / 1e6
    print(
        f"G1 GetLogEvents(limit=1): {size_mb:.0f} MB log {statistics.median(big_times) * 1000:.1f} ms, "
        f"1 KB log {statistics.median(small_times) * 1000:.1f} ms, ratio {g1:.2f}"
    )
    print(
        f"G2 /health under 4 log readers: {loaded * 1000:.1f} ms, idle {idle * 1000:.1f} ms, ratio {g2:.2f}"
    )
    record(
        {
            "G1": {
                "value": round(g1, 2),
                "goal": 2.0,
                "met": g1 <= 2.0,
                "ms": {
                    "big": round(statistics.median(big_times) * 1000, 1),
                    "small": round(statistics.median(small_times) * 1000, 1),
                },
            },
            "G2": {
                "value": round(g2, 2),
                "goal": "loaded /health median < 100 ms",
                "met": loaded < 0.1,
                "ms": {"loaded": round(loaded * 1000, 1), "idle": round(idle * 1000, 1)},
            },
        },
        {"G_log_mb": round(size_mb), "G_repeats": args.repeats},
    )


if __name__ == "__main__":
    main()
