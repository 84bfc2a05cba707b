"""What streaming sources share: the hidden columns a micro-batch runner reads (a
record's origin, and the raw text of a record that did not parse), and the parsing of
record values by classification."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import SourceError
from . import registry_records
from .base import ReadContext, SourceOutcome

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

# Hidden columns, dropped by the micro-batch runner before the batch function sees a batch.
ORIGIN_COLUMN = (
    "__sm_origin"  # struct: where the record is in its stream (topic/partition/offset, shard/sequence)
)
CORRUPT_COLUMN = "__sm_corrupt"  # the record as text, when it did not parse
HIDDEN = (ORIGIN_COLUMN, CORRUPT_COLUMN)


class StreamSource:
    """A source read as a stream: its progress lives in the query's checkpoint."""

    kind: ClassVar[str] = "stream"
    # Plans each batch by reading ahead a bounded number of records, so a bounded query
    # sees only the next batch and must be run again to catch up.
    reads_ahead: ClassVar[bool] = False
    ctx: str | None

    def describe(self) -> str:
        raise NotImplementedError

    def read(self, context: ReadContext) -> SourceOutcome:
        raise NotImplementedError


def parse_values(
    raw: DataFrame, classification: str, schema: str | None, options: Mapping[str, Any]
) -> DataFrame:
    """``raw`` has a ``value`` column (bytes or text) and the hidden origin column; the
    result has the schema's columns, the other columns of ``raw``, and the hidden
    corrupt-record column (the value's text when it does not parse, else null)."""
    from pyspark.sql import functions as F

    others = [c for c in raw.columns if c != "value"]
    text = F.col("value").cast("string")
    decoding = (
        json.loads(str(options[registry_records.OPTION])) if options.get(registry_records.OPTION) else None
    )
    if decoding is not None:  # registry-encoded records: a header naming the version that wrote each
        version_id, payload = registry_records.split(F.col("value"))
        raw = raw.select(
            version_id.alias("__sm_version"),
            payload.alias("__sm_payload"),
            F.col("value").alias("__sm_bytes"),
            *others,
        )
        if classification == "json":
            text = F.coalesce(
                F.col("__sm_payload").cast("string"), F.concat(F.lit("base64:"), F.base64("__sm_bytes"))
            )
    if classification == "avro":
        from pyspark.sql.avro.functions import from_avro

        avro_schema = options.get("avroSchema")
        if decoding is not None:
            record = registry_records.decode_avro(F.col("__sm_version"), F.col("__sm_payload"), decoding)
            parsed = raw.select(record.alias("__sm_r"), "__sm_bytes", *others)
        elif not avro_schema:
            raise SourceError("an avro stream needs 'avroSchema' (the records' Avro schema as JSON)")
        else:
            parsed = raw.select(
                from_avro(F.col("value"), str(avro_schema), {"mode": "PERMISSIVE"}).alias("__sm_r"),
                F.col("value").alias("__sm_bytes"),
                *others,
            )
        # Spark's permissive Avro decoding gives a record that does not decode as null, or
        # as a record of nulls: either counts as malformed (the bytes kept in base64).
        fields = parsed.select("__sm_r.*").columns
        undecoded = F.col("__sm_r").isNull()
        if fields:
            all_null = F.col(f"__sm_r.`{fields[0]}`").isNull()
            for name in fields[1:]:
                all_null = all_null & F.col(f"__sm_r.`{name}`").isNull()
            undecoded = undecoded | all_null
        corrupt = F.when(undecoded, F.concat(F.lit("base64:"), F.base64("__sm_bytes")))
        return parsed.select("__sm_r.*", *others, corrupt.alias(CORRUPT_COLUMN))
    if schema is None:
        raise SourceError(f"a {classification} stream needs a schema")
    with_corrupt = f"{schema}, `{CORRUPT_COLUMN}` string"
    parse_options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT_COLUMN}
    if classification == "json":
        parsed_col = F.from_json(text, with_corrupt, parse_options)
    elif classification == "csv":
        parse_options["sep"] = str(options.get("delimiter", ","))
        parsed_col = F.from_csv(text, with_corrupt, parse_options)
    else:
        raise SourceError(f"classification {classification!r} is not supported; use json, csv or avro")
    parsed = raw.select(parsed_col.alias("__sm_r"), text.alias("__sm_text"), *others)
    fields = [c for c in parsed.select("__sm_r.*").columns if c != CORRUPT_COLUMN]
    # A value that is not even a record (null, or JSON that is not an object) gives a
    # null struct: it counts as malformed too.
    corrupt = F.when(F.col("__sm_r").isNull(), F.coalesce(F.col("__sm_text"), F.lit(""))).otherwise(
        F.col(f"__sm_r.`{CORRUPT_COLUMN}`")
    )
    return parsed.select(
        *[F.col(f"__sm_r.`{f}`").alias(f) for f in fields], *others, corrupt.alias(CORRUPT_COLUMN)
    )
