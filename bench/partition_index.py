"""What a partition index saves GetPartitions (scenario X1).

A table of 50,000 partitions (year × month × day × region) served by `sparkmark api` as
a process, read through boto3 as Athena and awswrangler call it:

- X1: GetPartitions with ``Expression`` ``year = 2026 AND month = 11`` on the table
  with no index ÷ the same call once an index over (year, month) exists, medians.
  Goal ≥ 5: with the index the call reads the index's distinct values and the matching
  partitions, not every partition.

    python bench/partition_index.py               # 50,000 partitions, 10 calls of each
    python bench/partition_index.py --quick       # 5,000
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from harness import api_endpoint, arguments, record, timed
from sparkmark.catalog.models import Column, Database, Partition, Table
from sparkmark.catalog.store import CatalogStore
from sparkmark.engine.store import StateStore
from sparkmark.settings import Settings

EXPRESSION = "year = 2026 AND month = 11"


def build(store: CatalogStore, partitions: int) -> int:
    """The table and its partitions; returns how many partitions the expression selects."""
    keys = (Column("year", "int"), Column("month", "int"), Column("day", "int"), Column("region", "string"))
    store.put_database(Database("lake"))
    store.put_table(Table("lake", "events", "/data/events", "parquet", (Column("v", "bigint"),), keys))
    regions = ["eu", "us", "ap", "sa", "af"]
    made, chosen = [], 0
    year = 1900  # the generated years end long before the one the expression names
    while len(made) < partitions:
        for month in range(1, 13):
            for day in range(1, 29):
                for region in regions:
                    if len(made) < partitions:
                        made.append(
                            Partition(
                                (str(year), str(month), str(day), region),
                                f"/data/{year}/{month}/{day}/{region}",
                            )
                        )
        year += 1
    # the year the expression names, with a full month of partitions
    made += [
        Partition(("2026", "11", str(d), r), f"/data/2026/11/{d}/{r}") for d in range(1, 29) for r in regions
    ]
    chosen = 28 * len(regions)
    for start in range(0, len(made), 5000):
        store.put_partitions("lake", "events", made[start : start + 5000])
    return chosen


def main() -> None:
    args = arguments(repeats=10)
    partitions = 5_000 if args.quick else 50_000
    with tempfile.TemporaryDirectory() as root:
        home = Path(root) / "home"
        config = Path(root) / "sparkmark.toml"
        config.write_text("")
        env = {**os.environ, "SPARKMARK_HOME": str(home), "SPARKMARK_CONFIG": str(config)}
        state = StateStore.from_settings(Settings.from_env(env))
        catalog = CatalogStore(state)
        chosen = build(catalog, partitions)
        with api_endpoint(env, home, "glue") as (_url, glue):

            def select() -> None:
                found = glue.get_partitions(DatabaseName="lake", TableName="events", Expression=EXPRESSION)
                assert len(found["Partitions"]) == chosen, len(found["Partitions"])

            select()  # warm-up: the client's and the server's
            unindexed = [timed(select) for _ in range(args.repeats)]
            glue.create_partition_index(
                DatabaseName="lake",
                TableName="events",
                PartitionIndex={"IndexName": "ym", "Keys": ["year", "month"]},
            )
            select()
            indexed = [timed(select) for _ in range(args.repeats)]
    x1 = statistics.median(unindexed) / statistics.median(indexed)
    key = "X1_quick" if args.quick else "X1"
    print(
        f"X1: GetPartitions '{EXPRESSION}' over {partitions + chosen} partitions ({chosen} selected): "
        f"{statistics.median(unindexed) * 1000:.0f} ms without an index, "
        f"{statistics.median(indexed) * 1000:.0f} ms with one: {x1:.1f}x (goal >= 5)"
    )
    record(
        {
            key: {
                "value": round(x1, 2),
                "goal": ">= 5",
                "met": x1 >= 5,
                "unindexed_ms": round(statistics.median(unindexed) * 1000, 1),
                "indexed_ms": round(statistics.median(indexed) * 1000, 1),
            }
        },
        {key: {"partitions": partitions + chosen, "selected": chosen, "repeats": args.repeats}},
    )


if __name__ == "__main__":
    main()
