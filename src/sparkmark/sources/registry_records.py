"""Records encoded by the Glue Schema Registry's serializers (AWS's
schema-registry-serde library, for Kafka and Kinesis): a header of 18 bytes, then the
record. The header is the format's version byte (3), a compression byte (0: none,
5: ZLIB) and the 16 bytes of the schema version's UUID; the record is Avro binary or
JSON text, written with that version.

A stream whose catalog table names a registry schema (``SchemaReference``) is decoded
here: each record with the version its header names, read as the table's version
(Avro's schema resolution: fields added with defaults, fields dropped), so records of
older and newer versions land in one frame. A record whose header is not the
registry's, or names a version the registry does not hold, is malformed and set aside
with the stream's other malformed records."""

from __future__ import annotations

import json
import zlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column

HEADER_VERSION = 3
COMPRESSION_NONE, COMPRESSION_ZLIB = 0, 5
HEADER_BYTES = 18
OPTION = "sparkmark.schemaRegistry"  # the decoding plan, JSON: {"format", "reader", "writers"}


def encode(version_id: str, payload: bytes, compress: bool = False) -> bytes:
    """A record as the registry's serializers frame it (for producers written in Python)."""
    import uuid

    body = zlib.compress(payload) if compress else payload
    flag = COMPRESSION_ZLIB if compress else COMPRESSION_NONE
    return bytes([HEADER_VERSION, flag]) + uuid.UUID(version_id).bytes + body


def plan(data_format: str, reader: str, writers: dict[str, str]) -> str:
    """The option a stream source is given: how to decode its records."""
    return json.dumps({"format": data_format, "reader": reader, "writers": writers})


def _inflate(data: bytes | None) -> bytes | None:
    if data is None:
        return None
    try:
        return zlib.decompress(data)
    except zlib.error:
        return None  # not ZLIB after all: the record is malformed


def split(value: Column) -> tuple[Column, Column]:
    """The version id (UUID text) a record's header names, and its record bytes
    (inflated when compressed); both null when the header is not the registry's."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType

    inflate = F.udf(_inflate, BinaryType())
    ok = (F.length(value) >= HEADER_BYTES) & (F.substring(value, 1, 1) == F.unhex(F.lit("03")))
    compression = F.substring(value, 2, 1)
    hexed = F.lower(F.hex(F.substring(value, 3, 16)))
    version_id = F.concat_ws(
        "-",
        F.substring(hexed, 1, 8),
        F.substring(hexed, 9, 4),
        F.substring(hexed, 13, 4),
        F.substring(hexed, 17, 4),
        F.substring(hexed, 21, 12),
    )
    body = F.substring(value, HEADER_BYTES + 1, 1 << 30)  # the rest of the record
    payload = F.when(compression == F.unhex(F.lit("00")), body).when(
        compression == F.unhex(F.lit("05")), inflate(body)
    )
    return F.when(ok, version_id), F.when(ok, payload)


def decode_avro(version_id: Column, payload: Column, decoding: dict[str, Any]) -> Column:
    """The record, read as the reader version, from whichever version wrote it."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    reader = decoding["reader"]
    # Spark's from_avro: the schema argument is the one the bytes were written with, and
    # the "avroSchema" option the (evolved) schema they are read as.
    branches = [
        F.when(
            version_id == F.lit(vid), from_avro(payload, writer, {"avroSchema": reader, "mode": "PERMISSIVE"})
        )
        for vid, writer in sorted(decoding["writers"].items())
    ]
    if not branches:
        return from_avro(F.lit(None).cast("binary"), reader, {"mode": "PERMISSIVE"})
    return F.coalesce(*branches)
