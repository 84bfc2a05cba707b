"""Capturing what a run writes, instead of writing it: the upgrade check's runs
(``sparkmark upgrade-check``) run a job under two Glue versions and compare what each
would have written, with nothing published and no target touched.

While a capture is on (``begin``), the one write path hands every frame here: it is
written as Parquet into the capture folder (``NNN/``, in the order the job wrote), and
``manifest.json`` lists each write's target, its schema as Spark typed it, and its row
count. The one read path takes at most ``sample_rows`` rows of each source, when set.
Process-wide: a capture belongs to the one job the process is running.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@dataclass
class Capture:
    folder: Path
    sample_rows: int | None = None
    writes: list[dict[str, Any]] = field(default_factory=list)


_LOCK = threading.Lock()
_ACTIVE: list[Capture] = []  # the one capture on, or none


def begin(folder: Path, sample_rows: int | None = None) -> Capture:
    """Capture the writes of the next run into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    capture = Capture(folder, sample_rows)
    with _LOCK:
        _ACTIVE[:] = [capture]
        _keep(capture)
    return capture


def end() -> None:
    with _LOCK:
        _ACTIVE.clear()


def current() -> Capture | None:
    return _ACTIVE[0] if _ACTIVE else None


def sampled(frame: DataFrame) -> DataFrame:
    """``frame``, cut to the capture's sample (the first rows Spark reads)."""
    capture = current()
    if capture is None or capture.sample_rows is None:
        return frame
    return frame.limit(capture.sample_rows)


def write(target: str, kind: str, df: DataFrame) -> dict[str, Any]:
    """Write ``df`` into the capture instead of ``target``; what a write returns."""
    from pyspark.sql import functions as F

    capture = current()
    assert capture is not None
    number = len(capture.writes) + 1
    path = capture.folder / f"{number:03d}"
    schema = [(f.name, f.dataType.simpleString()) for f in df.schema.fields]
    # Parquet here is read back by pyarrow: complex and VARIANT values go as their JSON.
    plain = df.select(
        *[
            F.to_json(F.col(f"`{name}`")).alias(name)
            if kind_of(spark_type) in ("struct", "array", "map", "variant")
            else F.col(f"`{name}`")
            for name, spark_type in schema
        ]
    )
    plain.write.mode("overwrite").parquet(str(path))
    rows = _rows_written(path)
    entry = {"number": number, "target": target, "kind": kind, "schema": schema, "rows": rows}
    with _LOCK:
        capture.writes.append(entry)
        _keep(capture)
    return {"captured": str(path), "rows": rows, "target": target}


def _rows_written(path: Path) -> int:
    """The rows the Parquet files in ``path`` hold, from their footers: counting the frame
    again would run the job's whole plan a second time."""
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(part).metadata.num_rows for part in path.glob("*.parquet"))


def kind_of(spark_type: str) -> str:
    """``struct<a:int>`` → ``struct``; ``decimal(10,2)`` → ``decimal``."""
    return spark_type.split("<", 1)[0].split("(", 1)[0]


def _keep(capture: Capture) -> None:
    (capture.folder / "manifest.json").write_text(json.dumps({"writes": capture.writes}, indent=1))
