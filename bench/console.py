"""P10: the console's pages on a large state store.

One job with 10,000 runs whose bookmark tracks 1,000,000 files (one commit of a
million, then 9,999 runs of 10 new files each, every tenth run failed), in a SQLite
state store. Each page is asked for over HTTP from a real console; the figure is its
server time (the console's ``Server-Timing`` header: from the request entering the
app to the response being ready), the median of the repeats. The baseline, in the same
process, is the same pages on a store of 10 runs and 100 files: the ratio says how
the page's cost grows with the store.

    python bench/console.py              # 10,000 runs, 1,000,000 files
    python bench/console.py --quick      # 1,000 runs, 100,000 files
    python bench/console.py --postgres   # the same, the state store on PostgreSQL (key P10_pg)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).parent))

from harness import record
from sparkmark.console.server import start
from sparkmark.engine.models import BookmarkOption, CtxCommit, FileEntry, RunState
from sparkmark.engine.store import StateStore
from sparkmark.settings import Settings

JOB = "big"
PG = os.environ.get("SPARKMARK_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")


def entry(i: int) -> FileEntry:
    return FileEntry(
        f"file:///lake/events/dt=2026-{i % 12 + 1:02d}-{i % 28 + 1:02d}/part-{i:08d}.json",
        1_700_000_000_000 + i,
        4096 + i % 100,
    )


def build(home: Path, runs: int, files: int, state_url: str | None = None) -> tuple[Settings, list[str]]:
    env = {"SPARKMARK_HOME": str(home)}
    if state_url:
        env["SPARKMARK_STATE_URL"] = state_url
    settings = Settings.from_env(env)
    store = StateStore.from_settings(settings)
    state = {"type": "files", "paths": ["file:///lake/events"], "options": {}}
    run_ids = []
    made = 0
    for n in range(runs):
        run = store.start_run(
            job_name=JOB,
            run_id="jr_" + uuid.uuid4().hex + uuid.uuid4().hex,
            attempt=0,
            option=BookmarkOption.ENABLE,
            arguments={"--JOB_NAME": JOB, "--day": str(n)},
            owner="bench",
            lease_seconds=600,
        )
        run_ids.append(run.run_id)
        if n % 10 == 9:
            store.finish_run(run.run_id, RunState.FAILED, error="the source was not reachable")
            continue
        count = files - 10 * (runs - 1) if n == 0 else 10
        batch = [entry(made + i) for i in range(count)]
        made += count
        metrics = {"sources": {"src": {"type": "files", "files_read": count, "bytes_read": 4096 * count}}}
        store.commit(run, [CtxCommit("src", {**state, "files_committed": made}, batch)], metrics=metrics)
    store.close()
    return settings, run_ids


def pages(run_ids: list[str], runs: int) -> dict[str, str]:
    last_page = -(-runs // 50)
    middle = entry(500).path
    return {
        "jobs": "/",
        "job, first page of runs": f"/jobs/{JOB}",
        "job, last page of runs": f"/jobs/{JOB}?page={last_page}",
        "run": f"/runs/{run_ids[-2]}",
        "bookmark, newest versions and first files": f"/jobs/{JOB}/bookmark",
        "bookmark, oldest versions": f"/jobs/{JOB}/bookmark?page={-(-runs // 25)}",
        "bookmark, files after a path": f"/jobs/{JOB}/bookmark?ctx=src&after={middle}",
        "bookmark, files by a rare substring": f"/jobs/{JOB}/bookmark?ctx=src&q=part-00000042.json",
        "rewind confirmation": f"/jobs/{JOB}/bookmark/rewind?run_id={run_ids[0]}",
        "jobs, searched and filtered": "/?q=bi&state=SUCCEEDED&type=glueetl",
        "job, failed runs of the last 30 days": f"/jobs/{JOB}?state=FAILED&last=30d",
        "job, runs in a time range, last page": f"/jobs/{JOB}?since=2020-01-01&until=2100-01-01&page={last_page}",
        "job script": f"/jobs/{JOB}/script",
        "run log": f"/runs/{run_ids[-2]}/log",
        "timeline, last 24 hours": "/timeline",
        "timeline, failed runs": "/timeline?state=FAILED&last=7d",
        "crawlers": "/crawlers",
        "workflows": "/workflows",
    }


def server_ms(url: str, token: str) -> float:
    answer = requests.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=120)
    assert answer.status_code == 200, (url, answer.status_code)
    timing = answer.headers["server-timing"]
    return float(timing.split("dur=", 1)[1])


def measure(settings: Settings, urls: dict[str, str], repeats: int) -> dict[str, float]:
    running = start(settings, "127.0.0.1", 0, None, scheduler=False)
    try:
        out = {}
        for name, path in urls.items():
            server_ms(running.url + path, running.token)  # warm the page's queries once
            out[name] = statistics.median(
                server_ms(running.url + path, running.token) for _ in range(repeats)
            )
        return out
    finally:
        running.stop()


def postgres_schema() -> tuple[str, str]:
    """A fresh schema on the PostgreSQL of `make services`, and its state URL."""
    import psycopg

    name = f"sm_bench_console_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{name}"')
    base = PG.replace("postgresql://", "postgresql+psycopg://", 1)
    return name, f"{base}?options=-csearch_path%3D{name}"


def drop_schema(name: str) -> None:
    import psycopg

    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="a tenth of the full size")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--postgres", action="store_true", help="the state store on PostgreSQL")
    args = parser.parse_args()
    runs, files = (1_000, 100_000) if args.quick else (10_000, 1_000_000)
    schemas: list[str] = []

    def url() -> str | None:
        if not args.postgres:
            return None
        name, made = postgres_schema()
        schemas.append(name)
        return made

    try:
        with tempfile.TemporaryDirectory(prefix="sm-bench-console-") as tmp:
            began = time.perf_counter()
            big, big_ids = build(Path(tmp) / "big", runs, files, url())
            print(f"built {runs} runs and {files} tracked files in {time.perf_counter() - began:.0f} s")
            small, small_ids = build(Path(tmp) / "small", 10, 100, url())
            slow = measure(big, pages(big_ids, runs), args.repeats)
            base = measure(small, pages(small_ids, 10), args.repeats)
    finally:
        for name in schemas:
            drop_schema(name)
    print(f"{'page':<46} {'large ms':>9} {'small ms':>9} {'ratio':>6}")
    for name, ms in slow.items():
        print(f"{name:<46} {ms:9.1f} {base[name]:9.1f} {ms / base[name]:6.1f}")
    worst = max(slow, key=slow.__getitem__)
    print(f"P10 (slowest page, server ms) = {slow[worst]:.1f} ({worst}); goal <= 200")
    key = "P10" + ("_pg" if args.postgres else "") + ("_quick" if args.quick else "")
    record(
        {
            key: {
                "value": round(slow[worst], 1),
                "goal": "<= 200 ms",
                "met": slow[worst] <= 200,
                "slowest_page": worst,
                "pages_ms": {k: round(v, 1) for k, v in slow.items()},
            }
        },
        {key: {"runs": runs, "files": files, "store": "postgresql" if args.postgres else "sqlite"}},
    )


if __name__ == "__main__":
    main()
