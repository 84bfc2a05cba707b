"""Python functions over records, run through Arrow batches, with failures kept.

Each record reaches the function as a plain ``dict`` (nested structs as dicts,
arrays as lists), decoded from one JSON document per row. A record whose
function raises becomes an *error record* (its JSON, the error, the transform's
name) instead of disappearing or failing the job.

- ``apply`` (Map): the function's result is the new record, sent back as JSON.
- ``filtered`` (Filter): only the function's verdict comes back; the kept records are
  the input's own rows, never rebuilt from JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

OUT_SCHEMA = "__sm_json string, __sm_error string, __sm_input string"
VERDICT = "__sm_verdict"  # null: kept; "": dropped; otherwise the function's error


def _jsonable(value: Any):
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return value.decode("utf-8", "replace")
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def as_json(df: DataFrame) -> Column:
    """Each record as the one JSON document the function's ``dict`` is decoded from."""
    return F.to_json(F.struct(*[F.col(f"`{c}`") for c in df.columns]))


def filtered(df: DataFrame, func: Callable[[dict], Any], name: str) -> tuple[DataFrame, DataFrame]:
    """A filter: the input's own rows where ``func(record)`` is truthy, and the error
    records (error, the record's JSON, the transform's ``name``) where it raised. Only
    the verdict comes back from Python (null: kept, "": dropped, else the error)."""

    def judge(text: str) -> str | None:
        try:
            return None if func(json.loads(text)) else ""
        except Exception as exc:  # noqa: BLE001 - every failure becomes an error record
            return f"{type(exc).__name__}: {exc}"

    # Through a lambda: PySpark reads a function's type hints as a pandas UDF's and warns.
    udf = F.udf(lambda text: judge(text), "string", useArrow=True)  # noqa: PLW0108
    judged = df.withColumn(VERDICT, udf(as_json(df)))
    verdict = F.col(VERDICT)
    failed = judged.where(verdict != "").select(
        verdict.alias("error"), as_json(df).alias("record"), F.lit(name).alias("transformation")
    )
    return judged.where(verdict.isNull()).drop(VERDICT), failed


def apply(df: DataFrame, func: Callable[[dict], Any]) -> DataFrame:
    """A map: ``func``'s result for every record is the new record, as JSON."""

    def run(batches):
        for batch in batches:
            out: list[str | None] = []
            errors: list[str | None] = []
            inputs: list[str | None] = []
            for text in batch.column(0).to_pylist():
                try:
                    result = func(json.loads(text))
                    out.append(None if result is None else json.dumps(dict(result), default=_jsonable))
                    errors.append(None)
                    inputs.append(None)
                except Exception as exc:  # noqa: BLE001 - every failure becomes an error record
                    out.append(None)
                    errors.append(f"{type(exc).__name__}: {exc}")
                    inputs.append(text)
            yield pa.RecordBatch.from_arrays(
                [pa.array(out, pa.string()), pa.array(errors, pa.string()), pa.array(inputs, pa.string())],
                names=["__sm_json", "__sm_error", "__sm_input"],
            )

    out = df.select(as_json(df).alias("__sm_in")).mapInArrow(run, OUT_SCHEMA)
    # A map's records are typed from what the function returned: kept as first
    # computed, so typing them and writing them run the function once.
    return out.localCheckpoint(eager=False)
