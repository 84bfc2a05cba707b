"""R1: Glue's Iceberg REST endpoint at 1,000 Iceberg tables.

R1:        PyIceberg's REST ``load_table`` of one of 1,000 tables, in milliseconds (median
           over random tables; goal <= 20 ms). Its baseline, in the same process and
           against the same server: boto3's Glue ``GetTable`` of the same tables (the
           figure's ``to_get_table`` is the ratio).
R1_commit: one commit (a table property set, the smallest change: PyIceberg writes no
           data file, the endpoint writes the new metadata file and swaps the pointer),
           in milliseconds (median; goal <= 50 ms), with its ratio to R1's load.

`sparkmark api` is a process on a SQLite state store with the tables on local disk, so
the figures are the endpoint's and the catalog's, not an object store's.

    python bench/iceberg_rest.py            # 1,000 tables, 200 loads, 100 commits
    python bench/iceberg_rest.py --quick    # 100 tables, 50 loads, 30 commits
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from harness import api_endpoint, arguments, record


def main() -> None:
    opts = arguments()
    tables, loads, commits = (100, 50, 30) if opts.quick else (1000, 200, 100)
    import pyarrow as pa
    from pyiceberg.catalog import load_catalog

    from sparkmark.access import local_token

    work = Path(tempfile.mkdtemp(prefix="sparkmark-bench-rest-"))
    (work / "none.toml").write_text("")
    home = work / "home"
    env = {**os.environ, "SPARKMARK_HOME": str(home), "SPARKMARK_CONFIG": str(work / "none.toml")}
    with api_endpoint(env, home, "glue") as (url, glue):
        catalog = load_catalog(
            "bench",
            **{
                "type": "rest", "uri": f"{url}/iceberg", "warehouse": "000000000000",
                "rest.sigv4-enabled": "true", "rest.signing-name": "glue", "rest.signing-region": "us-east-1",
                "client.access-key-id": "bench", "client.secret-access-key": local_token(home),
                "client.region": "us-east-1",
            },
        )  # fmt: skip
        catalog.create_namespace("lake", {"location": str(work / "lake")})
        schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
        began = time.perf_counter()
        for i in range(tables):
            catalog.create_table(f"lake.t{i:04d}", schema=schema)
        made = time.perf_counter() - began
        rng = random.Random(7)
        picks = [f"t{rng.randrange(tables):04d}" for _ in range(loads)]
        load_ms, get_ms = [], []
        for name in picks:  # interleaved: the same server, the same moment
            t0 = time.perf_counter()
            catalog.load_table(f"lake.{name}")
            load_ms.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            glue.get_table(DatabaseName="lake", Name=name)
            get_ms.append((time.perf_counter() - t0) * 1000)
        table = catalog.load_table("lake.t0000")
        commit_ms = []
        for i in range(commits):
            t0 = time.perf_counter()
            with table.transaction() as tx:
                tx.set_properties(round=str(i))
            commit_ms.append((time.perf_counter() - t0) * 1000)
    load, get, commit = (statistics.median(x) for x in (load_ms, get_ms, commit_ms))
    suffix = "_quick" if opts.quick else ""  # a quick run never replaces the full-size figures
    results = {
        "R1" + suffix: {
            "value": round(load, 2), "goal": "<= 20 ms", "met": load <= 20,
            "get_table_ms": round(get, 2), "to_get_table": round(load / get, 2),
            "tables": tables, "loads": loads, "create_ms_each": round(made / tables * 1000, 2),
        },
        "R1_commit" + suffix: {
            "value": round(commit, 2), "goal": "<= 50 ms", "met": commit <= 50,
            "to_load": round(commit / load, 2), "commits": commits, "tables": tables,
        },
    }  # fmt: skip
    print(
        f"R1 REST loadTable at {tables} tables: {load:.1f} ms (median of {loads}); "
        f"Glue GetTable of the same: {get:.1f} ms (ratio {load / get:.2f}); create {made / tables * 1000:.1f} ms each"
    )
    print(f"R1_commit one commit: {commit:.1f} ms (median of {commits}; {commit / load:.2f} x a load)")
    record(results, {"R1" + suffix + "_tables": tables})


if __name__ == "__main__":
    main()
