"""Glue job scripts run unchanged under `sparkmark run`, twice, with bookmarks on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "glue"
SPARKMARK = Path(sys.executable).with_name("sparkmark")


def write_orders(file: Path, rows: list[dict]) -> None:
    """Orders under a ``dt=`` folder, each carrying its day as a field: Glue's
    ``from_options`` reads no column from folder names."""
    file.parent.mkdir(parents=True, exist_ok=True)
    day = file.parent.name.removeprefix("dt=")
    file.write_text("".join(json.dumps({**r, "dt": day}) + "\n" for r in rows), encoding="utf-8")


def run(script: str, args: list[str], home: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, SPARKMARK_HOME=str(home), SPARKMARK_SPARK_MASTER="local[2]")
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    return subprocess.run(
        [str(SPARKMARK), "run", str(EXAMPLES / script), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


def output_rows(path: Path) -> list[tuple]:
    table = pq.read_table(path)
    data = table.to_pylist()
    return sorted((r["order_id"], r["name"], r["amount"], r["quantity"], str(r["dt"])) for r in data)


@pytest.mark.slow
@pytest.mark.parametrize(
    "script,arg_names",
    [
        ("studio_orders.py", ("--orders_path", "--customers_path", "--output_path")),
        ("handwritten_orders.py", ("--source", "--dims", "--target")),
    ],
)
def test_glue_script_twice_with_bookmarks(tmp_path, script, arg_names):
    orders, customers, out = tmp_path / "orders", tmp_path / "customers", tmp_path / "out"
    write_orders(
        orders / "dt=2026-11-01" / "a.json",
        [
            {"order_id": 1, "customer_id": "c1", "amount": 10, "qty": 1},
            {"order_id": 2, "customer_id": "c2", "amount": "12.5", "qty": "2"},  # inconsistent types
            {"order_id": 3, "customer_id": "c1", "amount": -1, "qty": 1},  # filtered out
        ],
    )
    customers.mkdir()
    (customers / "customers.csv").write_text("id,name\nc1,Ann\nc2,Bob\n")
    args = [
        "--JOB_NAME",
        script.removesuffix(".py"),
        "--job-bookmark-option",
        "job-bookmark-enable",
        arg_names[0],
        str(orders),
        arg_names[1],
        str(customers),
        arg_names[2],
        str(out),
    ]

    first = run(script, args, tmp_path / "home")
    assert first.returncode == 0, first.stderr[-3000:]
    assert "SUCCEEDED" in first.stdout
    rows = output_rows(out)
    assert [r[0] for r in rows] == [1, 2]
    assert rows[1][1:3] == ("Bob", 12.5)

    write_orders(
        orders / "dt=2026-11-02" / "b.json",
        [
            {"order_id": 4, "customer_id": "c2", "amount": 7, "qty": 3},
        ],
    )
    second = run(script, args, tmp_path / "home")
    assert second.returncode == 0, second.stderr[-3000:]
    assert "1 to read (1 new" in second.stderr  # only the new file
    rows = output_rows(out)
    assert [r[0] for r in rows] == [1, 2, 4]  # nothing read twice
    assert rows[-1] == (4, "Bob", 7.0, 3, "2026-11-02")
